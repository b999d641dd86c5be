package sqlbody

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/internal/check"
)

// Hot holds the writes each backend does its own way (row locks and
// batches on PostgreSQL, prepared statements in one BEGIN IMMEDIATE
// transaction on SQLite). DB checks their arguments before it calls them
// and wraps what they return, so a hook returns bare errors, wrapping
// store.ErrNotFound when the session does not exist.
type Hot struct {
	// AppendEvents numbers and stores evs (checked) as the session's next
	// events, all or none.
	AppendEvents func(ctx context.Context, sessionID string, evs []store.Event) ([]store.Event, error)
	// Trim drops the session's events but the newest keep (checked).
	Trim func(ctx context.Context, sessionID string, keep int) error
}

// Write runs fn in one transaction on db's writer (BEGIN IMMEDIATE on
// SQLite, whose writer opens every transaction so), rolled back when fn
// fails. It is a function, not a method, so that the stores do not
// export it.
func Write(ctx context.Context, db *DB, fn func(tx *sql.Tx) error) error {
	tx, err := db.W.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	err = tx.Commit()
	if db.Wrote != nil {
		db.Wrote()
	}
	return err
}

// noSession is the error for a session that does not exist.
func noSession(sessionID string) error {
	return fmt.Errorf("session %s: %w", sessionID, store.ErrNotFound)
}

// --- events ---

// AppendEvents stores evs as the session's next events, in one
// transaction: all of them or none (the backend's Hot.AppendEvents).
func (db *DB) AppendEvents(ctx context.Context, sessionID string, evs []store.Event) ([]store.Event, error) {
	const op = "append events"
	if err := check.Events(sessionID, evs); err != nil {
		return nil, db.fail(op, err)
	}
	out, err := db.Hot.AppendEvents(ctx, sessionID, evs)
	if err != nil {
		return nil, db.wrap(ctx, op, err)
	}
	return out, nil
}

// Trim drops the session's oldest events, keeping the newest keep (the
// backend's Hot.Trim).
func (db *DB) Trim(ctx context.Context, sessionID string, keep int) error {
	const op = "trim"
	if err := check.ID("session", sessionID); err != nil {
		return db.fail(op, err)
	}
	if err := check.Keep(keep); err != nil {
		return db.fail(op, err)
	}
	return db.wrap(ctx, op, db.Hot.Trim(ctx, sessionID, keep))
}

// OldestSeq is the seq of the oldest retained event (0 when none).
func (db *DB) OldestSeq(ctx context.Context, sessionID string) (uint64, error) {
	const op = "oldest seq"
	if err := check.ID("session", sessionID); err != nil {
		return 0, db.fail(op, err)
	}
	var (
		oldest sql.NullInt64
		ok     bool
	)
	// One round trip answers both: the oldest seq and whether the session
	// exists at all.
	err := db.queryRow(ctx,
		`SELECT (SELECT min(seq) FROM events WHERE session_id = ?), EXISTS (SELECT 1 FROM sessions WHERE id = ?)`,
		sessionID, sessionID).Scan(&oldest, &ok)
	if err != nil {
		return 0, db.wrap(ctx, op, err)
	}
	if !ok {
		return 0, db.fail(op, noSession(sessionID))
	}
	return uint64(oldest.Int64), nil //nolint:gosec // stored from a checked uint64
}

// --- interactions ---

// OpenInteraction records a new open interaction (ErrExists when its
// (session, id) is taken, ErrNotFound when the session does not exist).
func (db *DB) OpenInteraction(ctx context.Context, in store.Interaction) error {
	const op = "open interaction"
	if err := check.Interaction(in); err != nil {
		return db.fail(op, err)
	}
	_, err := db.exec(ctx,
		`INSERT INTO interactions (session_id, id, turn_id, request, created_at) VALUES (?, ?, ?, ?, ?)`,
		in.SessionID, in.ID, in.TurnID, Blob(in.Request), db.ts(check.OrNow(in.CreatedAt)))
	switch {
	case err == nil:
		return nil
	case db.D.IsUnique(err):
		return db.failOn(op, in.SessionID+"/"+in.ID, store.ErrExists)
	case db.D.IsForeignKey(err):
		return db.fail(op, noSession(in.SessionID))
	}
	return db.wrap(ctx, op, err)
}

// SettleInteraction settles an open interaction with outcome (answered,
// timeout or cancelled) and answer; won is false when it was already
// settled.
func (db *DB) SettleInteraction(ctx context.Context, sessionID, id, outcome string, answer json.RawMessage) (bool, error) {
	const op = "settle interaction"
	if err := check.Settle(sessionID, id, outcome); err != nil {
		return false, db.fail(op, err)
	}
	// The outcome = '' condition makes the update the arbiter: concurrent
	// updates of the row run one after the other (SQLite's one writer,
	// PostgreSQL's row lock, re-checked after the holder commits), and
	// only the first matches.
	n, err := affected(db.exec(ctx,
		`UPDATE interactions SET outcome = ?, answer = ? WHERE session_id = ? AND id = ? AND outcome = ''`,
		outcome, Blob(answer), sessionID, id))
	if err != nil {
		return false, db.wrap(ctx, op, err)
	}
	if n == 1 {
		return true, nil
	}
	// Interactions are never deleted but with their session: a row seen
	// by the update is still there.
	var ok bool
	if err := db.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM interactions WHERE session_id = ? AND id = ?)`,
		sessionID, id).Scan(&ok); err != nil {
		return false, db.wrap(ctx, op, err)
	}
	if !ok {
		return false, db.failOn(op, sessionID+"/"+id, store.ErrNotFound)
	}
	return false, nil
}

// --- artifacts ---

// PutArtifact registers a (idempotent; ErrExists for a different artifact
// under the same ID, ErrNotFound when the session does not exist).
func (db *DB) PutArtifact(ctx context.Context, a store.Artifact) error {
	const op = "put artifact"
	if err := check.Artifact(a); err != nil {
		return db.fail(op, err)
	}
	n, err := affected(db.exec(ctx,
		`INSERT INTO artifacts (`+ArtifactCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		 ON CONFLICT (session_id, id) DO NOTHING`,
		a.SessionID, a.ID, a.TurnID, a.Path, a.FileName, a.Size, a.MimeType, a.ToolUseID, db.ts(check.OrNow(a.CreatedAt))))
	if err != nil && db.D.IsForeignKey(err) {
		return db.fail(op, noSession(a.SessionID))
	}
	if err != nil {
		return db.wrap(ctx, op, err)
	}
	if n == 1 {
		return nil
	}
	// Already registered (and committed: the insert waited for it): the
	// same artifact again is fine, another is not.
	old, err := ScanArtifact(db.queryRow(ctx, `SELECT `+ArtifactCols+` FROM artifacts WHERE session_id = ? AND id = ?`, a.SessionID, a.ID))
	if err != nil {
		return db.wrap(ctx, op, err)
	}
	if !check.SameArtifact(old, a) {
		return db.failOn(op, a.SessionID+"/"+a.ID, store.ErrExists)
	}
	return nil
}

// --- download tokens ---

// CreateDownloadTokens stores ts in one transaction: all or none.
func (db *DB) CreateDownloadTokens(ctx context.Context, ts []store.DownloadToken) error {
	const op = "create download tokens"
	for _, t := range ts {
		if err := check.DownloadToken(t); err != nil {
			return db.fail(op, err)
		}
	}
	if len(ts) == 0 {
		return nil
	}
	err := Write(ctx, db, func(tx *sql.Tx) error {
		ins, err := tx.PrepareContext(ctx, db.q(`INSERT INTO download_tokens (`+DownloadCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)`))
		if err != nil {
			return err
		}
		defer func() { _ = ins.Close() }()
		for _, t := range ts {
			_, err := ins.ExecContext(ctx, t.ID, t.Hash, t.SessionID, t.ArtifactID, t.OwnerID,
				db.ts(check.OrNow(t.CreatedAt)), db.ts(check.Time(t.ExpiresAt)))
			switch {
			case err == nil:
			case db.D.IsUnique(err):
				return fmt.Errorf("download token %s: %w", t.ID, store.ErrExists)
			case db.D.IsForeignKey(err):
				return fmt.Errorf("download token %s: owner %s or artifact %s/%s: %w", t.ID, t.OwnerID, t.SessionID, t.ArtifactID, store.ErrNotFound)
			default:
				return err
			}
		}
		return nil
	})
	return db.wrap(ctx, op, err)
}
