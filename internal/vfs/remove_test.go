//go:build unix

package vfs_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferry-dev/ferry/internal/vfs"
)

// Remove deletes a file inside the workspace after its check passes, and
// leaves it when the check fails; it refuses paths outside, directories,
// hard-linked files and a symlink out.
func TestRemove(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	for p, body := range map[string]string{filepath.Join(ws, "a.txt"): "a", secret: "s"} {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(secret, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(ws, "a.txt"), filepath.Join(ws, "hard.txt")); err != nil {
		t.Fatal(err)
	}
	l := newLocal(t, ws)
	errNo := errors.New("no")
	if err := l.Remove("a.txt", func(vfs.Info, bool) error { return errNo }); !errors.Is(err, vfs.ErrHardLinked) {
		t.Fatalf("a hard-linked file: %v", err)
	}
	if err := os.Remove(filepath.Join(ws, "hard.txt")); err != nil {
		t.Fatal(err)
	}
	if err := l.Remove("a.txt", func(vfs.Info, bool) error { return errNo }); !errors.Is(err, errNo) {
		t.Fatalf("a refusing check: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "a.txt")); err != nil {
		t.Fatalf("the check refused, yet: %v", err)
	}
	var saw vfs.Info
	if err := l.Remove("a.txt", func(cur vfs.Info, ok bool) error { saw = cur; return nil }); err != nil || saw.Rel != "a.txt" {
		t.Fatalf("remove: %v (saw %+v)", err, saw)
	}
	if _, err := os.Stat(filepath.Join(ws, "a.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("still there: %v", err)
	}
	if err := l.Remove("a.txt", func(_ vfs.Info, ok bool) error {
		if ok {
			return errNo
		}
		return nil
	}); err != nil {
		t.Fatalf("a missing file the check accepts: %v", err)
	}
	if err := l.Remove(secret, nil); !errors.Is(err, vfs.ErrOutside) {
		t.Fatalf("outside: %v", err)
	}
	if err := l.Remove("link", nil); !errors.Is(err, vfs.ErrOutside) {
		t.Fatalf("a link out: %v", err)
	}
	if err := os.Mkdir(filepath.Join(ws, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := l.Remove("d", nil); !errors.Is(err, vfs.ErrIsDir) {
		t.Fatalf("a directory: %v", err)
	}
	if _, err := os.Stat(secret); err != nil {
		t.Fatalf("the secret: %v", err)
	}
}
