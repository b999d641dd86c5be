package procgroup

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// pstat is what /proc/PID/stat tells about a process.
type pstat struct {
	ppid, pgrp, sid int
	start           string // clock ticks after boot
}

// readStat reads /proc/PID/stat.
func readStat(pid int) (pstat, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat")) //nolint:gosec // the path is made of an int, nothing to traverse
	if err != nil {
		return pstat{}, false
	}
	// "pid (comm) state ppid pgrp session …": comm may hold spaces and ")".
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return pstat{}, false
	}
	f := strings.Fields(s[i+1:])
	// f[0] is the state, f[1] the parent, f[2] the group, f[3] the
	// session, f[19] the start time.
	if len(f) < 20 {
		return pstat{}, false
	}
	var st pstat
	for j, p := range []*int{&st.ppid, &st.pgrp, &st.sid} {
		if *p, err = strconv.Atoi(f[1+j]); err != nil {
			return pstat{}, false
		}
	}
	st.start = f[19]
	return st, true
}

// scan reads every process from /proc; nil where there is no /proc.
func scan() map[int]pstat {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	ps := make(map[int]pstat, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok { // gone meanwhile: not there
			ps[pid] = st
		}
	}
	return ps
}

// collect lists, from the processes ps, the roots that still run as the
// same processes, the processes of group (0 for none), and, repeatedly,
// the children of every process listed and the processes of every group
// and session it leads. This process and init are never listed.
func collect(ps map[int]pstat, roots []procID, group int) []procID {
	children := map[int][]int{}
	members := map[int][]int{} // by group and by session
	for pid, st := range ps {
		children[st.ppid] = append(children[st.ppid], pid)
		members[st.pgrp] = append(members[st.pgrp], pid)
		if st.sid != st.pgrp {
			members[st.sid] = append(members[st.sid], pid)
		}
	}
	self := os.Getpid()
	var out []procID
	var queue []int // listed, not yet walked
	seen := map[int]bool{}
	add := func(pid int) {
		if !seen[pid] && pid > 1 && pid != self {
			seen[pid] = true
			out = append(out, procID{pid, ps[pid].start})
			queue = append(queue, pid)
		}
	}
	for _, r := range roots {
		if st, ok := ps[r.pid]; ok && r.start != "" && st.start == r.start {
			add(r.pid)
		}
	}
	if group != 0 {
		for _, pid := range members[group] {
			add(pid)
		}
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			add(c)
		}
		if st := ps[pid]; st.pgrp == pid || st.sid == pid {
			for _, m := range members[pid] {
				add(m)
			}
		}
	}
	return out
}
