package transcript

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/sqlitefile"
)

// Defaults of Options.
const (
	// DefaultMaxBytes bounds one session's saved messages (encoded).
	DefaultMaxBytes = 32 << 20
	// DefaultMaxAge: a transcript not saved for this long is dropped when
	// the store opens and by Prune (the client never learns that a session
	// was deleted). It is how long ferry keeps any of a session's state on
	// the client: internal/client prunes the sessions' file histories by
	// the same age.
	DefaultMaxAge = 90 * 24 * time.Hour
)

// maxReadStateBytes bounds the saved read state: past it the state is not
// kept (the agent reads files again, which is always safe).
const maxReadStateBytes = 4 << 20

// Options tune a SQLite store; zero values take the defaults.
type Options struct {
	// MaxBytes bounds one session's encoded messages.
	MaxBytes int
	// MaxAge drops, at Open and by Prune, transcripts not saved for that
	// long.
	MaxAge time.Duration
}

// SQLite is the Store on a SQLite file.
type SQLite struct {
	db   *sql.DB
	opts Options

	mu sync.Mutex
	// rows holds, per session, the hash of every message row as last saved
	// or loaded, so that Save writes only the rows that changed. A session
	// missing here is rewritten whole.
	rows map[string][][sha256.Size]byte
}

var _ Store = (*SQLite)(nil)

// Open opens (creating it if needed) the transcript store at path and drops
// the transcripts older than opts.MaxAge.
func Open(ctx context.Context, path string, opts Options) (*SQLite, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = DefaultMaxAge
	}
	// synchronous=FULL: a Save that returned is on disk, so a kill right
	// after a step (or a power loss) keeps that step.
	db, err := sqlitefile.Open(path, url.Values{"_pragma": {"journal_mode(WAL)", "synchronous(FULL)", "busy_timeout(5000)"}})
	if err != nil {
		return nil, fmt.Errorf("transcript: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	_, err = db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS transcripts (
		session_id TEXT PRIMARY KEY,
		turn_open  INTEGER NOT NULL,
		read_state BLOB,
		marks      BLOB,
		messages   INTEGER NOT NULL,
		saved_at   INTEGER NOT NULL
	);
	CREATE TABLE IF NOT EXISTS messages (
		session_id TEXT NOT NULL,
		idx        INTEGER NOT NULL,
		data       BLOB NOT NULL,
		PRIMARY KEY (session_id, idx)
	)`)
	if err == nil {
		err = prune(ctx, db, time.Now().Add(-opts.MaxAge))
	}
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("transcript: open %s: %w", path, err)
	}
	return &SQLite{db: db, opts: opts, rows: map[string][][sha256.Size]byte{}}, nil
}

func prune(ctx context.Context, db *sql.DB, before time.Time) error {
	_, err := pruneBefore(ctx, db, before)
	return err
}

// pruneBefore drops the transcripts saved before before, in one
// transaction, and returns their sessions.
func pruneBefore(ctx context.Context, db *sql.DB, before time.Time) ([]string, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	rows, err := tx.QueryContext(ctx, `SELECT session_id FROM transcripts WHERE saved_at < ?`, before.UnixNano())
	if err != nil {
		return nil, err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			_ = rows.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM messages WHERE session_id IN (SELECT session_id FROM transcripts WHERE saved_at < ?)`, before.UnixNano()); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM transcripts WHERE saved_at < ?`, before.UnixNano()); err != nil {
		return nil, err
	}
	return ids, tx.Commit()
}

// Prune drops the transcripts not saved for Options.MaxAge (as Open does),
// for a store that stays open for long, and returns how many it dropped.
func (s *SQLite) Prune(ctx context.Context) (int, error) {
	return s.PruneBefore(ctx, time.Now().Add(-s.opts.MaxAge))
}

// PruneBefore drops the transcripts last saved before t.
func (s *SQLite) PruneBefore(ctx context.Context, t time.Time) (int, error) {
	ids, err := pruneBefore(ctx, s.db, t)
	for _, id := range ids {
		s.forget(id) // its next Save writes it whole
	}
	if err != nil {
		return 0, fmt.Errorf("transcript: prune: %w", err)
	}
	return len(ids), nil
}

// Load returns the session's transcript.
func (s *SQLite) Load(ctx context.Context, sessionID string) (Transcript, error) {
	var (
		t     Transcript
		open  int
		rs    []byte
		marks []byte
		count int
	)
	err := s.db.QueryRowContext(ctx, `SELECT turn_open, read_state, marks, messages FROM transcripts WHERE session_id = ?`, sessionID).Scan(&open, &rs, &marks, &count)
	if errors.Is(err, sql.ErrNoRows) {
		return Transcript{}, ErrNotFound
	}
	if err != nil {
		return Transcript{}, fmt.Errorf("transcript: load %s: %w", sessionID, err)
	}
	t.TurnOpen = open != 0
	if len(rs) > 0 {
		if len(rs) > maxReadStateBytes || !json.Valid(rs) {
			return Transcript{}, fmt.Errorf("%w: session %s: the read state does not decode", ErrCorrupt, sessionID)
		}
		t.ReadState = rs
	}
	if len(marks) > 0 {
		if len(marks) > maxReadStateBytes || !json.Valid(marks) {
			return Transcript{}, fmt.Errorf("%w: session %s: the turn marks do not decode", ErrCorrupt, sessionID)
		}
		t.Marks = marks
	}
	rows, err := s.db.QueryContext(ctx, `SELECT idx, data FROM messages WHERE session_id = ? ORDER BY idx`, sessionID)
	if err != nil {
		return Transcript{}, fmt.Errorf("transcript: load %s: %w", sessionID, err)
	}
	defer func() { _ = rows.Close() }()
	var hashes [][sha256.Size]byte
	total := 0
	for rows.Next() {
		var (
			idx  int
			data []byte
		)
		if err := rows.Scan(&idx, &data); err != nil {
			return Transcript{}, fmt.Errorf("transcript: load %s: %w", sessionID, err)
		}
		total += len(data)
		switch {
		case idx != len(t.Messages):
			return Transcript{}, fmt.Errorf("%w: session %s: message %d is missing", ErrCorrupt, sessionID, len(t.Messages))
		case len(data) > s.opts.MaxBytes || total > s.opts.MaxBytes:
			return Transcript{}, fmt.Errorf("%w: session %s: message %d is over the %d-byte limit", ErrCorrupt, sessionID, idx, s.opts.MaxBytes)
		}
		var m llm.Message
		if err := json.Unmarshal(data, &m); err != nil {
			return Transcript{}, fmt.Errorf("%w: session %s: message %d does not decode: %w", ErrCorrupt, sessionID, idx, err)
		}
		if m.Role != llm.RoleUser && m.Role != llm.RoleAssistant {
			return Transcript{}, fmt.Errorf("%w: session %s: message %d has role %q", ErrCorrupt, sessionID, idx, m.Role)
		}
		t.Messages = append(t.Messages, m)
		hashes = append(hashes, sha256.Sum256(data))
	}
	if err := rows.Err(); err != nil {
		return Transcript{}, fmt.Errorf("transcript: load %s: %w", sessionID, err)
	}
	if len(t.Messages) != count {
		return Transcript{}, fmt.Errorf("%w: session %s: %d messages stored, %d expected", ErrCorrupt, sessionID, len(t.Messages), count)
	}
	s.mu.Lock()
	s.rows[sessionID] = hashes
	s.mu.Unlock()
	return t, nil
}

// Save replaces the session's transcript, writing only the changed rows.
func (s *SQLite) Save(ctx context.Context, sessionID string, t Transcript) error {
	blobs := make([][]byte, len(t.Messages))
	sizes := make([]int, len(t.Messages))
	total := 0
	for i, m := range t.Messages {
		b, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("transcript: save %s: message %d: %w", sessionID, i, err)
		}
		blobs[i], sizes[i] = b, len(b)
		total += len(b)
	}
	marks := t.Marks
	if total > s.opts.MaxBytes {
		marks = nil // the kept turns no longer start where the marks say
		var err error
		if blobs, err = s.fit(t.Messages, sizes); err != nil {
			return fmt.Errorf("transcript: save %s: %w", sessionID, err)
		}
	}
	rs := t.ReadState
	if len(rs) > maxReadStateBytes {
		rs = nil
	}
	if len(marks) > maxReadStateBytes {
		marks = nil
	}
	hashes := make([][sha256.Size]byte, len(blobs))
	for i, b := range blobs {
		hashes[i] = sha256.Sum256(b)
	}
	s.mu.Lock()
	prev, known := s.rows[sessionID]
	s.mu.Unlock()

	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("transcript: save %s: %w", sessionID, err)
	}
	defer func() { _ = tx.Rollback() }()
	if known {
		// A Prune may have dropped the rows since they were cached: then
		// the whole transcript is written again.
		var n int
		err := tx.QueryRowContext(ctx, `SELECT messages FROM transcripts WHERE session_id = ?`, sessionID).Scan(&n)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			known = false
		case err != nil:
			return fmt.Errorf("transcript: save %s: %w", sessionID, err)
		}
	}
	for i, b := range blobs {
		if known && i < len(prev) && prev[i] == hashes[i] {
			continue
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO messages (session_id, idx, data) VALUES (?, ?, ?)
			ON CONFLICT (session_id, idx) DO UPDATE SET data = excluded.data`, sessionID, i, b); err != nil {
			return fmt.Errorf("transcript: save %s: %w", sessionID, err)
		}
	}
	if !known || len(prev) > len(blobs) {
		if _, err := tx.ExecContext(ctx, `DELETE FROM messages WHERE session_id = ? AND idx >= ?`, sessionID, len(blobs)); err != nil {
			return fmt.Errorf("transcript: save %s: %w", sessionID, err)
		}
	}
	open := 0
	if t.TurnOpen {
		open = 1
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO transcripts (session_id, turn_open, read_state, marks, messages, saved_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (session_id) DO UPDATE SET turn_open = excluded.turn_open, read_state = excluded.read_state, marks = excluded.marks,
		messages = excluded.messages, saved_at = excluded.saved_at`,
		sessionID, open, []byte(rs), []byte(marks), len(blobs), time.Now().UnixNano()); err != nil {
		return fmt.Errorf("transcript: save %s: %w", sessionID, err)
	}
	if err := tx.Commit(); err != nil {
		// The cache may no longer match the rows: rewrite whole next time.
		s.forget(sessionID)
		return fmt.Errorf("transcript: save %s: %w", sessionID, err)
	}
	s.mu.Lock()
	s.rows[sessionID] = hashes
	s.mu.Unlock()
	return nil
}

// fit returns the encoded messages to save for a history over MaxBytes:
// the most recent whole turns that fit (a turn starts at a user message
// with no tool results, so a tool call keeps its result), the first of
// them led by droppedNote.
func (s *SQLite) fit(msgs []llm.Message, sizes []int) ([][]byte, error) {
	budget := s.opts.MaxBytes - len(droppedNote) - 64
	from, size := len(msgs), 0
	for i := len(msgs) - 1; i >= 0; i-- {
		size += sizes[i]
		if size > budget {
			break
		}
		if turnStart(msgs[i]) {
			from = i
		}
	}
	kept := slices.Clone(msgs[from:])
	if len(kept) == 0 {
		// Not even the last turn fits: keep only the note.
		kept = []llm.Message{{Role: llm.RoleUser}}
	}
	first := kept[0]
	first.Content = append([]llm.Block{{Type: llm.BlockText, Text: droppedNote}}, first.Content...)
	kept[0] = first
	out := make([][]byte, len(kept))
	for i, m := range kept {
		b, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		out[i] = b
	}
	if len(kept) == 1 && len(kept[0].Content) == 1 {
		// A lone note: make the history end with the model's turn, as a
		// finished conversation does.
		b, _ := json.Marshal(llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockText, Text: "Understood."}}})
		out = append(out, b)
	}
	return out, nil
}

func turnStart(m llm.Message) bool {
	if m.Role != llm.RoleUser {
		return false
	}
	return !slices.ContainsFunc(m.Content, func(b llm.Block) bool { return b.Type == llm.BlockToolResult })
}

// Delete forgets the session's transcript.
func (s *SQLite) Delete(ctx context.Context, sessionID string) error {
	s.forget(sessionID)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("transcript: delete %s: %w", sessionID, err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, q := range []string{`DELETE FROM messages WHERE session_id = ?`, `DELETE FROM transcripts WHERE session_id = ?`} {
		if _, err := tx.ExecContext(ctx, q, sessionID); err != nil {
			return fmt.Errorf("transcript: delete %s: %w", sessionID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("transcript: delete %s: %w", sessionID, err)
	}
	return nil
}

func (s *SQLite) forget(sessionID string) {
	s.mu.Lock()
	delete(s.rows, sessionID)
	s.mu.Unlock()
}

// Close closes the file.
func (s *SQLite) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("transcript: close: %w", err)
	}
	return nil
}
