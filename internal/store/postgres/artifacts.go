package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/internal/check"
	"github.com/ferry-dev/ferry/internal/store/internal/sqlbody"
)

// --- artifacts ---

const artifactCols = `session_id, id, turn_id, path, file_name, size, mime_type, tool_use_id, created_at`

func scanArtifact(row pgx.Row) (store.Artifact, error) {
	var (
		a       store.Artifact
		created *time.Time
	)
	if err := row.Scan(&a.SessionID, &a.ID, &a.TurnID, &a.Path, &a.FileName, &a.Size, &a.MimeType, &a.ToolUseID, &created); err != nil {
		return store.Artifact{}, err
	}
	a.CreatedAt = fromTS(created)
	return a, nil
}

// PutArtifact registers a (idempotent; ErrExists for a different artifact
// under the same ID, ErrNotFound when the session does not exist).
func (s *Store) PutArtifact(ctx context.Context, a store.Artifact) error {
	const op = "put artifact"
	if err := check.Artifact(a); err != nil {
		return fmt.Errorf("postgres: %s: %w", op, err)
	}
	tag, err := s.pool.Exec(ctx,
		`INSERT INTO artifacts (`+artifactCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		 ON CONFLICT (session_id, id) DO NOTHING`,
		a.SessionID, a.ID, a.TurnID, a.Path, a.FileName, a.Size, a.MimeType, a.ToolUseID, check.OrNow(a.CreatedAt))
	switch {
	case pgCode(err) == foreignKeyViolation:
		return fmt.Errorf("postgres: %s: session %s: %w", op, a.SessionID, store.ErrNotFound)
	case err != nil:
		return wrap(ctx, op, err)
	case tag.RowsAffected() == 1:
		return nil
	}
	// Already registered: the same artifact again is fine, another is not.
	old, err := scanArtifact(s.pool.QueryRow(ctx, `SELECT `+artifactCols+` FROM artifacts WHERE session_id = $1 AND id = $2`, a.SessionID, a.ID))
	if err != nil {
		return wrap(ctx, op, err)
	}
	if !check.SameArtifact(old, a) {
		return fmt.Errorf("postgres: %s %s/%s: %w", op, a.SessionID, a.ID, store.ErrExists)
	}
	return nil
}

// Artifact returns one artifact (ErrNotFound when there is none).
func (s *Store) Artifact(ctx context.Context, sessionID, id string) (store.Artifact, error) {
	const op = "artifact"
	if err := check.ID("session", sessionID); err != nil {
		return store.Artifact{}, fmt.Errorf("postgres: %s: %w", op, err)
	}
	if err := check.ID("artifact", id); err != nil {
		return store.Artifact{}, fmt.Errorf("postgres: %s: %w", op, err)
	}
	a, err := scanArtifact(s.pool.QueryRow(ctx, `SELECT `+artifactCols+` FROM artifacts WHERE session_id = $1 AND id = $2`, sessionID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Artifact{}, fmt.Errorf("postgres: %s %s/%s: %w", op, sessionID, id, store.ErrNotFound)
	}
	if err != nil {
		return store.Artifact{}, wrap(ctx, op, err)
	}
	return a, nil
}

// Artifacts lists the newest limit (all when limit <= 0) of a session's
// artifacts, oldest first.
func (s *Store) Artifacts(ctx context.Context, sessionID string, limit int) ([]store.Artifact, error) {
	const op = "list artifacts"
	if err := check.ID("session", sessionID); err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", op, err)
	}
	var lim any // NULL: LIMIT ALL
	if limit > 0 {
		lim = limit
	}
	rows, err := s.pool.Query(ctx,
		`SELECT `+artifactCols+` FROM (
		   SELECT ord, `+artifactCols+` FROM artifacts WHERE session_id = $1 ORDER BY ord DESC LIMIT $2
		 ) newest ORDER BY ord`, sessionID, lim)
	if err != nil {
		return nil, wrap(ctx, op, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Artifact, error) { return scanArtifact(r) })
	if err != nil {
		return nil, wrap(ctx, op, err)
	}
	if len(out) == 0 {
		if err := sqlbody.Exists(ctx, s.body, s.R, sessionID); err != nil {
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
			return fmt.Errorf("postgres: %s: %w", op, err)
		}
	}
	if len(ts) == 0 {
		return nil
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var b pgx.Batch
		for _, t := range ts {
			b.Queue(`INSERT INTO download_tokens (`+downloadCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
				t.ID, t.Hash, t.SessionID, t.ArtifactID, t.OwnerID, check.OrNow(t.CreatedAt), check.Time(t.ExpiresAt))
		}
		return tx.SendBatch(ctx, &b).Close()
	})
	switch pgCode(err) {
	case uniqueViolation:
		return fmt.Errorf("postgres: %s: %w", op, store.ErrExists)
	case foreignKeyViolation:
		return fmt.Errorf("postgres: %s: an owner or artifact: %w", op, store.ErrNotFound)
	}
	return wrap(ctx, op, err)
}

// DownloadTokenByHash finds a download token by the hash of its secret.
func (s *Store) DownloadTokenByHash(ctx context.Context, hash []byte) (store.DownloadToken, error) {
	const op = "download token by hash"
	if err := check.Hash(hash); err != nil {
		return store.DownloadToken{}, fmt.Errorf("postgres: %s: %w", op, err)
	}
	var (
		t                store.DownloadToken
		created, expires *time.Time
	)
	err := s.pool.QueryRow(ctx, `SELECT `+downloadCols+` FROM download_tokens WHERE hash = $1`, hash).
		Scan(&t.ID, &t.Hash, &t.SessionID, &t.ArtifactID, &t.OwnerID, &created, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.DownloadToken{}, fmt.Errorf("postgres: %s: %w", op, store.ErrNotFound)
	}
	if err != nil {
		return store.DownloadToken{}, wrap(ctx, op, err)
	}
	t.CreatedAt, t.ExpiresAt = fromTS(created), fromTS(expires)
	return t, nil
}

// RevokeDownloadToken deletes one download token (ErrNotFound when there
// is none).
func (s *Store) RevokeDownloadToken(ctx context.Context, id string) error {
	const op = "revoke download token"
	if err := check.ID("download token", id); err != nil {
		return fmt.Errorf("postgres: %s: %w", op, err)
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM download_tokens WHERE id = $1`, id)
	if err != nil {
		return wrap(ctx, op, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: %s %s: %w", op, id, store.ErrNotFound)
	}
	return nil
}

// DeleteExpiredDownloadTokens deletes the download tokens expired at or
// before now.
func (s *Store) DeleteExpiredDownloadTokens(ctx context.Context, now time.Time) (int, error) {
	const op = "delete expired download tokens"
	tag, err := s.pool.Exec(ctx, `DELETE FROM download_tokens WHERE expires_at <= $1`, check.OrNow(now))
	if err != nil {
		return 0, wrap(ctx, op, err)
	}
	return int(tag.RowsAffected()), nil
}

// TrimDownloadTokens deletes ownerID's download tokens but the newest keep.
func (s *Store) TrimDownloadTokens(ctx context.Context, ownerID string, keep int) (int, error) {
	const op = "trim download tokens"
	if err := check.Trim(ownerID, keep); err != nil {
		return 0, fmt.Errorf("postgres: %s: %w", op, err)
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM download_tokens WHERE owner_id = $1 AND id NOT IN (
		SELECT id FROM download_tokens WHERE owner_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2)`, ownerID, keep)
	if err != nil {
		return 0, wrap(ctx, op, err)
	}
	return int(tag.RowsAffected()), nil
}
