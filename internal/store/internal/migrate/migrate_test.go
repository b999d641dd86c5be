package migrate_test

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	_ "modernc.org/sqlite" // a database to run the driver on

	"github.com/ferry-dev/ferry/internal/store/internal/migrate"
)

func TestLoad(t *testing.T) {
	fsys := fstest.MapFS{
		"m/0002_more.sql":  {Data: []byte("B")},
		"m/0001_init.sql":  {Data: []byte("A")},
		"m/README":         {Data: []byte("ignored")},
		"m/0003_third.sql": {Data: []byte("C")},
	}
	ms, err := migrate.Load(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.Name+"="+m.SQL)
	}
	if strings.Join(got, ",") != "init=A,more=B,third=C" {
		t.Fatalf("Load = %v, want init, more, third in order", got)
	}
	pending, err := migrate.Pending(ms, []int{1})
	if err != nil || len(pending) != 2 || pending[0].Version != 2 {
		t.Fatalf("Pending(1) = %+v, %v; want 2 and 3", pending, err)
	}
	if _, err := migrate.Pending(ms, []int{1, 2, 3, 4}); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Pending beyond the known versions = %v, want a refusal", err)
	}
}

func TestLoadRejects(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"duplicate": {"m/0001_a.sql": {}, "m/01_b.sql": {}},
		"no number": {"m/init.sql": {}},
		"zero":      {"m/0000_a.sql": {}},
		"none":      {"m/README": {}},
	} {
		if _, err := migrate.Load(fsys, "m"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestApply runs the driver twice on one database: the second run finds
// nothing pending, and a database recorded past the files is refused.
func TestApply(t *testing.T) {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	ms := []migrate.Migration{
		{Version: 1, Name: "a", SQL: "CREATE TABLE a (x INTEGER); CREATE TABLE b (y INTEGER)"},
		{Version: 2, Name: "c", SQL: "CREATE TABLE c (z INTEGER)"},
	}
	const record = `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`
	apply := func(ms []migrate.Migration) error {
		tx, err := db.BeginTx(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := migrate.Apply(t.Context(), tx, ms, record, 0); err != nil {
			_ = tx.Rollback()
			return err
		}
		return tx.Commit()
	}
	for range 2 {
		if err := apply(ms); err != nil {
			t.Fatalf("Apply: %v", err)
		}
	}
	var n int
	if err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("schema_migrations has %d rows (%v), want 2", n, err)
	}
	if _, err := db.ExecContext(t.Context(), `INSERT INTO b VALUES (1)`); err != nil {
		t.Fatalf("the second statement of a migration did not run: %v", err)
	}
	if err := apply(ms[:1]); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Apply of fewer migrations than recorded = %v, want a refusal", err)
	}
}

// TestGapFilledLater: parallel branches take migration numbers 5 and 6;
// the one with 6 merges first, so a database records 1 and 6 before the
// program that also has 5 opens it. 5 is then pending (and applied), and
// a number recorded that the files lack is still refused.
func TestGapFilledLater(t *testing.T) {
	fsys := fstest.MapFS{"m/0001_a.sql": {Data: []byte("A")}, "m/0006_f.sql": {Data: []byte("F")}}
	ms, err := migrate.Load(fsys, "m")
	if err != nil {
		t.Fatalf("Load with a gap: %v", err)
	}
	if len(ms) != 2 || ms[1].Version != 6 {
		t.Fatalf("Load = %+v, want 1 and 6", ms)
	}
	fsys["m/0005_e.sql"] = &fstest.MapFile{Data: []byte("E")}
	ms, err = migrate.Load(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	pending, err := migrate.Pending(ms, []int{1, 6})
	if err != nil || len(pending) != 1 || pending[0].Version != 5 {
		t.Fatalf("Pending after 1 and 6 = %+v, %v; want 5 alone", pending, err)
	}
	if _, err := migrate.Pending(ms, []int{1, 4}); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Pending with an unknown recorded version 4 = %v, want a refusal", err)
	}
}

// TestApplyFillsGap runs the driver on a database that applied 1 and 3
// with files 1, 2, 3: 2 runs and is recorded, 1 and 3 do not run again.
func TestApplyFillsGap(t *testing.T) {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	const record = `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`
	apply := func(ms []migrate.Migration) error {
		tx, err := db.BeginTx(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := migrate.Apply(t.Context(), tx, ms, record, 0); err != nil {
			_ = tx.Rollback()
			return err
		}
		return tx.Commit()
	}
	a := migrate.Migration{Version: 1, Name: "a", SQL: "CREATE TABLE a (x INTEGER)"}
	b := migrate.Migration{Version: 2, Name: "b", SQL: "CREATE TABLE b (x INTEGER)"}
	c := migrate.Migration{Version: 3, Name: "c", SQL: "CREATE TABLE c (x INTEGER)"}
	if err := apply([]migrate.Migration{a, c}); err != nil {
		t.Fatalf("Apply 1 and 3: %v", err)
	}
	if err := apply([]migrate.Migration{a, b, c}); err != nil {
		t.Fatalf("Apply 1, 2, 3 over 1 and 3: %v", err)
	}
	if _, err := db.ExecContext(t.Context(), `INSERT INTO b VALUES (1)`); err != nil {
		t.Fatalf("migration 2 did not run: %v", err)
	}
	var n int
	if err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("schema_migrations has %d rows (%v), want 3", n, err)
	}
}
