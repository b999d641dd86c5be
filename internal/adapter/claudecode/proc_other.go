//go:build !unix

package claudecode

import "os/exec"

// procID names a process; there is no tree to read here.
type procID struct{}

// setProcessGroup does nothing where there are no process groups.
func setProcessGroup(*exec.Cmd) {}

// killGroup does nothing where there are no process groups.
func killGroup(*exec.Cmd) {}

// treeOf reads no tree here.
func treeOf(*exec.Cmd) []procID { return nil }

// killProcs has nothing to kill here.
func killProcs([]procID) {}

// killTree kills the CLI itself.
func killTree(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
