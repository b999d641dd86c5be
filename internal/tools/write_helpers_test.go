package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/vfs"
)

// Helpers of the Write and Edit tests (prefixed wt: the package's other
// tests live beside them).

// wtEnv returns an Env on a fresh workspace, and the workspace's path.
func wtEnv(t *testing.T) (*Env, string) {
	t.Helper()
	dir := t.TempDir()
	fsys, err := vfs.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	return &Env{FS: fsys, State: NewReadState(), Limits: DefaultLimits()}, fsys.Roots()[0]
}

// wtFile writes a file under dir (test setup, not through the tools).
func wtFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// wtMarkRead records a full Read of name as the Read tool does: canonical
// path and stamp from the FS, hash of the raw bytes. The Read-based
// end-to-end contract test lives with the Read tool.
func wtMarkRead(t *testing.T, env *Env, name string) ReadEntry {
	t.Helper()
	info, err := env.FS.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(info.Path)
	if err != nil {
		t.Fatal(err)
	}
	e := ReadEntry{Path: info.Path, Stamp: info.Stamp, Hash: HashBytes(data), View: "lines 1-2000"}
	env.State.Record(e)
	return e
}

// wtRun calls a tool with an input object.
func wtRun(t *testing.T, tool Tool, env *Env, in map[string]any) (*Result, error) {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return tool.Run(context.Background(), env, b)
}

// wtOK calls a tool and fails the test on an error.
func wtOK(t *testing.T, tool Tool, env *Env, in map[string]any) *Result {
	t.Helper()
	res, err := wtRun(t, tool, env, in)
	if err != nil {
		t.Fatalf("%s %v: %v", tool.Name(), in, err)
	}
	return res
}

// wtCode calls a tool that must fail with code, and returns the message.
func wtCode(t *testing.T, tool Tool, env *Env, in map[string]any, code int) string {
	t.Helper()
	res, err := wtRun(t, tool, env, in)
	if err == nil {
		t.Fatalf("%s %v succeeded (%+v), want code %d", tool.Name(), in, res, code)
	}
	if got := CodeOf(err); got != code {
		t.Fatalf("%s %v: code %d (%v), want %d", tool.Name(), in, got, err, code)
	}
	var te *Error
	errors.As(err, &te)
	return te.Message
}

// wtContent reads a file's bytes.
func wtContent(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wtText is a result's text.
func wtText(r *Result) string {
	var sb strings.Builder
	for _, b := range r.Blocks {
		sb.WriteString(b.Text)
	}
	return sb.String()
}

// wtModifyKeepMtime rewrites p in place with data of the same size and puts
// the mtime back, as a tool that preserves timestamps does. It waits until
// the ctime differs from the one in e (the kernel's timestamps are coarse),
// so the change is one a stat can see at all.
func wtModifyKeepMtime(t *testing.T, env *Env, p string, data []byte, e ReadEntry) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	mtime := fi.ModTime()
	deadline := time.Now().Add(5 * time.Second)
	for {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(data, 0); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		info, err := env.FS.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if !info.Stamp.ModTime.Equal(e.Stamp.ModTime) || info.Stamp.Size != e.Stamp.Size {
			t.Fatalf("setup: mtime or size not restored: %+v vs %+v", info.Stamp, e.Stamp)
		}
		if info.Stamp != e.Stamp {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("setup: ctime never moved")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// wtTouch moves a file's times without changing its content.
func wtTouch(t *testing.T, p string, when time.Time) {
	t.Helper()
	if err := os.Chtimes(p, when, when); err != nil {
		t.Fatal(err)
	}
}

// wtHistory records Track calls, and what the file held at that moment.
type wtHistory struct {
	mu      sync.Mutex
	calls   []wtTracked
	onTrack func()
}

type wtTracked struct {
	path    string
	old     []byte
	existed bool
	onDisk  string // the file's content when Track ran ("<none>" if missing)
}

func (h *wtHistory) Track(_ context.Context, path string, old []byte, existed bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	disk := "<none>"
	if b, err := os.ReadFile(path); err == nil {
		disk = string(b)
	}
	h.calls = append(h.calls, wtTracked{path: path, old: old, existed: existed, onDisk: disk})
	if h.onTrack != nil {
		h.onTrack()
	}
	return nil
}
