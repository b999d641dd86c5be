package index

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// testInotify is an inotify watcher for root, closed with the test.
func testInotify(t *testing.T, root string) *inotifyWatcher {
	t.Helper()
	w, err := newInotifyWatcher(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// TestInotifyRenamedDirectory checks that a directory watched again under
// a new name (the kernel keeps one watch per inode) reports the new name.
func TestInotifyRenamedDirectory(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	w := testInotify(t, root)
	old, renamed := filepath.Join(root, "old"), filepath.Join(root, "new")
	if err := os.Mkdir(old, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(old); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(old, renamed); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(renamed); err != nil {
		t.Fatal(err)
	}
	if got := w.WatchList(); !slices.Equal(got, []string{renamed}) {
		t.Fatalf("watch list %q, want [%s]", got, renamed)
	}
	f := filepath.Join(renamed, "f")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, w, f)
}

// TestInotifyNamesCompact checks the name arena across many watches and
// their removal, which rebuilds it: every watch keeps its name.
func TestInotifyNamesCompact(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	w := testInotify(t, root)
	var dirs []string
	for i := range 600 {
		d := filepath.Join(root, fmt.Sprintf("d%03d-%s", i, strings.Repeat("x", 200)))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := w.Add(d); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	keep := func(d string) bool { return strings.Contains(d, "d5") || strings.HasSuffix(filepath.Base(d)[:4], "7") }
	w.RemoveWhere(func(d string) bool { return !keep(d) })
	var want []string
	for _, d := range dirs {
		if keep(d) {
			want = append(want, d)
		}
	}
	if w.dead > w.live {
		t.Fatalf("arena not rebuilt: %d dead bytes, %d live", w.dead, w.live)
	}
	got := w.WatchList()
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("watch list after removals: %d dirs, want %d", len(got), len(want))
	}
	f := filepath.Join(want[len(want)-1], "f")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, w, f)
}
