// Package sqlite is the embedded default store.Store: one SQLite file
// (modernc.org/sqlite, pure Go, no cgo) that holds tokens, machines,
// sessions, events and interactions.
//
// The queries both stores share, and the checks of every call's
// arguments, live once in internal/store/internal/sqlbody; the migration
// driver is internal/store/internal/migrate's. This package keeps its
// opening, its schema files (STRICT tables, Unix-microsecond times),
// checkpointing and the two hot writes done its own way: AppendEvents
// (prepared statements in one BEGIN IMMEDIATE transaction) and Trim.
//
// Guarantees, beyond those store.Store lists:
//
//   - The file is created 0600 and a missing parent directory 0700; SQLite
//     gives its -wal and -shm files the database file's mode; a file an
//     older ferry left looser is tightened on Open (internal/sqlitefile).
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
//   - The WAL stays bounded under sustained writes. A background checkpoint
//     never completes while writes go on meanwhile, and SQLite only starts
//     a WAL over after a complete one, so under a steady stream of writes
//     it grew by every page written (about 100 MB/s at 5,000 events/s)
//     until the writes paused. Past walBound (1 GiB) the checkpointer
//     catches up off the write path (it flushes the WAL, then copies what
//     was written meanwhile), then finishes the checkpoint on the writer's
//     connection, holding writes for that moment (two fsyncs of little
//     data), and the next write starts the WAL over. The file keeps its
//     size (up to twice walBound): truncating it freed blocks, and on ext4
//     with discard that held every write 300-450 ms for 1 GiB, 55 ms for
//     the few megabytes written past the bound.
//   - The schema is migrated forward on Open (numbered files under
//     migrations/, recorded in schema_migrations); a file written by a
//     newer ferry is refused rather than misread.
//   - Times are kept to the microsecond, in UTC.
//   - Message IDs are unique per session, found by a cache of each
//     session's retained IDs (dedup.go) rather than an index: no page
//     write per event for them. Dedup covers retained events: an event
//     dropped by Trim no longer blocks its message ID. The cache holds at
//     most maxCachedIDs IDs (about 9 MB) beyond the session appended to;
//     a session it forgot is read again on its next append.
package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/ferry-dev/ferry/internal/sqlitefile"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/internal/check"
	"github.com/ferry-dev/ferry/internal/store/internal/migrate"
	"github.com/ferry-dev/ferry/internal/store/internal/sqlbody"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// ferry_lower is strings.ToLower for the shared search query: SQLite's
// own lower() folds ASCII only, and a search must match "Über" with
// "über" on both backends alike.
func init() {
	sqlite.MustRegisterDeterministicScalarFunction("ferry_lower", 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		switch v := args[0].(type) {
		case string:
			return strings.ToLower(v), nil
		case []byte:
			return strings.ToLower(string(v)), nil
		case nil:
			return nil, nil
		}
		return nil, fmt.Errorf("ferry_lower: unexpected %T", args[0])
	})
}

// busyTimeout is how long a write waits for another process's lock on the
// file before it fails (within one process the single writer connection
// already serializes writes).
const busyTimeout = 10 * time.Second

// readers is the size of the read-only connection pool.
const readers = 4

// checkpointEvery is how often the WAL is copied into the database file
// while there are writes; a variable for the tests.
var checkpointEvery = 250 * time.Millisecond

// walBound is the WAL size past which the checkpointer makes it start
// over (resetWAL). Each time holds the writes for the rest of a
// checkpoint, two fsyncs mostly: 40-50 ms on the project's VM. So the
// bound is high: about 11 s of writes at 5,000 events/s, or 2 minutes at
// 500; a variable for the tests.
var walBound int64 = 1 << 30

// Store is a store.Store on one SQLite file. It is safe for concurrent use.
type Store struct {
	// The queries shared with the PostgreSQL store; the alias keeps the
	// embedded field unexported.
	*body

	w *sql.DB // one connection: every write
	r *sql.DB // read-only pool

	// The append path's statements, prepared once on the writer: parsing
	// SQL is a third of an append's cost otherwise.
	lastSeq, insertEvent, idAtSeq, moveSeq, touch *sql.Stmt

	// writeMu is held across every append's and trim's transaction and
	// the update of ids after it (dedup.go).
	writeMu sync.Mutex
	ids     *idCache

	ck       *sql.DB // one connection: the checkpointer's
	pageSize int64   // the file's page size, for the WAL's size

	dirty     atomic.Bool        // written since the last complete checkpoint
	wal       *os.File           // the -wal file, for catchUp's flushes; nil if it could not be opened
	stop      context.CancelFunc // ends the checkpointer
	stopped   chan struct{}      // closed when it has ended
	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*Store)(nil)

type body = sqlbody.DB

// dialect tells the shared queries SQLite's constraint errors.
var dialect = sqlbody.SQLite(isConstraint, isForeignKey)

// Open opens (creating it when missing) the SQLite database at path and
// migrates its schema.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: open: empty path")
	}
	// 0600 from the start, and tightened if an older ferry left it
	// looser; the three handles below then find it prepared.
	abs, err := sqlitefile.Prepare(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}

	s := &Store{stopped: make(chan struct{}), ids: newIDCache()}
	if err := s.open(ctx, abs); err != nil {
		_ = s.closeDBs()
		return nil, check.Wrap(ctx.Err(), "sqlite", "open "+path, err)
	}
	// The checkpointer lives until Close, not until Open's ctx ends.
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.stop = cancel
	// A handle of our own on the WAL for catchUp's flushes. It is closed
	// only after SQLite's connections: closing any descriptor of a file
	// drops the process's POSIX locks on it.
	if f, err := os.Open(abs + "-wal"); err == nil { //nolint:gosec // the store's own file
		s.wal = f
	}
	go s.checkpointer(bg)
	return s, nil
}

// open opens the three handles, migrates and prepares; on error the caller
// closes what was opened.
func (s *Store) open(ctx context.Context, abs string) error {
	timeout := fmt.Sprint(busyTimeout.Milliseconds())
	// One writer connection: writes queue for it in Go instead of
	// contending for the file lock.
	if err := openHandle(ctx, abs, url.Values{
		"_txlock":       {"immediate"},
		"_journal_mode": {"WAL"},
		"_synchronous":  {"NORMAL"},
		"_foreign_keys": {"1"},
		"_busy_timeout": {timeout},
		// The checkpointer goroutine does it, off the write path.
		// The WAL is not truncated when it starts over, unless it went
		// past twice the bound: freeing its blocks costs the next writes
		// far more than reusing them (see the package doc).
		"_pragma": {"wal_autocheckpoint(0)", fmt.Sprintf("journal_size_limit(%d)", 2*walBound)},
	}, 1, &s.w); err != nil {
		return err
	}
	s.body = &sqlbody.DB{D: dialect, W: s.w, Wrote: func() { s.dirty.Store(true) },
		Hot: sqlbody.Hot{AppendEvents: s.appendEvents, Trim: s.trim}}
	if err := s.migrate(ctx); err != nil {
		return err
	}
	if err := s.prepare(ctx); err != nil {
		return err
	}
	if err := openHandle(ctx, abs, url.Values{
		"_query_only":   {"1"},
		"_busy_timeout": {timeout},
	}, readers, &s.r); err != nil {
		return err
	}
	s.R = s.r
	if err := s.w.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&s.pageSize); err != nil {
		return err
	}
	return openHandle(ctx, abs, url.Values{
		"_synchronous":  {"NORMAL"},
		"_busy_timeout": {timeout},
	}, 1, &s.ck)
}

// openHandle opens a handle of n connections on the file into *dst and
// pings it. Its connections are never recycled: the writer's prepared
// statements stay valid, and no reader pays for reopening the file.
func openHandle(ctx context.Context, abs string, q url.Values, n int, dst **sql.DB) error {
	db, err := sqlitefile.Open(abs, q)
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	*dst = db // the caller closes it, on a failed ping too
	return db.PingContext(ctx)
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
		logFrames, done, err := checkpointOn(ctx, s.ck)
		if err == nil && int64(logFrames)*(s.pageSize+walFrameHeader) >= walBound {
			logFrames, done, err = s.catchUp(ctx)
			if err == nil {
				logFrames, done, err = s.resetWAL(ctx)
			}
		}
		if err != nil || done < logFrames {
			s.dirty.Store(true) // try again next tick
		}
	}
}

// catchUp brings the checkpoint close to the WAL's end without holding
// the writer, so that resetWAL's hold is short. It first flushes the WAL's
// written pages to the disk: the hold's checkpoint starts with an fsync of
// the WAL, which would otherwise write out everything since the last
// checkpoint, tens of megabytes under a steady stream, inside the hold.
// Then passive rounds copy what was written meanwhile, until at most
// catchUpFrames are left or catchUpRounds have run.
func (s *Store) catchUp(ctx context.Context) (logFrames, done int, err error) {
	if s.wal != nil {
		_ = s.wal.Sync() // best effort: the checkpoint syncs again
	}
	for range catchUpRounds {
		if logFrames, done, err = checkpointOn(ctx, s.ck); err != nil || logFrames-done <= catchUpFrames {
			break
		}
	}
	return logFrames, done, err
}

// catchUpFrames and catchUpRounds bound catchUp: what may be left for the
// writer's hold (1,024 frames, 4 MB at 4 KB a page) and how many passive
// rounds may try to get there (the WAL grows meanwhile); when the writes
// outpace the copying, the hold copies the rest.
const (
	catchUpFrames = 1024
	catchUpRounds = 3
)

// walFrameHeader is the bytes SQLite writes before each page in the WAL.
const walFrameHeader = 24

// resetWAL checkpoints what is left of the WAL on the writer's own
// connection, so that no write runs meanwhile: the checkpoint completes,
// and the next write starts the WAL over. Writes wait in Go for the
// connection, not in SQLite's busy handler, which sleeps in steps of up to
// 100 ms.
func (s *Store) resetWAL(ctx context.Context) (logFrames, done int, err error) {
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = conn.Close() }()
	return checkpointOn(ctx, conn)
}

// checkpointOn runs a PASSIVE checkpoint on q and returns the WAL's size
// and how much of it is now in the database file, in frames.
func checkpointOn(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (logFrames, done int, err error) {
	var busy int
	err = q.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &logFrames, &done)
	return logFrames, done, err
}

// migrate applies the pending migrations and records them, all in one
// transaction.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrate.Load(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	if _, err := s.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at INTEGER NOT NULL
	) STRICT`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	// One BEGIN IMMEDIATE transaction: two processes opening a new file
	// at once apply each migration once.
	return sqlbody.Write(ctx, s.body, func(tx *sql.Tx) error {
		return migrate.Apply(ctx, tx, ms,
			`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`, check.Now().UnixMicro())
	})
}

// prepare prepares the append path's statements on the writer.
func (s *Store) prepare(ctx context.Context) error {
	for _, p := range []struct {
		st  **sql.Stmt
		sql string
	}{
		{&s.lastSeq, `SELECT last_seq FROM sessions WHERE id = ?`},
		{&s.insertEvent, `INSERT INTO events (session_id, seq, message_id, type, data, created_at) VALUES (?, ?, ?, ?, ?, ?)`},
		{&s.idAtSeq, `SELECT message_id FROM events WHERE session_id = ? AND seq = ?`},
		// Two statements: SQLite rewrites the entries of every index on
		// a column an UPDATE sets, changed or not, and updated_at has
		// three; touch changes no row most of the time (ActivityStep).
		{&s.moveSeq, `UPDATE sessions SET last_seq = ? WHERE id = ?`},
		{&s.touch, `UPDATE sessions SET updated_at = ? WHERE id = ? AND updated_at <= ?`},
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
		if s.wal != nil {
			errs = append(errs, s.wal.Close())
		}
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("sqlite: close: %w", err)
		}
	})
	return s.closeErr
}

// closeDBs closes the statements and handles that were opened.
func (s *Store) closeDBs() error {
	var errs []error
	for _, st := range []*sql.Stmt{s.lastSeq, s.insertEvent, s.idAtSeq, s.moveSeq, s.touch} {
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

// isForeignKey reports a FOREIGN KEY violation: what a row refers to does
// not exist.
func isForeignKey(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
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

// --- events ---

// appendEvents is AppendEvents' hot path (sqlbody.Hot): one BEGIN
// IMMEDIATE transaction of prepared statements, duplicates found in the
// session's idCache.
func (s *Store) appendEvents(ctx context.Context, sessionID string, evs []store.Event) ([]store.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Not cancelled midway: the driver watches a cancellable context with a
	// goroutine per statement, which costs more than these few row writes
	// (busy_timeout bounds a wait for the lock all the same).
	ctx = context.WithoutCancel(ctx)
	out := make([]store.Event, len(evs))
	var added []idEntry
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	err := sqlbody.Write(ctx, s.body, func(tx *sql.Tx) error {
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
		known, err := s.ids.load(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		ins := tx.StmtContext(ctx, s.insertEvent)
		next := last
		active := false               // a new event that is not quiet moves updated_at
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
			sum := s.ids.sum(ev.MessageID)
			seq, dup, err := s.storedAt(ctx, tx, sessionID, known, sum, ev.MessageID)
			if err != nil {
				return err
			}
			if dup {
				ev.Seq, ev.Duplicate = seq, true
			} else {
				if _, err := ins.ExecContext(ctx, sessionID, next+1, ev.MessageID, ev.Type, ev.Data, ev.CreatedAt.UnixMicro()); err != nil {
					return err
				}
				next++
				ev.Seq = uint64(next)
				added = append(added, idEntry{sum, ev.Seq})
				active = active || !ev.Quiet
				// Prompts and turn starts only: no statement for the
				// stream of other events.
				if ev.Deliver || ev.Answers != "" {
					if err := s.deliveries(ctx, tx, sessionID, ev); err != nil {
						return err
					}
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
		if _, err := tx.StmtContext(ctx, s.moveSeq).ExecContext(ctx, next, sessionID); err != nil {
			return err
		}
		if !active {
			return nil
		}
		now := check.Now()
		_, err = tx.StmtContext(ctx, s.touch).ExecContext(ctx, now.UnixMicro(), sessionID, now.Add(-check.ActivityStep).UnixMicro())
		return err
	})
	if err != nil {
		s.ids.drop(sessionID)
		return nil, err
	}
	s.ids.stored(sessionID, added)
	return out, nil
}

// storedAt reports whether the session already holds messageID (whose
// hash is sum), and at which seq: the cache's hit is confirmed against
// the row it names.
func (s *Store) storedAt(ctx context.Context, tx *sql.Tx, sessionID string, known *sessionIDs, sum uint64, messageID string) (uint64, bool, error) {
	seq, ok := known.seqOf[sum]
	if !ok {
		return 0, false, nil
	}
	var id string
	err := tx.StmtContext(ctx, s.idAtSeq).QueryRowContext(ctx, sessionID, seq).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return seq, id == messageID, nil
}

// deliveries records a new event stored with Deliver as undelivered, and
// delivers the event a new event Answers, inside the append's transaction.
func (s *Store) deliveries(ctx context.Context, tx *sql.Tx, sessionID string, ev store.Event) error {
	if ev.Deliver {
		if _, err := tx.ExecContext(ctx, sqlbody.InsertDelivery, sessionID, ev.MessageID, check.Seq(ev.Seq), ev.CreatedAt.UnixMicro()); err != nil {
			return err
		}
	}
	if ev.Answers != "" {
		if _, err := tx.ExecContext(ctx, sqlbody.DeleteDelivery, sessionID, ev.Answers); err != nil {
			return err
		}
	}
	return nil
}

// trim is Trim's hot path (sqlbody.Hot): last_seq and the delete in one
// transaction; the session's idCache entries go with the events.
func (s *Store) trim(ctx context.Context, sessionID string, keep int) error {
	var through int64
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	err := sqlbody.Write(ctx, s.body, func(tx *sql.Tx) error {
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
		through = last - int64(keep)
		_, err = tx.ExecContext(ctx, `DELETE FROM events WHERE session_id = ? AND seq <= ?`, sessionID, through)
		return err
	})
	switch {
	case err != nil:
		s.ids.drop(sessionID)
	case through > 0:
		s.ids.trimmed(sessionID, uint64(through))
	}
	return err
}

// DeleteSession deletes the session (store.Store) and forgets its
// message IDs.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.ids.drop(id)
	return s.body.DeleteSession(ctx, id)
}

// DeleteUnprompted deletes the session while it is unprompted
// (store.Store) and forgets its message IDs.
func (s *Store) DeleteUnprompted(ctx context.Context, id string) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.ids.drop(id)
	return s.body.DeleteUnprompted(ctx, id)
}
