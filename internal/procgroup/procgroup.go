// Package procgroup starts a child process as the leader of a session of
// its own and ends it together with everything it started.
//
// On Unix (Supported):
//
//   - Start runs the command in a new session (setsid): in a process group
//     of its own, which everything it starts joins unless it leaves it, and
//     without a controlling terminal, so nothing it runs can read from or
//     write to the user's terminal, or be stopped by it (SIGTTIN): opening
//     /dev/tty fails at once instead.
//   - Terminate and Kill signal that whole group. A group is signalled by
//     number; the kernel does not hand the number out again while any
//     process of the group (or of the session) lives. Once the Group has
//     seen its group empty (ESRCH), or, where /proc tells, the leader's pid
//     naming a process with another start time, it never signals that
//     number again. What is left is a window of microseconds between that
//     check and the signal, in which the whole pid space would have to wrap
//     onto the number.
//   - KillTree kills the group and, on Linux, every process below it read
//     from /proc: the leader's descendants and those of every process in
//     its group or session, including the ones that moved to sessions of
//     their own (Claude Code runs each Bash command under setsid), and
//     whatever is in a group or session that one of them leads. What it
//     finds is stopped (SIGSTOP) and /proc read again until nothing new
//     shows up, then killed (SIGKILL), so a process forked between the read
//     and the kill cannot escape. Every process is named by its pid and its
//     start time: a pid the kernel has given to another process meanwhile
//     is left alone.
//   - Snapshot records the same set now, for Tree.Kill to kill later what
//     still runs of it (and what is below it then). Take one while the
//     leader runs when it is about to exit on its own: a process whose
//     parent has exited is reparented, and the walk from the group no
//     longer leads to it.
//   - ExitSignal reports the signal that ended a process.
//
// Every caller gets a session, not a process group in ferry's session
// (setpgid): run from a terminal, a process in a background group of the
// terminal's session that reads from it, or opens /dev/tty to ask for a
// password or a host key, is stopped by SIGTTIN and hangs its turn for
// ever; in a session of its own it has no terminal to wait for.
//
// Limits: without /proc (macOS, the BSDs) KillTree kills the group alone
// and Snapshot records nothing. A process that left the group and whose
// ancestors in the tree have all exited before the walk (a daemon's double
// fork) is found only through a Snapshot taken while they lived.
//
// Elsewhere (Windows) Supported is false: Start starts a plain process,
// Terminate does nothing, Kill and KillTree kill that process alone.
//
// A Group is safe for concurrent use.
package procgroup

import (
	"os"
	"sync/atomic"
)

// Group is a process started by Start and, on Unix, the process group and
// session it leads.
type Group struct {
	proc   *os.Process
	leader procID
	// gone is set once the group is known to be empty.
	gone atomic.Bool
}

// Pid is the leader's pid, which is also the group's and session's id.
func (g *Group) Pid() int { return g.leader.pid }

// Tree is a set of processes recorded by Snapshot, each named by pid and
// start time. The zero Tree is empty.
type Tree struct {
	procs []procID
}

// Len is how many processes the snapshot holds.
func (t Tree) Len() int { return len(t.procs) }
