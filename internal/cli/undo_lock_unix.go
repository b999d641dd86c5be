//go:build unix

package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockClientState takes the lock a ferry client holds on its state folder
// (client.lockStateDir), when the folder is a client's: a running client
// keeps its sessions' journals open, and an undo behind its back would
// leave its view of them stale. Other folders (ferry run's) need no lock.
func lockClientState(state string) (unlock func(), err error) {
	f, err := os.Open(filepath.Join(state, "lock")) //nolint:gosec // the user's own state folder
	if errors.Is(err, os.ErrNotExist) {
		return func() {}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lock the state folder: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("a ferry client is running with the state folder %s; undo this session in the UI, or stop the client first", state)
		}
		return nil, fmt.Errorf("lock the state folder: %w", err)
	}
	return func() { _ = f.Close() }, nil
}
