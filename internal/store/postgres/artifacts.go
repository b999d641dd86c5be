package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/internal/check"
	"github.com/ferry-dev/ferry/internal/store/internal/sqlbody"
)

// The column lists are local constants so that gosec sees the
// concatenated SQL is constant.
const (
	artifactCols = sqlbody.ArtifactCols
	downloadCols = sqlbody.DownloadCols
)

// --- artifacts ---

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
	old, err := sqlbody.ScanArtifact(s.pool.QueryRow(ctx, `SELECT `+artifactCols+` FROM artifacts WHERE session_id = $1 AND id = $2`, a.SessionID, a.ID))
	if err != nil {
		return wrap(ctx, op, err)
	}
	if !check.SameArtifact(old, a) {
		return fmt.Errorf("postgres: %s %s/%s: %w", op, a.SessionID, a.ID, store.ErrExists)
	}
	return nil
}

// --- download tokens ---

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
