//go:build unix

package connlimit

import "syscall"

// fdLimit is the process's soft limit on open files.
func fdLimit() (uint64, bool) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, false
	}
	return uint64(r.Cur), true //nolint:unconvert // Cur is int64 on some systems
}
