package sqlitefile_test

import (
	"database/sql"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/sqlitefile"
)

func mode(t *testing.T, name string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(name)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// A new database, in folders that do not exist yet, in WAL mode: the file,
// its -wal and -shm are 0600 and the folders 0700, whatever the test
// process's umask.
func TestOpenCreatesPrivate(t *testing.T) {
	base := t.TempDir()
	path := filepath.Join(base, "a", "b", "x.db")
	db, err := sqlitefile.Open(path, url.Values{"_pragma": {"journal_mode(WAL)"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	if _, err := db.Exec(`CREATE TABLE t (x TEXT); INSERT INTO t VALUES ('secret')`); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		if m := mode(t, name); m != 0o600 {
			t.Errorf("%s is %v, want 0600", name, m)
		}
	}
	for _, d := range []string{filepath.Join(base, "a"), filepath.Join(base, "a", "b")} {
		if m := mode(t, d); m != 0o700 {
			t.Errorf("folder %s is %v, want 0700", d, m)
		}
	}
}

// A database an older ferry left 0644, open with its -wal and -shm: Prepare
// tightens all three to 0600, and an existing folder keeps its mode.
func TestPrepareTightensOlderFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil { //nolint:gosec // the user's own folder
		t.Fatal(err)
	}
	path := filepath.Join(dir, "old.db")
	old, err := sql.Open("sqlite", sqlitefile.DSN(path, url.Values{"_pragma": {"journal_mode(WAL)"}}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = old.Close() }()
	old.SetMaxOpenConns(1)
	if _, err := old.Exec(`CREATE TABLE t (x TEXT); INSERT INTO t VALUES ('secret')`); err != nil {
		t.Fatal(err)
	}
	names := []string{path, path + "-wal", path + "-shm"}
	for _, name := range names {
		if err := os.Chmod(name, 0o644); err != nil { //nolint:gosec // what older versions left
			t.Fatal(err)
		}
	}
	if _, err := sqlitefile.Prepare(path); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if m := mode(t, name); m != 0o600 {
			t.Errorf("%s is %v after Prepare, want 0600", name, m)
		}
	}
	if m := mode(t, dir); m != 0o755 {
		t.Errorf("the user's folder is %v after Prepare, want it kept 0755", m)
	}
	var x string
	if err := old.QueryRow(`SELECT x FROM t`).Scan(&x); err != nil || x != "secret" {
		t.Fatalf("the database after Prepare: %q, %v", x, err)
	}
}

// A -wal that is a symbolic link is refused, and what it points at keeps
// its mode.
func TestPrepareRefusesLinkedCompanion(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("x"), 0o644); err != nil { //nolint:gosec // a file that is not ferry's
		t.Fatal(err)
	}
	if err := os.Chmod(other, 0o644); err != nil { //nolint:gosec // as above
		t.Fatal(err)
	}
	path := filepath.Join(dir, "x.db")
	if err := os.Symlink(other, path+"-wal"); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	if _, err := sqlitefile.Prepare(path); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("Prepare with a linked -wal: %v", err)
	}
	if m := mode(t, other); m != 0o644 {
		t.Fatalf("the link's target is %v, want it untouched (0644)", m)
	}
}

// Every SQLite file ferry opens goes through Open: no other code of the
// module calls sql.Open (the tests may, to look into a file).
func TestEverySQLiteOpenGoesThroughOpen(t *testing.T) {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	here := filepath.Dir(self)
	root := filepath.Join(here, "..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "node_modules" || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.Dir(path) == here {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		checked++
		sqlName := ""
		for _, im := range f.Imports {
			if p, _ := strconv.Unquote(im.Path.Value); p == "database/sql" {
				sqlName = "sql"
				if im.Name != nil {
					sqlName = im.Name.Name
				}
			}
		}
		if sqlName == "" {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "Open" && sel.Sel.Name != "OpenDB") {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == sqlName {
				t.Errorf("%s: %s.%s: open SQLite files with sqlitefile.Open, which makes them private", fset.Position(sel.Pos()), sqlName, sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d Go files checked: is %s the module?", checked, root)
	}
}
