package ignore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// walkList walks dir with m and returns the listed paths (directories
// with a trailing "/").
func walkList(t *testing.T, m *Matcher, fsys FS, dir string) []string {
	t.Helper()
	var got []string
	err := m.Walk(context.Background(), fsys, dir, func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			rel += "/"
		}
		got = append(got, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func mustNew(t *testing.T, cfg Config) *Matcher {
	t.Helper()
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameList(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestDotIgnore: .ignore files use the same syntax, and any .ignore rule
// beats any .gitignore rule, as in ripgrep; deeper files beat shallower
// ones within each kind; an ignored directory is pruned whichever file
// ignores it.
func TestDotIgnore(t *testing.T) {
	root := t.TempDir()
	fixture{files: map[string]string{
		".gitignore":      "*.log\n!keep.log\nbuild/\n",
		".ignore":         "*.tmp\n!build/\nsecret/\n",
		"a.log":           "",
		"keep.log":        "",
		"x.tmp":           "",
		"build/out.o":     "",
		"secret/key":      "",
		"sub/.gitignore":  "!*.tmp\n",
		"sub/y.tmp":       "", // .ignore (shallow) beats .gitignore (deep)
		"sub/.ignore":     "!z.tmp\nkeep.log\n",
		"sub/z.tmp":       "",
		"sub/keep.log":    "", // sub/.ignore ignores it again
		"sub/other.log":   "",
		"deep/.ignore":    "!*.log\n",
		"deep/again.log":  "", // re-included by .ignore over .gitignore
		"deep/secret/k":   "",
		"deep2/.ignore":   "!secret/\n",
		"deep2/secret/k2": "",
	}}.build(t, root)
	m := mustNew(t, Config{Root: root})
	sameList(t, walkList(t, m, OS(), root),
		".gitignore", ".ignore", "build/", "build/out.o", "deep/", "deep/.ignore", "deep/again.log",
		"deep2/", "deep2/.ignore", "deep2/secret/", "deep2/secret/k2",
		"keep.log", "sub/", "sub/.gitignore", "sub/.ignore", "sub/z.tmp")
	for path, want := range map[string]bool{
		"a.log": true, "keep.log": false, "x.tmp": true, "build/out.o": false, "secret/key": true,
		"sub/y.tmp": true, "sub/z.tmp": false, "sub/keep.log": true, "deep/again.log": false,
		"deep/secret/k": true, "deep2/secret/k2": false,
	} {
		if got := m.Match(path, false); got != want {
			t.Errorf("Match(%s) = %v, want %v", path, got, want)
		}
	}
	// Turning sources off.
	m = mustNew(t, Config{Root: root, NoDotIgnore: true})
	if !m.Match("build/out.o", false) || m.Match("x.tmp", false) {
		t.Error("NoDotIgnore still reads .ignore")
	}
	m = mustNew(t, Config{Root: root, NoGitignore: true})
	if m.Match("a.log", false) || !m.Match("x.tmp", false) {
		t.Error("NoGitignore still reads .gitignore")
	}
}

func TestWhy(t *testing.T) {
	root := t.TempDir()
	fixture{files: map[string]string{".gitignore": "# c\n*.o\n!keep.o\n"}}.build(t, root)
	m := mustNew(t, Config{Root: root})
	ignored, rule := m.Top().Why("x.o", false)
	if !ignored || rule == nil || rule.Source != ".gitignore" || rule.Pattern.Line != 2 || rule.Pattern.Text != "*.o" {
		t.Errorf("x.o: %v %+v", ignored, rule)
	}
	ignored, rule = m.Top().Why("keep.o", false)
	if ignored || rule == nil || !rule.Pattern.Negative || rule.Pattern.Line != 3 {
		t.Errorf("keep.o: %v %+v", ignored, rule)
	}
	if ignored, rule = m.Top().Why("x.c", false); ignored || rule != nil {
		t.Errorf("x.c: %v %+v", ignored, rule)
	}
	if ignored, _ = m.Top().Why(".git", true); !ignored {
		t.Error(".git is not ignored")
	}
}

// TestWalkFromSubdirectory: a walk below the root applies the rules of
// its ancestors to what is inside, but not to the directory itself.
func TestWalkFromSubdirectory(t *testing.T) {
	root := t.TempDir()
	fixture{files: map[string]string{
		".gitignore":        "*.gen\nvendor/\nsrc/sub/skip\n",
		"src/.gitignore":    "*.tmp\n",
		"src/sub/a.go":      "",
		"src/sub/b.gen":     "",
		"src/sub/c.tmp":     "",
		"src/sub/skip":      "",
		"vendor/lib/x.go":   "",
		"vendor/lib/y.gen":  "",
		"vendor/.gitignore": "x.go\n",
		"vendor/lib/z.go":   "",
	}}.build(t, root)
	m := mustNew(t, Config{Root: root})
	sameList(t, walkList(t, m, OS(), filepath.Join(root, "src", "sub")), "a.go")
	// vendor is ignored, but walked when asked for; its own .gitignore is
	// read on the way in.
	sameList(t, walkList(t, m, OS(), filepath.Join(root, "vendor")), ".gitignore", "lib/", "lib/z.go")
	if err := m.Walk(context.Background(), OS(), t.TempDir(), func(string, fs.DirEntry, error) error { return nil }); err == nil {
		t.Error("a walk outside the root succeeded")
	}
}

// recFS records every path a walk reads.
type recFS struct {
	FS
	mu    sync.Mutex
	reads []string
}

func (r *recFS) ReadDir(name string) ([]fs.DirEntry, error) {
	r.mu.Lock()
	r.reads = append(r.reads, name)
	r.mu.Unlock()
	return r.FS.ReadDir(name)
}

func (r *recFS) ReadFile(name string) ([]byte, error) {
	r.mu.Lock()
	r.reads = append(r.reads, name)
	r.mu.Unlock()
	return r.FS.ReadFile(name)
}

// TestWalkPrunes proves an ignored directory is never read, nor the
// ignore files inside it, and that FIFOs (as a directory entry or as an
// ignore file) never block the walk.
func TestWalkPrunes(t *testing.T) {
	root := t.TempDir()
	fixture{files: map[string]string{
		".gitignore":                "node_modules/\n",
		"node_modules/a/.gitignore": "!*\n",
		"node_modules/a/b.js":       "",
		"src/a.js":                  "",
	}}.build(t, root)
	if err := syscall.Mkfifo(filepath.Join(root, "node_modules", "a", "fifo"), 0o644); err != nil {
		t.Skip(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "src", ".gitignore"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "src", "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := mustNew(t, Config{Root: root})
	rec := &recFS{FS: OS()}
	done := make(chan []string)
	go func() { done <- walkList(t, m, rec, root) }()
	select {
	case got := <-done:
		sameList(t, got, ".gitignore", "src/", "src/.gitignore", "src/a.js", "src/fifo")
	case <-time.After(20 * time.Second):
		t.Fatal("the walk blocked")
	}
	for _, r := range rec.reads {
		if strings.Contains(r, "node_modules") || strings.HasSuffix(r, "fifo") || r == filepath.Join(root, "src", ".gitignore") {
			t.Errorf("read %s", r)
		}
	}
}

// TestWalkSymlinks: symlinks are listed, never followed, so loops end.
func TestWalkSymlinks(t *testing.T) {
	root := t.TempDir()
	fixture{files: map[string]string{"d/f": "", "real.gitignore": "f\n"}}.build(t, root)
	for link, target := range map[string]string{"d/loop": "..", "d/self": ".", "up": "/", "d/.gitignore": "../real.gitignore"} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	m := mustNew(t, Config{Root: root})
	// d/.gitignore is a symlink: not read (as git does), so d/f stays.
	sameList(t, walkList(t, m, OS(), root), "d/", "d/.gitignore", "d/f", "d/loop", "d/self", "real.gitignore", "up")
	if m.Match("d/f", false) {
		t.Error("a symlinked .gitignore was followed")
	}
}

func TestWalkSkipAndErrors(t *testing.T) {
	root := t.TempDir()
	fixture{files: map[string]string{"a/x": "", "b/y": "", "c/z": ""}}.build(t, root)
	m := mustNew(t, Config{Root: root})
	var got []string
	err := m.Walk(context.Background(), OS(), root, func(rel string, d fs.DirEntry, err error) error {
		got = append(got, rel)
		switch rel {
		case "a":
			return fs.SkipDir
		case "b/y":
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sameList(t, got, "a", "b", "b/y")
	boom := errors.New("boom")
	err = m.Walk(context.Background(), OS(), root, func(rel string, d fs.DirEntry, err error) error {
		if rel == "b" {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Errorf("err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Walk(ctx, OS(), root, func(string, fs.DirEntry, error) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled walk: %v", err)
	}
	// A directory that vanishes after it is listed is reported with its
	// error; going on is the caller's choice.
	var errs []string
	err = m.Walk(context.Background(), OS(), root, func(rel string, d fs.DirEntry, err error) error {
		if rel == "a" && err == nil {
			if err := os.RemoveAll(filepath.Join(root, "b")); err != nil {
				t.Fatal(err)
			}
		}
		if err != nil {
			errs = append(errs, rel) // noted; the walk goes on
		}
		return nil
	})
	if err != nil || len(errs) != 1 || errs[0] != "b" {
		t.Errorf("err %v, errors for %v", err, errs)
	}
}

func TestConfigParsing(t *testing.T) {
	data := []byte("\xef\xbb\xbf# comment\n; another\n[Core]\n\tIgnoreCase\n" +
		"\texcludesFile = \"~/with space.txt\" # trailing\n" +
		"[core \"sub\"]\n\texcludesfile = nope\n" +
		"[user]\n\tname = a \\\"quoted\\\" name\\\n continued\n" +
		"[core] excludesFile = /abs/path ; c\n")
	got := map[string]string{}
	for _, e := range parseConfig(data) {
		v := e.value
		if e.noValue {
			v = "<none>"
		}
		got[e.key] = v
	}
	want := map[string]string{
		"core.ignorecase":       "<none>",
		"core.excludesfile":     "/abs/path",
		"core.sub.excludesfile": "nope",
		"user.name":             "a \"quoted\" name continued",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (all: %q)", k, got[k], v, got)
		}
	}
	for in, want := range map[string]bool{"yes": true, "On": true, "1": true, "false": false, "off": false, "": false} {
		if b, ok := parseBool(in, false); !ok || b != want {
			t.Errorf("parseBool(%q) = %v %v", in, b, ok)
		}
	}
	if _, ok := parseBool("maybe", false); ok {
		t.Error("parseBool accepted maybe")
	}
}

// TestGitGlobalSources checks, against git, where the global excludes
// file comes from: the XDG default, core.excludesFile in XDG's config or
// ~/.gitconfig (the latter winning), the repository's config (winning
// over both), and info/exclude beating the global file.
func TestGitGlobalSources(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string // relative to a sandbox with home/, xdg/, repo/
	}{
		{"xdg default", map[string]string{"xdg/git/ignore": "*.a\n"}},
		{"xdg config", map[string]string{"xdg/git/config": "[core]\nexcludesFile = ~/ex1\n", "home/ex1": "*.b\n", "xdg/git/ignore": "*.a\n"}},
		{"gitconfig wins", map[string]string{
			"xdg/git/config": "[core]\nexcludesFile = ~/ex1\n", "home/.gitconfig": "[core]\nexcludesFile = ~/ex2\n",
			"home/ex1": "*.b\n", "home/ex2": "*.c\n!keep.c\n"}},
		{"repo config wins", map[string]string{
			"home/.gitconfig": "[core]\nexcludesFile = ~/ex2\n", "repo/.git/config.extra": "[core]\n\texcludesFile = ex3\n",
			"home/ex2": "*.c\n", "repo/ex3": "*.d\n"}},
		{"info/exclude wins", map[string]string{
			"xdg/git/ignore": "*.a\n", "repo/.git/info/exclude": "!keep.a\n"}},
		{"ignorecase from global config", map[string]string{
			"home/.gitconfig": "[core]\nignorecase = true\n", "repo/.gitignore": "*.A\nSUB/\n"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newGitEnv(t)
			sandbox := filepath.Dir(e.home)
			root := filepath.Join(sandbox, "repo")
			if err := os.MkdirAll(root, 0o755); err != nil {
				t.Fatal(err)
			}
			gitInit(t, e, root)
			var extra string
			for rel, content := range c.files {
				if rel == "repo/.git/config.extra" {
					extra = content
					continue
				}
				writeFile(t, filepath.Join(sandbox, filepath.FromSlash(rel)), content)
			}
			if extra != "" {
				appendFile(t, filepath.Join(root, ".git", "config"), extra)
			}
			fixture{files: map[string]string{
				"x.a": "", "keep.a": "", "x.b": "", "x.c": "", "keep.c": "", "x.d": "", "x.e": "", "sub/x.e": "",
			}}.build(t, root)
			compareWithGit(t, e, root, Config{})
			// Each case ignores something (so the source was found).
			m := mustNew(t, Config{Root: root, GitDir: filepath.Join(root, ".git"), Env: e.env()})
			n := 0
			for _, p := range []string{"x.a", "x.b", "x.c", "x.d", "sub/x.e"} {
				if m.Match(p, false) {
					n++
				}
			}
			if n == 0 {
				t.Error("nothing is ignored")
			}
		})
	}
}

// TestGitSymlinkedGitignore: git does not follow a .gitignore that is a
// symlink (since 2.32); neither does the Matcher.
func TestGitSymlinkedGitignore(t *testing.T) {
	e := newGitEnv(t)
	root := t.TempDir()
	gitInit(t, e, root)
	fixture{files: map[string]string{"rules": "*.x\n", "sub/a.x": "", "b.x": ""}}.build(t, root)
	if err := os.Symlink("../rules", filepath.Join(root, "sub", ".gitignore")); err != nil {
		t.Fatal(err)
	}
	compareWithGit(t, e, root, Config{})
}

// TestGitWorktree: a linked worktree's .git is a file pointing to its git
// directory; info/exclude and config come from the common directory.
func TestGitWorktree(t *testing.T) {
	e := newGitEnv(t)
	main := filepath.Join(t.TempDir(), "main")
	if err := os.MkdirAll(main, 0o755); err != nil {
		t.Fatal(err)
	}
	gitInit(t, e, main)
	e.git(t, main, nil, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init")
	wt := filepath.Join(filepath.Dir(main), "wt")
	e.git(t, main, nil, "worktree", "add", "-q", wt)
	writeFile(t, filepath.Join(main, ".git", "info", "exclude"), "*.local\n")
	fixture{files: map[string]string{"a.local": "", "b.txt": "", ".gitignore": "*.txt\n!keep.txt\n", "keep.txt": ""}}.build(t, wt)
	repo, ok := FindRepo(filepath.Join(wt))
	if !ok || repo.WorkTree != wt || !strings.Contains(repo.GitDir, filepath.Join("main", ".git", "worktrees")) {
		t.Fatalf("FindRepo: %+v %v", repo, ok)
	}
	paths, isDir := allPaths(t, wt)
	want := e.checkIgnore(t, wt, paths)
	m, err := ForDir(wt, e.env())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if got := m.Match(p, isDir[p]); got != (want[p] != "") {
			t.Errorf("%s: ignored=%v, git says %q", p, got, want[p])
		}
	}
	if !m.Match("a.local", false) {
		t.Error("info/exclude of the common directory was not read")
	}
	// Outside any repository, the directory is the top.
	plain := t.TempDir()
	if _, ok := FindRepo(plain); ok && !strings.HasPrefix(plain, "/tmp") {
		t.Skip("the temporary directory is inside a repository")
	}
	fixture{files: map[string]string{".gitignore": "*.o\n", "a.o": "", "b.c": ""}}.build(t, plain)
	m, err = ForDir(plain, Env{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Root() != plain || !m.Match("a.o", false) || m.Match("b.c", false) {
		t.Errorf("outside a repository: root %s", m.Root())
	}
}

func TestParseEdgeCases(t *testing.T) {
	for _, line := range []string{"", "#x", "# x"} {
		if _, ok := ParsePattern(line, false); ok {
			t.Errorf("%q is a rule", line)
		}
	}
	for line, want := range map[string]string{
		"a  ":        "a",
		"a\\ ":       "a\\ ",
		"a \\  ":     "a \\ ",
		"a\r":        "a",
		"a\x00b":     "a",
		"\\#a":       "\\#a",
		"a\t":        "a\t",
		"trailing\\": "trailing\\",
	} {
		p, ok := ParsePattern(line, false)
		if !ok || p.Text != want {
			t.Errorf("ParsePattern(%q) = %q %v, want %q", line, p.Text, ok, want)
		}
	}
	p, _ := ParsePattern("!/a/b/", false)
	if !p.Negative || !p.DirOnly || !p.Anchored {
		t.Errorf("flags of !/a/b/: %+v", p)
	}
	l := parseList([]byte("a\nb\n"), "", "x", false)
	names := []string{}
	for _, p := range l.pats {
		names = append(names, p.Text)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "a,b" {
		t.Errorf("parsed %v", names)
	}
}

func TestWalkParallelStops(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{}
	for i := range 30 {
		files[fmt.Sprintf("d%d/e/f%d", i, i)] = ""
	}
	fixture{files: files}.build(t, root)
	m := mustNew(t, Config{Root: root})
	// SkipDir skips a directory's contents.
	var mu sync.Mutex
	var got []string
	err := m.WalkParallel(context.Background(), OS(), root, 4, func(rel string, d fs.DirEntry, err error) error {
		mu.Lock()
		got = append(got, rel)
		mu.Unlock()
		if d.IsDir() && strings.HasSuffix(rel, "/e") {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil || len(got) != 60 {
		t.Fatalf("err %v, %d entries: %v", err, len(got), got)
	}
	boom := errors.New("boom")
	for _, stopErr := range []error{fs.SkipAll, boom} {
		var calls atomic.Int64
		err := m.WalkParallel(context.Background(), OS(), root, 4, func(rel string, d fs.DirEntry, err error) error {
			if calls.Add(1) == 5 {
				return stopErr
			}
			return nil
		})
		want := stopErr
		if errors.Is(stopErr, fs.SkipAll) {
			want = nil // SkipAll ends the walk without error
		}
		if !errors.Is(err, want) {
			t.Errorf("stopped with %v: err %v", stopErr, err)
		}
		if calls.Load() >= 90 {
			t.Errorf("stopped with %v after %d calls", stopErr, calls.Load())
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.WalkParallel(ctx, OS(), root, 2, func(string, fs.DirEntry, error) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
