package index

import (
	"fmt"

	"github.com/fsnotify/fsnotify"
)

// watcher reports changes in the directories it watches (not their
// subdirectories: the index adds a watch per directory it lists).
type watcher interface {
	// Add watches directory dir, an absolute path. At the system's watch
	// limit the error wraps syscall.ENOSPC.
	Add(dir string) error
	// RemoveWhere drops the watch of every directory drop reports true
	// for.
	RemoveWhere(drop func(dir string) bool)
	// WatchList returns the watched directories.
	WatchList() []string
	// Events delivers the absolute path of each file or directory created,
	// written, removed, renamed or whose attributes changed.
	Events() <-chan string
	// Errors reports lost events (a full queue) and failed reads: only a
	// full rescan is then safe.
	Errors() <-chan error
	// Close stops the watcher and closes both channels.
	Close() error
}

// fsnotifyWatcher is the portable watcher. On Linux the index uses
// inotifyWatcher, which keeps a directory's watch in a tenth of the memory
// (fsnotify keeps two maps and the absolute path per watch: 11 bytes a
// path on the kernel tree).
type fsnotifyWatcher struct {
	w      *fsnotify.Watcher
	events chan string
}

var _ watcher = (*fsnotifyWatcher)(nil)

func newFsnotifyWatcher() (*fsnotifyWatcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	fw := &fsnotifyWatcher{w: w, events: make(chan string, 64)}
	go func() {
		defer close(fw.events)
		for ev := range w.Events {
			fw.events <- ev.Name
		}
	}()
	return fw, nil
}

func (fw *fsnotifyWatcher) Add(dir string) error {
	if err := fw.w.Add(dir); err != nil {
		return fmt.Errorf("watch %s: %w", dir, err)
	}
	return nil
}

func (fw *fsnotifyWatcher) RemoveWhere(drop func(dir string) bool) {
	for _, p := range fw.w.WatchList() {
		if drop(p) {
			_ = fw.w.Remove(p)
		}
	}
}

func (fw *fsnotifyWatcher) WatchList() []string   { return fw.w.WatchList() }
func (fw *fsnotifyWatcher) Events() <-chan string { return fw.events }
func (fw *fsnotifyWatcher) Errors() <-chan error  { return fw.w.Errors }

func (fw *fsnotifyWatcher) Close() error {
	if err := fw.w.Close(); err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	return nil
}
