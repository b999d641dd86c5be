//go:build unix

package claudecode

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// setProcessGroup starts the CLI in a process group of its own, so a kill
// reaches everything it runs in that group.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills what is left of the CLI's process group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// procID names a process across pid reuse: its pid and start time.
type procID struct {
	pid   int
	start string
}

// treeOf lists the processes below the CLI. Claude Code runs each Bash
// command in a session of its own (setsid), out of the CLI's group, so the
// tree is read from /proc while the parent links still lead there; nil
// where there is no /proc.
func treeOf(cmd *exec.Cmd) []procID {
	if cmd.Process == nil {
		return nil
	}
	return descendants(cmd.Process.Pid)
}

// killTree kills the CLI, its process group, and every process below it.
func killTree(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	below := treeOf(cmd)
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	killProcs(below)
}

// killProcs kills the listed processes that still run as the same
// processes (start time unchanged), and the process groups they lead.
func killProcs(ps []procID) {
	for _, p := range ps {
		if _, start, ok := readStat(p.pid); !ok || start != p.start {
			continue
		}
		if pgid, err := syscall.Getpgid(p.pid); err == nil && pgid == p.pid {
			_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		}
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
}

// readStat reads a process's parent and start time from /proc/PID/stat.
func readStat(pid int) (ppid int, start string, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, "", false
	}
	// "pid (comm) state ppid …": comm may hold spaces and ")".
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, "", false
	}
	f := strings.Fields(s[i+1:])
	// f[0] is the state, f[1] the parent, f[19] the start time.
	if len(f) < 20 {
		return 0, "", false
	}
	ppid, err = strconv.Atoi(f[1])
	if err != nil {
		return 0, "", false
	}
	return ppid, f[19], true
}

// descendants lists the processes below pid, children first.
func descendants(pid int) []procID {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	children := map[int][]procID{}
	for _, d := range dirs {
		child, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if ppid, start, ok := readStat(child); ok {
			children[ppid] = append(children[ppid], procID{child, start})
		}
	}
	var out []procID
	queue := []int{pid}
	seen := map[int]bool{pid: true}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if !seen[c.pid] {
				seen[c.pid] = true
				out = append(out, c)
				queue = append(queue, c.pid)
			}
		}
	}
	return out
}
