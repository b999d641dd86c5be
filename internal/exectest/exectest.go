// Package exectest writes executables that a test then runs, without the
// "text file busy" race of a test process that forks in parallel.
//
// A file open for writing cannot be executed (ETXTBSY). Go opens files
// close-on-exec, but a child forked by another goroutine holds every fd
// from fork until its own exec; if that falls while a script is being
// written, the script's write fd lives on in the child for that moment,
// and running the script fails (golang.org/issue/22315). WriteScript
// holds syscall.ForkLock for reading while the file is open, so no fork
// of this process overlaps the write.
package exectest

import (
	"os"
	"syscall"
	"testing"
)

// WriteScript writes content to path with mode 0755 (it is the caller's
// test's own file) and fails t if it cannot. Once it returns, no process
// holds the file open for writing.
func WriteScript(t testing.TB, path, content string) {
	t.Helper()
	if err := Write(path, content); err != nil {
		t.Fatal(err)
	}
}

// Write is WriteScript for a caller without a testing.TB.
func Write(path, content string) error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	return os.WriteFile(path, []byte(content), 0o755) //nolint:gosec // an executable the test runs
}
