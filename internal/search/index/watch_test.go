package index

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// These tests change real directories under a real watcher (inotify) and
// wait (5 s at most) for the snapshot to show the change.

const testDebounce = 20 * time.Millisecond

// watchedTree is a workspace with ignore rules, indexed and watched.
func watchedTree(t *testing.T, opts Options) (string, *Index) {
	t.Helper()
	sb := newSandbox(t)
	root := t.TempDir()
	write(t, root, ".gitignore", "node_modules/\n*.o\n/ignored/\n")
	write(t, root, "README.md", "hello")
	write(t, root, "src/main.go", "package main")
	write(t, root, "src/util/util.go", "package util")
	write(t, root, "src/util/deep/deeper/x.go", "package deeper")
	write(t, root, "ignored/secret.txt", "")
	opts.Env = sb.env()
	if opts.Debounce == 0 {
		opts.Debounce = testDebounce
	}
	return root, open(t, root, opts)
}

// watched lists the watched directories, workspace-relative.
func watched(ix *Index) []string {
	ref := ix.w.Load()
	if ref == nil {
		return nil
	}
	var out []string
	for _, p := range ref.w.WatchList() {
		rel, _ := ix.rel(p)
		out = append(out, rel)
	}
	slices.Sort(out)
	return out
}

func isWatched(ix *Index, rel string) bool { return slices.Contains(watched(ix), rel) }

func TestWatchInitial(t *testing.T) {
	t.Parallel()
	_, ix := watchedTree(t, Options{})
	want := []string{"", "src", "src/util", "src/util/deep", "src/util/deep/deeper"}
	if got := watched(ix); !slices.Equal(got, want) {
		t.Fatalf("watched %q, want %q", got, want)
	}
	if got := paths(ix.Snapshot()); !slices.Equal(got, []string{".gitignore", "README.md", "src/main.go", "src/util/deep/deeper/x.go", "src/util/util.go"}) {
		t.Fatalf("listing %q", got)
	}
}

func TestWatchCreateModifyDelete(t *testing.T) {
	t.Parallel()
	root, ix := watchedTree(t, Options{})
	gen := ix.Snapshot().Generation()
	write(t, root, "src/new.go", "package main")
	eventually(t, ix, "create", has("src/new.go", true))
	if ix.Snapshot().Generation() <= gen {
		t.Fatal("generation did not grow")
	}

	// Modify: a new size and a new time.
	when := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	write(t, root, "src/new.go", "package main // longer")
	if err := os.Chtimes(filepath.Join(root, "src/new.go"), when, when); err != nil {
		t.Fatal(err)
	}
	eventually(t, ix, "modify", func(s *Snapshot) string {
		i, ok := s.Find("src/new.go")
		if !ok {
			return "missing"
		}
		if s.Size(i) != int64(len("package main // longer")) || !s.ModTime(i).Equal(when) {
			return fmt.Sprintf("size %d time %v", s.Size(i), s.ModTime(i))
		}
		return ""
	})
	if top := ix.Snapshot().RecentTop(1); len(top) != 1 || ix.Snapshot().Path(top[0]) != "src/new.go" {
		t.Fatalf("RecentTop %v", top)
	}

	if err := os.Remove(filepath.Join(root, "src/new.go")); err != nil {
		t.Fatal(err)
	}
	eventually(t, ix, "delete", has("src/new.go", false))
}

func TestWatchRenameFile(t *testing.T) {
	t.Parallel()
	root, ix := watchedTree(t, Options{})
	if err := os.Rename(filepath.Join(root, "src/main.go"), filepath.Join(root, "src/util/app.go")); err != nil {
		t.Fatal(err)
	}
	eventually(t, ix, "rename", all(has("src/main.go", false), has("src/util/app.go", true)))
}

func TestWatchRenameDir(t *testing.T) {
	t.Parallel()
	root, ix := watchedTree(t, Options{})
	if err := os.Rename(filepath.Join(root, "src/util"), filepath.Join(root, "lib")); err != nil {
		t.Fatal(err)
	}
	eventually(t, ix, "rename dir", all(
		has("src/util/util.go", false), has("src/util/deep/deeper/x.go", false),
		has("lib/util.go", true), has("lib/deep/deeper/x.go", true)))
	// The watches follow the new names: a file created deep inside the
	// moved tree shows up under its new path.
	write(t, root, "lib/deep/deeper/y.go", "")
	eventually(t, ix, "create in moved dir", has("lib/deep/deeper/y.go", true))
	got := watched(ix)
	for _, w := range got {
		if strings.HasPrefix(w, "src/util") {
			t.Fatalf("a watch kept the old name %q: %q", w, got)
		}
	}
	if !isWatched(ix, "lib/deep/deeper") {
		t.Fatalf("lib/deep/deeper not watched: %q", got)
	}
	// Renaming out of the workspace removes the subtree.
	if err := os.Rename(filepath.Join(root, "lib"), filepath.Join(t.TempDir(), "away")); err != nil {
		t.Fatal(err)
	}
	eventually(t, ix, "moved out", all(has("lib/util.go", false), has("lib/deep/deeper/y.go", false)))
}

func TestWatchDeleteDir(t *testing.T) {
	t.Parallel()
	root, ix := watchedTree(t, Options{})
	if err := os.RemoveAll(filepath.Join(root, "src")); err != nil {
		t.Fatal(err)
	}
	eventually(t, ix, "delete dir", func(s *Snapshot) string {
		if got := paths(s); !slices.Equal(got, []string{".gitignore", "README.md"}) {
			return fmt.Sprintf("listing %q", got)
		}
		return ""
	})
	eventually(t, ix, "unwatched", func(*Snapshot) string {
		if got := watched(ix); !slices.Equal(got, []string{""}) {
			return fmt.Sprintf("watched %q", got)
		}
		return ""
	})
}

// TestWatchNewDirWithFiles: a directory that arrives whole (mv, git
// checkout) is listed with everything in it, and watched.
func TestWatchNewDirWithFiles(t *testing.T) {
	t.Parallel()
	root, ix := watchedTree(t, Options{})
	staging := t.TempDir()
	write(t, staging, "pkg/a.go", "")
	write(t, staging, "pkg/sub/b.go", "")
	write(t, staging, "pkg/sub/c.o", "") // ignored by the root's rules
	write(t, staging, "pkg/sub/.gitignore", "skip.txt\n")
	write(t, staging, "pkg/sub/skip.txt", "")
	if err := os.Rename(filepath.Join(staging, "pkg"), filepath.Join(root, "pkg")); err != nil {
		t.Fatal(err)
	}
	eventually(t, ix, "moved in", all(has("pkg/a.go", true), has("pkg/sub/b.go", true),
		has("pkg/sub/.gitignore", true), has("pkg/sub/c.o", false), has("pkg/sub/skip.txt", false)))
	write(t, root, "pkg/sub/d.go", "")
	eventually(t, ix, "create in new dir", has("pkg/sub/d.go", true))

	// mkdir -p and a file at once: the directories are listed after
	// they are watched, so the file is not missed.
	p := filepath.Join(root, "x/y/z")
	mkdirs(t, p)
	write(t, root, "x/y/z/f.go", "")
	eventually(t, ix, "mkdir -p", has("x/y/z/f.go", true))
	write(t, root, "x/y/z/g.go", "")
	eventually(t, ix, "create after mkdir -p", has("x/y/z/g.go", true))
}

func TestWatchNewIgnoredFolder(t *testing.T) {
	t.Parallel()
	root, ix := watchedTree(t, Options{})
	for k := range 20 {
		write(t, root, fmt.Sprintf("node_modules/pkg%d/index.js", k), "")
	}
	write(t, root, "src/node_modules/x.js", "")
	write(t, root, "ignored/more.txt", "")
	// A file written after them: once it shows, the events before it
	// were handled too.
	write(t, root, "marker.txt", "")
	eventually(t, ix, "marker", has("marker.txt", true))
	write(t, root, "node_modules/late.js", "")
	write(t, root, "marker2.txt", "")
	eventually(t, ix, "marker2", has("marker2.txt", true))
	for _, p := range paths(ix.Snapshot()) {
		if strings.Contains(p, "node_modules") || strings.HasPrefix(p, "ignored/") {
			t.Fatalf("ignored file indexed: %s", p)
		}
	}
	for _, w := range watched(ix) {
		if strings.Contains(w, "node_modules") || strings.HasPrefix(w, "ignored") {
			t.Fatalf("ignored directory watched: %s", w)
		}
	}
}

func TestWatchGitignoreEdit(t *testing.T) {
	t.Parallel()
	root, ix := watchedTree(t, Options{})
	// Ignore src/util through the root's .gitignore.
	write(t, root, ".gitignore", "node_modules/\n*.o\n/ignored/\nutil/\n")
	eventually(t, ix, "now ignored", all(has("src/util/util.go", false), has("src/util/deep/deeper/x.go", false), has("src/main.go", true)))
	eventually(t, ix, "unwatched", func(*Snapshot) string {
		if isWatched(ix, "src/util") || isWatched(ix, "src/util/deep") {
			return fmt.Sprintf("watched %q", watched(ix))
		}
		return ""
	})
	// Unignore it again, and unignore /ignored/ at the same time.
	write(t, root, ".gitignore", "node_modules/\n*.o\n")
	eventually(t, ix, "unignored", all(has("src/util/util.go", true), has("src/util/deep/deeper/x.go", true), has("ignored/secret.txt", true)))
	eventually(t, ix, "watched again", func(*Snapshot) string {
		if !isWatched(ix, "src/util/deep/deeper") || !isWatched(ix, "ignored") {
			return fmt.Sprintf("watched %q", watched(ix))
		}
		return ""
	})
	// A nested ignore file, created and then removed.
	write(t, root, "src/util/.ignore", "deep/\n*.go\n")
	eventually(t, ix, "nested .ignore", all(has("src/util/util.go", false), has("src/util/deep/deeper/x.go", false), has("src/util/.ignore", true), has("src/main.go", true)))
	if err := os.Remove(filepath.Join(root, "src/util/.ignore")); err != nil {
		t.Fatal(err)
	}
	eventually(t, ix, "nested .ignore removed", all(has("src/util/util.go", true), has("src/util/deep/deeper/x.go", true)))
}

// TestWatchBurst: thousands of files in one window take the rescan path
// and all show up.
func TestWatchBurst(t *testing.T) {
	t.Parallel()
	// The directories exist and are watched first, so every file written
	// below is an event (files made in a directory not yet watched are
	// found by listing it, not by events). A window of a second and a limit
	// of 20 overflow as long as the machine writes 20 files a second.
	root, ix := watchedTree(t, Options{Debounce: time.Second, BurstLimit: 20})
	const n = 5000
	for d := range 50 {
		write(t, root, fmt.Sprintf("burst/d%02d/.keep", d), "")
	}
	eventually(t, ix, "burst directories", has("burst/d49/.keep", true))
	for k := range n {
		write(t, root, fmt.Sprintf("burst/d%02d/f%04d.txt", k%50, k), "")
	}
	eventually(t, ix, "burst", func(s *Snapshot) string {
		c := 0
		for _, p := range paths(s) {
			if strings.HasPrefix(p, "burst/") && !strings.HasSuffix(p, "/.keep") {
				c++
			}
		}
		if c != n {
			return fmt.Sprintf("%d of %d burst files", c, n)
		}
		return ""
	})
	if st := ix.Status(); st.Rescans == 0 {
		t.Fatalf("no rescan after a burst of %d files: %+v", n, st)
	}
	// Still watching afterwards.
	write(t, root, "burst/d07/after.txt", "")
	eventually(t, ix, "after burst", has("burst/d07/after.txt", true))
}

// enospcAfter makes the watcher's Add fail with ENOSPC after n watches,
// as the kernel does at fs.inotify.max_user_watches.
func enospcAfter(n int64) func(w watcher, dir string) error {
	var count atomic.Int64
	return func(w watcher, dir string) error {
		if count.Add(1) > n {
			return fmt.Errorf("add watch %s: %w", dir, syscall.ENOSPC)
		}
		return w.Add(dir)
	}
}

func TestWatchLimitAtStart(t *testing.T) {
	t.Parallel()
	var warned atomic.Pointer[error]
	root, ix := watchedTree(t, Options{
		addWatch:     enospcAfter(2),
		PollInterval: 50 * time.Millisecond,
		Warn:         func(err error) { warned.Store(&err) },
	})
	st := ix.Status()
	if st.Mode != Poll || !errors.Is(st.Err, ErrWatchLimit) || !errors.Is(st.Err, syscall.ENOSPC) {
		t.Fatalf("status after the watch limit: %+v", st)
	}
	if p := warned.Load(); p == nil || !errors.Is(*p, ErrWatchLimit) {
		t.Fatal("Warn was not told of the fall back")
	}
	if ix.w.Load() != nil {
		t.Fatal("the watcher is still open after the fall back")
	}
	// The listing is complete all the same, and polling keeps it current.
	eventually(t, ix, "complete listing", has("src/util/deep/deeper/x.go", true))
	write(t, root, "src/util/deep/polled.go", "")
	eventually(t, ix, "polled create", has("src/util/deep/polled.go", true))
	if err := os.RemoveAll(filepath.Join(root, "src/util")); err != nil {
		t.Fatal(err)
	}
	eventually(t, ix, "polled delete", has("src/util/util.go", false))
}

func TestWatchLimitLater(t *testing.T) {
	t.Parallel()
	root, ix := watchedTree(t, Options{addWatch: enospcAfter(5), PollInterval: 50 * time.Millisecond})
	if st := ix.Status(); st.Mode != Watch || st.Err != nil {
		t.Fatalf("status before the limit: %+v", st)
	}
	write(t, root, "new/a/b/file.go", "") // needs three more watches
	eventually(t, ix, "listed at the limit", has("new/a/b/file.go", true))
	eventually(t, ix, "fell back", func(*Snapshot) string {
		if st := ix.Status(); st.Mode != Poll || !errors.Is(st.Err, ErrWatchLimit) {
			return fmt.Sprintf("status %+v", st)
		}
		return ""
	})
	write(t, root, "new/a/b/later.go", "")
	eventually(t, ix, "polled", has("new/a/b/later.go", true))
}

func TestWatchSymlinkLoop(t *testing.T) {
	t.Parallel()
	root, ix := watchedTree(t, Options{})
	for name, target := range map[string]string{"src/loop": "..", "src/self": "self", "src/to-main": "main.go", "dirlink": "src"} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, ix, "links", all(has("src/to-main", true), has("src/loop", false), has("src/self", false), has("dirlink", false)))
	for _, p := range paths(ix.Snapshot()) {
		if strings.HasPrefix(p, "dirlink/") || strings.Contains(p, "loop/") {
			t.Fatalf("followed a directory link: %s", p)
		}
	}
}

func TestPollMode(t *testing.T) {
	t.Parallel()
	root, ix := watchedTree(t, Options{Mode: Poll, PollInterval: 30 * time.Millisecond})
	if ix.w.Load() != nil {
		t.Fatal("Poll mode opened a watcher")
	}
	write(t, root, "src/polled.go", "")
	eventually(t, ix, "poll create", has("src/polled.go", true))
	if err := os.Remove(filepath.Join(root, "src/main.go")); err != nil {
		t.Fatal(err)
	}
	eventually(t, ix, "poll delete", has("src/main.go", false))
}

func TestChangesAndProgress(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var reports []Progress
	root, ix := watchedTree(t, Options{Progress: func(p Progress) {
		mu.Lock()
		reports = append(reports, p)
		mu.Unlock()
	}})
	mu.Lock()
	last := reports[len(reports)-1]
	mu.Unlock()
	if !last.Done || !last.Initial || last.Files != ix.Snapshot().Len() || last.Stated != last.Files || last.DirsPending != 0 {
		t.Fatalf("last progress report %+v, %d files", last, ix.Snapshot().Len())
	}
	// Drain what the first listing signalled, then expect one for a change.
	select {
	case <-ix.Changes():
	default:
	}
	write(t, root, "changed.txt", "")
	select {
	case <-ix.Changes():
	case <-time.After(5 * time.Second):
		t.Fatal("no signal on Changes within 5s")
	}
	eventually(t, ix, "changed", has("changed.txt", true))
}

// TestCloseStopsEverything: after Close no goroutine of the index is
// left, whatever state it was in.
func TestCloseStopsEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	sb := newSandbox(t)
	root := t.TempDir()
	for k := range 300 {
		write(t, root, fmt.Sprintf("d%d/f%d.txt", k%30, k), "")
	}
	for _, opts := range []Options{
		{Env: sb.env(), Debounce: time.Hour},                                             // events pending
		{Env: sb.env(), Mode: Poll, PollInterval: time.Millisecond},                      // polling
		{Env: sb.env(), Progress: func(Progress) {}, ProgressInterval: time.Microsecond}, // progress
		{Env: sb.env(), addWatch: enospcAfter(3)},                                        // fallen back
	} {
		ix, err := Open(context.Background(), root, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := ix.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		write(t, root, "d1/more.txt", "")
		ix.Close()
		ix.Close() // twice is fine
	}
	// Closed while the first listing runs.
	ix, err := Open(context.Background(), root, Options{Env: sb.env()})
	if err != nil {
		t.Fatal(err)
	}
	ix.Close()
	// A cancelled context stops it too.
	ctx, cancel := context.WithCancel(context.Background())
	ix, err = Open(ctx, root, Options{Env: sb.env()})
	if err != nil {
		t.Fatal(err)
	}
	_ = ix.Wait(context.Background())
	cancel()
	ix.Close()

	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after Close:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	if _, err := Open(context.Background(), filepath.Join(t.TempDir(), "missing"), Options{}); err == nil {
		t.Fatal("Open of a missing directory succeeded")
	}
	f := filepath.Join(t.TempDir(), "file")
	write(t, filepath.Dir(f), "file", "")
	if _, err := Open(context.Background(), f, Options{}); err == nil {
		t.Fatal("Open of a file succeeded")
	}
}
