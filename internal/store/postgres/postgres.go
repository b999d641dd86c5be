// Package postgres is the store.Store on PostgreSQL (pgx, pgxpool),
// selected with a postgres:// DSN; it behaves like internal/store/sqlite
// and passes the same suite (internal/store/storetest).
//
// The queries both stores share, and the checks of every call's
// arguments, live once in internal/store/internal/sqlbody and reach the
// pool through pgx's database/sql driver (stdlib); the migration driver
// is internal/store/internal/migrate's. This package keeps its opening,
// its schema files (PostgreSQL types: timestamptz, bytea, identity
// columns) and the two hot writes that rely on PostgreSQL: AppendEvents
// (a row lock and two pgx batches) and Trim (one data-modifying CTE).
//
// Guarantees, beyond those store.Store lists:
//
//   - AppendEvents locks the session's row (SELECT … FOR UPDATE) for the
//     transaction that numbers and inserts the batch, so appends to one
//     session are serialized, across connections and master processes
//     alike; appends to different sessions run in parallel.
//   - Message IDs are unique per session (a unique index on message_id,
//     session_id), checked under the session's row lock; the same ID in
//     another session is that session's own event. Dedup covers retained
//     events: an event dropped by Trim no longer blocks its ID.
//   - SettleInteraction and ConsumeToken are single conditional
//     UPDATE/DELETE statements: the row lock makes exactly one caller win.
//   - Durability is the server's: with PostgreSQL's defaults
//     (synchronous_commit=on) a committed write survives a crash of the
//     master and of the database server.
//   - The schema lives in the DSN's search_path (by default public), is
//     migrated forward on Open under an advisory lock (numbered files under
//     migrations/, recorded in schema_migrations), and a database migrated
//     by a newer ferry is refused.
//   - Times are kept to the microsecond, in UTC.
package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/internal/check"
	"github.com/ferry-dev/ferry/internal/store/internal/migrate"
	"github.com/ferry-dev/ferry/internal/store/internal/sqlbody"
)

// migrateLock is the advisory lock key that serializes migrations when
// several masters start at once.
const migrateLock int64 = 0x6665727279_6d67 // "ferry" "mg"

// appendTries bounds the retries of an append that lost a race for a
// message ID to another session (or a deadlock between two such batches).
const appendTries = 4

// Store is a store.Store on a PostgreSQL database. It is safe for
// concurrent use.
type Store struct {
	// The queries shared with the SQLite store, over database/sql on the
	// same pool; the alias keeps the embedded field unexported.
	*body

	pool *pgxpool.Pool
}

var _ store.Store = (*Store)(nil)

type body = sqlbody.DB

// dialect tells the shared queries PostgreSQL's constraint errors.
var dialect = sqlbody.Postgres(
	func(err error) bool { return pgCode(err) == uniqueViolation },
	func(err error) bool { return pgCode(err) == foreignKeyViolation })

// Open connects to the database at dsn (a postgres:// URL or a libpq
// key=value string) and migrates its schema.
func Open(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The error may quote the DSN and its password: say only what failed.
		return nil, errors.New("postgres: open: the DSN does not parse")
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, check.Wrap(ctx.Err(), "postgres", "open", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, check.Wrap(ctx.Err(), "postgres", "open", err)
	}
	s := &Store{pool: pool}
	db := stdlib.OpenDBFromPool(pool)
	s.body = &sqlbody.DB{D: dialect, R: db, W: db, Hot: sqlbody.Hot{AppendEvents: s.appendEvents, Trim: s.trim}}
	if err := s.migrate(ctx, db); err != nil {
		_ = s.Close()
		return nil, check.Wrap(ctx.Err(), "postgres", "open", err)
	}
	return s, nil
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrate applies the pending migrations in one transaction, holding an
// advisory lock so that concurrent Opens apply each migration once.
func (s *Store) migrate(ctx context.Context, db *sql.DB) error {
	ms, err := migrate.Load(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLock); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TIMESTAMPTZ NOT NULL
	)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := migrate.Apply(ctx, tx, ms,
		`INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`, check.Now()); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// Close closes the pool; it may be called more than once.
func (s *Store) Close() error {
	// Closing the database/sql handle leaves the pool open: close both.
	err := s.R.Close()
	s.pool.Close()
	if err != nil {
		return fmt.Errorf("postgres: close: %w", err)
	}
	return nil
}

// pgCode is the SQLSTATE of err, "" when it is not a server error.
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// lostIDRace reports the errors after which an append is retried: a
// deadlock, or (in a schema older than migration 15's, or a foreign
// writer) another transaction stored one of the batch's message IDs first.
func lostIDRace(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	return pe.Code == deadlockDetected || pe.Code == uniqueViolation && (pe.ConstraintName == "events_message_id_key" || pe.ConstraintName == "events_session_message_key")
}

const (
	uniqueViolation     = "23505"
	foreignKeyViolation = "23503"
	deadlockDetected    = "40P01"
)

// --- events ---

// appendEvents is AppendEvents' hot path (sqlbody.Hot): the append
// transaction, retried when it lost a race for a message ID.
func (s *Store) appendEvents(ctx context.Context, sessionID string, evs []store.Event) ([]store.Event, error) {
	for try := 1; ; try++ {
		out, err := s.appendOnce(ctx, sessionID, evs)
		if try < appendTries && lostIDRace(err) {
			// The next try's duplicate check sees the other session's row.
			continue
		}
		return out, err
	}
}

type stored struct {
	session string
	seq     int64
}

// appendOnce runs one append transaction in two round trips: BEGIN, the
// row lock and the duplicate check in one batch; the insert, the session
// update and COMMIT in the other.
func (s *Store) appendOnce(ctx context.Context, sessionID string, evs []store.Event) (out []store.Event, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release() // a connection left inside a transaction is discarded
	open := false
	defer func() {
		if open {
			// Best effort; if it fails, Release discards the connection.
			_, _ = conn.Exec(ctx, "ROLLBACK")
		}
	}()

	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.MessageID
	}
	// The duplicate check runs after the lock is granted, in a fresh READ
	// COMMITTED snapshot: it sees what the previous append committed.
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SELECT last_seq FROM sessions WHERE id = $1 FOR UPDATE`, sessionID)
	// By message_id only, the index's leading column: with session_id in
	// the WHERE, the planner may pick the primary key and read every row
	// of the session (a fresh table has no statistics to warn it); rows of
	// other sessions are skipped below.
	b.Queue(`SELECT message_id, session_id, seq FROM events WHERE message_id = ANY($1)`, ids)
	open = true
	last, known, err := readLockBatch(conn.SendBatch(ctx, b), sessionID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("session %s: %w", sessionID, store.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}

	out = make([]store.Event, len(evs))
	var (
		seqArr     []int64
		idArr      []string
		typeArr    []string
		dataArr    [][]byte
		createdArr []time.Time
		// Prompts stored (to deliver) and answered: rare, so their
		// statements are queued only when there are some.
		deliver []int
		answers []string
	)
	next := last
	active := false // a new event that is not quiet moves updated_at
	for i, ev := range evs {
		ev.Duplicate = false
		ev.CreatedAt = check.OrNow(ev.CreatedAt)
		if st, ok := known[ev.MessageID]; ok {
			ev.Duplicate = true
			ev.Seq = uint64(st.seq)
			out[i] = ev
			continue
		}
		next++
		ev.Seq = uint64(next)
		active = active || !ev.Quiet
		known[ev.MessageID] = stored{sessionID, next} // a repeat later in the batch
		seqArr = append(seqArr, next)
		idArr = append(idArr, ev.MessageID)
		typeArr = append(typeArr, ev.Type)
		dataArr = append(dataArr, ev.Data)
		createdArr = append(createdArr, ev.CreatedAt)
		if ev.Deliver {
			deliver = append(deliver, len(idArr)-1)
		}
		if ev.Answers != "" {
			answers = append(answers, ev.Answers)
		}
		out[i] = ev
	}
	b = &pgx.Batch{}
	if next > last {
		b.Queue(`INSERT INTO events (session_id, seq, message_id, type, data, created_at)
			SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::text[], $5::bytea[], $6::timestamptz[])`,
			sessionID, seqArr, idArr, typeArr, dataArr, createdArr)
		// updated_at keeps its value unless ActivityStep behind: an
		// unchanged indexed column lets PostgreSQL update the row in
		// place (HOT) without new entries in its three indexes.
		now, step := check.Now(), check.ActivityStep
		if !active {
			// Only quiet events: a bound no time passes keeps updated_at.
			step = 1 << 62
		}
		b.Queue(`UPDATE sessions SET last_seq = $2,
			updated_at = CASE WHEN updated_at <= $4 THEN $3 ELSE updated_at END WHERE id = $1`,
			sessionID, next, now, now.Add(-step))
		queueDeliveries(b, sessionID, deliver, idArr, seqArr, createdArr, answers)
	}
	b.Queue(`COMMIT`)
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	open = false
	return out, nil
}

// queueDeliveries records the new events stored with Deliver (their
// indexes into the inserted arrays) as undelivered and delivers those
// answered, in the append's transaction.
func queueDeliveries(b *pgx.Batch, sessionID string, deliver []int, ids []string, seqs []int64, created []time.Time, answers []string) {
	for _, i := range deliver {
		b.Queue(sqlbody.Rebind(sqlbody.InsertDelivery), sessionID, ids[i], seqs[i], created[i])
	}
	if len(answers) > 0 {
		b.Queue(`DELETE FROM deliveries WHERE session_id = $1 AND message_id = ANY($2)`, sessionID, answers)
	}
}

// readLockBatch reads the first batch's results: the session's last seq
// (pgx.ErrNoRows when it does not exist) and the stored message IDs.
func readLockBatch(br pgx.BatchResults, sessionID string) (last int64, known map[string]stored, err error) {
	defer func() {
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	}()
	if _, err := br.Exec(); err != nil {
		return 0, nil, err
	}
	if err := br.QueryRow().Scan(&last); err != nil {
		return 0, nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return 0, nil, err
	}
	defer rows.Close()
	known = make(map[string]stored)
	for rows.Next() {
		var (
			id string
			st stored
		)
		if err := rows.Scan(&id, &st.session, &st.seq); err != nil {
			return 0, nil, err
		}
		if st.session == sessionID { // the same ID in another session is not a duplicate here
			known[id] = st
		}
	}
	return last, known, rows.Err()
}

// trim is Trim's hot path (sqlbody.Hot): one statement.
func (s *Store) trim(ctx context.Context, sessionID string, keep int) error {
	// Retained seqs are a contiguous run ending at last_seq, so the newest
	// keep are exactly those above last_seq - keep.
	var found int
	err := s.pool.QueryRow(ctx,
		`WITH s AS (SELECT last_seq FROM sessions WHERE id = $1),
		      d AS (DELETE FROM events e USING s WHERE e.session_id = $1 AND e.seq <= s.last_seq - $2)
		 SELECT count(*) FROM s`, sessionID, keep).Scan(&found)
	if err != nil {
		return err
	}
	if found == 0 {
		return fmt.Errorf("session %s: %w", sessionID, store.ErrNotFound)
	}
	return nil
}
