//go:build unix

package procgroup

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// Supported is whether this system has sessions and process groups to
// start commands in (see the package doc).
const Supported = true

// procID names a process across pid reuse: its pid and its start time
// ("" where it could not be read).
type procID struct {
	pid   int
	start string
}

// Start starts cmd as the leader of a new session, and so of a new
// process group (see the package doc). It sets cmd.SysProcAttr's Setsid
// and clears what conflicts with it (Setpgid, Setctty, Foreground).
func Start(cmd *exec.Cmd) (*Group, error) {
	attr := &syscall.SysProcAttr{}
	if cmd.SysProcAttr != nil {
		*attr = *cmd.SysProcAttr
	}
	attr.Setsid = true
	attr.Setpgid, attr.Pgid = false, 0
	attr.Setctty, attr.Foreground = false, false
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pid := cmd.Process.Pid
	// Read before anyone reaps the child: until then the pid is its own.
	st, _ := readStat(pid)
	return &Group{proc: cmd.Process, leader: procID{pid, st.start}}, nil
}

// Terminate sends SIGTERM to the group and reports whether any process
// received it.
func (g *Group) Terminate() bool { return g.signal(syscall.SIGTERM) }

// Kill sends SIGKILL to the group and reports whether any process
// received it.
func (g *Group) Kill() bool { return g.signal(syscall.SIGKILL) }

func (g *Group) signal(sig syscall.Signal) bool {
	if !g.live() {
		return false
	}
	err := syscall.Kill(-g.leader.pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		g.gone.Store(true) // nobody is left, and nobody can join
	}
	return err == nil
}

// live reports whether the group may still have processes: it was not
// seen empty, and its number does not name another process now (which
// the kernel allows only once the group and session are empty).
func (g *Group) live() bool {
	if g.gone.Load() {
		return false
	}
	if g.leader.start != "" {
		if st, ok := readStat(g.leader.pid); ok && st.start != g.leader.start {
			g.gone.Store(true)
			return false
		}
	}
	return true
}

// group is the group's number where it is still to be signalled, else 0.
func (g *Group) group() int {
	if g.live() {
		return g.leader.pid
	}
	return 0
}

// KillTree kills the group and every process below it (see the package
// doc). It does not wait for them to end.
func (g *Group) KillTree() { killAll([]procID{g.leader}, g.group()) }

// Snapshot records the processes KillTree would kill now, for Tree.Kill.
func (g *Group) Snapshot() Tree {
	ps := scan()
	if ps == nil {
		return Tree{}
	}
	return Tree{procs: collect(ps, []procID{g.leader}, g.group())}
}

// Kill kills the processes of the snapshot that still run as the same
// processes, the groups and sessions they lead, and every process below
// them now. It does not wait for them to end.
func (t Tree) Kill() {
	if len(t.procs) > 0 {
		killAll(t.procs, 0)
	}
}

// maxRounds bounds how often killAll reads /proc again for processes that
// appeared since its last read (forked before they were stopped).
const maxRounds = 16

// killAll stops the processes of roots (those that still run as the same
// processes) and of group (0 for none) and everything below them, then
// kills them: first SIGSTOP, so none of them can fork, with /proc read
// again until nothing new shows up; then SIGKILL.
func killAll(roots []procID, group int) {
	if group != 0 {
		_ = syscall.Kill(-group, syscall.SIGSTOP)
	}
	stopped := map[int]pstat{}
	for range maxRounds {
		ps := scan()
		if ps == nil {
			break // no /proc: the group is all there is to kill
		}
		fresh := false
		for _, p := range collect(ps, roots, group) {
			if _, ok := stopped[p.pid]; !ok {
				fresh = true
				stopped[p.pid] = ps[p.pid]
				_ = syscall.Kill(p.pid, syscall.SIGSTOP)
			}
		}
		if !fresh {
			break
		}
	}
	if group != 0 {
		_ = syscall.Kill(-group, syscall.SIGKILL)
	}
	for pid, st := range stopped {
		if st.pgrp == pid {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// ExitSignal reports the signal that ended the process, if one did.
func ExitSignal(ps *os.ProcessState) (syscall.Signal, bool) {
	if ps == nil {
		return 0, false
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal(), true
	}
	return 0, false
}
