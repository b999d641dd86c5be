//go:build unix

package client

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// holdLock takes dir/lock's flock through its own open file, the way
// another process (or a child forked before its exec) holds it.
func holdLock(t *testing.T, dir string) *os.File {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// TestLockWaitsForAHolderLetGo: a lock let go within the grace is taken.
// A client restarted right after another stopped found the lock still
// held by a child the old one forked in the same instant (the fd lives
// in the child until its exec), and refused to start.
func TestLockWaitsForAHolderLetGo(t *testing.T) {
	dir := t.TempDir()
	held := holdLock(t, dir)
	time.AfterFunc(150*time.Millisecond, func() { _ = held.Close() })
	f, err := lockStateDir(dir)
	if err != nil {
		t.Fatalf("the lock let go after 150 ms was not taken: %v", err)
	}
	_ = f.Close()
}

// TestLockHeldIsRefused: a lock held past the grace is refused, naming
// the folder, and waits no longer than the grace.
func TestLockHeldIsRefused(t *testing.T) {
	dir := t.TempDir()
	holdLock(t, dir)
	start := time.Now()
	f, err := lockStateDir(dir)
	if err == nil {
		_ = f.Close()
		t.Fatal("a held lock was taken")
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "another ferry client") {
		t.Fatalf("error = %v; want EWOULDBLOCK naming %s", err, dir)
	}
	if waited := time.Since(start); waited < lockGrace || waited > lockGrace+5*time.Second {
		t.Fatalf("waited %v; want the grace, %v", waited, lockGrace)
	}
}
