// Package postgres is the store.Store on PostgreSQL (pgx, pgxpool),
// selected with a postgres:// DSN; it behaves like internal/store/sqlite
// and passes the same suite (internal/store/storetest).
//
// The queries both stores share live once in internal/store/internal/sqlbody
// and reach the pool through pgx's database/sql driver (stdlib); this
// package keeps its opening, migrations and the writes that rely on
// PostgreSQL's locks, foreign keys and batches.
//
// Guarantees, beyond those store.Store lists:
//
//   - AppendEvents locks the session's row (SELECT … FOR UPDATE) for the
//     transaction that numbers and inserts the batch, so appends to one
//     session are serialized, across connections and master processes
//     alike; appends to different sessions run in parallel.
//   - Message IDs are unique across the store (a unique index). A message
//     ID already stored in another session is reported as a Duplicate with
//     Seq 0 and not stored again; two sessions racing for one message ID
//     are resolved by retrying the loser's transaction. Dedup covers
//     retained events: an event dropped by Trim no longer blocks its ID.
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
	"embed"
	"encoding/json"
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

//go:embed migrations/*.sql
var migrationFiles embed.FS

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

// dialect is PostgreSQL's side of the shared queries: $n placeholders,
// timestamptz times, a serial column for insertion order, LIMIT NULL
// (ALL) for none.
var dialect = sqlbody.Dialect{
	Name:        "postgres",
	Dollar:      true,
	Time:        func(t time.Time) any { return t },
	IsUnique:    func(err error) bool { return pgCode(err) == uniqueViolation },
	InsertOrder: "ord",
	NoLimit:     nil,
}

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
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, check.Wrap(ctx.Err(), "postgres", "open", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	s.body = &sqlbody.DB{D: dialect, R: db, W: db}
	return s, nil
}

// migrate applies the pending migrations in one transaction, holding an
// advisory lock so that concurrent Opens apply each migration once.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrate.Load(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLock); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			name       TEXT NOT NULL,
			applied_at TIMESTAMPTZ NOT NULL
		)`); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		var current int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		pending, err := migrate.Pending(ms, current)
		if err != nil {
			return err
		}
		for _, m := range pending {
			// No arguments: pgx uses the simple protocol, which runs a
			// file of several statements.
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("migrate %d_%s: %w", m.Version, m.Name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.Version, m.Name, check.Now()); err != nil {
				return fmt.Errorf("migrate %d_%s: %w", m.Version, m.Name, err)
			}
		}
		return nil
	})
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

func wrap(ctx context.Context, op string, err error) error {
	return check.Wrap(ctx.Err(), "postgres", op, err)
}

// pgCode is the SQLSTATE of err, "" when it is not a server error.
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// lostIDRace reports the errors after which an append is retried: another
// session's transaction stored one of the batch's message IDs first (or two
// such batches deadlocked on each other's IDs).
func lostIDRace(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	return pe.Code == deadlockDetected || pe.Code == uniqueViolation && pe.ConstraintName == "events_message_id_key"
}

const (
	uniqueViolation     = "23505"
	foreignKeyViolation = "23503"
	deadlockDetected    = "40P01"
)

// --- events ---

// AppendEvents stores evs as the session's next events, in one
// transaction: all of them or none.
func (s *Store) AppendEvents(ctx context.Context, sessionID string, evs []store.Event) ([]store.Event, error) {
	const op = "append events"
	if err := check.Events(sessionID, evs); err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", op, err)
	}
	for try := 1; ; try++ {
		out, err := s.appendOnce(ctx, sessionID, evs)
		if try < appendTries && lostIDRace(err) {
			// The next try's duplicate check sees the other session's row.
			continue
		}
		if err != nil {
			return nil, wrap(ctx, op, err)
		}
		return out, nil
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
	b.Queue(`SELECT message_id, session_id, seq FROM events WHERE message_id = ANY($1)`, ids)
	open = true
	last, known, err := readLockBatch(conn.SendBatch(ctx, b))
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
	)
	next := last
	for i, ev := range evs {
		ev.Duplicate = false
		ev.CreatedAt = check.OrNow(ev.CreatedAt)
		if st, ok := known[ev.MessageID]; ok {
			ev.Duplicate = true
			ev.Seq = 0
			if st.session == sessionID {
				ev.Seq = uint64(st.seq)
			}
			out[i] = ev
			continue
		}
		next++
		ev.Seq = uint64(next)
		known[ev.MessageID] = stored{sessionID, next} // a repeat later in the batch
		seqArr = append(seqArr, next)
		idArr = append(idArr, ev.MessageID)
		typeArr = append(typeArr, ev.Type)
		dataArr = append(dataArr, ev.Data)
		createdArr = append(createdArr, ev.CreatedAt)
		out[i] = ev
	}
	b = &pgx.Batch{}
	if next > last {
		b.Queue(`INSERT INTO events (session_id, seq, message_id, type, data, created_at)
			SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::text[], $5::bytea[], $6::timestamptz[])`,
			sessionID, seqArr, idArr, typeArr, dataArr, createdArr)
		b.Queue(`UPDATE sessions SET last_seq = $2, updated_at = greatest(updated_at, $3) WHERE id = $1`,
			sessionID, next, check.Now())
	}
	b.Queue(`COMMIT`)
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	open = false
	return out, nil
}

// readLockBatch reads the first batch's results: the session's last seq
// (pgx.ErrNoRows when it does not exist) and the stored message IDs.
func readLockBatch(br pgx.BatchResults) (last int64, known map[string]stored, err error) {
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
		known[id] = st
	}
	return last, known, rows.Err()
}

// OldestSeq is the seq of the oldest retained event (0 when none).
func (s *Store) OldestSeq(ctx context.Context, sessionID string) (uint64, error) {
	const op = "oldest seq"
	if err := check.ID("session", sessionID); err != nil {
		return 0, fmt.Errorf("postgres: %s: %w", op, err)
	}
	var (
		oldest *int64
		ok     bool
	)
	err := s.pool.QueryRow(ctx,
		`SELECT (SELECT min(seq) FROM events WHERE session_id = $1), EXISTS (SELECT 1 FROM sessions WHERE id = $1)`,
		sessionID).Scan(&oldest, &ok)
	if err != nil {
		return 0, wrap(ctx, op, err)
	}
	if !ok {
		return 0, fmt.Errorf("postgres: %s: session %s: %w", op, sessionID, store.ErrNotFound)
	}
	if oldest == nil {
		return 0, nil
	}
	return uint64(*oldest), nil
}

// Trim drops the session's oldest events, keeping the newest keep.
func (s *Store) Trim(ctx context.Context, sessionID string, keep int) error {
	const op = "trim"
	if err := check.ID("session", sessionID); err != nil {
		return fmt.Errorf("postgres: %s: %w", op, err)
	}
	if err := check.Keep(keep); err != nil {
		return fmt.Errorf("postgres: %s: %w", op, err)
	}
	// Retained seqs are a contiguous run ending at last_seq, so the newest
	// keep are exactly those above last_seq - keep.
	var found int
	err := s.pool.QueryRow(ctx,
		`WITH s AS (SELECT last_seq FROM sessions WHERE id = $1),
		      d AS (DELETE FROM events e USING s WHERE e.session_id = $1 AND e.seq <= s.last_seq - $2)
		 SELECT count(*) FROM s`, sessionID, keep).Scan(&found)
	if err != nil {
		return wrap(ctx, op, err)
	}
	if found == 0 {
		return fmt.Errorf("postgres: %s: session %s: %w", op, sessionID, store.ErrNotFound)
	}
	return nil
}

// --- interactions ---

// OpenInteraction records a new open interaction (ErrExists when its
// (session, id) is taken, ErrNotFound when the session does not exist).
func (s *Store) OpenInteraction(ctx context.Context, in store.Interaction) error {
	const op = "open interaction"
	if err := check.Interaction(in); err != nil {
		return fmt.Errorf("postgres: %s: %w", op, err)
	}
	_, err := s.pool.Exec(ctx,
		`INSERT INTO interactions (session_id, id, turn_id, request, created_at) VALUES ($1, $2, $3, $4, $5)`,
		in.SessionID, in.ID, in.TurnID, sqlbody.Blob(in.Request), check.OrNow(in.CreatedAt))
	switch pgCode(err) {
	case uniqueViolation:
		return fmt.Errorf("postgres: %s %s/%s: %w", op, in.SessionID, in.ID, store.ErrExists)
	case foreignKeyViolation:
		return fmt.Errorf("postgres: %s: session %s: %w", op, in.SessionID, store.ErrNotFound)
	}
	return wrap(ctx, op, err)
}

// SettleInteraction settles an open interaction with outcome (answered,
// timeout or cancelled) and answer; won is false when it was already
// settled.
func (s *Store) SettleInteraction(ctx context.Context, sessionID, id, outcome string, answer json.RawMessage) (bool, error) {
	const op = "settle interaction"
	if err := check.Settle(sessionID, id, outcome); err != nil {
		return false, fmt.Errorf("postgres: %s: %w", op, err)
	}
	// Concurrent updates of the row queue on its lock; each re-checks
	// outcome = '' after the previous one commits, so only the first
	// matches.
	tag, err := s.pool.Exec(ctx,
		`UPDATE interactions SET outcome = $1, answer = $2 WHERE session_id = $3 AND id = $4 AND outcome = ''`,
		outcome, sqlbody.Blob(answer), sessionID, id)
	if err != nil {
		return false, wrap(ctx, op, err)
	}
	if tag.RowsAffected() == 1 {
		return true, nil
	}
	var ok bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM interactions WHERE session_id = $1 AND id = $2)`,
		sessionID, id).Scan(&ok); err != nil {
		return false, wrap(ctx, op, err)
	}
	if !ok {
		return false, fmt.Errorf("postgres: %s %s/%s: %w", op, sessionID, id, store.ErrNotFound)
	}
	return false, nil
}
