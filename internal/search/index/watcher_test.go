package index

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// watcherImpls are the watchers the index may run on this system, for the
// shared tests below.
func watcherImpls() map[string]func(root string) (watcher, error) {
	return map[string]func(string) (watcher, error){
		"default":  newWatcher,
		"fsnotify": func(string) (watcher, error) { return newFsnotifyWatcher() },
	}
}

// waitEvent waits (2 s at most) for an event naming want.
func waitEvent(t *testing.T, w watcher, want string) {
	t.Helper()
	deadline := time.After(2 * time.Second)
	for {
		select {
		case got, ok := <-w.Events():
			if !ok {
				t.Fatalf("events closed before %s", want)
			}
			if got == want {
				return
			}
		case err := <-w.Errors():
			t.Fatalf("watch error before %s: %v", want, err)
		case <-deadline:
			t.Fatalf("no event for %s", want)
		}
	}
}

// TestWatcherContract runs every watcher through what the index relies
// on: events for creations, writes, renames and removals in watched
// directories, named by absolute path; the watch list; dropping watches;
// a clear error for a missing directory; channels closed by Close.
func TestWatcherContract(t *testing.T) {
	t.Parallel()
	for name, newW := range watcherImpls() {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			w, err := newW(root)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if err := w.Add(root); err != nil {
				t.Fatal(err)
			}
			a := filepath.Join(root, "a.txt")
			if err := os.WriteFile(a, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			waitEvent(t, w, a)

			d := filepath.Join(root, "sub")
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			waitEvent(t, w, d)
			if err := w.Add(d); err != nil {
				t.Fatal(err)
			}
			x := filepath.Join(d, "x.go")
			if err := os.WriteFile(x, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			waitEvent(t, w, x)
			if got := w.WatchList(); !slices.Contains(got, root) || !slices.Contains(got, d) {
				t.Fatalf("watch list %q, want %s and %s", got, root, d)
			}

			b := filepath.Join(root, "b.txt")
			if err := os.Rename(a, b); err != nil {
				t.Fatal(err)
			}
			waitEvent(t, w, b)
			if err := os.Remove(b); err != nil {
				t.Fatal(err)
			}
			waitEvent(t, w, b)

			w.RemoveWhere(func(dir string) bool { return dir == d })
			if got := w.WatchList(); slices.Contains(got, d) || !slices.Contains(got, root) {
				t.Fatalf("after dropping %s the watch list is %q", d, got)
			}
			if err := w.Add(filepath.Join(root, "missing")); err == nil {
				t.Fatal("watching a missing directory: no error")
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			for range w.Events() { //nolint:revive // drain until Close closes it
			}
		})
	}
}
