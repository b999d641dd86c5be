//go:build !linux

package index

// newWatcher makes the portable watcher; root is unused.
func newWatcher(string) (watcher, error) { return newFsnotifyWatcher() }
