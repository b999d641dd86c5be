// Package sqlbody holds the queries that the SQLite and PostgreSQL stores
// share, written once over database/sql; each backend keeps only its
// opening, migrations and the hot paths where the two genuinely differ.
//
// Guarantees:
//
//   - Every query is written with ? placeholders and sent unchanged to a
//     ? dialect, renumbered $1, $2, … for a $ dialect.
//   - A time is stored through the dialect's encoding, the zero time as
//     NULL; it reads back in UTC, to the microsecond, from either encoding
//     (Unix microseconds or a timestamp), and NULL reads back as zero.
//   - A nil blob is stored as NULL and reads back as nil.
//   - Errors carry the dialect's name and the operation, wrap the store's
//     sentinel errors (store.ErrExists, store.ErrNotFound) and keep the
//     context's error in the chain (check.Wrap).
//   - Every store.Store method's arguments are checked here (package
//     check) before any query runs, the backends' own hot writes
//     (Hot) included, so the two backends refuse bad input alike.
package sqlbody

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ferry-dev/ferry/internal/store/internal/check"
)

// Dialect is what differs between the backends in the shared queries.
type Dialect struct {
	// Name prefixes every error ("sqlite", "postgres").
	Name string
	// Dollar numbers placeholders $1, $2, … instead of ?.
	Dollar bool
	// Time encodes a non-zero time as stored.
	Time func(time.Time) any
	// IsUnique reports a UNIQUE or PRIMARY KEY violation.
	IsUnique func(error) bool
	// IsForeignKey reports a FOREIGN KEY violation: what a row refers to
	// does not exist.
	IsForeignKey func(error) bool
	// InsertOrder is the column that orders rows inserted in the same
	// microsecond ("rowid" on SQLite, a serial column on PostgreSQL).
	InsertOrder string
	// NoLimit is the LIMIT argument that means no limit.
	NoLimit any
	// Contains is the SQL condition that the text expression expr
	// contains the one ? argument, case-insensitively and literally (no
	// wildcards).
	Contains func(expr string) string
	// JSONText is the SQL of one string field of an event's payload (the
	// column data, the payload key key), NULL when absent.
	JSONText func(data, key string) string
}

// SQLite is SQLite's dialect: ? placeholders, times as Unix
// microseconds, rowid for insertion order, LIMIT -1 for none. The driver's
// error codes are the caller's to classify.
func SQLite(isUnique, isForeignKey func(error) bool) Dialect {
	return Dialect{
		Name: "sqlite", Time: func(t time.Time) any { return t.UnixMicro() },
		IsUnique: isUnique, IsForeignKey: isForeignKey, InsertOrder: "rowid", NoLimit: -1,
		// SQLite's lower() folds ASCII only: ferry_lower is Go's
		// strings.ToLower, registered by the sqlite store.
		Contains: func(expr string) string { return `instr(ferry_lower(` + expr + `), ferry_lower(?)) > 0` },
		// The data is a BLOB, which SQLite's JSON functions would read as
		// JSONB: cast it to the text it is.
		JSONText: func(data, key string) string {
			return `json_extract(CAST(` + data + ` AS TEXT), '$.payload.` + key + `')`
		},
	}
}

// Postgres is PostgreSQL's dialect: $n placeholders, timestamptz times,
// an identity column "ord" for insertion order, LIMIT NULL (ALL) for none.
func Postgres(isUnique, isForeignKey func(error) bool) Dialect {
	return Dialect{
		Name: "postgres", Dollar: true, Time: func(t time.Time) any { return t },
		IsUnique: isUnique, IsForeignKey: isForeignKey, InsertOrder: "ord", NoLimit: nil,
		// strpos, not LIKE: the query's % and _ are plain characters.
		Contains: func(expr string) string { return `strpos(lower(` + expr + `), lower(?)) > 0` },
		JSONText: func(data, key string) string {
			return `(convert_from(` + data + `, 'UTF8')::jsonb -> 'payload' ->> '` + key + `')`
		},
	}
}

// DB runs the shared queries on one backend.
type DB struct {
	D Dialect
	// R serves reads, W writes (the same handle when the backend has one
	// pool).
	R, W *sql.DB
	// Wrote, when set, is called after every write (SQLite schedules a
	// checkpoint).
	Wrote func()
	// Hot is the backend's own way with the hottest writes.
	Hot Hot
}

// q is query in the dialect's placeholders.
func (db *DB) q(query string) string {
	if !db.D.Dollar {
		return query
	}
	return Rebind(query)
}

// Rebind numbers the ? placeholders of query $1, $2, … (no query here
// has a ? inside a string literal).
func Rebind(query string) string {
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	for i := range len(query) {
		if query[i] != '?' {
			b.WriteByte(query[i])
			continue
		}
		n++
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(n))
	}
	return b.String()
}

// exec runs one write statement on the writer.
func (db *DB) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	res, err := db.W.ExecContext(ctx, db.q(query), args...)
	if db.Wrote != nil {
		db.Wrote()
	}
	return res, err
}

// affected is the count of rows a statement changed, or its error.
func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// query runs one read on the readers.
func (db *DB) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return db.R.QueryContext(ctx, db.q(query), args...)
}

// queryRow runs one single-row read on the readers.
func (db *DB) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	return db.R.QueryRowContext(ctx, db.q(query), args...)
}

// wrap names the operation and keeps ctx.Err() in the chain.
func (db *DB) wrap(ctx context.Context, op string, err error) error {
	return check.Wrap(ctx.Err(), db.D.Name, op, err)
}

// fail is a failure that needs no context: a check or a sentinel.
func (db *DB) fail(op string, err error) error {
	return fmt.Errorf("%s: %s: %w", db.D.Name, op, err)
}

// failOn is fail naming the row it is about.
func (db *DB) failOn(op, what string, err error) error {
	return fmt.Errorf("%s: %s %s: %w", db.D.Name, op, what, err)
}

// ts is t as stored: NULL for the zero time.
func (db *DB) ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return db.D.Time(t)
}

// Time scans a stored time in either encoding; NULL is the zero time.
type Time struct{ T time.Time }

// Scan implements sql.Scanner.
func (t *Time) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		t.T = time.Time{}
	case int64:
		t.T = time.UnixMicro(v).UTC()
	case time.Time:
		t.T = v.UTC()
	default:
		return fmt.Errorf("scan time: unexpected %T", v)
	}
	return nil
}

// Blob stores nil as NULL so that it reads back as nil.
func Blob(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}

// RawJSON is b as a json.RawMessage, nil for NULL.
func RawJSON(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(b)
}

// Scanner is a *sql.Row or *sql.Rows.
type Scanner interface{ Scan(...any) error }

// queryAll runs q and scans every row with scan; errors are wrapped as op.
func queryAll[T any](ctx context.Context, db *DB, op string, scan func(Scanner) (T, error), q string, args ...any) ([]T, error) {
	rows, err := db.query(ctx, q, args...)
	if err != nil {
		return nil, db.wrap(ctx, op, err)
	}
	out, err := CollectRows(rows, scan)
	if err != nil {
		return nil, db.wrap(ctx, op, err)
	}
	return out, nil
}

// CollectRows scans every row with scan and closes rows.
func CollectRows[T any](rows *sql.Rows, scan func(Scanner) (T, error)) ([]T, error) {
	defer func() { _ = rows.Close() }()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
