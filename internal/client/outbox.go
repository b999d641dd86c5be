package client

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"sync"

	"github.com/ferry-dev/ferry/internal/sqlitefile"
)

// errOutboxClosed is returned by Append after Close.
var errOutboxClosed = errors.New("client: outbox closed")

// outbox keeps every agent.* and session.opened message the client produced
// until the master acknowledges it (master.ack), on disk, so that neither a
// dropped connection nor a client restart loses one.
//
// It is a small SQLite file rather than a hand-written append-only log:
// SQLite gives atomic appends, crash recovery and cheap deletion of an
// acknowledged prefix (no compaction pass to write and get right), and the
// pure-Go driver is already a dependency of the master's store. WAL mode
// with synchronous=NORMAL survives a crash of the process (what the outbox
// is for); only a power loss may drop the newest few messages.
//
// Entries are numbered by an increasing seq (the order they were written,
// which is the order they are sent). The outbox holds at most limit
// entries: Append blocks while it is full, so a producer slows down instead
// of anything being dropped.
type outbox struct {
	db    *sql.DB
	limit int
	// Statements are prepared once: parsing SQL was a third of the cost
	// of a message.
	insert, after, ack *sql.Stmt

	mu     sync.Mutex
	count  int
	closed bool
	// space is closed (and replaced) whenever entries leave the outbox.
	space chan struct{}
	// added gets a token whenever an entry is appended (capacity 1: the
	// one writer re-reads the outbox after each token).
	added chan struct{}
	done  chan struct{}
}

// outboxEntry is one unacknowledged message.
type outboxEntry struct {
	seq  int64
	id   string
	data []byte
}

func openOutbox(path string, limit int) (*outbox, error) {
	db, err := sqlitefile.Open(path, url.Values{"_pragma": {"journal_mode(WAL)", "synchronous(NORMAL)", "busy_timeout(5000)"}})
	if err != nil {
		return nil, fmt.Errorf("client: open outbox %s: %w", path, err)
	}
	// One connection: SQLite serialises writers anyway, and a single
	// connection makes every statement see the one before it.
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS outbox (
		seq INTEGER PRIMARY KEY AUTOINCREMENT,
		message_id TEXT NOT NULL UNIQUE,
		data BLOB NOT NULL
	)`); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("client: open outbox %s: %w", path, err)
	}
	o := &outbox{db: db, limit: limit, space: make(chan struct{}), added: make(chan struct{}, 1), done: make(chan struct{})}
	err = db.QueryRow(`SELECT COUNT(*) FROM outbox`).Scan(&o.count)
	for _, st := range []struct {
		stmt **sql.Stmt
		sql  string
	}{
		{&o.insert, `INSERT INTO outbox (message_id, data) VALUES (?, ?)`},
		{&o.after, `SELECT seq, message_id, data FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?`},
		{&o.ack, `DELETE FROM outbox WHERE seq <= (SELECT seq FROM outbox WHERE message_id = ?)`},
	} {
		if err == nil {
			*st.stmt, err = db.Prepare(st.sql)
		}
	}
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("client: open outbox %s: %w", path, err)
	}
	return o, nil
}

// Append stores one encoded message, waiting while the outbox is full. It
// fails only when ctx is done or the outbox is closed.
func (o *outbox) Append(ctx context.Context, id string, data []byte) error {
	return o.append(ctx, id, data, nil)
}

// append is Append; also, when set, runs in the same transaction as the
// insert (both happen or neither).
func (o *outbox) append(ctx context.Context, id string, data []byte, also func(*sql.Tx) error) error {
	o.mu.Lock()
	for !o.closed && o.count >= o.limit {
		space := o.space
		o.mu.Unlock()
		select {
		case <-space:
		case <-o.done:
		case <-ctx.Done():
			return fmt.Errorf("client: outbox full: %w", context.Cause(ctx))
		}
		o.mu.Lock()
	}
	defer o.mu.Unlock()
	if o.closed {
		return errOutboxClosed
	}
	// The insert runs under mu so that seq order is the order in which
	// Append calls were admitted.
	if err := o.insertWith(id, data, also); err != nil {
		return fmt.Errorf("client: outbox append: %w", err)
	}
	o.count++
	select {
	case o.added <- struct{}{}:
	default:
	}
	return nil
}

func (o *outbox) insertWith(id string, data []byte, also func(*sql.Tx) error) error {
	if also == nil {
		_, err := o.insert.Exec(id, data)
		return err
	}
	tx, err := o.db.Begin()
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.Stmt(o.insert).Exec(id, data); err != nil {
		return err
	}
	if err := also(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// After returns up to n entries with a seq above seq, oldest first.
func (o *outbox) After(seq int64, n int) ([]outboxEntry, error) {
	rows, err := o.after.Query(seq, n)
	if err != nil {
		return nil, fmt.Errorf("client: outbox read: %w", err)
	}
	defer func() { _ = rows.Close() }()
	var out []outboxEntry
	for rows.Next() {
		var e outboxEntry
		if err := rows.Scan(&e.seq, &e.id, &e.data); err != nil {
			return nil, fmt.Errorf("client: outbox read: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("client: outbox read: %w", err)
	}
	return out, nil
}

// Ack drops every entry up to and including the one with message id
// through (acks are cumulative). An id the outbox does not hold (already
// acknowledged, or never ours) changes nothing. It returns how many entries
// left.
func (o *outbox) Ack(through string) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return 0, errOutboxClosed
	}
	res, err := o.ack.Exec(through)
	if err != nil {
		return 0, fmt.Errorf("client: outbox ack: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("client: outbox ack: %w", err)
	}
	if n > 0 {
		o.count -= int(n)
		close(o.space)
		o.space = make(chan struct{})
	}
	return int(n), nil
}

// Len is the number of unacknowledged entries.
func (o *outbox) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.count
}

// Added is signalled after every Append.
func (o *outbox) Added() <-chan struct{} { return o.added }

// Close wakes blocked Appends (they fail) and closes the file.
func (o *outbox) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil
	}
	o.closed = true
	close(o.done)
	if err := o.db.Close(); err != nil {
		return fmt.Errorf("client: close outbox: %w", err)
	}
	return nil
}
