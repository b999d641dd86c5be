//go:build unix

package sqlitefile

import "syscall"

// noFollow refuses to open a symbolic link.
const noFollow = syscall.O_NOFOLLOW
