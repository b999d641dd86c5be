package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/internal/check"
	"github.com/ferry-dev/ferry/internal/store/internal/sqlbody"
)

// isForeignKey reports a FOREIGN KEY violation: what a row refers to does
// not exist.
func isForeignKey(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

// --- artifacts ---

const artifactCols = `session_id, id, turn_id, path, file_name, size, mime_type, tool_use_id, created_at`

func scanArtifact(sc sqlbody.Scanner) (store.Artifact, error) {
	var (
		a       store.Artifact
		created sql.NullInt64
	)
	if err := sc.Scan(&a.SessionID, &a.ID, &a.TurnID, &a.Path, &a.FileName, &a.Size, &a.MimeType, &a.ToolUseID, &created); err != nil {
		return store.Artifact{}, err
	}
	a.CreatedAt = fromMicros(created)
	return a, nil
}

// PutArtifact registers a (idempotent; ErrExists for a different artifact
// under the same ID, ErrNotFound when the session does not exist).
func (s *Store) PutArtifact(ctx context.Context, a store.Artifact) error {
	const op = "put artifact"
	if err := check.Artifact(a); err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := sqlbody.Exists(ctx, s.body, tx, a.SessionID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx,
			`INSERT INTO artifacts (`+artifactCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			 ON CONFLICT (session_id, id) DO NOTHING`,
			a.SessionID, a.ID, a.TurnID, a.Path, a.FileName, a.Size, a.MimeType, a.ToolUseID, check.OrNow(a.CreatedAt).UnixMicro())
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		old, err := scanArtifact(tx.QueryRowContext(ctx, `SELECT `+artifactCols+` FROM artifacts WHERE session_id = ? AND id = ?`, a.SessionID, a.ID))
		if err != nil {
			return err
		}
		if !check.SameArtifact(old, a) {
			return fmt.Errorf("artifact %s/%s: %w", a.SessionID, a.ID, store.ErrExists)
		}
		return nil
	})
	return wrap(ctx, op, err)
}

// Artifact returns one artifact (ErrNotFound when there is none).
func (s *Store) Artifact(ctx context.Context, sessionID, id string) (store.Artifact, error) {
	const op = "artifact"
	if err := check.ID("session", sessionID); err != nil {
		return store.Artifact{}, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	if err := check.ID("artifact", id); err != nil {
		return store.Artifact{}, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	a, err := scanArtifact(s.r.QueryRowContext(ctx, `SELECT `+artifactCols+` FROM artifacts WHERE session_id = ? AND id = ?`, sessionID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Artifact{}, fmt.Errorf("sqlite: %s %s/%s: %w", op, sessionID, id, store.ErrNotFound)
	}
	if err != nil {
		return store.Artifact{}, wrap(ctx, op, err)
	}
	return a, nil
}

// Artifacts lists the newest limit (all when limit <= 0) of a session's
// artifacts, oldest first (registration order is rowid order).
func (s *Store) Artifacts(ctx context.Context, sessionID string, limit int) ([]store.Artifact, error) {
	const op = "list artifacts"
	if err := check.ID("session", sessionID); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.r.QueryContext(ctx,
		`SELECT `+artifactCols+` FROM (
		   SELECT rowid AS r, `+artifactCols+` FROM artifacts WHERE session_id = ? ORDER BY rowid DESC LIMIT ?
		 ) ORDER BY r`, sessionID, limit)
	if err != nil {
		return nil, wrap(ctx, op, err)
	}
	out, err := sqlbody.CollectRows(rows, scanArtifact)
	if err != nil {
		return nil, wrap(ctx, op, err)
	}
	if len(out) == 0 {
		if err := sqlbody.Exists(ctx, s.body, s.r, sessionID); err != nil {
			return nil, wrap(ctx, op, err)
		}
	}
	return out, nil
}

// --- download tokens ---

const downloadCols = `id, hash, session_id, artifact_id, owner_id, created_at, expires_at`

// CreateDownloadTokens stores ts in one transaction: all or none.
func (s *Store) CreateDownloadTokens(ctx context.Context, ts []store.DownloadToken) error {
	const op = "create download tokens"
	for _, t := range ts {
		if err := check.DownloadToken(t); err != nil {
			return fmt.Errorf("sqlite: %s: %w", op, err)
		}
	}
	if len(ts) == 0 {
		return nil
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		ins, err := tx.PrepareContext(ctx, `INSERT INTO download_tokens (`+downloadCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer ins.Close()
		for _, t := range ts {
			_, err := ins.ExecContext(ctx, t.ID, t.Hash, t.SessionID, t.ArtifactID, t.OwnerID,
				check.OrNow(t.CreatedAt).UnixMicro(), check.Time(t.ExpiresAt).UnixMicro())
			switch {
			case isConstraint(err):
				return fmt.Errorf("download token %s: %w", t.ID, store.ErrExists)
			case isForeignKey(err):
				return fmt.Errorf("download token %s: owner %s or artifact %s/%s: %w", t.ID, t.OwnerID, t.SessionID, t.ArtifactID, store.ErrNotFound)
			case err != nil:
				return err
			}
		}
		return nil
	})
	return wrap(ctx, op, err)
}

// DownloadTokenByHash finds a download token by the hash of its secret.
func (s *Store) DownloadTokenByHash(ctx context.Context, hash []byte) (store.DownloadToken, error) {
	const op = "download token by hash"
	if err := check.Hash(hash); err != nil {
		return store.DownloadToken{}, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	var (
		t                store.DownloadToken
		created, expires sql.NullInt64
	)
	err := s.r.QueryRowContext(ctx, `SELECT `+downloadCols+` FROM download_tokens WHERE hash = ?`, hash).
		Scan(&t.ID, &t.Hash, &t.SessionID, &t.ArtifactID, &t.OwnerID, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return store.DownloadToken{}, fmt.Errorf("sqlite: %s: %w", op, store.ErrNotFound)
	}
	if err != nil {
		return store.DownloadToken{}, wrap(ctx, op, err)
	}
	t.CreatedAt, t.ExpiresAt = fromMicros(created), fromMicros(expires)
	return t, nil
}

// RevokeDownloadToken deletes one download token (ErrNotFound when there
// is none).
func (s *Store) RevokeDownloadToken(ctx context.Context, id string) error {
	return sqlbody.DeleteByID(ctx, s.body, "revoke download token", "download token", `DELETE FROM download_tokens WHERE id = ?`, id)
}

// DeleteExpiredDownloadTokens deletes the download tokens expired at or
// before now.
func (s *Store) DeleteExpiredDownloadTokens(ctx context.Context, now time.Time) (int, error) {
	const op = "delete expired download tokens"
	res, err := s.exec(ctx, `DELETE FROM download_tokens WHERE expires_at <= ?`, check.OrNow(now).UnixMicro())
	if err != nil {
		return 0, wrap(ctx, op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, wrap(ctx, op, err)
	}
	return int(n), nil
}

// TrimDownloadTokens deletes ownerID's download tokens but the newest keep.
func (s *Store) TrimDownloadTokens(ctx context.Context, ownerID string, keep int) (int, error) {
	const op = "trim download tokens"
	if err := check.Trim(ownerID, keep); err != nil {
		return 0, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	res, err := s.exec(ctx, `DELETE FROM download_tokens WHERE owner_id = ? AND id NOT IN (
		SELECT id FROM download_tokens WHERE owner_id = ? ORDER BY created_at DESC, id DESC LIMIT ?)`, ownerID, ownerID, keep)
	if err != nil {
		return 0, wrap(ctx, op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, wrap(ctx, op, err)
	}
	return int(n), nil
}
