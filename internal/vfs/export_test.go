//go:build unix

package vfs

import "fmt"

// RaceHook resolves name on l, runs between (to change the tree), then opens
// the resolved path as Open would: it lets a test swap a directory for a
// symlink in the window between resolving and opening.
func RaceHook(l *Local, name string, between func()) error {
	t, err := l.resolve(name)
	if err != nil {
		return err
	}
	between()
	f, err := t.root.r.Open(t.rel)
	if err != nil {
		return l.mapErr(name, err)
	}
	return f.Close()
}

// OpenRaceHook is Open with between run after resolving: a test can swap
// the file for a FIFO after the type check's information was gathered.
func OpenRaceHook(l *Local, name string, between func()) (File, error) {
	t, err := l.resolve(name)
	if err != nil {
		return nil, err
	}
	between()
	return l.openTarget(name, t)
}

// ForgetSweeps makes the next write sweep its directory again, and the
// next NewLocal sweep its workspace, as a new process would.
func ForgetSweeps() {
	swept.Lock()
	clear(swept.at)
	swept.Unlock()
	sweptRoots.Clear()
}

// TempNameFor is a temporary file name for base as a writer with pid
// in PID namespace ns (this process's when ns is 0) would make it.
func TempNameFor(base string, pid int, ns uint64) string {
	if ns == 0 {
		ns = selfNS()
	}
	return fmt.Sprintf(".%s%s%d-%d-%016x", base, tmpMarker, pid, ns, pid)
}

// OldTempName is a temporary name of an older version (no writer recorded).
func OldTempName(base string) string { return "." + base + tmpMarker + "0123456789abcdef" }

// WaitSweep waits until l's background sweep of its workspace is over.
func WaitSweep(l *Local) { <-l.sweepDone }
