// Package migrate loads a backend's numbered schema migrations: files
// named NNNN_name.sql, each number used once, applied in ascending order
// and recorded by number in the database's schema_migrations table.
//
// Numbers may have gaps: branches developed in parallel each take their
// own number, and whichever merges first leaves a gap until the other
// does. A migration is pending while its number is not recorded, whatever
// higher numbers are, so a database that applied 6 still gets 5 when 5
// arrives later (migrations of parallel branches must not depend on each
// other, only on those merged before them).
//
// Apply is the one migration driver of both stores: inside the caller's
// transaction it reads the recorded versions, refuses a schema that
// recorded a version this program does not know (a newer program's), and
// applies and records each pending migration, so that a failure leaves
// the schema as it was.
package migrate

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one numbered schema change.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Load reads the migrations in dir of fsys, in order. It fails on a file
// name without a number or a duplicate number, so that a mistake in the
// embedded files shows at the first Open (and in every test).
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migrations: %s: want NNNN_name.sql", e.Name())
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("migrations: %w", err)
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("migrations: version %d is used twice", out[i].Version)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("migrations: none in %s", dir)
	}
	return out, nil
}

// Pending returns the migrations of ms (in order) whose versions are not
// among applied, the versions the database recorded. It refuses a
// database that recorded a version ms does not have: a newer program
// migrated it, and this one does not know its schema.
func Pending(ms []Migration, applied []int) ([]Migration, error) {
	known := make(map[int]bool, len(ms))
	for _, m := range ms {
		known[m.Version] = true
	}
	done := make(map[int]bool, len(applied))
	for _, v := range applied {
		if !known[v] {
			return nil, fmt.Errorf("database schema version %d is newer than this program knows (up to %d); upgrade ferry", v, ms[len(ms)-1].Version)
		}
		done[v] = true
	}
	var out []Migration
	for _, m := range ms {
		if !done[m.Version] {
			out = append(out, m)
		}
	}
	return out, nil
}

// Apply applies the migrations of ms after the version recorded in
// schema_migrations (which must exist), each followed by its record:
// record is the dialect's INSERT of (version, name, applied_at) and
// appliedAt the value stored. It runs in tx, so that the caller's
// transaction (and lock) makes concurrent Opens apply each migration once.
func Apply(ctx context.Context, tx *sql.Tx, ms []Migration, record string, appliedAt any) error {
	applied, err := recorded(ctx, tx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	pending, err := Pending(ms, applied)
	if err != nil {
		return err
	}
	for _, m := range pending {
		// No arguments: PostgreSQL's driver then uses the simple protocol,
		// which runs a file of several statements.
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("migrate %d_%s: %w", m.Version, m.Name, err)
		}
		if _, err := tx.ExecContext(ctx, record, m.Version, m.Name, appliedAt); err != nil {
			return fmt.Errorf("migrate %d_%s: %w", m.Version, m.Name, err)
		}
	}
	return nil
}

// recorded lists the versions schema_migrations holds.
func recorded(ctx context.Context, tx *sql.Tx) ([]int, error) {
	rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
