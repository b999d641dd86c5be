package sqlbody

import "context"

// Ping runs the cheapest query there is on the read pool: it answers when
// the database does, without touching a table or waiting for a writer.
func (db *DB) Ping(ctx context.Context) error {
	var one int
	err := db.R.QueryRowContext(ctx, `SELECT 1`).Scan(&one)
	return db.wrap(ctx, "ping", err)
}
