//go:build !unix

package tools

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// Bash needs process groups to stop a command with everything it started;
// where there are none it runs nothing.

const (
	sigTerm = syscall.Signal(15)
	sigKill = syscall.Signal(9)
)

func shellCommand(dir, command string, w *os.File) *exec.Cmd {
	cmd := exec.Command("bash-is-not-supported-on-this-system")
	cmd.Err = fmt.Errorf("the Bash tool needs a Unix system")
	return cmd
}

func signalGroup(int, syscall.Signal) bool { return false }

func exitStatus(ps *os.ProcessState) string {
	return fmt.Sprintf("Exit code: %d", ps.ExitCode())
}
