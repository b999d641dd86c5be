package main

import (
	"fmt"
	"os"
	"syscall"
)

// settle puts the binary bin in the page cache as an installed binary
// would be after its first run from disk, whatever the linker left there:
// it writes the file back, drops its cached pages, and has the caller run
// it once. The kernel's page-cache folios (up to 2 MiB here, mapped whole
// when the process faults them in) otherwise depend on how the file was
// last written or read, and that moved ferry's peak RSS between 68 and
// 87 MiB for one and the same code.
func settle(bin string) error {
	f, err := os.Open(bin) //nolint:gosec // the bench's own build
	if err != nil {
		return fmt.Errorf("settle %s: %w", bin, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("settle %s: fsync: %w", bin, err)
	}
	const fadvDontNeed = 4 // POSIX_FADV_DONTNEED
	if _, _, e := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, fadvDontNeed, 0, 0); e != 0 {
		return fmt.Errorf("settle %s: fadvise: %w", bin, e)
	}
	return nil
}
