package backend_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/backend"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		dsn    string
		kind   backend.Kind
		target string
	}{
		{"postgres://u:p@127.0.0.1:5432/db?sslmode=disable", backend.Postgres, "postgres://u:p@127.0.0.1:5432/db?sslmode=disable"},
		{"postgresql://127.0.0.1/db", backend.Postgres, "postgresql://127.0.0.1/db"},
		{"sqlite:/var/lib/ferry.db", backend.SQLite, "/var/lib/ferry.db"},
		{"sqlite://relative.db", backend.SQLite, "relative.db"},
		{"file:data/ferry.db", backend.SQLite, "data/ferry.db"},
		{"/home/me/.local/share/ferry/ferry.db", backend.SQLite, "/home/me/.local/share/ferry/ferry.db"},
		{"ferry.db", backend.SQLite, "ferry.db"},
		{"./a:b.db", backend.SQLite, "./a:b.db"},
		{`C:\ferry\ferry.db`, backend.SQLite, `C:\ferry\ferry.db`},
	} {
		kind, target, err := backend.Parse(tc.dsn)
		if err != nil || kind != tc.kind || target != tc.target {
			t.Errorf("Parse(%q) = %q, %q, %v; want %q, %q", tc.dsn, kind, target, err, tc.kind, tc.target)
		}
	}
	for _, dsn := range []string{"", "mysql://u:hunter2@host/db", "postgres:/x", "sqlite:", "file:", "sqlite:x.db?mode=ro", "http://example", "my.db:x"} {
		_, _, err := backend.Parse(dsn)
		if err == nil {
			t.Errorf("Parse(%q) accepted it", dsn)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Parse(%q) error repeats the password: %v", dsn, err)
		}
	}
}

func TestOpenSQLite(t *testing.T) {
	dir := t.TempDir()
	for _, dsn := range []string{
		filepath.Join(dir, "plain.db"),
		"sqlite:" + filepath.Join(dir, "sqlite.db"),
		"file:" + filepath.Join(dir, "file.db"),
	} {
		s, err := backend.Open(t.Context(), dsn)
		if err != nil {
			t.Fatalf("Open(%q): %v", dsn, err)
		}
		if err := s.CreateSession(t.Context(), store.Session{ID: "s", MachineID: "m", Epoch: "e"}); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"plain.db", "sqlite.db", "file.db"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("no database file %s: %v", name, err)
		}
	}
}

func TestOpenPostgres(t *testing.T) {
	// Connection refused on a closed port: the address was routed to
	// PostgreSQL (a SQLite backend would have created a file instead).
	_, err := backend.Open(t.Context(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=5")
	if err == nil || !strings.HasPrefix(err.Error(), "postgres:") {
		t.Fatalf("Open(postgres://…) = %v, want a postgres connection error", err)
	}
}
