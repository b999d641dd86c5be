//go:build unix

// Package vfstest is the contract of vfs.FS as a test suite: every
// implementation runs Run and must pass all of it. Fixtures are real files
// on the local disk (the suite builds them with package os), so it fits any
// FS whose files live there.
//
// Special paths (FIFOs, sockets, devices, /proc) are called in a goroutine
// and must answer within Goal (100 ms, the promise; a refusal takes
// microseconds, so the margin is wide). A call that blocks never answers: the
// suite gives up on it after Deadline and releases it.
package vfstest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/vfs"
)

// Deadline is how long a call on a special path may take before the suite
// calls it blocked.
const Deadline = 2 * time.Second

// Goal is the answer time the tools promise for special paths.
const Goal = 100 * time.Millisecond

// NewFS returns the FS under test, confined to workspace and extra.
type NewFS func(t *testing.T, workspace string, extra ...string) vfs.FS

// Run runs the whole suite against newFS.
func Run(t *testing.T, newFS NewFS) {
	s := &suite{newFS: newFS}
	t.Run("Paths", s.paths)
	t.Run("Escapes", s.escapes)
	t.Run("SymlinksInside", s.symlinksInside)
	t.Run("SymlinksOutside", s.symlinksOutside)
	t.Run("SymlinkLoops", s.symlinkLoops)
	t.Run("ExtraRoots", s.extraRoots)
	t.Run("SymlinkedPrefix", s.symlinkedPrefix)
	t.Run("SpecialPaths", s.specialPaths)
	t.Run("DevNull", s.devNull)
	t.Run("OpenAndReadDir", s.openAndReadDir)
	t.Run("WriteNew", s.writeNew)
	t.Run("WriteKeepsMode", s.writeKeepsMode)
	t.Run("WriteThroughSymlink", s.writeThroughSymlink)
	t.Run("WriteReadOnly", s.writeReadOnly)
	t.Run("WriteCheck", s.writeCheck)
	t.Run("WriteFailuresLeaveNothing", s.writeFailures)
	t.Run("WriteHardLink", s.writeHardLink)
	t.Run("WriteConcurrent", s.writeConcurrent)
	t.Run("Stamp", s.stamp)
}

type suite struct{ newFS NewFS }

// tree is one test's directories: ws (the workspace), out (outside every
// root) and extra (a second root when asked for), all canonical.
type tree struct {
	base, ws, out, extra string
}

func newTree(t *testing.T) tree {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tr := tree{base: base, ws: filepath.Join(base, "ws"), out: filepath.Join(base, "out"), extra: filepath.Join(base, "extra")}
	for _, d := range []string{tr.ws, tr.out, tr.extra} {
		if err := os.Mkdir(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(tr.ws, "sub", "f.txt"), "inside\n", 0o644)
	write(t, filepath.Join(tr.out, "secret.txt"), "secret\n", 0o644)
	return tr
}

func write(t *testing.T, path, content string, mode fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func content(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path) //nolint:gosec // a fixture the test made
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readAll(t *testing.T, fsys vfs.FS, name string) string {
	t.Helper()
	f, err := fsys.Open(name)
	if err != nil {
		t.Fatalf("Open(%q): %v", name, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("read %q: %v", name, err)
	}
	return string(b)
}

// names lists a directory with package os, so the FS under test cannot hide
// a leftover.
func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func wantNames(t *testing.T, dir string, want ...string) {
	t.Helper()
	got := names(t, dir)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s holds %q, want %q (a leftover temporary file?)", dir, got, want)
	}
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v, want one wrapping %q", what, err, target)
	}
}

// ops calls every FS method on name and returns the errors by method.
func ops(fsys vfs.FS, name string) map[string]error {
	errs := map[string]error{}
	_, errs["Resolve"] = fsys.Resolve(name)
	_, errs["Stat"] = fsys.Stat(name)
	f, err := fsys.Open(name)
	if err == nil {
		f.Close()
	}
	errs["Open"] = err
	_, errs["ReadDir"] = fsys.ReadDir(name)
	_, errs["WriteFile"] = fsys.WriteFile(name, []byte("pwned\n"), vfs.WriteOptions{})
	return errs
}

func (s *suite) paths(t *testing.T) {
	tr := newTree(t)
	fsys := s.newFS(t, tr.ws)
	if got := fsys.Roots(); len(got) != 1 || got[0] != tr.ws {
		t.Errorf("Roots() = %q, want [%q]", got, tr.ws)
	}
	want := filepath.Join(tr.ws, "sub", "f.txt")
	for _, name := range []string{"sub/f.txt", "./sub/f.txt", "sub//f.txt", "sub/../sub/f.txt", want} {
		info, err := fsys.Stat(name)
		if err != nil {
			t.Errorf("Stat(%q): %v", name, err)
			continue
		}
		if info.Path != want || info.Rel != "sub/f.txt" || info.IsDir || !info.Mode.IsRegular() ||
			info.Links != 1 || info.Stamp.Size != int64(len("inside\n")) {
			t.Errorf("Stat(%q) = %+v", name, info)
		}
		if p, err := fsys.Resolve(name); err != nil || p != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", name, p, err, want)
		}
	}
	osInfo, err := os.Stat(want)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := fsys.Stat("sub/f.txt")
	if info.Mode != osInfo.Mode() || !info.Stamp.ModTime.Equal(osInfo.ModTime()) || info.Stamp.Inode == 0 ||
		info.Stamp.ChangeTime.IsZero() {
		t.Errorf("Stat = %+v, os.Stat mode %v mtime %v", info, osInfo.Mode(), osInfo.ModTime())
	}

	for _, name := range []string{"sub", "sub/", tr.ws + "/sub"} {
		info, err := fsys.Stat(name)
		if err != nil || !info.IsDir || info.Rel != "sub" || info.Path != filepath.Join(tr.ws, "sub") {
			t.Errorf("Stat(%q) = %+v, %v; want the directory sub", name, info, err)
		}
	}
	for _, name := range []string{".", "", tr.ws} {
		info, err := fsys.Stat(name)
		if err != nil || !info.IsDir || info.Rel != "." || info.Path != tr.ws {
			t.Errorf("Stat(%q) = %+v, %v; want the workspace with Rel \".\"", name, info, err)
		}
	}

	// A file to be created resolves; it does not exist yet.
	newPath := filepath.Join(tr.ws, "new", "dir", "file.txt")
	if p, err := fsys.Resolve("new/dir/file.txt"); err != nil || p != newPath {
		t.Errorf("Resolve of a missing file = %q, %v; want %q", p, err, newPath)
	}
	_, err = fsys.Stat("new/dir/file.txt")
	wantErr(t, "Stat of a missing file", err, vfs.ErrNotExist)
	_, err = fsys.Open("missing.txt")
	wantErr(t, "Open of a missing file", err, vfs.ErrNotExist)
	_, err = fsys.ReadDir("missing")
	wantErr(t, "ReadDir of a missing directory", err, vfs.ErrNotExist)
}

func (s *suite) escapes(t *testing.T) {
	tr := newTree(t)
	fsys := s.newFS(t, tr.ws)
	for _, name := range []string{
		"..",
		"../out/secret.txt",
		"./../out/secret.txt",
		"sub/../../out/secret.txt",
		"sub/../../../../../../../../out/secret.txt",
		"../out/new.txt",
		"../out",
		tr.ws + "/../out/secret.txt",
		tr.out + "/secret.txt",
		tr.out + "/new.txt",
		tr.out,
		tr.base,
		"/",
	} {
		for op, err := range ops(fsys, name) {
			wantErr(t, fmt.Sprintf("%s(%q)", op, name), err, vfs.ErrOutside)
			if err != nil && !strings.Contains(err.Error(), name) {
				t.Errorf("%s(%q): the error %q does not name the path", op, name, err)
			}
		}
	}
	if got := content(t, filepath.Join(tr.out, "secret.txt")); got != "secret\n" {
		t.Errorf("a write escaped: out/secret.txt = %q", got)
	}
	wantNames(t, tr.out, "secret.txt")
	wantNames(t, tr.base, "extra", "out", "ws")
}

func (s *suite) symlinksInside(t *testing.T) {
	tr := newTree(t)
	symlink(t, "sub/f.txt", filepath.Join(tr.ws, "rel.txt"))
	symlink(t, filepath.Join(tr.ws, "sub", "f.txt"), filepath.Join(tr.ws, "abs.txt"))
	symlink(t, "sub", filepath.Join(tr.ws, "dirlink"))
	symlink(t, "../rel.txt", filepath.Join(tr.ws, "sub", "chain.txt")) // a chain of two
	symlink(t, "../sub/f.txt", filepath.Join(tr.ws, "sub", "updown.txt"))
	fsys := s.newFS(t, tr.ws)
	want := filepath.Join(tr.ws, "sub", "f.txt")
	for _, name := range []string{"rel.txt", "abs.txt", "dirlink/f.txt", "sub/chain.txt", "sub/updown.txt", "dirlink/../sub/f.txt"} {
		info, err := fsys.Stat(name)
		if err != nil || info.Path != want || info.Rel != "sub/f.txt" || !info.Mode.IsRegular() {
			t.Errorf("Stat(%q) = %+v, %v; want the link's target %s", name, info, err, want)
		}
		if got := readAll(t, fsys, name); got != "inside\n" {
			t.Errorf("Open(%q) read %q", name, got)
		}
	}
	info, err := fsys.Stat("dirlink")
	if err != nil || !info.IsDir || info.Path != filepath.Join(tr.ws, "sub") {
		t.Errorf("Stat(dirlink) = %+v, %v", info, err)
	}
	ents, err := fsys.ReadDir("dirlink")
	if err != nil || len(ents) != 3 {
		t.Errorf("ReadDir(dirlink) = %v, %v; want sub's three entries", ents, err)
	}
	// A dangling link inside resolves to its (future) target.
	symlink(t, "sub/later.txt", filepath.Join(tr.ws, "dangling.txt"))
	if p, err := fsys.Resolve("dangling.txt"); err != nil || p != filepath.Join(tr.ws, "sub", "later.txt") {
		t.Errorf("Resolve(dangling.txt) = %q, %v", p, err)
	}
	_, err = fsys.Stat("dangling.txt")
	wantErr(t, "Stat of a dangling link", err, vfs.ErrNotExist)
}

func (s *suite) symlinksOutside(t *testing.T) {
	tr := newTree(t)
	symlink(t, filepath.Join(tr.out, "secret.txt"), filepath.Join(tr.ws, "file-abs"))
	symlink(t, "../out/secret.txt", filepath.Join(tr.ws, "file-rel"))
	symlink(t, tr.out, filepath.Join(tr.ws, "dir-abs"))
	symlink(t, "../../out", filepath.Join(tr.ws, "sub", "dir-rel"))
	symlink(t, filepath.Join(tr.out, "missing.txt"), filepath.Join(tr.ws, "dangling"))
	symlink(t, "../out/nodir/missing.txt", filepath.Join(tr.ws, "dangling-deep"))
	// A chain whose last link leaves: ws/chain1 -> ws/sub/chain2 -> out/secret.txt.
	symlink(t, "sub/chain2", filepath.Join(tr.ws, "chain1"))
	symlink(t, "../../out/secret.txt", filepath.Join(tr.ws, "sub", "chain2"))
	// A chain through a link outside the roots that points out again.
	symlink(t, filepath.Join(tr.out, "hop"), filepath.Join(tr.ws, "hop1"))
	symlink(t, "secret.txt", filepath.Join(tr.out, "hop"))
	fsys := s.newFS(t, tr.ws)
	for _, name := range []string{
		"file-abs", "file-rel", "dir-abs", "dir-abs/secret.txt", "dir-abs/new.txt",
		"sub/dir-rel", "sub/dir-rel/secret.txt", "dangling", "dangling-deep", "chain1", "sub/chain2", "hop1",
	} {
		for op, err := range ops(fsys, name) {
			wantErr(t, fmt.Sprintf("%s(%q)", op, name), err, vfs.ErrOutside)
		}
	}
	if got := content(t, filepath.Join(tr.out, "secret.txt")); got != "secret\n" {
		t.Errorf("a write escaped through a link: out/secret.txt = %q", got)
	}
	wantNames(t, tr.out, "hop", "secret.txt")
	// The links are untouched.
	for _, l := range []string{"file-abs", "dangling", "chain1", "dir-abs"} {
		if fi, err := os.Lstat(filepath.Join(tr.ws, l)); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("%s is no longer a symlink: %v", l, err)
		}
	}
}

func (s *suite) symlinkLoops(t *testing.T) {
	tr := newTree(t)
	symlink(t, "loop2", filepath.Join(tr.ws, "loop1"))
	symlink(t, "loop1", filepath.Join(tr.ws, "loop2"))
	symlink(t, "self", filepath.Join(tr.ws, "self"))
	symlink(t, ".", filepath.Join(tr.ws, "sub", "dot")) // not a loop by itself
	fsys := s.newFS(t, tr.ws)
	for _, name := range []string{"loop1", "loop2", "self", "self/x", "loop1/new.txt"} {
		errs := answer(t, "ops("+name+")", nil, func() error {
			for op, err := range ops(fsys, name) {
				if err == nil {
					return fmt.Errorf("%s(%q) succeeded on a symlink loop", op, name)
				}
			}
			return nil
		})
		if errs != nil {
			t.Error(errs)
		}
	}
	// Many links that are not a loop are fine up to a sane depth.
	info, err := fsys.Stat("sub/dot/dot/dot/f.txt")
	if err != nil || info.Rel != "sub/f.txt" {
		t.Errorf("Stat through sub/dot/dot/dot = %+v, %v", info, err)
	}
	wantNames(t, tr.ws, "loop1", "loop2", "self", "sub")
}

func (s *suite) extraRoots(t *testing.T) {
	tr := newTree(t)
	write(t, filepath.Join(tr.extra, "lib", "x.go"), "package x\n", 0o644)
	symlink(t, filepath.Join(tr.extra, "lib"), filepath.Join(tr.ws, "lib"))
	fsys := s.newFS(t, tr.ws, tr.extra)
	if got := fsys.Roots(); !slices.Equal(got, []string{tr.ws, tr.extra}) {
		t.Errorf("Roots() = %q", got)
	}
	want := filepath.Join(tr.extra, "lib", "x.go")
	for _, name := range []string{want, "lib/x.go", tr.ws + "/../extra/lib/x.go"} {
		info, err := fsys.Stat(name)
		if err != nil || info.Path != want || info.Rel != "lib/x.go" {
			t.Errorf("Stat(%q) = %+v, %v; want %s relative to the extra root", name, info, err, want)
		}
	}
	if got := readAll(t, fsys, want); got != "package x\n" {
		t.Errorf("read %q", got)
	}
	if _, err := fsys.WriteFile(filepath.Join(tr.extra, "new", "y.go"), []byte("package y\n"), vfs.WriteOptions{}); err != nil {
		t.Errorf("WriteFile into the extra root: %v", err)
	}
	if got := content(t, filepath.Join(tr.extra, "new", "y.go")); got != "package y\n" {
		t.Errorf("extra/new/y.go = %q", got)
	}
	// Relative paths are the workspace's, never the extra root's.
	_, err := fsys.Stat("new/y.go")
	wantErr(t, "Stat(new/y.go) relative", err, vfs.ErrNotExist)
	// The out dir is still out.
	_, err = fsys.Stat(filepath.Join(tr.out, "secret.txt"))
	wantErr(t, "Stat of out with an extra root", err, vfs.ErrOutside)
}

func (s *suite) symlinkedPrefix(t *testing.T) {
	tr := newTree(t)
	alias := filepath.Join(tr.base, "alias")
	symlink(t, tr.base, alias) // like /tmp -> /private/tmp
	fsys := s.newFS(t, filepath.Join(alias, "ws"))
	if got := fsys.Roots(); len(got) != 1 || got[0] != tr.ws {
		t.Errorf("Roots() = %q, want the canonical %q", got, tr.ws)
	}
	want := filepath.Join(tr.ws, "sub", "f.txt")
	for _, name := range []string{filepath.Join(alias, "ws", "sub", "f.txt"), want, "sub/f.txt"} {
		info, err := fsys.Stat(name)
		if err != nil || info.Path != want || info.Rel != "sub/f.txt" {
			t.Errorf("Stat(%q) = %+v, %v; want %s", name, info, err, want)
		}
	}
	info, err := fsys.WriteFile(filepath.Join(alias, "ws", "w.txt"), []byte("w\n"), vfs.WriteOptions{})
	if err != nil || info.Path != filepath.Join(tr.ws, "w.txt") {
		t.Errorf("WriteFile through the alias = %+v, %v", info, err)
	}
	_, err = fsys.Stat(filepath.Join(alias, "out", "secret.txt"))
	wantErr(t, "Stat of out through the alias", err, vfs.ErrOutside)
}

// answer runs f and fails the test if it does not return within Deadline:
// it blocked. release, when set, unblocks it afterwards.
func answer(t *testing.T, what string, release func(), f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- f() }()
	select {
	case err := <-done:
		if d := time.Since(start); d > Goal {
			t.Errorf("%s answered in %v, over the %v goal", what, d, Goal)
		}
		return err
	case <-time.After(Deadline):
		if release != nil {
			release()
		}
		t.Fatalf("%s did not answer within %v: it blocks", what, Deadline)
		return nil
	}
}

func (s *suite) specialPaths(t *testing.T) {
	// A short base: unix socket paths are limited to about 100 bytes.
	base, err := os.MkdirTemp("", "vfst")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	base, err = filepath.EvalSymlinks(base)
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "ws")
	if err := os.Mkdir(ws, 0o750); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(ws, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// Should an implementation open the FIFO for reading, opening the write
	// end releases it so the test fails instead of hanging.
	releaseFIFO := func() {
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil { //nolint:gosec // the test's own FIFO
			w.Close()
		}
	}
	ln, err := net.Listen("unix", filepath.Join(ws, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	symlink(t, "fifo", filepath.Join(ws, "fifo-link"))
	symlink(t, "sock", filepath.Join(ws, "sock-link"))
	symlink(t, "/dev/zero", filepath.Join(ws, "zero-link"))
	symlink(t, "/dev/stdin", filepath.Join(ws, "stdin-link"))
	symlink(t, "/proc/self/fd/0", filepath.Join(ws, "fd0-link"))
	fsys := s.newFS(t, ws)

	paths := []string{
		"fifo", fifo, "fifo-link", "sock", "sock-link", "zero-link", "stdin-link", "fd0-link",
		"/dev/zero", "/dev/random", "/dev/urandom", "/dev/stdin", "/dev/stdout", "/dev/stderr",
		"/proc/self/fd/0", "/proc/self/fd/1", "/proc/self/mem", "/proc/self/environ", "/proc/cpuinfo",
		"/sys/kernel/mm/transparent_hugepage/enabled", "/dev/fd/0",
	}
	for _, p := range []string{"/dev/tty", "/dev/console", "/dev/ptmx"} {
		if _, err := os.Lstat(p); err == nil {
			paths = append(paths, p)
		}
	}
	for _, name := range paths {
		release := releaseFIFO
		err := answer(t, "Stat("+name+")", release, func() error { _, err := fsys.Stat(name); return err })
		wantErr(t, "Stat("+name+")", err, vfs.ErrNotRegular)
		err = answer(t, "Open("+name+")", release, func() error {
			f, err := fsys.Open(name)
			if err == nil {
				f.Close()
			}
			return err
		})
		wantErr(t, "Open("+name+")", err, vfs.ErrNotRegular)
		if err != nil && !strings.Contains(err.Error(), name) {
			t.Errorf("Open(%q): the error %q does not name the path", name, err)
		}
		err = answer(t, "ReadDir("+name+")", release, func() error { _, err := fsys.ReadDir(name); return err })
		if err == nil {
			t.Errorf("ReadDir(%q) succeeded", name)
		}
		err = answer(t, "WriteFile("+name+")", release, func() error {
			_, err := fsys.WriteFile(name, []byte("x"), vfs.WriteOptions{})
			return err
		})
		wantErr(t, "WriteFile("+name+")", err, vfs.ErrNotRegular)
	}
	// The special files are still what they were.
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", fi, err)
	}
	if fi, err := os.Lstat(filepath.Join(ws, "sock")); err != nil || fi.Mode()&fs.ModeSocket == 0 {
		t.Errorf("the socket was replaced: %v %v", fi, err)
	}
	wantNames(t, ws, "fd0-link", "fifo", "fifo-link", "sock", "sock-link", "stdin-link", "zero-link")
}

func (s *suite) devNull(t *testing.T) {
	tr := newTree(t)
	symlink(t, vfs.DevNull, filepath.Join(tr.ws, "null-link"))
	fsys := s.newFS(t, tr.ws)
	for _, name := range []string{vfs.DevNull, "null-link"} {
		var info vfs.Info
		err := answer(t, "Stat("+name+")", nil, func() (err error) { info, err = fsys.Stat(name); return err })
		if err != nil || info.IsDir || !info.Mode.IsRegular() || info.Stamp.Size != 0 {
			t.Errorf("Stat(%q) = %+v, %v; want an empty regular-looking file", name, info, err)
		}
		var f vfs.File
		err = answer(t, "Open("+name+")", nil, func() (err error) { f, err = fsys.Open(name); return err })
		if err != nil {
			t.Errorf("Open(%q): %v", name, err)
			continue
		}
		b, err := io.ReadAll(f)
		if err != nil || len(b) != 0 {
			t.Errorf("read %q = %q, %v; want empty", name, b, err)
		}
		if n, err := f.ReadAt(make([]byte, 8), 0); n != 0 || !errors.Is(err, io.EOF) {
			t.Errorf("ReadAt on %q = %d, %v; want 0, EOF", name, n, err)
		}
		if info := f.Info(); info.IsDir || info.Stamp.Size != 0 {
			t.Errorf("File.Info of %q = %+v", name, info)
		}
		if err := f.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
}

func (s *suite) openAndReadDir(t *testing.T) {
	tr := newTree(t)
	for _, n := range []string{"b.txt", "a.txt", "C.txt", "c.txt", ".hidden", "z/inner.txt"} {
		write(t, filepath.Join(tr.ws, "list", n), n, 0o644)
	}
	fsys := s.newFS(t, tr.ws)
	ents, err := fsys.ReadDir("list")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if want := []string{".hidden", "C.txt", "a.txt", "b.txt", "c.txt", "z"}; !slices.Equal(got, want) {
		t.Errorf("ReadDir = %q, want %q (sorted by name)", got, want)
	}
	_, err = fsys.ReadDir("list/a.txt")
	if err == nil {
		t.Error("ReadDir of a file succeeded")
	}

	f, err := fsys.Open("sub/f.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := fsys.Stat("sub/f.txt")
	if f.Info() != st {
		t.Errorf("File.Info = %+v, Stat = %+v", f.Info(), st)
	}
	buf := make([]byte, 3)
	if n, err := f.ReadAt(buf, 2); n != 3 || err != nil || string(buf) != "sid" {
		t.Errorf("ReadAt = %d %v %q", n, err, buf)
	}
	if off, err := f.Seek(-3, io.SeekEnd); off != 4 || err != nil {
		t.Errorf("Seek = %d, %v", off, err)
	}
	if b, _ := io.ReadAll(f); string(b) != "de\n" {
		t.Errorf("read after Seek = %q", b)
	}
	_, err = fsys.Open("sub")
	wantErr(t, "Open of a directory", err, vfs.ErrIsDir)
}

func (s *suite) writeNew(t *testing.T) {
	tr := newTree(t)
	fsys := s.newFS(t, tr.ws)
	var checked, existed bool
	info, err := fsys.WriteFile("a/b/c/new.txt", []byte("hello\n"), vfs.WriteOptions{
		Check: func(cur vfs.Info, ok bool) error { checked, existed = true, ok; return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if !checked || existed {
		t.Errorf("Check called %v with ok=%v; want called with ok=false", checked, existed)
	}
	p := filepath.Join(tr.ws, "a", "b", "c", "new.txt")
	if got := content(t, p); got != "hello\n" {
		t.Errorf("content %q", got)
	}
	st, err := fsys.Stat(p)
	if err != nil || info != st || info.Rel != "a/b/c/new.txt" || info.Stamp.Size != 6 {
		t.Errorf("WriteFile returned %+v, Stat gives %+v (%v)", info, st, err)
	}
	if perm := info.Mode.Perm(); perm&^0o644 != 0 || perm&0o600 != 0o600 {
		t.Errorf("new file mode %v, want 0644 (less the umask)", info.Mode)
	}
	if fi, err := os.Stat(filepath.Join(tr.ws, "a", "b")); err != nil || !fi.IsDir() {
		t.Errorf("parent not created: %v", err)
	}
	info, err = fsys.WriteFile("private.txt", []byte("p"), vfs.WriteOptions{Perm: 0o600})
	if err != nil || info.Mode.Perm() != 0o600 {
		t.Errorf("WriteFile with Perm 0600 = %v, %v", info.Mode, err)
	}
	// Empty content is a file too.
	if _, err := fsys.WriteFile("empty.txt", nil, vfs.WriteOptions{}); err != nil || content(t, filepath.Join(tr.ws, "empty.txt")) != "" {
		t.Errorf("empty write: %v", err)
	}
	// Replacing an existing file.
	if _, err := fsys.WriteFile("sub/f.txt", []byte("replaced\n"), vfs.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, fsys, "sub/f.txt"); got != "replaced\n" {
		t.Errorf("after replace: %q", got)
	}
	wantNames(t, tr.ws, "a", "empty.txt", "private.txt", "sub")
	wantNames(t, filepath.Join(tr.ws, "sub"), "f.txt")
}

func (s *suite) writeKeepsMode(t *testing.T) {
	tr := newTree(t)
	for _, mode := range []fs.FileMode{0o755, 0o600, 0o640, 0o700, 0o666, 0o4755} {
		name := fmt.Sprintf("m%o.sh", mode)
		write(t, filepath.Join(tr.ws, name), "#!/bin/sh\n", mode)
	}
	fsys := s.newFS(t, tr.ws)
	for _, mode := range []fs.FileMode{0o755, 0o600, 0o640, 0o700, 0o666, 0o4755} {
		name := fmt.Sprintf("m%o.sh", mode)
		want, _ := os.Stat(filepath.Join(tr.ws, name))
		info, err := fsys.WriteFile(name, []byte("#!/bin/sh\necho hi\n"), vfs.WriteOptions{Perm: 0o600})
		if err != nil {
			t.Errorf("WriteFile(%s): %v", name, err)
			continue
		}
		got, _ := os.Stat(filepath.Join(tr.ws, name))
		if got.Mode() != want.Mode() || info.Mode != want.Mode() {
			t.Errorf("%s: mode %v (Info %v) after the write, want %v", name, got.Mode(), info.Mode, want.Mode())
		}
	}
}

func (s *suite) writeThroughSymlink(t *testing.T) {
	tr := newTree(t)
	script := filepath.Join(tr.ws, "bin", "run.sh")
	write(t, script, "#!/bin/sh\necho old\n", 0o755)
	symlink(t, "bin/run.sh", filepath.Join(tr.ws, "run"))
	symlink(t, "../run", filepath.Join(tr.ws, "sub", "run2")) // a chain
	symlink(t, "bin", filepath.Join(tr.ws, "bindir"))
	fsys := s.newFS(t, tr.ws)
	for i, name := range []string{"run", "sub/run2", "bindir/run.sh"} {
		data := fmt.Sprintf("#!/bin/sh\necho new %d\n", i)
		info, err := fsys.WriteFile(name, []byte(data), vfs.WriteOptions{})
		if err != nil {
			t.Fatalf("WriteFile(%s): %v", name, err)
		}
		if info.Path != script || info.Mode.Perm() != 0o755 {
			t.Errorf("WriteFile(%s) = %+v; want the target %s, mode 0755", name, info, script)
		}
		if got := content(t, script); got != data {
			t.Errorf("target holds %q, want %q", got, data)
		}
		if fi, _ := os.Stat(script); fi.Mode().Perm() != 0o755 {
			t.Errorf("target mode %v, want 0755", fi.Mode())
		}
	}
	for link, dest := range map[string]string{"run": "bin/run.sh", "sub/run2": "../run", "bindir": "bin"} {
		fi, err := os.Lstat(filepath.Join(tr.ws, link))
		got, _ := os.Readlink(filepath.Join(tr.ws, link))
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 || got != dest {
			t.Errorf("%s is no longer a symlink to %s (%v, %q)", link, dest, err, got)
		}
	}
	wantNames(t, tr.ws, "bin", "bindir", "run", "sub")
	wantNames(t, filepath.Join(tr.ws, "bin"), "run.sh")
	// A dangling link inside is written through: the target is created.
	symlink(t, "bin/later.sh", filepath.Join(tr.ws, "later"))
	info, err := fsys.WriteFile("later", []byte("x\n"), vfs.WriteOptions{})
	if err != nil || info.Path != filepath.Join(tr.ws, "bin", "later.sh") {
		t.Errorf("WriteFile through a dangling link = %+v, %v", info, err)
	}
	if fi, err := os.Lstat(filepath.Join(tr.ws, "later")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the dangling link was replaced: %v", err)
	}
}

func (s *suite) writeReadOnly(t *testing.T) {
	tr := newTree(t)
	p := filepath.Join(tr.ws, "ro.txt")
	write(t, p, "frozen\n", 0o444)
	symlink(t, "ro.txt", filepath.Join(tr.ws, "ro-link"))
	fsys := s.newFS(t, tr.ws)
	for _, name := range []string{"ro.txt", "ro-link"} {
		called := false
		_, err := fsys.WriteFile(name, []byte("thawed\n"), vfs.WriteOptions{
			Check: func(vfs.Info, bool) error { called = true; return nil },
		})
		wantErr(t, "WriteFile("+name+") of a 0444 file", err, vfs.ErrPermission)
		if err != nil && !strings.Contains(err.Error(), "read-only") {
			t.Errorf("the error %q does not say the file is read-only", err)
		}
		if called {
			t.Error("Check was called for a refused write")
		}
	}
	if got := content(t, p); got != "frozen\n" {
		t.Errorf("read-only file changed to %q", got)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o444 {
		t.Errorf("mode changed to %v", fi.Mode())
	}
	wantNames(t, tr.ws, "ro-link", "ro.txt", "sub")
}

func (s *suite) writeCheck(t *testing.T) {
	tr := newTree(t)
	p := filepath.Join(tr.ws, "sub", "f.txt")
	fsys := s.newFS(t, tr.ws)
	before, err := fsys.Stat("sub/f.txt")
	if err != nil {
		t.Fatal(err)
	}
	stale := errors.New("stale")
	var seen vfs.Info
	var seenOK bool
	_, err = fsys.WriteFile("sub/f.txt", []byte("lost\n"), vfs.WriteOptions{
		Check: func(cur vfs.Info, ok bool) error { seen, seenOK = cur, ok; return stale },
	})
	if err != stale { //nolint:errorlint // Check's error is returned unchanged
		t.Errorf("WriteFile returned %v, want Check's error unchanged", err)
	}
	if !seenOK || seen != before {
		t.Errorf("Check saw %+v (ok %v), want the current %+v", seen, seenOK, before)
	}
	if got := content(t, p); got != "inside\n" {
		t.Errorf("file changed to %q after Check refused", got)
	}
	after, _ := fsys.Stat("sub/f.txt")
	if after != before {
		t.Errorf("stamp moved after an aborted write: %+v -> %+v", before, after)
	}
	wantNames(t, filepath.Join(tr.ws, "sub"), "f.txt")

	// A new file is not created when Check refuses.
	_, err = fsys.WriteFile("sub/new.txt", []byte("x"), vfs.WriteOptions{
		Check: func(cur vfs.Info, ok bool) error {
			if ok {
				return errors.New("new file reported as existing")
			}
			return stale
		},
	})
	if err != stale { //nolint:errorlint // Check's error is returned unchanged
		t.Errorf("WriteFile of a new file returned %v, want Check's error", err)
	}
	wantNames(t, filepath.Join(tr.ws, "sub"), "f.txt")

	// Check sees a change made after the caller's read: the write is
	// refused and the other writer's content stays.
	_, err = fsys.WriteFile("sub/f.txt", []byte("mine\n"), vfs.WriteOptions{
		Check: func(cur vfs.Info, ok bool) error {
			if cur.Stamp != before.Stamp {
				return stale
			}
			return nil
		},
	})
	if err != nil {
		t.Fatalf("unchanged file refused: %v", err)
	}
	_, err = fsys.WriteFile("sub/f.txt", []byte("theirs\n"), vfs.WriteOptions{
		Check: func(cur vfs.Info, ok bool) error {
			if cur.Stamp != before.Stamp {
				return stale
			}
			return nil
		},
	})
	if err != stale { //nolint:errorlint // Check's error is returned unchanged
		t.Errorf("stale write returned %v, want Check's error", err)
	}
	if got := content(t, p); got != "mine\n" {
		t.Errorf("content %q, want the first writer's", got)
	}
}

func (s *suite) writeFailures(t *testing.T) {
	tr := newTree(t)
	write(t, filepath.Join(tr.ws, "file"), "f", 0o644)
	fsys := s.newFS(t, tr.ws)
	_, err := fsys.WriteFile("sub", []byte("x"), vfs.WriteOptions{})
	wantErr(t, "WriteFile onto a directory", err, vfs.ErrIsDir)
	_, err = fsys.WriteFile(".", []byte("x"), vfs.WriteOptions{})
	wantErr(t, "WriteFile onto the workspace", err, vfs.ErrIsDir)
	_, err = fsys.WriteFile("file/child.txt", []byte("x"), vfs.WriteOptions{})
	if err == nil {
		t.Error("WriteFile below a regular file succeeded")
	}
	// A Check that panics is the caller's bug, but must not leave a
	// temporary file behind either.
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Check's panic was swallowed")
			}
		}()
		_, _ = fsys.WriteFile("sub/f.txt", []byte("x"), vfs.WriteOptions{
			Check: func(vfs.Info, bool) error { panic("boom") },
		})
	}()
	func() {
		defer func() { _ = recover() }()
		_, _ = fsys.WriteFile("sub/new.txt", []byte("x"), vfs.WriteOptions{
			Check: func(vfs.Info, bool) error { panic("boom") },
		})
	}()
	wantNames(t, tr.ws, "file", "sub")
	wantNames(t, filepath.Join(tr.ws, "sub"), "f.txt")
	if content(t, filepath.Join(tr.ws, "file")) != "f" || content(t, filepath.Join(tr.ws, "sub", "f.txt")) != "inside\n" {
		t.Error("a failed write changed a file")
	}
}

// writeHardLink: a file with other hard links is never written (a link may
// lead out of the roots), whichever of its names is given; once it is the
// only name, it is written as any file.
func (s *suite) writeHardLink(t *testing.T) {
	tr := newTree(t)
	a, b := filepath.Join(tr.ws, "a.txt"), filepath.Join(tr.ws, "sub", "b.txt")
	write(t, a, "one\n", 0o640)
	if err := os.Link(a, b); err != nil {
		t.Fatal(err)
	}
	// A link to a file outside every root: writing through it would escape.
	secret := filepath.Join(tr.out, "secret.txt")
	if err := os.Link(secret, filepath.Join(tr.ws, "out.txt")); err != nil {
		t.Fatal(err)
	}
	fsys := s.newFS(t, tr.ws)
	before, err := fsys.Stat("a.txt")
	if err != nil || before.Links != 2 {
		t.Fatalf("Stat of a hard-linked file = %+v, %v; want Links 2", before, err)
	}
	// Policy: refused, untouched, and Check is never reached.
	for _, name := range []string{"a.txt", "sub/b.txt", "out.txt"} {
		_, err := fsys.WriteFile(name, []byte("two, longer\n"), vfs.WriteOptions{
			Check: func(vfs.Info, bool) error { t.Errorf("Check called for %s", name); return nil },
		})
		if !errors.Is(err, vfs.ErrHardLinked) {
			t.Errorf("WriteFile(%s) with other links = %v, want ErrHardLinked", name, err)
		}
	}
	if content(t, a) != "one\n" || content(t, b) != "one\n" || content(t, secret) != "secret\n" {
		t.Errorf("refused writes changed the files: %q, %q, %q", content(t, a), content(t, b), content(t, secret))
	}
	// Once the other link is gone, the file is an ordinary one again.
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.WriteFile("a.txt", []byte("three\n"), vfs.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if content(t, a) != "three\n" {
		t.Errorf("a.txt = %q after its other link was removed", content(t, a))
	}
	wantNames(t, tr.ws, "a.txt", "out.txt", "sub")
	wantNames(t, filepath.Join(tr.ws, "sub"), "f.txt")
}

// writeConcurrent: writers that all read the same version race to write it;
// with a Check that compares the stamp they read, exactly one may win each
// round, and the file holds the winner's content.
func (s *suite) writeConcurrent(t *testing.T) {
	tr := newTree(t)
	symlink(t, "sub/f.txt", filepath.Join(tr.ws, "link"))
	fsys := s.newFS(t, tr.ws)
	stale := errors.New("stale")
	const writers, rounds = 8, 5
	for round := range rounds {
		read, err := fsys.Stat("sub/f.txt")
		if err != nil {
			t.Fatal(err)
		}
		var wins atomic.Int32
		var winner atomic.Value
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := range writers {
			wg.Go(func() {
				name := "sub/f.txt"
				if w%2 == 1 {
					name = "link" // another name of the same file shares the lock
				}
				data := fmt.Sprintf("round %d writer %d\n", round, w)
				<-start
				_, err := fsys.WriteFile(name, []byte(data), vfs.WriteOptions{
					Check: func(cur vfs.Info, ok bool) error {
						if !ok || cur.Stamp != read.Stamp {
							return stale
						}
						return nil
					},
				})
				switch {
				case err == nil:
					wins.Add(1)
					winner.Store(data)
				case !errors.Is(err, stale):
					t.Errorf("writer %d: %v", w, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if n := wins.Load(); n != 1 {
			t.Fatalf("round %d: %d writers won on the same read, want exactly 1", round, n)
		}
		if got := content(t, filepath.Join(tr.ws, "sub", "f.txt")); got != winner.Load() {
			t.Fatalf("round %d: file holds %q, the winner wrote %q", round, got, winner.Load())
		}
	}
	wantNames(t, filepath.Join(tr.ws, "sub"), "f.txt")
}

func (s *suite) stamp(t *testing.T) {
	tr := newTree(t)
	p := filepath.Join(tr.ws, "s.txt")
	write(t, p, "aaaa\n", 0o644)
	fsys := s.newFS(t, tr.ws)
	s1, err := fsys.Stat("s.txt")
	if err != nil {
		t.Fatal(err)
	}
	if s2, _ := fsys.Stat("s.txt"); s2.Stamp != s1.Stamp {
		t.Errorf("stamp of an untouched file moved: %+v -> %+v", s1.Stamp, s2.Stamp)
	}
	// Let the file system's timestamp clock tick (it is coarse, a few ms),
	// so the change below can move ctime.
	time.Sleep(30 * time.Millisecond)
	// Same size, same inode, mtime restored: only ctime tells.
	if err := os.WriteFile(p, []byte("bbbb\n"), 0o600); err != nil { // the file exists: its mode stays
		t.Fatal(err)
	}
	if err := os.Chtimes(p, s1.Stamp.ModTime, s1.Stamp.ModTime); err != nil {
		t.Fatal(err)
	}
	s3, err := fsys.Stat("s.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !s3.Stamp.ModTime.Equal(s1.Stamp.ModTime) || s3.Stamp.Size != s1.Stamp.Size || s3.Stamp.Inode != s1.Stamp.Inode {
		t.Fatalf("fixture: mtime, size or inode not restored: %+v vs %+v", s3.Stamp, s1.Stamp)
	}
	if s3.Stamp == s1.Stamp {
		t.Errorf("content changed with the mtime restored, but the stamp did not move: %+v", s3.Stamp)
	}
	// A write through the FS moves it too, and the returned Info is current.
	info, err := fsys.WriteFile("s.txt", []byte("bbbb\n"), vfs.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Stamp == s3.Stamp {
		t.Error("WriteFile did not move the stamp")
	}
	if s4, _ := fsys.Stat("s.txt"); s4 != info {
		t.Errorf("WriteFile returned %+v, Stat gives %+v", info, s4)
	}
	if !bytes.Equal([]byte(content(t, p)), []byte("bbbb\n")) {
		t.Error("content")
	}
}
