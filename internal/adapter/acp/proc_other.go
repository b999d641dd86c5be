//go:build !unix

package acp

import "os/exec"

// setProcessGroup has no process groups to use here.
func setProcessGroup(*exec.Cmd) {}

// killGroup kills the agent process (its children may survive it here).
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
