// Package migrate loads a backend's numbered schema migrations: files
// named NNNN_name.sql, numbered 1, 2, 3, … with no gap, applied in order
// and recorded by number in the database's schema_migrations table.
//
// Apply is the one migration driver of both stores: inside the caller's
// transaction it reads the recorded version, refuses a newer schema, and
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
// name without a number, a duplicate number or a gap, so that a mistake in
// the embedded files shows at the first Open (and in every test).
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
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migrations: version %d where %d was expected", m.Version, i+1)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("migrations: none in %s", dir)
	}
	return out, nil
}

// Pending returns the migrations after the database's version current. It
// refuses a database migrated by a newer program, whose schema this one
// does not know.
func Pending(ms []Migration, current int) ([]Migration, error) {
	if current > len(ms) {
		return nil, fmt.Errorf("database schema version %d is newer than this program's %d; upgrade ferry", current, len(ms))
	}
	return ms[current:], nil
}

// Apply applies the migrations of ms after the version recorded in
// schema_migrations (which must exist), each followed by its record:
// record is the dialect's INSERT of (version, name, applied_at) and
// appliedAt the value stored. It runs in tx, so that the caller's
// transaction (and lock) makes concurrent Opens apply each migration once.
func Apply(ctx context.Context, tx *sql.Tx, ms []Migration, record string, appliedAt any) error {
	var current int
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	pending, err := Pending(ms, current)
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
