//go:build !unix

package procgroup

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// Supported is whether this system has sessions and process groups to
// start commands in: not here (see the package doc).
const Supported = false

// procID names a process.
type procID struct {
	pid int
}

// Start starts cmd as a plain process: there are no sessions here.
func Start(cmd *exec.Cmd) (*Group, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &Group{proc: cmd.Process, leader: procID{pid: cmd.Process.Pid}}, nil
}

// Terminate has no signal to send here; it reports false.
func (g *Group) Terminate() bool { return false }

// Kill kills the process alone and reports whether it still ran. Once it
// has seen the process done, it does not try again.
func (g *Group) Kill() bool {
	if g.gone.Load() {
		return false
	}
	err := g.proc.Kill()
	if errors.Is(err, os.ErrProcessDone) {
		g.gone.Store(true)
	}
	return err == nil
}

// KillTree kills the process alone.
func (g *Group) KillTree() { g.Kill() }

// Snapshot records nothing here.
func (g *Group) Snapshot() Tree { return Tree{} }

// Kill has nothing to kill here.
func (t Tree) Kill() {}

// ExitSignal reports no signal here.
func ExitSignal(*os.ProcessState) (syscall.Signal, bool) { return 0, false }
