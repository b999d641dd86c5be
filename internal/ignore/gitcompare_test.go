package ignore

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// These tests take git itself as the oracle: they build real trees with
// real ignore files, ask git check-ignore (and git ls-files) about every
// path, and require the Matcher to agree path by path.

// gitEnv is a sandbox for git's configuration: an empty HOME and
// XDG_CONFIG_HOME, no system config. The same Env is given to the Matcher.
type gitEnv struct {
	home, xdg string
}

func newGitEnv(t *testing.T) gitEnv {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	d := t.TempDir()
	e := gitEnv{home: filepath.Join(d, "home"), xdg: filepath.Join(d, "xdg")}
	for _, p := range []string{e.home, e.xdg} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e gitEnv) env() Env { return Env{Home: e.home, XDGConfigHome: e.xdg} }

func (e gitEnv) git(t *testing.T, dir string, stdin []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"HOME="+e.home, "XDG_CONFIG_HOME="+e.xdg,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=", "LC_ALL=C",
		"GIT_DIR=", "GIT_WORK_TREE=", "GIT_CEILING_DIRECTORIES=")
	// Unset rather than empty for the variables git treats as set.
	cmd.Env = filterEnv(cmd.Env, "GIT_CONFIG_GLOBAL", "GIT_DIR", "GIT_WORK_TREE", "GIT_CEILING_DIRECTORIES")
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		// check-ignore exits 1 when nothing is ignored.
		var ee *exec.ExitError
		nothingIgnored := asExitError(err, &ee) && ee.ExitCode() == 1 && len(args) > 0 && args[0] == "check-ignore"
		if !nothingIgnored {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, errb.String())
		}
	}
	return out.Bytes()
}

func asExitError(err error, target **exec.ExitError) bool {
	ee, ok := err.(*exec.ExitError) //nolint:errorlint // exec returns it unwrapped
	if ok {
		*target = ee
	}
	return ok
}

func filterEnv(env []string, drop ...string) []string {
	out := env[:0:0]
outer:
	for _, kv := range env {
		for _, d := range drop {
			if strings.HasPrefix(kv, d+"=") {
				continue outer
			}
		}
		out = append(out, kv)
	}
	return out
}

// checkIgnore asks git which of paths are ignored.
func (e gitEnv) checkIgnore(t *testing.T, root string, paths []string) map[string]string {
	t.Helper()
	var in bytes.Buffer
	for _, p := range paths {
		in.WriteString(p)
		in.WriteByte(0)
	}
	out := e.git(t, root, in.Bytes(), "check-ignore", "--no-index", "-v", "-n", "-z", "--stdin")
	fields := strings.Split(string(out), "\x00")
	got := make(map[string]string)
	for i := 0; i+3 < len(fields); i += 4 {
		pattern, path := fields[i+2], fields[i+3]
		got[path] = fields[i] + ":" + fields[i+1] + ":" + pattern
		if pattern == "" || strings.HasPrefix(pattern, "!") {
			got[path] = "" // not ignored (no match, or a negative match)
		}
	}
	if len(got) != len(paths) {
		t.Fatalf("git check-ignore answered %d paths of %d", len(got), len(paths))
	}
	return got
}

// fixture is a tree to build: files with content, and empty directories.
type fixture struct {
	files map[string]string
	dirs  []string
}

func (f fixture) build(t *testing.T, root string) {
	t.Helper()
	for _, d := range f.dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, content := range f.files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// allPaths lists every file and directory under root but .git, sorted,
// with whether each is a directory.
func allPaths(t *testing.T, root string) ([]string, map[string]bool) {
	t.Helper()
	isDir := make(map[string]bool)
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		paths = append(paths, rel)
		isDir[rel] = d.IsDir()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(paths)
	return paths, isDir
}

// compareWithGit checks every path under root with git and the Matcher.
func compareWithGit(t *testing.T, e gitEnv, root string, cfg Config) {
	t.Helper()
	paths, isDir := allPaths(t, root)
	want := e.checkIgnore(t, root, paths)
	cfg.Root = root
	cfg.Env = e.env()
	if cfg.GitDir == "" {
		cfg.GitDir = filepath.Join(root, ".git")
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for _, p := range paths {
		got := m.Match(p, isDir[p])
		if got != (want[p] != "") {
			bad++
			if bad <= 20 {
				t.Errorf("%s (dir %v): ignored=%v, git says %v (%q)", p, isDir[p], got, !got, want[p])
			}
		}
	}
	if bad > 20 {
		t.Errorf("... %d disagreements in all", bad)
	}
	compareWalkWithGit(t, e, root, m)
}

// compareWalkWithGit checks that a walk lists exactly the untracked files
// git ls-files lists (so pruning agrees with git's own walk).
func compareWalkWithGit(t *testing.T, e gitEnv, root string, m *Matcher) {
	t.Helper()
	out := e.git(t, root, nil, "ls-files", "-o", "--exclude-standard", "-z")
	var want []string
	for _, p := range strings.Split(string(out), "\x00") {
		if p != "" {
			want = append(want, p)
		}
	}
	sort.Strings(want)
	var got []string
	err := m.Walk(context.Background(), OS(), root, func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			got = append(got, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("walk lists\n  %s\ngit ls-files -o lists\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	var mu sync.Mutex
	var par []string
	err = m.WalkParallel(context.Background(), OS(), root, 3, func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			mu.Lock()
			par = append(par, rel)
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(par)
	if strings.Join(par, "\n") != strings.Join(want, "\n") {
		t.Errorf("parallel walk lists\n  %s\ngit ls-files -o lists\n  %s", strings.Join(par, "\n  "), strings.Join(want, "\n  "))
	}
}

func gitInit(t *testing.T, e gitEnv, root string) {
	t.Helper()
	// An empty template is much faster than the default hooks.
	e.git(t, root, nil, "init", "-q", "--template=", ".")
	if err := os.MkdirAll(filepath.Join(root, ".git", "info"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestGitTrickyPatterns(t *testing.T) {
	e := newGitEnv(t)
	root := t.TempDir()
	gitInit(t, e, root)
	f := fixture{files: map[string]string{
		".gitignore": strings.Join([]string{
			"# a comment",
			"",
			"\\#hash",
			"\\!bang",
			"*.log",
			"!important.log",
			"/rootonly.txt",
			"build/",
			"doc/*.html",
			"!doc/keep.html",
			"**/deep",
			"foo/**/bar",
			"a/**",
			"trailing\\ ",
			"spaces   ",
			"[Tt]emp*",
			"file[0-9].txt",
			"file[!0-9].dat",
			"*.[oa]",
			"logs/**",
			"!logs/keep/",
			"!logs/keep/**",
			"nested/*",
			"!nested/inc",
			"**/x/**/y",
			"cache/",
			"!cache/keep.txt",
			"?.q",
			"odd[]]name",
			"range[a-c-e]",
			"lead/**",
			"!lead/**/",
			"mid**dle/z",
			"star*/slash",
			"crlf-rule\r",
			"\xef\xbb\xbfnot-a-bom",
		}, "\n"),
		"keep.log": "", "x.log": "", "important.log": "", "d/important.log": "", "d/y.log": "",
		"#hash": "", "!bang": "", "rootonly.txt": "", "d/rootonly.txt": "",
		"build/o.c": "", "d/build/o.c": "", "build.c": "", "e/build": "",
		"doc/a.html": "", "doc/keep.html": "", "doc/sub/a.html": "",
		"deep": "", "q/deep": "", "q/r/deep/s": "", "deeper": "",
		"foo/bar": "", "foo/x/bar": "", "foo/x/y/bar": "", "foo/barx": "", "q/foo/bar": "",
		"a/bb": "", "a/b/c": "", "ab/c": "",
		"trailing ": "", "trailing": "", "spaces": "", "spaces   ": "",
		"Temp1": "", "temp2/x": "", "tEmp": "",
		"file1.txt": "", "filex.txt": "", "filex.dat": "", "file1.dat": "",
		"m.o": "", "m.a": "", "m.c": "", "q/m.o": "",
		"logs/x": "", "logs/keep/y": "", "logs/keep/z/w": "", "logs/other/keep": "",
		"nested/out": "", "nested/inc/f": "", "nested/more/f": "",
		"x/y": "", "p/x/q/y": "", "p/x/y/z": "", "x/yy": "",
		"cache/keep.txt": "", "cache/other": "",
		"a.q": "", "ab.q": "", "d/b.q": "",
		"odd]name": "", "oddname": "",
		"rangeb": "", "range-": "", "ranged": "", "rangee": "",
		"lead/f": "", "lead/d/g": "",
		"midXXdle/z": "", "mid/dle/z": "",
		"star/slash": "", "starfoo/slash": "", "q/star/slash": "",
		"crlf-rule": "", "crlf-rule\r": "",
		"not-a-bom": "",
		"sub/.gitignore": strings.Join([]string{
			"*.txt",
			"!keep.txt",
			"/anchored",
			"mid/dle",
			"**/sub2/*.md",
			"dironly/",
		}, "\n"),
		"sub/a.txt": "", "sub/keep.txt": "", "sub/anchored": "", "sub/q/anchored": "",
		"sub/mid/dle": "", "sub/q/mid/dle": "", "sub/sub2/r.md": "", "sub/q/sub2/r.md": "",
		"sub/dironly/f": "", "sub/q/dironly": "",
		"sub/sub2/.gitignore":        "!*.txt\n",
		"sub/sub2/back.txt":          "",
		"other/a.txt":                "",
		"excluded_by_info":           "",
		"d/excluded_by_info":         "",
		"z.global":                   "",
		"d/z.global":                 "",
		"globalneg/keep.global":      "",
		"globalneg/.gitignore":       "!keep.global\n",
		"utf8/.gitignore":            "\xef\xbb\xbfbom-first\n",
		"utf8/bom-first":             "",
		"noeol/.gitignore":           "last-line-no-newline",
		"noeol/last-line-no-newline": "",
	}}
	f.build(t, root)
	if err := os.WriteFile(filepath.Join(root, ".git", "info", "exclude"), []byte("excluded_by_info\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	globalIgnore := filepath.Join(e.home, "my-global-ignore")
	if err := os.WriteFile(globalIgnore, []byte("*.global\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, ".gitconfig"),
		[]byte("[core]\n\texcludesFile = ~/my-global-ignore ; a comment\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	compareWithGit(t, e, root, Config{})
}
