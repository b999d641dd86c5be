//go:build unix

package client

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockGrace is how long a held lock is waited for before it is refused.
// The holder may be on its way out: a client just stopped, or a child
// forked in that instant, which holds the lock's file until its exec.
const lockGrace = time.Second

// lockStateDir takes an exclusive advisory lock on dir/lock, so that two
// clients never share one machine id and one outbox. The lock goes with the
// process, also when it crashes.
func lockStateDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(dir+string(os.PathSeparator)+"lock", os.O_RDWR|os.O_CREATE, 0o600) //nolint:gosec // the state directory is the user's own
	if err != nil {
		return nil, fmt.Errorf("client: lock state directory: %w", err)
	}
	if err := flockWithin(f, lockGrace); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("client: state directory %s is used by another ferry client: %w", dir, err)
		}
		return nil, fmt.Errorf("client: lock state directory: %w", err)
	}
	return f, nil
}

// flockWithin takes f's exclusive lock, trying again while another holds
// it, for at most grace.
func flockWithin(f *os.File, grace time.Duration) error {
	deadline := time.Now().Add(grace)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}
