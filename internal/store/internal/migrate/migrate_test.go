package migrate_test

import (
	"strings"
	"testing"
	"testing/fstest"

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
	pending, err := migrate.Pending(ms, 1)
	if err != nil || len(pending) != 2 || pending[0].Version != 2 {
		t.Fatalf("Pending(1) = %+v, %v; want 2 and 3", pending, err)
	}
	if _, err := migrate.Pending(ms, 4); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Pending beyond the known versions = %v, want a refusal", err)
	}
}

func TestLoadRejects(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"gap":       {"m/0001_a.sql": {}, "m/0003_c.sql": {}},
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
