package sqlbody

import (
	"context"
	"fmt"
	"time"

	"github.com/ferry-dev/ferry/internal/store/internal/check"
)

// --- leases ---

// AcquireLease takes the lease name for holder until now+ttl when it is
// free or expired, or renews it when holder has it: one upsert whose
// update only happens under that condition, so that of concurrent callers
// exactly one changes the row.
func (db *DB) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	const op = "acquire lease"
	if err := db.leaseArgs(name, holder); err != nil {
		return false, db.fail(op, err)
	}
	if ttl <= 0 {
		return false, db.fail(op, fmt.Errorf("%w: a lease needs a positive ttl", check.ErrInvalid))
	}
	now := time.Now()
	n, err := affected(db.exec(ctx, `INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
		WHERE leases.holder = excluded.holder OR leases.expires_at <= ?`,
		name, holder, db.ts(now.Add(ttl)), db.ts(now)))
	if err != nil {
		return false, db.wrap(ctx, op, err)
	}
	return n == 1, nil
}

// ReleaseLease gives the lease up when holder has it; otherwise nothing.
func (db *DB) ReleaseLease(ctx context.Context, name, holder string) error {
	const op = "release lease"
	if err := db.leaseArgs(name, holder); err != nil {
		return db.fail(op, err)
	}
	_, err := db.exec(ctx, `DELETE FROM leases WHERE name = ? AND holder = ?`, name, holder)
	return db.wrap(ctx, op, err)
}

func (db *DB) leaseArgs(name, holder string) error {
	if err := check.ID("lease", name); err != nil {
		return err
	}
	return check.ID("lease holder", holder)
}
