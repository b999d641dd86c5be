package sqlbody

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/internal/check"
)

// Exists is nil when the session exists, an error wrapping ErrNotFound
// when it does not; it reads through q (db's readers, or a transaction).
// It is a function, not a method, so that the stores do not export it.
func Exists(ctx context.Context, db *DB, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, sessionID string) error {
	var one int
	err := q.QueryRowContext(ctx, db.q(`SELECT 1 FROM sessions WHERE id = ?`), sessionID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("session %s: %w", sessionID, store.ErrNotFound)
	}
	return err
}

// --- events ---

// Events returns up to limit (no limit when limit <= 0) retained events
// with seq > afterSeq, in order. ErrNotFound when the session does not
// exist.
func (db *DB) Events(ctx context.Context, sessionID string, afterSeq uint64, limit int) ([]store.Event, error) {
	const op = "events"
	if err := check.ID("session", sessionID); err != nil {
		return nil, db.fail(op, err)
	}
	lim := db.D.NoLimit
	if limit > 0 {
		lim = limit
	}
	rows, err := db.query(ctx,
		`SELECT seq, message_id, type, data, created_at FROM events
		 WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
		sessionID, check.Seq(afterSeq), lim)
	if err != nil {
		return nil, db.wrap(ctx, op, err)
	}
	out, err := CollectRows(rows, func(row Scanner) (store.Event, error) {
		var (
			ev      store.Event
			seq     int64
			created Time
		)
		if err := row.Scan(&seq, &ev.MessageID, &ev.Type, &ev.Data, &created); err != nil {
			return store.Event{}, err
		}
		ev.Seq = uint64(seq) //nolint:gosec // stored from a checked uint64
		ev.CreatedAt = created.T
		return ev, nil
	})
	return sessionList(ctx, db, op, sessionID, out, err)
}

// --- interactions ---

// OpenInteractions lists a session's open interactions, oldest first
// (ties in the order they were opened). ErrNotFound when the session does
// not exist.
func (db *DB) OpenInteractions(ctx context.Context, sessionID string) ([]store.Interaction, error) {
	const op = "open interactions"
	if err := check.ID("session", sessionID); err != nil {
		return nil, db.fail(op, err)
	}
	rows, err := db.query(ctx,
		`SELECT id, turn_id, request, created_at FROM interactions
		 WHERE session_id = ? AND outcome = '' ORDER BY created_at, `+db.D.InsertOrder, sessionID)
	if err != nil {
		return nil, db.wrap(ctx, op, err)
	}
	out, err := CollectRows(rows, func(row Scanner) (store.Interaction, error) {
		var (
			in      = store.Interaction{SessionID: sessionID}
			req     []byte
			created Time
		)
		if err := row.Scan(&in.ID, &in.TurnID, &req, &created); err != nil {
			return store.Interaction{}, err
		}
		in.Request = RawJSON(req)
		in.CreatedAt = created.T
		return in, nil
	})
	return sessionList(ctx, db, op, sessionID, out, err)
}

// Interaction returns one interaction, open or settled (ErrNotFound when
// there is none).
func (db *DB) Interaction(ctx context.Context, sessionID, id string) (store.Interaction, error) {
	const op = "interaction"
	if err := check.ID("session", sessionID); err != nil {
		return store.Interaction{}, db.fail(op, err)
	}
	if err := check.ID("interaction", id); err != nil {
		return store.Interaction{}, db.fail(op, err)
	}
	var (
		in          = store.Interaction{SessionID: sessionID, ID: id}
		req, answer []byte
		created     Time
	)
	err := db.queryRow(ctx,
		`SELECT turn_id, request, created_at, outcome, answer FROM interactions WHERE session_id = ? AND id = ?`,
		sessionID, id).Scan(&in.TurnID, &req, &created, &in.Outcome, &answer)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Interaction{}, db.failOn(op, sessionID+"/"+id, store.ErrNotFound)
	}
	if err != nil {
		return store.Interaction{}, db.wrap(ctx, op, err)
	}
	in.Request = RawJSON(req)
	in.Answer = RawJSON(answer)
	in.CreatedAt = created.T
	return in, nil
}

// sessionList ends a read of one session's rows: an empty list is
// ErrNotFound when the session itself does not exist, and errors are
// wrapped as every read's are.
func sessionList[T any](ctx context.Context, db *DB, op, sessionID string, out []T, err error) ([]T, error) {
	if err != nil {
		return nil, db.wrap(ctx, op, err)
	}
	if len(out) == 0 {
		if err := Exists(ctx, db, db.R, sessionID); err != nil {
			return nil, db.wrap(ctx, op, err)
		}
	}
	return out, nil
}
