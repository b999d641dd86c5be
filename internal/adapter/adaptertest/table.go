package adaptertest

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite this adapter's rows of the conformance table in docs/adapters.md")

// The table sits between these lines of docs/adapters.md.
const (
	tableBegin = "<!-- adaptertest: begin (go test ./internal/adapter/... -update rewrites the rows) -->"
	tableEnd   = "<!-- adaptertest: end -->"
)

// DocPath is the page that holds the conformance table, from the module
// root.
const DocPath = "docs/adapters.md"

// CheckTable compares row (as Run returns it) with the fixture's row of
// the conformance table in docs/adapters.md, and fails the test when they
// differ; with -update it writes the row instead (adding it when missing).
func CheckTable(t *testing.T, name string, row map[string]string) {
	t.Helper()
	path := filepath.Join(moduleRoot(t), DocPath)
	want := tableRow(name, row)
	if *update {
		// Packages run their tests in parallel: one writer at a time.
		unlock := lock(t, path+".lock")
		defer unlock()
	}
	b, err := os.ReadFile(path) //nolint:gosec // as above
	if err != nil {
		t.Fatal(err)
	}
	begin, end := bytes.Index(b, []byte(tableBegin)), bytes.Index(b, []byte(tableEnd))
	if begin < 0 || end < begin {
		t.Fatalf("%s has no conformance table between %q and %q", DocPath, tableBegin, tableEnd)
	}
	body := string(b[begin+len(tableBegin) : end])
	lines := strings.Split(strings.Trim(body, "\n"), "\n")
	if len(lines) < 2 || lines[0] != header() || lines[1] != separator() {
		if !*update {
			t.Fatalf("%s: the conformance table's header is not\n%s\n%s\nrun go test ./internal/adapter/... -update", DocPath, header(), separator())
		}
		lines = []string{header(), separator()}
	}
	prefix := "| " + name + " |"
	at := -1
	for i, l := range lines[2:] {
		if strings.HasPrefix(l, prefix) {
			at = i + 2
		}
	}
	if at >= 0 && lines[at] == want {
		return
	}
	if !*update {
		got := "(no row)"
		if at >= 0 {
			got = lines[at]
		}
		t.Fatalf("%s: the conformance table's row for %s is\n%s\nbut the suite found\n%s\nrun go test ./internal/adapter/... -update", DocPath, name, got, want)
	}
	if at >= 0 {
		lines[at] = want
	} else {
		lines = append(lines, want)
	}
	out := string(b[:begin+len(tableBegin)]) + "\n" + strings.Join(lines, "\n") + "\n" + string(b[end:])
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil { //nolint:gosec // a doc page, world-readable as the rest
		t.Fatal(err)
	}
	t.Logf("%s: wrote the row for %s", DocPath, name)
}

func header() string {
	return "| agent | `" + strings.Join(Columns, "` | `") + "` |"
}

func separator() string {
	return "|---" + strings.Repeat("|---", len(Columns)) + "|"
}

func tableRow(name string, row map[string]string) string {
	cells := make([]string, len(Columns))
	for i, c := range Columns {
		cells[i] = row[c]
		if cells[i] == "" {
			cells[i] = "?"
		}
	}
	return "| " + name + " | " + strings.Join(cells, " | ") + " |"
}

// moduleRoot is the directory of go.mod above the working directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = up
	}
}

// lock takes a lock file (created exclusively, removed by the returned
// function), waiting up to a minute for another package's test to drop it.
func lock(t *testing.T, path string) func() {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600) //nolint:gosec // beside the doc
		if err == nil {
			_ = f.Close()
			return func() { _ = os.Remove(path) }
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is held for over a minute (remove it if no test runs)", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
