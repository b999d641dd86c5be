//go:build unix

package acp

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the agent in a process group of its own, so that
// cancel and Close reach every process it started.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the agent's process group (ESRCH, when nothing is left,
// is fine).
func killGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
