//go:build unix

package script

import (
	"fmt"
	"os"
	"syscall"
)

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// newSession puts the command in a new session: its own process group (so
// the whole tree can be signalled) and no controlling terminal (so nothing
// can read from or prompt on the user's terminal).
func newSession() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

// signalGroup sends sig to the process group pgid and reports whether any
// process received it (ESRCH: nobody left).
//
// The group's id is the command's pid, which the kernel does not hand out
// again while any member of the group lives.
func signalGroup(pgid int, sig syscall.Signal) bool {
	return syscall.Kill(-pgid, sig) == nil
}

// signaled reports the signal that ended the process, if one did.
func signaled(ps *os.ProcessState) (string, bool) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("%d (%s)", int(ws.Signal()), ws.Signal()), true
	}
	return "", false
}
