//go:build unix

package vfs_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/vfs"
	"github.com/ferry-dev/ferry/internal/vfs/vfstest"
)

func newLocal(t *testing.T, workspace string, extra ...string) *vfs.Local {
	t.Helper()
	l, err := vfs.NewLocal(workspace, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestLocal runs the shared contract against Local.
func TestLocal(t *testing.T) {
	vfstest.Run(t, func(t *testing.T, workspace string, extra ...string) vfs.FS {
		return newLocal(t, workspace, extra...)
	})
}

func canonicalTemp(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestNewLocalErrors(t *testing.T) {
	d := canonicalTemp(t)
	file := filepath.Join(d, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(d, "missing")
	for _, tc := range []struct {
		name      string
		ws        string
		extra     []string
		want      string
		wantErrIs error
	}{
		{"missing workspace", missing, nil, "workspace", fs.ErrNotExist},
		{"file as workspace", file, nil, "not a directory", nil},
		{"empty workspace", "", nil, "empty path", nil},
		{"missing extra root", d, []string{missing}, "extra root", fs.ErrNotExist},
		{"file as extra root", d, []string{file}, "extra root", nil},
	} {
		l, err := vfs.NewLocal(tc.ws, tc.extra...)
		if err == nil {
			l.Close()
			t.Errorf("%s: NewLocal succeeded", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not say %q", tc.name, err, tc.want)
		}
		if tc.wantErrIs != nil && !errors.Is(err, tc.wantErrIs) {
			t.Errorf("%s: error %v does not wrap %v", tc.name, err, tc.wantErrIs)
		}
	}
}

func TestLocalRootsDeduplicatedAndCanonical(t *testing.T) {
	d := canonicalTemp(t)
	if err := os.Symlink(d, filepath.Join(d, "self")); err != nil {
		t.Fatal(err)
	}
	l := newLocal(t, d, filepath.Join(d, "self"), d+"/.")
	if got := l.Roots(); len(got) != 1 || got[0] != d {
		t.Errorf("Roots() = %q, want [%q]", got, d)
	}
}

// Policy: only the resolved path is confined, like realpath -m, so leaving
// the workspace and coming back is fine.
func TestLocalOutAndBackIn(t *testing.T) {
	d := canonicalTemp(t)
	ws := filepath.Join(d, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "sub", "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := newLocal(t, ws)
	for _, name := range []string{"../ws/sub/f", "sub/../../ws/sub/f", d + "/nope/../ws/sub/f", "missing/../sub/f"} {
		info, err := l.Stat(name)
		if err != nil || info.Path != filepath.Join(ws, "sub", "f") {
			t.Errorf("Stat(%q) = %+v, %v", name, info, err)
		}
	}
}

// Nested roots: Rel is relative to the workspace, the first root.
func TestLocalNestedRoots(t *testing.T) {
	ws := canonicalTemp(t)
	inner := filepath.Join(ws, "inner")
	if err := os.Mkdir(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inner, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l := newLocal(t, ws, inner)
	info, err := l.Stat(filepath.Join(inner, "f"))
	if err != nil || info.Rel != "inner/f" {
		t.Errorf("Stat = %+v, %v; want Rel inner/f", info, err)
	}
}

func TestLocalSpecialErrors(t *testing.T) {
	l := newLocal(t, canonicalTemp(t))
	for _, name := range []string{"/dev/zero", "/dev/stdin", "/proc/self/fd/0"} {
		_, err := l.Open(name)
		if !errors.Is(err, vfs.ErrNotRegular) || !errors.Is(err, vfs.ErrOutside) {
			t.Errorf("Open(%s): %v; want ErrNotRegular and ErrOutside", name, err)
		}
		if err != nil && !strings.Contains(err.Error(), "device or special file") {
			t.Errorf("Open(%s): %q does not say it is a device", name, err)
		}
	}
	_, err := l.WriteFile(vfs.DevNull, []byte("x"), vfs.WriteOptions{})
	if !errors.Is(err, vfs.ErrNotRegular) {
		t.Errorf("WriteFile(/dev/null) = %v, want ErrNotRegular", err)
	}
	if p, err := l.Resolve(vfs.DevNull); err != nil || p != vfs.DevNull {
		t.Errorf("Resolve(/dev/null) = %q, %v", p, err)
	}
}

// A root of / must not make devices or /proc servable.
func TestLocalRootSlash(t *testing.T) {
	l := newLocal(t, "/")
	for _, name := range []string{"/dev/zero", "/dev/stdin", "/proc/self/fd/0", "dev/urandom"} {
		if _, err := l.Open(name); !errors.Is(err, vfs.ErrNotRegular) {
			t.Errorf("Open(%s) with root /: %v, want ErrNotRegular", name, err)
		}
	}
	f, err := l.Open(vfs.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(f); len(b) != 0 {
		t.Errorf("/dev/null read %q", b)
	}
}

func TestLocalSymlinkLoopIsELOOP(t *testing.T) {
	ws := canonicalTemp(t)
	if err := os.Symlink("loop", filepath.Join(ws, "loop")); err != nil {
		t.Fatal(err)
	}
	l := newLocal(t, ws)
	if _, err := l.Stat("loop"); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("Stat(loop) = %v, want ELOOP", err)
	}
}

// The temporary file lives beside the target with a leading dot, and is gone
// afterwards.
func TestLocalTempFileName(t *testing.T) {
	ws := canonicalTemp(t)
	l := newLocal(t, ws)
	var during []string
	_, err := l.WriteFile("d/f.txt", []byte("x"), vfs.WriteOptions{Check: func(vfs.Info, bool) error {
		ents, err := os.ReadDir(filepath.Join(ws, "d"))
		for _, e := range ents {
			during = append(during, e.Name())
		}
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(during) != 1 || !strings.HasPrefix(during[0], ".f.txt.ferry-tmp-") {
		t.Errorf("during Check the directory held %q, want one .f.txt.ferry-tmp-*", during)
	}
	ents, _ := os.ReadDir(filepath.Join(ws, "d"))
	if len(ents) != 1 || ents[0].Name() != "f.txt" {
		t.Errorf("afterwards: %v", ents)
	}
	// A name near NAME_MAX still gets a temporary file.
	long := strings.Repeat("é", 120) + ".txt" // 244 bytes
	if _, err := l.WriteFile(long, []byte("x"), vfs.WriteOptions{}); err != nil {
		t.Errorf("WriteFile of a 244-byte name: %v", err)
	}
}

// Running as root, a replaced file keeps its owner and group.
func TestLocalKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root can give a file away")
	}
	ws := canonicalTemp(t)
	p := filepath.Join(ws, "owned")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, 1234, 5678); err != nil {
		t.Fatal(err)
	}
	l := newLocal(t, ws)
	if _, err := l.WriteFile("owned", []byte("y"), vfs.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != 1234 || st.Gid != 5678 {
		t.Errorf("owner %d:%d after the write, want 1234:5678", st.Uid, st.Gid)
	}
}

// An escape that os.Root itself detects (the tree changed after resolving)
// is reported as ErrOutside.
func TestLocalEscapeMappedToErrOutside(t *testing.T) {
	d := canonicalTemp(t)
	ws := filepath.Join(d, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "secret"), []byte("s"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := newLocal(t, ws)
	err := vfs.RaceHook(l, "dir/secret", func() {
		// Between resolve and open, dir becomes a link out of the root.
		os.Remove(filepath.Join(ws, "dir"))
		os.Symlink("..", filepath.Join(ws, "dir"))
	})
	if !errors.Is(err, vfs.ErrOutside) {
		t.Errorf("Open after the swap = %v, want ErrOutside", err)
	}
}

// A regular file swapped for a FIFO after resolving is caught on the opened
// descriptor, and the open does not block.
func TestLocalOpenFIFOSwappedIn(t *testing.T) {
	ws := canonicalTemp(t)
	p := filepath.Join(ws, "f")
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	l := newLocal(t, ws)
	done := make(chan error, 1)
	go func() {
		f, err := vfs.OpenRaceHook(l, "f", func() {
			os.Remove(p)
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Error(err)
			}
		})
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, vfs.ErrNotRegular) {
			t.Errorf("Open of a swapped-in FIFO = %v, want ErrNotRegular", err)
		}
	case <-time.After(vfstest.Deadline):
		if w, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatal("Open blocked on a FIFO swapped in after the type check")
	}
}

// envFsizeChild names the workspace a child test process writes to under a
// lowered file size limit (TestLocalFailedWriteLeavesTarget).
const envFsizeChild = "FERRY_VFS_FSIZE_CHILD"

// failWritesUnderFsizeLimit runs in the child: both writes fail, the single
// one with EFBIG half-way, the linked one before writing.
func failWritesUnderFsizeLimit(t *testing.T, ws string) {
	l := newLocal(t, ws)
	big := []byte(strings.Repeat("new content\n", 1000))
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	lim := old
	lim.Cur = 4096 // Go ignores SIGXFSZ, so a bigger write fails with EFBIG
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal("cannot lower RLIMIT_FSIZE:", err)
	}
	_, errSingle := l.WriteFile("single", big, vfs.WriteOptions{})
	_, errLinked := l.WriteFile("linked", big, vfs.WriteOptions{})
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(errSingle, syscall.EFBIG) {
		t.Errorf("WriteFile(single) over the size limit = %v, want EFBIG", errSingle)
	}
	if !errors.Is(errLinked, vfs.ErrHardLinked) {
		t.Errorf("WriteFile(linked) = %v, want ErrHardLinked", errLinked)
	}
}

// A write that fails half-way (here: the file size limit, EFBIG) leaves the
// target as it was and no temporary file; a hard-linked file is refused
// before anything is written.
func TestLocalFailedWriteLeavesTarget(t *testing.T) {
	if ws := os.Getenv(envFsizeChild); ws != "" {
		failWritesUnderFsizeLimit(t, ws)
		return
	}
	ws := canonicalTemp(t)
	single, linked := filepath.Join(ws, "single"), filepath.Join(ws, "linked")
	for _, p := range []string{single, linked} {
		if err := os.WriteFile(p, []byte("old content\n"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(linked, filepath.Join(ws, "other")); err != nil {
		t.Fatal(err)
	}
	// The size limit is the process's: lowered here it would also fail
	// the test framework's own log writes, so a child process takes it.
	cmd := exec.Command(os.Args[0], "-test.run=^TestLocalFailedWriteLeavesTarget$", "-test.v") //nolint:gosec // the test binary itself
	cmd.Env = append(os.Environ(), envFsizeChild+"="+ws)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("the writes under a file size limit: %v\n%s", err, out)
	}
	for _, name := range []string{"single", "linked", "other"} {
		b, err := os.ReadFile(filepath.Join(ws, name))
		if err != nil || string(b) != "old content\n" {
			t.Errorf("%s holds %q (%v) after a failed write, want the old content", name, b, err)
		}
	}
	ents, _ := os.ReadDir(ws)
	if len(ents) != 3 {
		t.Errorf("the workspace holds %v, want only linked, other, single", ents)
	}
}

// A script written while other goroutines fork runs at once: without
// holding forks off while it is open, some forked child holds its write
// fd and running it fails with "text file busy". Replacing a script's
// content (its mode kept) is covered the same way.
func TestLocalWriteExecutableWhileForking(t *testing.T) {
	ws := canonicalTemp(t)
	l := newLocal(t, ws)
	stop := make(chan struct{})
	done := make(chan struct{}, 2)
	for range 2 {
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = exec.Command("/bin/sh", "-c", ":").Run()
			}
		}()
	}
	defer func() { close(stop); <-done; <-done }()
	for i := range 200 {
		name := filepath.Join(ws, "run.sh")
		if i%2 == 0 {
			name = filepath.Join(ws, "new"+strconv.Itoa(i)+".sh")
		}
		if _, err := l.WriteFile(name, []byte("#!/bin/sh\nexit 0\n"), vfs.WriteOptions{Perm: 0o755}); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(name).CombinedOutput(); err != nil {
			t.Fatalf("write %d: %v %s", i, err, out)
		}
	}
}
