package sqlbody

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/internal/check"
)

// --- artifacts ---

// ArtifactCols are the artifacts columns ScanArtifact reads, in order.
const ArtifactCols = `session_id, id, turn_id, path, file_name, size, mime_type, tool_use_id, created_at`

// ScanArtifact scans one row of ArtifactCols.
func ScanArtifact(sc Scanner) (store.Artifact, error) {
	var (
		a       store.Artifact
		created Time
	)
	if err := sc.Scan(&a.SessionID, &a.ID, &a.TurnID, &a.Path, &a.FileName, &a.Size, &a.MimeType, &a.ToolUseID, &created); err != nil {
		return store.Artifact{}, err
	}
	a.CreatedAt = created.T
	return a, nil
}

// Artifact returns one artifact (ErrNotFound when there is none).
func (db *DB) Artifact(ctx context.Context, sessionID, id string) (store.Artifact, error) {
	const op = "artifact"
	if err := check.ID("session", sessionID); err != nil {
		return store.Artifact{}, db.fail(op, err)
	}
	if err := check.ID("artifact", id); err != nil {
		return store.Artifact{}, db.fail(op, err)
	}
	a, err := ScanArtifact(db.queryRow(ctx, `SELECT `+ArtifactCols+` FROM artifacts WHERE session_id = ? AND id = ?`, sessionID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Artifact{}, db.failOn(op, sessionID+"/"+id, store.ErrNotFound)
	}
	if err != nil {
		return store.Artifact{}, db.wrap(ctx, op, err)
	}
	return a, nil
}

// Artifacts lists the newest limit (all when limit <= 0) of a session's
// artifacts, oldest first (registration order is the insertion order).
func (db *DB) Artifacts(ctx context.Context, sessionID string, limit int) ([]store.Artifact, error) {
	const op = "list artifacts"
	if err := check.ID("session", sessionID); err != nil {
		return nil, db.fail(op, err)
	}
	lim := db.D.NoLimit
	if limit > 0 {
		lim = limit
	}
	ord := db.D.InsertOrder
	rows, err := db.query(ctx,
		`SELECT `+ArtifactCols+` FROM (
		   SELECT `+ord+` AS r, `+ArtifactCols+` FROM artifacts WHERE session_id = ? ORDER BY `+ord+` DESC LIMIT ?
		 ) newest ORDER BY r`, sessionID, lim)
	if err != nil {
		return nil, db.wrap(ctx, op, err)
	}
	out, err := CollectRows(rows, ScanArtifact)
	return sessionList(ctx, db, op, sessionID, out, err)
}

// --- download tokens ---

// DownloadCols are the download_tokens columns, in the order
// DownloadTokenByHash scans them.
const DownloadCols = `id, hash, session_id, artifact_id, owner_id, created_at, expires_at`

// DownloadTokenByHash finds a download token by the hash of its secret.
func (db *DB) DownloadTokenByHash(ctx context.Context, hash []byte) (store.DownloadToken, error) {
	const op = "download token by hash"
	if err := check.Hash(hash); err != nil {
		return store.DownloadToken{}, db.fail(op, err)
	}
	var (
		t                store.DownloadToken
		created, expires Time
	)
	err := db.queryRow(ctx, `SELECT `+DownloadCols+` FROM download_tokens WHERE hash = ?`, hash).
		Scan(&t.ID, &t.Hash, &t.SessionID, &t.ArtifactID, &t.OwnerID, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return store.DownloadToken{}, db.fail(op, store.ErrNotFound)
	}
	if err != nil {
		return store.DownloadToken{}, db.wrap(ctx, op, err)
	}
	t.CreatedAt, t.ExpiresAt = created.T, expires.T
	return t, nil
}

// RevokeDownloadToken deletes one download token (ErrNotFound when there
// is none).
func (db *DB) RevokeDownloadToken(ctx context.Context, id string) error {
	return DeleteByID(ctx, db, "revoke download token", "download token", `DELETE FROM download_tokens WHERE id = ?`, id)
}

// DeleteExpiredDownloadTokens deletes the download tokens expired at or
// before now.
func (db *DB) DeleteExpiredDownloadTokens(ctx context.Context, now time.Time) (int, error) {
	const op = "delete expired download tokens"
	n, err := affected(db.exec(ctx, `DELETE FROM download_tokens WHERE expires_at <= ?`, db.ts(check.OrNow(now))))
	return int(n), db.wrap(ctx, op, err)
}

// TrimDownloadTokens deletes ownerID's download tokens but the newest keep.
func (db *DB) TrimDownloadTokens(ctx context.Context, ownerID string, keep int) (int, error) {
	const op = "trim download tokens"
	if err := check.Trim(ownerID, keep); err != nil {
		return 0, db.fail(op, err)
	}
	n, err := affected(db.exec(ctx, `DELETE FROM download_tokens WHERE owner_id = ? AND id NOT IN (
		SELECT id FROM download_tokens WHERE owner_id = ? ORDER BY created_at DESC, id DESC LIMIT ?)`, ownerID, ownerID, keep))
	return int(n), db.wrap(ctx, op, err)
}
