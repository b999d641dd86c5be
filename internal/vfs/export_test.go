//go:build unix

package vfs

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
