//go:build unix

package tools

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// shellCommand prepares `bash -c command` in dir, writing to w, in a new
// session: its own process group (so the whole tree can be signalled) and
// no controlling terminal (so nothing can read from or prompt on the user's
// terminal). Stdin nil is /dev/null.
func shellCommand(dir, command string, w *os.File) *exec.Cmd {
	cmd := exec.Command(shellPath(), "-c", command) //nolint:gosec // running the agent's command is this tool's purpose; permissions are checked before the call
	cmd.Dir = dir
	cmd.Env = bashEnviron(os.Environ())
	cmd.Stdout = w
	cmd.Stderr = w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd
}

// signalGroup sends sig to the process group pgid and reports whether any
// process received it. Only ESRCH (nobody left) is expected to fail.
//
// The group's id is the shell's pid, which the kernel does not hand out
// again while any member of the group lives; once the group is empty the
// signal goes nowhere (ESRCH) unless the pid has been reused in between,
// which needs the whole pid space to wrap within microseconds.
func signalGroup(pgid int, sig syscall.Signal) bool {
	return syscall.Kill(-pgid, sig) == nil
}

// exitStatus describes how the shell ended, for the agent.
func exitStatus(ps *os.ProcessState) string {
	if ps == nil {
		return "Exit code: unknown"
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("Killed by signal %d (%s).", int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("Exit code: %d", ps.ExitCode())
}
