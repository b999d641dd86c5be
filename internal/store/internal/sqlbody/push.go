package sqlbody

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/internal/check"
)

// --- push subscriptions ---

const pushCols = `endpoint, p256dh, auth, owner_id, label, created_at`

func scanPush(sc Scanner) (store.PushSubscription, error) {
	var (
		p       store.PushSubscription
		created Time
	)
	if err := sc.Scan(&p.Endpoint, &p.P256dh, &p.Auth, &p.OwnerID, &p.Label, &created); err != nil {
		return store.PushSubscription{}, err
	}
	p.CreatedAt = created.T
	return p, nil
}

// PutPushSubscription inserts p or replaces the subscription of its
// endpoint when p's owner owns it or its owner has expired, within the
// owner's bound.
func (db *DB) PutPushSubscription(ctx context.Context, p store.PushSubscription, max int) error {
	const op = "put push subscription"
	if err := check.PushSubscription(p); err != nil {
		return db.fail(op, err)
	}
	if max < 0 {
		return db.fail(op, fmt.Errorf("%w: negative push subscription bound %d", check.ErrInvalid, max))
	}
	err := Write(ctx, db, func(tx *sql.Tx) error {
		// Lock the owner's row first (a no-op update: a row lock on
		// PostgreSQL, and SQLite's writer is one already), so that two
		// subscriptions of one owner cannot both pass the bound.
		n, err := affected(tx.ExecContext(ctx, db.q(`UPDATE tokens SET id = id WHERE id = ?`), p.OwnerID))
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("push subscription: owner %s: %w", p.OwnerID, store.ErrNotFound)
		}
		if max > 0 {
			var others int
			if err := tx.QueryRowContext(ctx, db.q(`SELECT COUNT(*) FROM push_subscriptions WHERE owner_id = ? AND endpoint <> ?`),
				p.OwnerID, p.Endpoint).Scan(&others); err != nil {
				return err
			}
			if others >= max {
				return fmt.Errorf("owner %s holds %d push subscriptions: %w", p.OwnerID, others, store.ErrQuota)
			}
		}
		// An existing row is replaced only for its own owner, or once its
		// owner has expired: in the same statement, so that of tokens
		// racing for one endpoint only the first writes it.
		now := db.ts(check.OrNow(p.CreatedAt))
		n, err = affected(tx.ExecContext(ctx, db.q(`INSERT INTO push_subscriptions (`+pushCols+`) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (endpoint) DO UPDATE SET p256dh = excluded.p256dh, auth = excluded.auth,
			owner_id = excluded.owner_id, label = excluded.label, created_at = excluded.created_at
			WHERE push_subscriptions.owner_id = excluded.owner_id
			OR push_subscriptions.owner_id IN (SELECT id FROM tokens WHERE expires_at IS NOT NULL AND expires_at <= ?)`),
			p.Endpoint, p.P256dh, p.Auth, p.OwnerID, p.Label, now, now))
		switch {
		case err != nil && db.D.IsForeignKey(err):
			return fmt.Errorf("push subscription: owner %s: %w", p.OwnerID, store.ErrNotFound)
		case err != nil:
			return err
		case n == 0:
			return fmt.Errorf("push subscription: the endpoint is another owner's: %w", store.ErrExists)
		}
		return nil
	})
	return db.wrap(ctx, op, err)
}

// DeletePushSubscription deletes endpoint's subscription (of ownerID
// only, unless it is empty).
func (db *DB) DeletePushSubscription(ctx context.Context, endpoint, ownerID string) error {
	const op = "delete push subscription"
	if endpoint == "" {
		return db.fail(op, fmt.Errorf("%w: empty push endpoint", check.ErrInvalid))
	}
	q, args := `DELETE FROM push_subscriptions WHERE endpoint = ?`, []any{endpoint}
	if ownerID != "" {
		q, args = q+` AND owner_id = ?`, append(args, ownerID)
	}
	n, err := affected(db.exec(ctx, q, args...))
	if err != nil {
		return db.wrap(ctx, op, err)
	}
	if n == 0 {
		return db.fail(op, store.ErrNotFound)
	}
	return nil
}

// PushSubscriptions lists the subscriptions of owners not expired at now.
func (db *DB) PushSubscriptions(ctx context.Context, now time.Time) ([]store.PushSubscription, error) {
	const op = "push subscriptions"
	return queryAll(ctx, db, op, scanPush, `SELECT p.endpoint, p.p256dh, p.auth, p.owner_id, p.label, p.created_at
		FROM push_subscriptions p JOIN tokens t ON t.id = p.owner_id
		WHERE t.expires_at IS NULL OR t.expires_at > ? ORDER BY p.created_at, p.endpoint`, db.ts(check.OrNow(now)))
}
