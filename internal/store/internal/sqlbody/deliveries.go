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
// what waits for a client's answer, so it is read whole; the join reads
// each event by its (session_id, seq) key, and leaves out one that was
// trimmed.
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
		if err := row.Scan(&d.SessionID, &d.MachineID, &seq, &d.Event.MessageID, &d.Event.Type, &d.Event.Data, &created); err != nil {
			return store.Delivery{}, err
		}
		d.Event.Seq = uint64(seq) //nolint:gosec // stored from a checked uint64
		d.Event.CreatedAt = created.T
		d.Event.Deliver = true
		return d, nil
	}, `SELECT d.session_id, s.machine_id, e.seq, e.message_id, e.type, e.data, e.created_at
		FROM deliveries d
		JOIN sessions s ON s.id = d.session_id
		JOIN events e ON e.session_id = d.session_id AND e.seq = d.seq
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
