package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

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
		old, err := sqlbody.ScanArtifact(tx.QueryRowContext(ctx, `SELECT `+artifactCols+` FROM artifacts WHERE session_id = ? AND id = ?`, a.SessionID, a.ID))
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

// --- download tokens ---

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
