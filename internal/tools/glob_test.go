package tools

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/ignore"
	"github.com/ferry-dev/ferry/internal/vfs"
)

// Glob and Grep tests share these helpers (prefix sr, "search").

func init() {
	// Sandbox the machine's own git configuration (a global excludes
	// file of the user running the tests must not change results).
	searchIgnoreEnv = func() ignore.Env { return ignore.Env{} }
}

// srEnv returns an Env on a fresh workspace (and the extra roots), and
// the workspace's canonical path.
func srEnv(t testing.TB, extra ...string) (*Env, string) {
	t.Helper()
	return srEnvAt(t, t.TempDir(), extra...)
}

func srEnvAt(t testing.TB, dir string, extra ...string) (*Env, string) {
	t.Helper()
	fsys, err := vfs.NewLocal(dir, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	return &Env{FS: fsys, State: NewReadState(), Limits: DefaultLimits()}, fsys.Roots()[0]
}

// srWrite writes files (rel path → content) under root, creating
// directories, and returns root.
func srWrite(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// srAge sets the modification times of files: the first is the newest.
func srAge(t testing.TB, root string, rels ...string) {
	t.Helper()
	base := time.Now().Add(-time.Hour)
	for i, rel := range rels {
		mt := base.Add(-time.Duration(i) * time.Minute)
		if err := os.Chtimes(filepath.Join(root, filepath.FromSlash(rel)), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
}

func srRun(t testing.TB, tool Tool, env *Env, input map[string]any) (*Result, error) {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	return Invoke(context.Background(), env, tool, "test", raw)
}

func srOK(t testing.TB, tool Tool, env *Env, input map[string]any) string {
	t.Helper()
	res, err := srRun(t, tool, env, input)
	if err != nil {
		t.Fatalf("%s %v: %v", tool.Name(), input, err)
	}
	if len(res.Blocks) != 1 || res.Blocks[0].Type != "text" {
		t.Fatalf("%s %v: blocks %+v", tool.Name(), input, res.Blocks)
	}
	return res.Blocks[0].Text
}

func srCode(t testing.TB, tool Tool, env *Env, input map[string]any, want int) string {
	t.Helper()
	_, err := srRun(t, tool, env, input)
	if err == nil {
		t.Fatalf("%s %v succeeded, want code %d", tool.Name(), input, want)
	}
	if got := CodeOf(err); got != want {
		t.Fatalf("%s %v: code %d (%v), want %d", tool.Name(), input, got, err, want)
	}
	return AgentMessage(err)
}

func srLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func srEqual(t testing.TB, got string, want ...string) {
	t.Helper()
	if got != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

// srRecFS is the real file system that also records every path read
// through it, so tests can prove what a search never touched.
type srRecFS struct {
	vfs.FS
	mu    sync.Mutex
	paths []string
}

func (r *srRecFS) note(op, name string) {
	r.mu.Lock()
	r.paths = append(r.paths, op+" "+name)
	r.mu.Unlock()
}

func (r *srRecFS) ReadDir(name string) ([]fs.DirEntry, error) {
	r.note("readdir", name)
	return r.FS.ReadDir(name)
}

func (r *srRecFS) Open(name string) (vfs.File, error) {
	r.note("open", name)
	return r.FS.Open(name)
}

func (r *srRecFS) Stat(name string) (vfs.Info, error) {
	r.note("stat", name)
	return r.FS.Stat(name)
}

// touched lists the recorded operations on paths containing part.
func (r *srRecFS) touched(part string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, p := range r.paths {
		if strings.Contains(p, part) {
			out = append(out, p)
		}
	}
	return out
}

func srMkfifo(t testing.TB, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

// srWithin runs f and fails if it takes longer than a generous deadline:
// a search that opened a FIFO would block forever.
func srWithin(t testing.TB, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the search blocked (did it open a FIFO?)")
	}
}

func TestGlobNewestFirst(t *testing.T) {
	t.Parallel()
	env, root := srEnv(t)
	srWrite(t, root, map[string]string{
		"a.go": "", "b.go": "", "sub/c.go": "", "sub/deep/d.go": "", "sub/e.txt": "", "tie1.go": "", "tie2.go": "",
	})
	srAge(t, root, "sub/deep/d.go", "b.go", "sub/c.go", "a.go")
	mt := time.Now().Add(-3 * time.Hour)
	for _, p := range []string{"tie2.go", "tie1.go"} {
		if err := os.Chtimes(filepath.Join(root, p), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	srEqual(t, srOK(t, Glob{}, env, map[string]any{"pattern": "**/*.go"}),
		"sub/deep/d.go", "b.go", "sub/c.go", "a.go", "tie1.go", "tie2.go")
	// * stays within one level.
	srEqual(t, srOK(t, Glob{}, env, map[string]any{"pattern": "*.go"}), "b.go", "a.go", "tie1.go", "tie2.go")
	srEqual(t, srOK(t, Glob{}, env, map[string]any{"pattern": "sub/*"}), "sub/e.txt", "sub/c.go") // e.txt is newest
	srEqual(t, srOK(t, Glob{}, env, map[string]any{"pattern": "*.{txt,md}", "path": "sub"}), "sub/e.txt")
	srEqual(t, srOK(t, Glob{}, env, map[string]any{"pattern": "**/*.rs"}), "No files found")
	// Directories are not listed.
	srEqual(t, srOK(t, Glob{}, env, map[string]any{"pattern": "sub"}), "No files found")
}

func TestGlobIgnoreFiles(t *testing.T) {
	t.Parallel()
	env, root := srEnv(t)
	srWrite(t, root, map[string]string{
		".gitignore":          "*.log\nbuild/\n/top-only.txt\n!keep.log\n",
		"a.log":               "",
		"keep.log":            "",
		"top-only.txt":        "",
		"sub/top-only.txt":    "",
		"build/out.bin":       "",
		"sub/build/x":         "",
		"sub/.gitignore":      "*.tmp\n!important.tmp\n",
		"sub/x.tmp":           "",
		"sub/important.tmp":   "",
		"x.tmp":               "",
		"sub/.ignore":         "secret*\n!keep-me.log\n",
		"sub/secret.txt":      "",
		"sub/keep-me.log":     "",
		"other/secret.txt":    "",
		".hidden/visible.txt": "",
		".git/config":         "",
		".git/objects/x":      "",
		".svn/entries":        "",
	})
	got := srLines(srOK(t, Glob{}, env, map[string]any{"pattern": "**"}))
	want := map[string]bool{
		".gitignore": true, "keep.log": true, "sub/top-only.txt": true, "sub/.gitignore": true,
		"sub/important.tmp": true, "x.tmp": true, "sub/.ignore": true, "sub/keep-me.log": true,
		"other/secret.txt": true, ".hidden/visible.txt": true,
	}
	for _, g := range got {
		if !want[g] {
			t.Errorf("listed %s, which is ignored", g)
		}
		delete(want, g)
	}
	for w := range want {
		t.Errorf("%s is missing", w)
	}
	// An ignored directory named as path is searched: the agent asked.
	srEqual(t, srOK(t, Glob{}, env, map[string]any{"pattern": "*", "path": "build"}), "build/out.bin")
}

// TestGlobIgnoredDirNeverRead proves an ignored directory is not even
// listed: the recording FS sees no access under it, and the FIFO inside
// it (which would block a reader) is harmless.
func TestGlobIgnoredDirNeverRead(t *testing.T) {
	t.Parallel()
	env, root := srEnv(t)
	srWrite(t, root, map[string]string{
		".gitignore":                "node_modules/\n",
		"node_modules/pkg/index.js": "x",
		"src/app.js":                "x",
	})
	srMkfifo(t, filepath.Join(root, "node_modules", "pkg", "fifo.js"))
	srMkfifo(t, filepath.Join(root, "src", "pipe.js"))
	rec := &srRecFS{FS: env.FS}
	env.FS = rec
	srWithin(t, func() {
		srEqual(t, srOK(t, Glob{}, env, map[string]any{"pattern": "**/*.js"}), "src/app.js")
	})
	if got := rec.touched("node_modules"); len(got) > 0 {
		t.Errorf("the ignored directory was touched: %v", got)
	}
}

func TestGlobSymlinks(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	srWrite(t, outside, map[string]string{"secret.txt": "s", "dir/inner.txt": "i"})
	env, root := srEnv(t)
	srWrite(t, root, map[string]string{"real/a.txt": "a", "real/sub/b.txt": "b"})
	for link, target := range map[string]string{
		"real/loop":     "..",                                  // a loop
		"real/self":     ".",                                   // another
		"esc-file.txt":  filepath.Join(outside, "secret.txt"),  // escapes
		"esc-dir":       filepath.Join(outside, "dir"),         // escapes
		"in-file.txt":   "real/a.txt",                          // stays inside
		"in-dir":        "real/sub",                            // a directory: not followed
		"dangling.txt":  "nowhere.txt",                         // dangling
		"relescape.txt": "../" + filepath.Base(outside) + "/x", // escapes relatively
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	srWithin(t, func() {
		got := srOK(t, Glob{}, env, map[string]any{"pattern": "**/*.txt"})
		lines := srLines(got)
		set := map[string]bool{}
		for _, l := range lines {
			if set[l] {
				t.Errorf("%s listed twice", l)
			}
			set[l] = true
		}
		for _, w := range []string{"real/a.txt", "real/sub/b.txt", "in-file.txt"} {
			if !set[w] {
				t.Errorf("%s missing from %q", w, got)
			}
		}
		if len(lines) != 3 {
			t.Errorf("listed %q; symlinks out, dangling ones and symlinked directories must not be", got)
		}
	})
}

func TestGlobTruncated(t *testing.T) {
	t.Parallel()
	env, root := srEnv(t)
	env.Limits.MaxSearchResults = 3
	srWrite(t, root, map[string]string{"f1": "", "f2": "", "f3": "", "f4": "", "f5": ""})
	srAge(t, root, "f5", "f4", "f3", "f2", "f1")
	srEqual(t, srOK(t, Glob{}, env, map[string]any{"pattern": "f*"}),
		"f5", "f4", "f3",
		"(Results are truncated: showing the 3 most recently modified of 5 matching files. Use a more specific path or pattern.)")
}

func TestGlobErrors(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	env, root := srEnv(t)
	srWrite(t, root, map[string]string{"file.txt": ""})
	srCode(t, Glob{}, env, map[string]any{"pattern": "["}, CodeBadPattern)
	srCode(t, Glob{}, env, map[string]any{"pattern": "{a,b"}, CodeBadPattern)
	srCode(t, Glob{}, env, map[string]any{}, CodeInvalidInput)
	srCode(t, Glob{}, env, map[string]any{"pattern": "*", "bogus": 1}, CodeInvalidInput)
	srCode(t, Glob{}, env, map[string]any{"pattern": "*", "path": outside}, CodeOutside)
	srCode(t, Glob{}, env, map[string]any{"pattern": "*", "path": "../"}, CodeOutside)
	srCode(t, Glob{}, env, map[string]any{"pattern": "*", "path": "missing"}, CodeNotFound)
	msg := srCode(t, Glob{}, env, map[string]any{"pattern": "*", "path": "file.txt"}, CodeInvalidInput)
	if !strings.Contains(msg, "is a file, not a directory") {
		t.Errorf("message: %s", msg)
	}
	srCode(t, Glob{}, env, map[string]any{"pattern": outside + "/**"}, CodeOutside)
	srCode(t, Glob{}, env, map[string]any{"pattern": "../**"}, CodeOutside)
	srEqual(t, srOK(t, Glob{}, env, map[string]any{"pattern": "../" + filepath.Base(root) + "/*.txt"}), "file.txt")
}

func TestGlobAbsoluteAndExtraRoots(t *testing.T) {
	t.Parallel()
	extra := t.TempDir()
	srWrite(t, extra, map[string]string{"lib/x.go": ""})
	env, root := srEnv(t, extra)
	srWrite(t, root, map[string]string{"a/b.go": ""})
	extraCanon := env.FS.Roots()[1]
	// Outside the workspace: absolute paths.
	srEqual(t, srOK(t, Glob{}, env, map[string]any{"pattern": "**/*.go", "path": extra}), filepath.Join(extraCanon, "lib", "x.go"))
	// An absolute pattern searches from its literal directories.
	srEqual(t, srOK(t, Glob{}, env, map[string]any{"pattern": filepath.ToSlash(root) + "/a/*.go"}), "a/b.go")
	srEqual(t, srOK(t, Glob{}, env, map[string]any{"pattern": "./a/*.go"}), "a/b.go")
}

// TestGlobGitRepository: inside a repository, info/exclude and the
// rules of the repository's root apply even when the workspace is a
// subdirectory of it.
func TestGlobGitRepository(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := t.TempDir()
	cmd := exec.Command("git", "init", "-q", "--template=", repo)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	srWrite(t, repo, map[string]string{
		".gitignore":          "*.gen.go\n",
		".git/info/exclude":   "local-notes.md\n",
		"ws/main.go":          "",
		"ws/types.gen.go":     "",
		"ws/local-notes.md":   "",
		"ws/README.md":        "",
		"ws/sub/.gitignore":   "!keep.gen.go\n",
		"ws/sub/keep.gen.go":  "",
		"ws/sub/other.gen.go": "",
	})
	env, _ := srEnvAt(t, filepath.Join(repo, "ws"))
	got := srLines(srOK(t, Glob{}, env, map[string]any{"pattern": "**/*.{go,md}"}))
	set := map[string]bool{}
	for _, g := range got {
		set[g] = true
	}
	if !set["main.go"] || !set["README.md"] || !set["sub/keep.gen.go"] || len(got) != 3 {
		t.Errorf("got %v", got)
	}
}

func TestGlobGlobalExcludes(t *testing.T) {
	home := t.TempDir()
	srWrite(t, home, map[string]string{".config/git/ignore": "*.swp\n"})
	old := searchIgnoreEnv
	searchIgnoreEnv = func() ignore.Env { return ignore.Env{Home: home} }
	t.Cleanup(func() { searchIgnoreEnv = old })
	env, root := srEnv(t)
	srWrite(t, root, map[string]string{"a.go": "", ".a.go.swp": ""})
	srEqual(t, srOK(t, Glob{}, env, map[string]any{"pattern": "*"}), "a.go")
}

func TestGlobCancelled(t *testing.T) {
	t.Parallel()
	env, root := srEnv(t)
	srWrite(t, root, map[string]string{"a/b": ""})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Glob{}.Run(ctx, env, json.RawMessage(`{"pattern":"**"}`))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestGlobDescribed(t *testing.T) {
	t.Parallel()
	var schema map[string]any
	if err := json.Unmarshal(Glob{}.InputSchema(), &schema); err != nil {
		t.Fatal(err)
	}
	g := Glob{}
	if !g.ReadOnly() || g.Name() != "Glob" || !strings.Contains(g.Description(), "**/*.go") {
		t.Error("Glob's name, description or read-only flag")
	}
}
