package sqlbody

import (
	"context"
	"time"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/internal/check"
)

// --- deliveries ---

// The backends' AppendEvents record and answer deliveries in their own
// transaction with these statements (SQLite's ? form; PostgreSQL batches
// its own).
const (
	// InsertDelivery records an event stored with Deliver: session_id,
	// message_id, seq, created_at.
	InsertDelivery = `INSERT INTO deliveries (session_id, message_id, seq, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (session_id, message_id) DO NOTHING`
	// DeleteDelivery takes one off: session_id, message_id.
	DeleteDelivery = `DELETE FROM deliveries WHERE session_id = ? AND message_id = ?`
)

// Undelivered lists the undelivered events stored at or before before (now
// when zero), of machineID's sessions (every machine's when empty), oldest
// first, at most limit (no limit when limit <= 0). The table holds only
// what waits for a client's answer, and names the events without their
// data, so it is read whole.
func (db *DB) Undelivered(ctx context.Context, machineID string, before time.Time, limit int) ([]store.Delivery, error) {
	const op = "undelivered"
	lim := db.D.NoLimit
	if limit > 0 {
		lim = limit
	}
	return queryAll(ctx, db, op, func(row Scanner) (store.Delivery, error) {
		var (
			d       store.Delivery
			seq     int64
			created Time
		)
		if err := row.Scan(&d.SessionID, &d.MachineID, &d.MessageID, &seq, &created); err != nil {
			return store.Delivery{}, err
		}
		d.Seq = uint64(seq) //nolint:gosec // stored from a checked uint64
		d.CreatedAt = created.T
		return d, nil
	}, `SELECT d.session_id, s.machine_id, d.message_id, d.seq, d.created_at
		FROM deliveries d JOIN sessions s ON s.id = d.session_id
		WHERE (? = '' OR s.machine_id = ?) AND d.created_at <= ?
		ORDER BY d.created_at, d.session_id, d.seq LIMIT ?`,
		machineID, machineID, db.D.Time(check.OrNow(before)), lim)
}

// Delivered takes one event off the undelivered list; nothing when it is
// not on it.
func (db *DB) Delivered(ctx context.Context, sessionID, messageID string) error {
	const op = "delivered"
	if err := check.ID("session", sessionID); err != nil {
		return db.fail(op, err)
	}
	if err := check.ID("message", messageID); err != nil {
		return db.fail(op, err)
	}
	_, err := db.exec(ctx, DeleteDelivery, sessionID, messageID)
	return db.wrap(ctx, op, err)
}
