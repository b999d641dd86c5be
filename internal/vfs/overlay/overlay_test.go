//go:build unix

package overlay_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ferry-dev/ferry/internal/editorlink"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/internal/vfs"
	"github.com/ferry-dev/ferry/internal/vfs/overlay"
	"github.com/ferry-dev/ferry/internal/vfs/vfstest"
)

// editor is a fake editor: buffers (unsaved text by path) over the disk,
// which it reads and saves like an editor would; it records every path it
// is asked about.
type editor struct {
	mu      sync.Mutex
	buffers map[string]string
	asked   []string
	readErr error // when set, every read fails with it
	noSave  bool  // writes stay in the buffer
}

var _ editorlink.Files = (*editor)(nil)

func newEditor() *editor { return &editor{buffers: map[string]string{}} }

func (e *editor) ReadTextFile(_ context.Context, path string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.asked = append(e.asked, "read "+path)
	if e.readErr != nil {
		return "", e.readErr
	}
	if s, ok := e.buffers[path]; ok {
		return s, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("editor: %w", err)
	}
	return string(b), nil
}

func (e *editor) WriteTextFile(_ context.Context, path, content string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.asked = append(e.asked, "write "+path)
	if e.noSave {
		e.buffers[path] = content
		return nil
	}
	delete(e.buffers, path)
	return saveAtomic(path, content)
}

// saveAtomic saves as careful editors do: a temporary file renamed over
// the target, keeping its mode.
func saveAtomic(path, content string) error {
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".editor-save-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.WriteString(tmp, content); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func (e *editor) paths() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.asked...)
}

func newOverlay(t *testing.T, ed *editor, workspace string, extra ...string) vfs.FS {
	t.Helper()
	l, err := vfs.NewLocal(workspace, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return overlay.New(context.Background(), l, ed)
}

// TestOverlayContract runs vfs's shared suite on the overlay over a
// disk-backed editor: confinement, symlinks, special files, hard links,
// read-only files, the write check and stamps hold as on Local. Every path
// the editor was asked about lies inside the suite's roots.
func TestOverlayContract(t *testing.T) {
	var mu sync.Mutex
	var eds []*editor
	var roots [][]string
	vfstest.Run(t, func(t *testing.T, workspace string, extra ...string) vfs.FS {
		ed := newEditor()
		mu.Lock()
		eds = append(eds, ed)
		var rs []string
		for _, r := range append([]string{workspace}, extra...) {
			if rr, err := filepath.EvalSymlinks(r); err == nil {
				r = rr
			}
			rs = append(rs, r)
		}
		roots = append(roots, rs)
		mu.Unlock()
		return newOverlay(t, ed, workspace, extra...)
	})
	asked := 0
	for i, ed := range eds {
		for _, a := range ed.paths() {
			asked++
			_, p, _ := strings.Cut(a, " ")
			if !inside(p, roots[i]) {
				t.Errorf("the editor was asked to %s, outside the roots %v", a, roots[i])
			}
		}
	}
	if asked == 0 {
		t.Fatal("the suite never reached the editor")
	}
}

func inside(p string, roots []string) bool {
	for _, r := range roots {
		if rel, err := filepath.Rel(r, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

func canonicalTemp(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func readAll(t *testing.T, fsys vfs.FS, name string) (string, vfs.Info) {
	t.Helper()
	f, err := fsys.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), f.Info()
}

// TestUnsavedBufferIsServed: the editor's unsaved text is what is read,
// its stamp differs from the disk's and changes with the buffer.
func TestUnsavedBufferIsServed(t *testing.T) {
	ws := canonicalTemp(t)
	p := filepath.Join(ws, "a.go")
	if err := os.WriteFile(p, []byte("package disk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ed := newEditor()
	ed.buffers[p] = "package buffer // unsaved\n"
	fsys := newOverlay(t, ed, ws)
	got, info := readAll(t, fsys, "a.go")
	if got != "package buffer // unsaved\n" {
		t.Fatalf("read %q, want the buffer", got)
	}
	st, err := fsys.Stat("a.go")
	if err != nil {
		t.Fatal(err)
	}
	if st.Stamp != info.Stamp || st.Stamp.Size != int64(len(got)) {
		t.Fatalf("Stat stamp %+v, Open's %+v", st.Stamp, info.Stamp)
	}
	ed.mu.Lock()
	ed.buffers[p] = "package buffer // unsaved, too\n"[:len(got)] // same length, other text
	ed.mu.Unlock()
	st2, _ := fsys.Stat("a.go")
	if st2.Stamp == st.Stamp {
		t.Fatal("the stamp did not change with the unsaved buffer")
	}
}

// TestOnlyTextGoesToTheEditor: binary files, notebooks, images and UTF-16
// text are read from the disk without asking the editor.
func TestOnlyTextGoesToTheEditor(t *testing.T) {
	ws := canonicalTemp(t)
	files := map[string][]byte{
		"bin.dat":    {0x7f, 'E', 'L', 'F', 0, 0, 1},
		"nb.ipynb":   []byte(`{"cells":[]}`),
		"img.png":    append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 16)...),
		"utf16.txt":  {0xFF, 0xFE, 'h', 0, 'i', 0},
		"doc.pdf":    []byte("%PDF-1.4\n"),
		"plain.txt":  []byte("plain\n"),
		"empty.txt":  {},
		"bom.txt":    []byte("\xEF\xBB\xBFbom\n"),
		"latin1.txt": []byte("caf\xe9\n"),
	}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(ws, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ed := newEditor()
	fsys := newOverlay(t, ed, ws)
	for n, b := range files {
		if got, _ := readAll(t, fsys, n); got != string(b) {
			t.Errorf("%s: read %q", n, got)
		}
	}
	want := map[string]bool{"read " + filepath.Join(ws, "plain.txt"): true, "read " + filepath.Join(ws, "empty.txt"): true,
		"read " + filepath.Join(ws, "latin1.txt"): true}
	for _, a := range ed.paths() {
		if !want[a] {
			t.Errorf("the editor was asked to %s", a)
		}
	}
}

// TestEditorReadFailures: "not found" falls back to the disk, any other
// failure is CodeEditor without the editor's text.
func TestEditorReadFailures(t *testing.T) {
	ws := canonicalTemp(t)
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("disk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ed := newEditor()
	fsys := newOverlay(t, ed, ws)
	ed.readErr = fmt.Errorf("no buffer: %w", fs.ErrNotExist)
	if got, _ := readAll(t, fsys, "a.txt"); got != "disk\n" {
		t.Fatalf("fallback read %q", got)
	}
	ed.readErr = errors.New("editor exploded: secret internals")
	_, err := fsys.Open("a.txt")
	if tools.CodeOf(err) != tools.CodeEditor || strings.Contains(tools.AgentMessage(err), "secret") {
		t.Fatalf("err %v (code %d, message %q)", err, tools.CodeOf(err), tools.AgentMessage(err))
	}
	if _, err := fsys.Stat("a.txt"); tools.CodeOf(err) != tools.CodeEditor {
		t.Fatalf("stat err %v", err)
	}
}

// TestWriteGoesThroughTheEditor: a text write reaches the editor, the
// stamp returned is the one a later Stat gives, also when the editor keeps
// the text unsaved; a new file the editor does not create is reported.
func TestWriteGoesThroughTheEditor(t *testing.T) {
	ws := canonicalTemp(t)
	p := filepath.Join(ws, "a.txt")
	if err := os.WriteFile(p, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ed := newEditor()
	fsys := newOverlay(t, ed, ws)
	info, err := fsys.WriteFile("a.txt", []byte("new\n"), vfs.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new\n" {
		t.Fatalf("disk %q", b)
	}
	if st, _ := fsys.Stat("a.txt"); st.Stamp != info.Stamp {
		t.Fatalf("stamp after write %+v, Stat %+v", info.Stamp, st.Stamp)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}

	ed.noSave = true
	info, err = fsys.WriteFile("a.txt", []byte("unsaved\n"), vfs.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, st := readAll(t, fsys, "a.txt"); got != "unsaved\n" || st.Stamp != info.Stamp {
		t.Fatalf("read %q stamp %+v, want the written %+v", got, st.Stamp, info.Stamp)
	}
	_, err = fsys.WriteFile("new.txt", []byte("x\n"), vfs.WriteOptions{})
	if tools.CodeOf(err) != tools.CodeEditor {
		t.Fatalf("unsaved new file: %v", err)
	}
	want := []string{"write " + p, "write " + p, "write " + filepath.Join(ws, "new.txt")}
	var writes []string
	for _, a := range ed.paths() {
		if strings.HasPrefix(a, "write ") {
			writes = append(writes, a)
		}
	}
	if strings.Join(writes, "\n") != strings.Join(want, "\n") {
		t.Fatalf("writes %q, want %q", writes, want)
	}
}

// TestWriteCheckSeesTheBuffer: the final check runs on the editor's text,
// so an unsaved change made after the read stops the write.
func TestWriteCheckSeesTheBuffer(t *testing.T) {
	ws := canonicalTemp(t)
	p := filepath.Join(ws, "a.txt")
	if err := os.WriteFile(p, []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ed := newEditor()
	fsys := newOverlay(t, ed, ws)
	read, err := fsys.Stat("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	ed.buffers[p] = "two\n" // the user types, does not save
	stale := errors.New("stale")
	_, err = fsys.WriteFile("a.txt", []byte("three\n"), vfs.WriteOptions{Check: func(cur vfs.Info, ok bool) error {
		if !ok || cur.Stamp != read.Stamp {
			return stale
		}
		return nil
	}})
	if !errors.Is(err, stale) {
		t.Fatalf("err %v, want the check's", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "one\n" || ed.buffers[p] != "two\n" {
		t.Fatalf("disk %q buffer %q", b, ed.buffers[p])
	}
}

// swapEditor replaces the workspace's directory "d" by a link to outside
// at its first read: the race a write through the editor must catch.
type swapEditor struct {
	*editor
	dir, outside string
	once         sync.Once
}

func (s *swapEditor) ReadTextFile(ctx context.Context, path string) (string, error) {
	text, err := s.editor.ReadTextFile(ctx, path)
	s.once.Do(func() {
		_ = os.Rename(s.dir, s.dir+".old")
		_ = os.Symlink(s.outside, s.dir)
	})
	return text, err
}

// TestWriteRefusesALinkSwappedIn: a directory replaced by a link to
// outside the workspace between the path's check and the write is
// refused; nothing is written outside.
func TestWriteRefusesALinkSwappedIn(t *testing.T) {
	ws, outside := canonicalTemp(t), canonicalTemp(t)
	dir := filepath.Join(ws, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, outside} {
		if err := os.WriteFile(filepath.Join(d, "f.txt"), []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ed := &swapEditor{editor: newEditor(), dir: dir, outside: outside}
	l, err := vfs.NewLocal(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fsys := overlay.New(context.Background(), l, ed)
	_, err = fsys.WriteFile("d/f.txt", []byte("new\n"), vfs.WriteOptions{})
	if err == nil {
		t.Fatal("the write went through a swapped-in link")
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "f.txt")); string(b) != "old\n" {
		t.Fatalf("outside file %q", b)
	}
	for _, a := range ed.paths() {
		if strings.HasPrefix(a, "write ") {
			t.Fatalf("the editor was asked to %s", a)
		}
	}
}

// TestReadRefusesALinkSwappedIn: text the editor read through a link
// swapped in after the check is not served.
func TestReadRefusesALinkSwappedIn(t *testing.T) {
	ws, outside := canonicalTemp(t), canonicalTemp(t)
	dir := filepath.Join(ws, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("inside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "f.txt"), []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The swap happens inside the read: the editor reads the old path's
	// text here, but the check after it sees the link.
	ed := &swapEditor{editor: newEditor(), dir: dir, outside: outside}
	l, err := vfs.NewLocal(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fsys := overlay.New(context.Background(), l, ed)
	if _, err := fsys.Open("d/f.txt"); !errors.Is(err, vfs.ErrOutside) {
		t.Fatalf("Open after the swap: %v, want ErrOutside", err)
	}
}
