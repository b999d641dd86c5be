package sqlbody

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/internal/check"
)

// --- uploads ---

// uploadInfoCols are the uploads columns but the content, in the order
// scanUpload reads them.
const uploadInfoCols = `id, session_id, owner_id, file_name, mime_type, size, created_at, expires_at`

// scanUpload scans one row of uploadInfoCols, then data's column when
// withData.
func scanUpload(sc Scanner, withData bool) (store.Upload, error) {
	var (
		u                store.Upload
		created, expires Time
	)
	dest := []any{&u.ID, &u.SessionID, &u.OwnerID, &u.FileName, &u.MimeType, &u.Size, &created, &expires}
	if withData {
		dest = append(dest, &u.Data)
	}
	if err := sc.Scan(dest...); err != nil {
		return store.Upload{}, err
	}
	if withData && u.Data == nil {
		u.Data = []byte{}
	}
	u.CreatedAt, u.ExpiresAt = created.T, expires.T
	return u, nil
}

// PutUpload stores u in one transaction with the quota check. The
// session's row is locked first (a no-op update: a row lock on
// PostgreSQL, and SQLite's writer is one already), so two uploads to one
// session cannot both pass the quota on the same sum.
func (db *DB) PutUpload(ctx context.Context, u store.Upload, q store.UploadQuota) error {
	const op = "put upload"
	if err := check.Upload(u, q); err != nil {
		return db.fail(op, err)
	}
	created := check.OrNow(u.CreatedAt)
	err := Write(ctx, db, func(tx *sql.Tx) error {
		n, err := affected(tx.ExecContext(ctx, db.q(`UPDATE sessions SET id = id WHERE id = ?`), u.SessionID))
		if err != nil {
			return err
		}
		if n == 0 {
			return noSession(u.SessionID)
		}
		var (
			count int
			bytes int64
		)
		if err := tx.QueryRowContext(ctx, db.q(`SELECT COUNT(*), COALESCE(SUM(size), 0) FROM uploads WHERE session_id = ? AND expires_at > ?`),
			u.SessionID, db.ts(created)).Scan(&count, &bytes); err != nil {
			return err
		}
		if q.Count > 0 && count+1 > q.Count || q.Bytes > 0 && bytes+u.Size > q.Bytes {
			return fmt.Errorf("session %s holds %d uploads of %d bytes: %w", u.SessionID, count, bytes, store.ErrQuota)
		}
		_, err = tx.ExecContext(ctx, db.q(`INSERT INTO uploads (`+uploadInfoCols+`, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			u.ID, u.SessionID, u.OwnerID, u.FileName, u.MimeType, u.Size, db.ts(created), db.ts(check.Time(u.ExpiresAt)), nonNil(u.Data))
		switch {
		case err == nil:
			return nil
		case db.D.IsUnique(err):
			return fmt.Errorf("upload %s: %w", u.ID, store.ErrExists)
		case db.D.IsForeignKey(err):
			return fmt.Errorf("upload %s: owner %s: %w", u.ID, u.OwnerID, store.ErrNotFound)
		}
		return err
	})
	return db.wrap(ctx, op, err)
}

// nonNil stores empty content as an empty blob, not NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// Upload returns one upload with its content.
func (db *DB) Upload(ctx context.Context, id string) (store.Upload, error) {
	return db.upload(ctx, "upload", id, true)
}

// UploadInfo returns one upload without its content.
func (db *DB) UploadInfo(ctx context.Context, id string) (store.Upload, error) {
	return db.upload(ctx, "upload info", id, false)
}

func (db *DB) upload(ctx context.Context, op, id string, withData bool) (store.Upload, error) {
	if err := check.ID("upload", id); err != nil {
		return store.Upload{}, db.fail(op, err)
	}
	cols := uploadInfoCols
	if withData {
		cols += ", data"
	}
	u, err := scanUpload(db.queryRow(ctx, `SELECT `+cols+` FROM uploads WHERE id = ?`, id), withData)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Upload{}, db.failOn(op, id, store.ErrNotFound)
	}
	if err != nil {
		return store.Upload{}, db.wrap(ctx, op, err)
	}
	return u, nil
}

// DeleteUpload deletes one upload (ErrNotFound when there is none).
func (db *DB) DeleteUpload(ctx context.Context, id string) error {
	return DeleteByID(ctx, db, "delete upload", "upload", `DELETE FROM uploads WHERE id = ?`, id)
}

// DeleteExpiredUploads deletes the uploads expired at or before now.
func (db *DB) DeleteExpiredUploads(ctx context.Context, now time.Time) (int, error) {
	const op = "delete expired uploads"
	n, err := affected(db.exec(ctx, `DELETE FROM uploads WHERE expires_at <= ?`, db.ts(check.OrNow(now))))
	return int(n), db.wrap(ctx, op, err)
}

// --- secrets ---

// Secret returns the secret under name, storing fresh when there is none
// (the insert waits for a concurrent one and then does nothing).
func (db *DB) Secret(ctx context.Context, name string, fresh []byte) ([]byte, error) {
	const op = "secret"
	if err := check.ID("secret", name); err != nil {
		return nil, db.fail(op, err)
	}
	if len(fresh) == 0 {
		return nil, db.fail(op, fmt.Errorf("%w: an empty fresh secret", check.ErrInvalid))
	}
	if _, err := db.exec(ctx, `INSERT INTO secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`, name, fresh); err != nil {
		return nil, db.wrap(ctx, op, err)
	}
	var v []byte
	// Read on the writer, which certainly sees the row it just committed.
	if err := db.W.QueryRowContext(ctx, db.q(`SELECT value FROM secrets WHERE name = ?`), name).Scan(&v); err != nil {
		return nil, db.wrap(ctx, op, err)
	}
	return v, nil
}
