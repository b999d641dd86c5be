package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestGrepFilesWithMatches(t *testing.T) {
	t.Parallel()
	env, root := srEnv(t)
	srWrite(t, root, map[string]string{
		"a.go":      "package a\nfunc Hello() {}\n",
		"b.go":      "package b\n// hello world\n",
		"sub/c.go":  "package c\nvar Hello = 1\n",
		"sub/d.txt": "nothing here\n",
		"e.md":      "Hello\n",
		"old/f.go":  "Hello\n",
	})
	srAge(t, root, "sub/c.go", "e.md", "a.go", "old/f.go", "b.go")
	srEqual(t, srOK(t, Grep{}, env, map[string]any{"pattern": "Hello"}), "sub/c.go", "e.md", "a.go", "old/f.go")
	srEqual(t, srOK(t, Grep{}, env, map[string]any{"pattern": "hello", "-i": true}), "sub/c.go", "e.md", "a.go", "old/f.go", "b.go")
	srEqual(t, srOK(t, Grep{}, env, map[string]any{"pattern": "nomatch"}), "No files found")
	// A file as path.
	srEqual(t, srOK(t, Grep{}, env, map[string]any{"pattern": "Hello", "path": "a.go"}), "a.go")
}

func TestGrepContentAndContext(t *testing.T) {
	t.Parallel()
	env, root := srEnv(t)
	var b strings.Builder
	for i := 1; i <= 20; i++ {
		if i == 5 || i == 7 || i == 15 {
			fmt.Fprintf(&b, "match %d\n", i)
		} else {
			fmt.Fprintf(&b, "line %d\n", i)
		}
	}
	srWrite(t, root, map[string]string{"f.txt": b.String(), "g.txt": "x\nmatch g\r\ny\n"})
	srAge(t, root, "f.txt", "g.txt")
	srEqual(t, srOK(t, Grep{}, env, map[string]any{"pattern": "^match", "output_mode": "content"}),
		"f.txt:5:match 5", "f.txt:7:match 7", "f.txt:15:match 15", "g.txt:2:match g")
	srEqual(t, srOK(t, Grep{}, env, map[string]any{"pattern": "^match", "output_mode": "content", "-n": false, "path": "g.txt"}),
		"g.txt:match g")
	srEqual(t, srOK(t, Grep{}, env, map[string]any{"pattern": "^match", "output_mode": "content", "-C": 1}),
		"f.txt-4-line 4", "f.txt:5:match 5", "f.txt-6-line 6", "f.txt:7:match 7", "f.txt-8-line 8",
		"--", "f.txt-14-line 14", "f.txt:15:match 15", "f.txt-16-line 16",
		"--", "g.txt-1-x", "g.txt:2:match g", "g.txt-3-y")
	srEqual(t, srOK(t, Grep{}, env, map[string]any{"pattern": "^match", "output_mode": "content", "-B": 2, "path": "f.txt"}),
		"f.txt-3-line 3", "f.txt-4-line 4", "f.txt:5:match 5", "f.txt-6-line 6", "f.txt:7:match 7",
		"--", "f.txt-13-line 13", "f.txt-14-line 14", "f.txt:15:match 15")
	srEqual(t, srOK(t, Grep{}, env, map[string]any{"pattern": "^match", "output_mode": "content", "-A": 1, "-C": 3, "path": "f.txt"}),
		"f.txt-2-line 2", "f.txt-3-line 3", "f.txt-4-line 4", "f.txt:5:match 5", "f.txt-6-line 6", "f.txt:7:match 7", "f.txt-8-line 8",
		"--", "f.txt-12-line 12", "f.txt-13-line 13", "f.txt-14-line 14", "f.txt:15:match 15", "f.txt-16-line 16")
	srEqual(t, srOK(t, Grep{}, env, map[string]any{"pattern": "nomatch", "output_mode": "content"}), "No matches found")
}

func TestGrepCount(t *testing.T) {
	t.Parallel()
	env, root := srEnv(t)
	srWrite(t, root, map[string]string{"a.txt": "x\nx x\ny\n", "b/c.txt": "x\n", "d.txt": "y\n"})
	srEqual(t, srOK(t, Grep{}, env, map[string]any{"pattern": "x", "output_mode": "count"}),
		"a.txt:2", "b/c.txt:1", "", "Found 3 matching lines in 2 files.")
	srEqual(t, srOK(t, Grep{}, env, map[string]any{"pattern": "x", "output_mode": "count", "multiline": true}),
		"a.txt:3", "b/c.txt:1", "", "Found 4 matches in 2 files.")
}

func TestGrepMultiline(t *testing.T) {
	t.Parallel()
	env, root := srEnv(t)
	srWrite(t, root, map[string]string{"s.go": "package s\n\ntype T struct {\n\tA int\n\tName string\n}\n\nfunc f() {}\n"})
	srEqual(t, srOK(t, Grep{}, env, map[string]any{"pattern": `struct \{[\s\S]*?Name`, "output_mode": "content"}), "No matches found")
	srEqual(t, srOK(t, Grep{}, env, map[string]any{"pattern": `struct \{.*?Name`, "output_mode": "content", "multiline": true}),
		"s.go:3:type T struct {", "s.go:4:\tA int", "s.go:5:\tName string")
	srEqual(t, srOK(t, Grep{}, env, map[string]any{"pattern": `^\}\n\nfunc`, "output_mode": "content", "multiline": true, "-A": 1, "-B": 1}),
		"s.go-5-\tName string", "s.go:6:}", "s.go:7:", "s.go:8:func f() {}")
	srEqual(t, srOK(t, Grep{}, env, map[string]any{"pattern": `A int\n\tName`, "multiline": true}), "s.go")
	msg := srCode(t, Grep{}, env, map[string]any{"pattern": `A int\n\tName`}, CodeBadPattern)
	if !strings.Contains(msg, "multiline") {
		t.Errorf("message: %s", msg)
	}
}

func TestGrepPaging(t *testing.T) {
	t.Parallel()
	env, root := srEnv(t)
	var b strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&b, "hit %d\n", i)
	}
	srWrite(t, root, map[string]string{"a.txt": b.String(), "b.txt": "hit b\n", "c.txt": "hit c\n"})
	srAge(t, root, "c.txt", "b.txt", "a.txt")
	out := srOK(t, Grep{}, env, map[string]any{"pattern": "hit", "output_mode": "content", "head_limit": 3})
	srEqual(t, out, "a.txt:1:hit 1", "a.txt:2:hit 2", "a.txt:3:hit 3", "",
		"(More matching lines: showing 3 from offset 0. Call again with offset=3 to see more, or narrow the search.)")
	out = srOK(t, Grep{}, env, map[string]any{"pattern": "hit", "output_mode": "content", "head_limit": 3, "offset": 9})
	srEqual(t, out, "a.txt:10:hit 10", "b.txt:1:hit b", "c.txt:1:hit c")
	out = srOK(t, Grep{}, env, map[string]any{"pattern": "hit", "head_limit": 2})
	srEqual(t, out, "c.txt", "b.txt", "",
		"(More files match: showing 2 from offset 0. Call again with offset=2 to see more, or narrow the search.)")
	srEqual(t, srOK(t, Grep{}, env, map[string]any{"pattern": "hit", "head_limit": 2, "offset": 2}), "a.txt")
	srEqual(t, srOK(t, Grep{}, env, map[string]any{"pattern": "hit", "offset": 5}), "No results at offset 5: there are only 3.")
	// Limits.MaxSearchResults caps head_limit.
	env.Limits.MaxSearchResults = 2
	out = srOK(t, Grep{}, env, map[string]any{"pattern": "hit", "output_mode": "count", "head_limit": 50})
	srEqual(t, out, "a.txt:10", "b.txt:1", "",
		"(More files match: showing 2 from offset 0. Call again with offset=2 to see more, or narrow the search.)")
}

// TestGrepStopsEarly: with head_limit reached, later files are not even
// opened.
func TestGrepStopsEarly(t *testing.T) {
	t.Parallel()
	env, root := srEnv(t)
	files := map[string]string{}
	for i := range 20 {
		files[fmt.Sprintf("f%02d.txt", i)] = "needle\n"
	}
	srWrite(t, root, files)
	rec := &srRecFS{FS: env.FS}
	env.FS = rec
	srOK(t, Grep{}, env, map[string]any{"pattern": "needle", "output_mode": "content", "head_limit": 2})
	if opened := rec.touched("open "); len(opened) != 3 {
		t.Errorf("opened %d files for 2 lines (the third shows more exist): %v", len(opened), opened)
	}
	rec.paths = nil
	srOK(t, Grep{}, env, map[string]any{"pattern": "needle", "head_limit": 1})
	if opened := rec.touched("open "); len(opened) != 2 {
		t.Errorf("files_with_matches opened %d files for 1: %v", len(opened), opened)
	}
}

func TestGrepFilters(t *testing.T) {
	t.Parallel()
	env, root := srEnv(t)
	srWrite(t, root, map[string]string{
		"a.go": "x", "a_test.go": "x", "sub/b.go": "x", "c.ts": "x", "d.tsx": "x", "e.py": "x",
		"Makefile": "x", "f.js": "x", "sub/g.md": "x",
	})
	srAge(t, root, "a.go", "a_test.go", "sub/b.go", "c.ts", "d.tsx", "e.py", "Makefile", "f.js", "sub/g.md")
	grep := func(in map[string]any) string {
		in["pattern"] = "x"
		return srOK(t, Grep{}, env, in)
	}
	srEqual(t, grep(map[string]any{"type": "go"}), "a.go", "a_test.go", "sub/b.go")
	srEqual(t, grep(map[string]any{"type": "ts,py"}), "c.ts", "d.tsx", "e.py")
	srEqual(t, grep(map[string]any{"type": "make"}), "Makefile")
	srEqual(t, grep(map[string]any{"glob": "*.go"}), "a.go", "a_test.go", "sub/b.go")
	srEqual(t, grep(map[string]any{"glob": "*.go !*_test.go"}), "a.go", "sub/b.go")
	srEqual(t, grep(map[string]any{"glob": "*.{ts,tsx}"}), "c.ts", "d.tsx")
	srEqual(t, grep(map[string]any{"glob": "sub/*"}), "sub/b.go", "sub/g.md")
	srEqual(t, grep(map[string]any{"glob": "*.go", "type": "go", "path": "sub"}), "sub/b.go")
	srCode(t, Grep{}, env, map[string]any{"pattern": "x", "type": "cobol"}, CodeInvalidInput)
	srCode(t, Grep{}, env, map[string]any{"pattern": "x", "glob": "[abc"}, CodeBadPattern)
}

func TestGrepIgnoredAndSpecialFiles(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	srWrite(t, outside, map[string]string{"secret.txt": "needle\n"})
	env, root := srEnv(t)
	srWrite(t, root, map[string]string{
		".gitignore":    "vendor/\n*.min.js\n",
		"vendor/lib.go": "needle\n",
		"app.min.js":    "needle\n",
		"src/main.go":   "needle\n",
		"src/.ignore":   "gen/\n",
		"src/gen/x.go":  "needle\n",
		"bin.dat":       "needle\x00binary\n",
		".git/HEAD":     "needle\n",
	})
	srMkfifo(t, filepath.Join(root, "vendor", "fifo.go"))
	srMkfifo(t, filepath.Join(root, "src", "fifo.go"))
	for link, target := range map[string]string{
		"src/loop":         "..",
		"src/escape.txt":   filepath.Join(outside, "secret.txt"),
		"src/escape-dir":   outside,
		"src/inside.txt":   "main.go",
		"src/fifo-link.go": "fifo.go",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	rec := &srRecFS{FS: env.FS}
	env.FS = rec
	srWithin(t, func() {
		got := srOK(t, Grep{}, env, map[string]any{"pattern": "needle", "output_mode": "content"})
		srEqual(t, got, "src/inside.txt:1:needle", "src/main.go:1:needle")
	})
	for _, dir := range []string{"vendor", "src/gen", outside} {
		if got := rec.touched(dir); len(got) > 0 {
			t.Errorf("%s was touched: %v", dir, got)
		}
	}
	for _, op := range rec.touched("fifo") {
		// A symlink to a FIFO is stat'ed (which never blocks), never opened.
		if !strings.HasPrefix(op, "stat ") {
			t.Errorf("a FIFO was read: %v", op)
		}
	}
	// Binary files are skipped; named explicitly, the result says why.
	out := srOK(t, Grep{}, env, map[string]any{"pattern": "needle", "path": "bin.dat"})
	if !strings.Contains(out, "binary file") {
		t.Errorf("explicit binary file: %q", out)
	}
	// An ignored directory named as path is searched.
	srEqual(t, srOK(t, Grep{}, env, map[string]any{"pattern": "needle", "path": "vendor"}), "vendor/lib.go")
	// A FIFO named explicitly is refused at once.
	srWithin(t, func() {
		srCode(t, Grep{}, env, map[string]any{"pattern": "x", "path": "src/fifo.go"}, CodeNotRegular)
	})
	srCode(t, Grep{}, env, map[string]any{"pattern": "x", "path": "src/escape.txt"}, CodeOutside)
}

func TestGrepLongLines(t *testing.T) {
	t.Parallel()
	env, root := srEnv(t)
	// A 3 MB line (beyond the buffer) with the match near its end, and
	// lines around it.
	long := strings.Repeat("a", 3<<20) + "NEEDLE" + strings.Repeat("b", 1000)
	srWrite(t, root, map[string]string{"big.txt": "before\n" + long + "\nafter NEEDLE\n"})
	out := srOK(t, Grep{}, env, map[string]any{"pattern": "NEEDLE", "output_mode": "content", "-C": 1})
	lines := srLines(out)
	if len(lines) != 3 || len(out) > 3000 {
		t.Fatalf("output of %d bytes: %.300q", len(out), out)
	}
	if lines[0] != "big.txt-1-before" || lines[2] != "big.txt:3:after NEEDLE" {
		t.Errorf("context: %q, %q", lines[0], lines[2])
	}
	want := fmt.Sprintf("big.txt:2:[… %d bytes] ", 3<<20-125)
	if !strings.HasPrefix(lines[1], want) || !strings.Contains(lines[1], "NEEDLE") || !strings.HasSuffix(lines[1], " [… 631 more bytes]") {
		t.Errorf("long line shown as %.200q…%q", lines[1], lines[1][max(0, len(lines[1])-60):])
	}
	srEqual(t, srOK(t, Grep{}, env, map[string]any{"pattern": "NEEDLE", "output_mode": "count"}),
		"big.txt:2", "", "Found 2 matching lines in 1 file.")
}

func TestGrepInvalidInput(t *testing.T) {
	t.Parallel()
	env, _ := srEnv(t)
	msg := srCode(t, Grep{}, env, map[string]any{"pattern": "foo("}, CodeBadPattern)
	if !strings.Contains(msg, "missing closing )") {
		t.Errorf("RE2's message is missing: %s", msg)
	}
	msg = srCode(t, Grep{}, env, map[string]any{"pattern": "foo(?=bar)"}, CodeBadPattern)
	if !strings.Contains(msg, "look-around") {
		t.Errorf("no look-around hint: %s", msg)
	}
	srCode(t, Grep{}, env, map[string]any{}, CodeInvalidInput)
	srCode(t, Grep{}, env, map[string]any{"pattern": "x", "output_mode": "lines"}, CodeInvalidInput)
	srCode(t, Grep{}, env, map[string]any{"pattern": "x", "-A": -1}, CodeInvalidInput)
	srCode(t, Grep{}, env, map[string]any{"pattern": "x", "head_limit": "3"}, CodeInvalidInput)
	srCode(t, Grep{}, env, map[string]any{"pattern": "x", "path": "missing"}, CodeNotFound)
	srCode(t, Grep{}, env, map[string]any{"pattern": "x", "path": "/"}, CodeOutside)
}

func TestGrepCancelled(t *testing.T) {
	t.Parallel()
	env, root := srEnv(t)
	srWrite(t, root, map[string]string{"a.txt": "x\n"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, mode := range []string{"content", "files_with_matches", "count"} {
		_, err := Grep{}.Run(ctx, env, json.RawMessage(`{"pattern":"x","output_mode":"`+mode+`"}`))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err = %v", mode, err)
		}
	}
}

func TestGrepDescribed(t *testing.T) {
	t.Parallel()
	var schema map[string]any
	if err := json.Unmarshal(Grep{}.InputSchema(), &schema); err != nil {
		t.Fatal(err)
	}
	g := Grep{}
	if !g.ReadOnly() || g.Name() != "Grep" || !strings.Contains(g.Description(), "RE2") {
		t.Error("Grep's name, description or read-only flag")
	}
}

// TestGrepLongLineMemory: a 24 MB single-line file is searched without
// holding the line: the call allocates a small fraction of the file.
func TestGrepLongLineMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 24 MB file")
	}
	env, root := srEnv(t)
	f, err := os.Create(filepath.Join(root, "huge.txt"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := []byte(strings.Repeat("abcdefgh", 1<<17)) // 1 MB
	for range 24 {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.WriteString("NEEDLE\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out := srOK(t, Grep{}, env, map[string]any{"pattern": "NEEDLE", "output_mode": "content"})
	runtime.ReadMemStats(&after)
	if !strings.Contains(out, "huge.txt:1:[… ") || !strings.Contains(out, "NEEDLE") {
		t.Errorf("output %.200q", out)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d KB searching a 24 MB line", alloc>>10)
	if alloc > 4<<20 {
		t.Errorf("allocated %d MB searching a 24 MB line", alloc>>20)
	}
}
