// Package sqlite is the embedded default store.Store: one SQLite file
// (modernc.org/sqlite, pure Go, no cgo) that holds tokens, machines,
// sessions, events and interactions.
//
// The queries both stores share live once in internal/store/internal/sqlbody;
// this package keeps its opening, migrations, checkpointing and the
// writes that need a BEGIN IMMEDIATE transaction or prepared statements.
//
// Guarantees, beyond those store.Store lists:
//
//   - The file is created 0600 and a missing parent directory 0700; SQLite
//     gives its -wal and -shm files the database file's mode.
//   - Writes go through one connection and every write transaction is BEGIN
//     IMMEDIATE, so writers never deadlock or fail midway on a lock, even
//     against another process on the same file (it waits busy_timeout).
//     Reads use a separate pool of read-only connections and, thanks to
//     WAL, never wait for a writer.
//   - Durability: journal_mode=WAL with synchronous=NORMAL. A committed
//     write survives a crash of the process (the master being killed): it
//     is in the WAL file, which the next Open replays. The WAL is fsynced
//     when a background goroutine checkpoints it into the database file,
//     every 250 ms while there are writes, so an operating-system crash or
//     power cut may lose the last such interval, never corrupt the file.
//     Keeping checkpoints (and their fsyncs) off the write path keeps an
//     append's latency steady.
//   - The schema is migrated forward on Open (numbered files under
//     migrations/, recorded in schema_migrations); a file written by a
//     newer ferry is refused rather than misread.
//   - Times are kept to the microsecond, in UTC.
//   - Message IDs are unique across the store. A message ID already stored
//     in another session is reported as a Duplicate with Seq 0 and not
//     stored again. Dedup covers retained events: an event dropped by Trim
//     no longer blocks its message ID.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/internal/check"
	"github.com/ferry-dev/ferry/internal/store/internal/migrate"
	"github.com/ferry-dev/ferry/internal/store/internal/sqlbody"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// busyTimeout is how long a write waits for another process's lock on the
// file before it fails (within one process the single writer connection
// already serializes writes).
const busyTimeout = 10 * time.Second

// readers is the size of the read-only connection pool.
const readers = 4

// checkpointEvery is how often the WAL is copied into the database file
// while there are writes.
const checkpointEvery = 250 * time.Millisecond

// Store is a store.Store on one SQLite file. It is safe for concurrent use.
type Store struct {
	// The queries shared with the PostgreSQL store; the alias keeps the
	// embedded field unexported.
	*body

	w *sql.DB // one connection: every write
	r *sql.DB // read-only pool

	// The append path's statements, prepared once on the writer: parsing
	// SQL is a third of an append's cost otherwise.
	lastSeq, insertEvent, eventByID, moveSeq *sql.Stmt

	ck *sql.DB // one connection: the checkpointer's

	dirty     atomic.Bool        // written since the last complete checkpoint
	stop      context.CancelFunc // ends the checkpointer
	stopped   chan struct{}      // closed when it has ended
	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*Store)(nil)

type body = sqlbody.DB

// dialect is SQLite's side of the shared queries: times as Unix
// microseconds, rowid for insertion order, LIMIT -1 for none.
var dialect = sqlbody.Dialect{
	Name:        "sqlite",
	Time:        func(t time.Time) any { return t.UnixMicro() },
	IsUnique:    isConstraint,
	InsertOrder: "rowid",
	NoLimit:     -1,
}

// Open opens (creating it when missing) the SQLite database at path and
// migrates its schema.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: open: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	// Create the file ourselves so that it gets 0600 (SQLite would use
	// 0644); SQLite copies this mode to the -wal and -shm files.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600) //nolint:gosec // the path is the operator's choice
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}

	s := &Store{stopped: make(chan struct{})}
	if err := s.open(ctx, abs); err != nil {
		_ = s.closeDBs()
		return nil, check.Wrap(ctx.Err(), "sqlite", "open "+path, err)
	}
	// The checkpointer lives until Close, not until Open's ctx ends.
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.stop = cancel
	go s.checkpointer(bg)
	return s, nil
}

// open opens the three handles, migrates and prepares; on error the caller
// closes what was opened.
func (s *Store) open(ctx context.Context, abs string) error {
	timeout := fmt.Sprint(busyTimeout.Milliseconds())
	w, err := sql.Open("sqlite", dsn(abs, url.Values{
		"_txlock":       {"immediate"},
		"_journal_mode": {"WAL"},
		"_synchronous":  {"NORMAL"},
		"_foreign_keys": {"1"},
		"_busy_timeout": {timeout},
		// The checkpointer goroutine does it, off the write path.
		"_pragma": {"wal_autocheckpoint(0)", "journal_size_limit(67108864)"},
	}))
	if err != nil {
		return err
	}
	// One connection that is never recycled: writes queue for it in Go
	// instead of contending for the file lock, and its prepared
	// statements stay valid.
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s.w = w
	if err := w.PingContext(ctx); err != nil {
		return err
	}
	if err := s.migrate(ctx); err != nil {
		return err
	}
	if err := s.prepare(ctx); err != nil {
		return err
	}

	r, err := sql.Open("sqlite", dsn(abs, url.Values{
		"_query_only":   {"1"},
		"_busy_timeout": {timeout},
	}))
	if err != nil {
		return err
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	r.SetConnMaxIdleTime(0)
	s.r = r
	if err := r.PingContext(ctx); err != nil {
		return err
	}
	s.body = &sqlbody.DB{D: dialect, R: r, W: w, Wrote: func() { s.dirty.Store(true) }}

	ck, err := sql.Open("sqlite", dsn(abs, url.Values{
		"_synchronous":  {"NORMAL"},
		"_busy_timeout": {timeout},
	}))
	if err != nil {
		return err
	}
	ck.SetMaxOpenConns(1)
	ck.SetMaxIdleConns(1)
	ck.SetConnMaxIdleTime(0)
	s.ck = ck
	return ck.PingContext(ctx)
}

// checkpointer copies the WAL into the database file every
// checkpointEvery while there are new writes. Doing it here rather than in
// the committing writer (SQLite's default) keeps the checkpoint's fsyncs,
// tens of milliseconds on some disks, out of AppendEvents' latency; a
// PASSIVE checkpoint never blocks the writer or the readers.
func (s *Store) checkpointer(ctx context.Context) {
	defer close(s.stopped)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !s.dirty.Swap(false) {
			continue
		}
		var busy, logFrames, done int
		err := s.ck.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &logFrames, &done)
		if err != nil || done < logFrames {
			s.dirty.Store(true) // try again next tick
		}
	}
}

// dsn is the driver's URI for the absolute path abs: the path is escaped so
// that '?', '#' and '%' in a file name stay part of it.
func dsn(abs string, q url.Values) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	return u.String()
}

// migrate applies the pending migrations and records them, all in one
// transaction.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrate.Load(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	if _, err := s.exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at INTEGER NOT NULL
	) STRICT`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		// One BEGIN IMMEDIATE transaction: two processes opening a new
		// file at once apply each migration once.
		var current int
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		pending, err := migrate.Pending(ms, current)
		if err != nil {
			return err
		}
		for _, m := range pending {
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("migrate %d_%s: %w", m.Version, m.Name, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.Version, m.Name, check.Now().UnixMicro()); err != nil {
				return fmt.Errorf("migrate %d_%s: %w", m.Version, m.Name, err)
			}
		}
		return nil
	})
}

// prepare prepares the append path's statements on the writer.
func (s *Store) prepare(ctx context.Context) error {
	for _, p := range []struct {
		st  **sql.Stmt
		sql string
	}{
		{&s.lastSeq, `SELECT last_seq FROM sessions WHERE id = ?`},
		{&s.insertEvent, `INSERT INTO events (session_id, seq, message_id, type, data, created_at) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (message_id) DO NOTHING`},
		{&s.eventByID, `SELECT session_id, seq FROM events WHERE message_id = ?`},
		{&s.moveSeq, `UPDATE sessions SET last_seq = ?, updated_at = max(updated_at, ?) WHERE id = ?`},
	} {
		st, err := s.w.PrepareContext(ctx, p.sql)
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		*p.st = st
	}
	return nil
}

// Close stops the checkpointer, merges the WAL into the file and closes
// the database; later calls return the first result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.stop()
		<-s.stopped
		var errs []error
		if s.ck != nil && s.dirty.Load() {
			// Best effort: the file is consistent either way.
			_, _ = s.ck.ExecContext(context.Background(), `PRAGMA wal_checkpoint(TRUNCATE)`)
		}
		errs = append(errs, s.closeDBs())
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("sqlite: close: %w", err)
		}
	})
	return s.closeErr
}

// closeDBs closes the statements and handles that were opened.
func (s *Store) closeDBs() error {
	var errs []error
	for _, st := range []*sql.Stmt{s.lastSeq, s.insertEvent, s.eventByID, s.moveSeq} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	for _, db := range []*sql.DB{s.ck, s.r, s.w} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	return errors.Join(errs...)
}

// wrap names the operation and keeps ctx.Err() in the chain.
func wrap(ctx context.Context, op string, err error) error {
	return check.Wrap(ctx.Err(), "sqlite", op, err)
}

// isConstraint reports a UNIQUE or PRIMARY KEY violation.
func isConstraint(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return true
	}
	return false
}

// exec runs one write statement on the writer.
func (s *Store) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	res, err := s.w.ExecContext(ctx, query, args...)
	s.dirty.Store(true)
	return res, err
}

// write runs fn in one BEGIN IMMEDIATE transaction on the writer.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	err = tx.Commit()
	s.dirty.Store(true)
	return err
}

// --- events ---

// AppendEvents stores evs as the session's next events, in one
// transaction: all of them or none.
func (s *Store) AppendEvents(ctx context.Context, sessionID string, evs []store.Event) ([]store.Event, error) {
	const op = "append events"
	if err := check.Events(sessionID, evs); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	out := make([]store.Event, len(evs))
	err := s.write(ctx, func(tx *sql.Tx) error {
		var last int64
		err := tx.StmtContext(ctx, s.lastSeq).QueryRowContext(ctx, sessionID).Scan(&last)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("session %s: %w", sessionID, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			return nil
		}
		ins := tx.StmtContext(ctx, s.insertEvent)
		next := last
		var inBatch map[string]uint64 // only needed for a batch of two or more
		if len(evs) > 1 {
			inBatch = make(map[string]uint64, len(evs))
		}
		for i, ev := range evs {
			ev.Duplicate = false
			ev.CreatedAt = check.OrNow(ev.CreatedAt)
			if seq, ok := inBatch[ev.MessageID]; ok {
				ev.Seq, ev.Duplicate = seq, true
				out[i] = ev
				continue
			}
			res, err := ins.ExecContext(ctx, sessionID, next+1, ev.MessageID, ev.Type, ev.Data, ev.CreatedAt.UnixMicro())
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			if n == 1 {
				next++
				ev.Seq = uint64(next)
			} else {
				// Stored before: keep its seq (0 when it belongs to
				// another session).
				var (
					owner string
					seq   int64
				)
				if err := tx.StmtContext(ctx, s.eventByID).QueryRowContext(ctx, ev.MessageID).Scan(&owner, &seq); err != nil {
					return err
				}
				ev.Duplicate = true
				if owner == sessionID {
					ev.Seq = uint64(seq)
				} else {
					ev.Seq = 0
				}
			}
			if inBatch != nil {
				inBatch[ev.MessageID] = ev.Seq
			}
			out[i] = ev
		}
		if next == last {
			return nil
		}
		_, err = tx.StmtContext(ctx, s.moveSeq).ExecContext(ctx, next, check.Now().UnixMicro(), sessionID)
		return err
	})
	if err != nil {
		return nil, wrap(ctx, op, err)
	}
	return out, nil
}

// OldestSeq is the seq of the oldest retained event (0 when none).
func (s *Store) OldestSeq(ctx context.Context, sessionID string) (uint64, error) {
	const op = "oldest seq"
	if err := check.ID("session", sessionID); err != nil {
		return 0, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	var oldest sql.NullInt64
	if err := s.r.QueryRowContext(ctx, `SELECT min(seq) FROM events WHERE session_id = ?`, sessionID).Scan(&oldest); err != nil {
		return 0, wrap(ctx, op, err)
	}
	if !oldest.Valid {
		if err := sqlbody.Exists(ctx, s.body, s.r, sessionID); err != nil {
			return 0, wrap(ctx, op, err)
		}
		return 0, nil
	}
	return uint64(oldest.Int64), nil
}

// Trim drops the session's oldest events, keeping the newest keep.
func (s *Store) Trim(ctx context.Context, sessionID string, keep int) error {
	const op = "trim"
	if err := check.ID("session", sessionID); err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	if err := check.Keep(keep); err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		var last int64
		err := tx.QueryRowContext(ctx, `SELECT last_seq FROM sessions WHERE id = ?`, sessionID).Scan(&last)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("session %s: %w", sessionID, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		// Retained seqs are a contiguous run ending at last_seq, so the
		// newest keep are exactly those above last_seq - keep.
		_, err = tx.ExecContext(ctx, `DELETE FROM events WHERE session_id = ? AND seq <= ?`, sessionID, last-int64(keep))
		return err
	})
	return wrap(ctx, op, err)
}

// --- interactions ---

// OpenInteraction records a new open interaction (ErrExists when its
// (session, id) is taken, ErrNotFound when the session does not exist).
func (s *Store) OpenInteraction(ctx context.Context, in store.Interaction) error {
	const op = "open interaction"
	if err := check.Interaction(in); err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := sqlbody.Exists(ctx, s.body, tx, in.SessionID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx,
			`INSERT INTO interactions (session_id, id, turn_id, request, created_at) VALUES (?, ?, ?, ?, ?)`,
			in.SessionID, in.ID, in.TurnID, sqlbody.Blob(in.Request), check.OrNow(in.CreatedAt).UnixMicro())
		if isConstraint(err) {
			return fmt.Errorf("interaction %s/%s: %w", in.SessionID, in.ID, store.ErrExists)
		}
		return err
	})
	return wrap(ctx, op, err)
}

// SettleInteraction settles an open interaction with outcome (answered,
// timeout or cancelled) and answer; won is false when it was already
// settled.
func (s *Store) SettleInteraction(ctx context.Context, sessionID, id, outcome string, answer json.RawMessage) (bool, error) {
	const op = "settle interaction"
	if err := check.Settle(sessionID, id, outcome); err != nil {
		return false, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	var won bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		// The outcome = '' condition makes the update the arbiter: one
		// transaction at a time runs it, and only the first matches.
		res, err := tx.ExecContext(ctx,
			`UPDATE interactions SET outcome = ?, answer = ? WHERE session_id = ? AND id = ? AND outcome = ''`,
			outcome, sqlbody.Blob(answer), sessionID, id)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 1 {
			won = true
			return nil
		}
		var one int
		err = tx.QueryRowContext(ctx, `SELECT 1 FROM interactions WHERE session_id = ? AND id = ?`, sessionID, id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("interaction %s/%s: %w", sessionID, id, store.ErrNotFound)
		}
		return err
	})
	if err != nil {
		return false, wrap(ctx, op, err)
	}
	return won, nil
}
