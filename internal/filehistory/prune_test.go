package filehistory_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/filehistory"
)

const day = 24 * time.Hour

// journalAt makes the journal of session under root holding one change of
// a size-byte file (kept twice: before and after), closes it, and dates
// its last write age ago. It returns the journal's folder.
func journalAt(t *testing.T, root, session string, size int, age time.Duration) string {
	t.Helper()
	dir := filepath.Join(root, session)
	j, err := filehistory.OpenJournal(dir, session, "/ws", 0)
	if err != nil {
		t.Fatal(err)
	}
	before := bytes.Repeat([]byte("b"), size)
	after := bytes.Repeat([]byte("a"), size)
	if err := j.Record(context.Background(), "call-"+session, "Write", "/ws/f.txt", before, true, after); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	setAge(t, dir, age)
	return dir
}

func setAge(t *testing.T, dir string, age time.Duration) {
	t.Helper()
	when := time.Now().Add(-age)
	if err := os.Chtimes(filepath.Join(dir, "journal.jsonl"), when, when); err != nil {
		t.Fatal(err)
	}
}

func names(ds []filehistory.PrunedJournal) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Name+":"+d.Reason)
	}
	return out
}

func exists(t *testing.T, p string) bool {
	t.Helper()
	_, err := os.Lstat(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// TestPruneAge: only journals not written for longer than MaxAge are
// dropped; a recent one is kept whole and still opens with its changes.
func TestPruneAge(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	old := journalAt(t, root, "old", 100, 91*day)
	older := journalAt(t, root, "older", 100, 400*day)
	recent := journalAt(t, root, "recent", 100, 89*day)
	fresh := journalAt(t, root, "fresh", 100, 0)

	res, err := filehistory.Prune(context.Background(), root, filehistory.PruneOptions{MaxAge: 90 * day})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(res.Dropped), []string{"older:age", "old:age"}; !slices.Equal(got, want) {
		t.Fatalf("dropped %v, want %v", got, want)
	}
	if exists(t, old) || exists(t, older) || !exists(t, recent) || !exists(t, fresh) {
		t.Fatalf("after pruning: old %v older %v recent %v fresh %v", exists(t, old), exists(t, older), exists(t, recent), exists(t, fresh))
	}
	if len(res.Skipped) != 0 || res.OverCap {
		t.Fatalf("result %+v", res)
	}
	// Nothing half-deleted is left behind under another name.
	ents, _ := os.ReadDir(root)
	if len(ents) != 2 {
		t.Fatalf("history folder holds %d entries, want 2: %v", len(ents), ents)
	}
	j, err := filehistory.OpenJournal(recent, "recent", "/ws", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = j.Close() }()
	if es := j.Entries(); len(es) != 1 || es[0].Call != "call-recent" {
		t.Fatalf("the kept journal lost its change: %+v", es)
	}
	if res.Total < 200 {
		t.Fatalf("total %d, want at least the two kept journals' contents", res.Total)
	}
}

// TestPruneTotal: over MaxTotal, whole journals go least recently written
// first; an open journal is skipped (and said to keep the total over the
// bound when nothing else is left); a journal is never dropped while open,
// and opening waits for nothing once the drop is done.
func TestPruneTotal(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	const size = 10_000                       // each journal holds ~2*size bytes of contents
	a := journalAt(t, root, "a", size, 4*day) // least recently written, but open
	b := journalAt(t, root, "b", size, 3*day)
	c := journalAt(t, root, "c", size, 2*day)
	d := journalAt(t, root, "d", size, 1*day)
	open, err := filehistory.OpenJournal(a, "a", "/ws", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = open.Close() }()
	if _, err := filehistory.OpenJournal(a, "a", "/ws", 0); !errors.Is(err, filehistory.ErrInUse) {
		t.Fatalf("second open of an open journal: %v, want ErrInUse", err)
	}

	// Room for two journals: b and c go (a is open), d stays.
	res, err := filehistory.Prune(context.Background(), root, filehistory.PruneOptions{MaxTotal: 2*2*size + 2000})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(res.Dropped), []string{"b:total", "c:total"}; !slices.Equal(got, want) {
		t.Fatalf("dropped %v, want %v", got, want)
	}
	if !exists(t, a) || exists(t, b) || exists(t, c) || !exists(t, d) || res.OverCap || res.Open != 1 {
		t.Fatalf("after pruning: a %v b %v c %v d %v, result %+v", exists(t, a), exists(t, b), exists(t, c), exists(t, d), res)
	}

	// Room for less than one: d goes, a stays open and the cap is not met.
	res, err = filehistory.Prune(context.Background(), root, filehistory.PruneOptions{MaxTotal: size})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(res.Dropped), []string{"d:total"}; !slices.Equal(got, want) {
		t.Fatalf("dropped %v, want %v", got, want)
	}
	if !exists(t, a) || !res.OverCap || res.Open != 1 || res.Total < 2*size {
		t.Fatalf("with only the open journal left: a %v, result %+v", exists(t, a), res)
	}
	if es := open.Entries(); len(es) != 1 {
		t.Fatalf("the open journal lost its change: %+v", es)
	}

	// Once closed, it is no longer protected.
	if err := open.Close(); err != nil {
		t.Fatal(err)
	}
	res, err = filehistory.Prune(context.Background(), root, filehistory.PruneOptions{MaxTotal: size})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(res.Dropped), []string{"a:total"}; !slices.Equal(got, want) || exists(t, a) || res.OverCap {
		t.Fatalf("dropped %v (a exists %v), result %+v", got, exists(t, a), res)
	}
}

// TestPruneNoSymlinks: a symlink planted in the history folder (to a folder
// outside, or inside a journal to a file outside) is neither followed nor
// counted, and what it points at survives any prune.
func TestPruneNoSymlinks(t *testing.T) {
	t.Parallel()
	root, outside := t.TempDir(), t.TempDir()
	precious := filepath.Join(outside, "precious.txt")
	if err := os.WriteFile(precious, bytes.Repeat([]byte("p"), 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "evil")); err != nil {
		t.Fatal(err)
	}
	j := journalAt(t, root, "j", 100, 200*day)
	if err := os.Symlink(precious, filepath.Join(j, "blobs", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(j, "dirlink")); err != nil {
		t.Fatal(err)
	}
	setAge(t, j, 200*day)
	// A drop cut short by a crash, holding a symlink out too.
	trash := filepath.Join(root, ".trash-x-0123")
	if err := os.MkdirAll(trash, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(trash, "out")); err != nil {
		t.Fatal(err)
	}

	res, err := filehistory.Prune(context.Background(), root, filehistory.PruneOptions{MaxAge: day, MaxTotal: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(res.Dropped); !slices.Equal(got, []string{"j:age"}) || res.Dropped[0].Bytes >= 1<<20 {
		t.Fatalf("dropped %+v, want j alone, without the linked file counted", res.Dropped)
	}
	if len(res.Skipped) != 1 || res.Skipped[0].Name != "evil" || !errors.Is(res.Skipped[0].Err, filehistory.ErrNotJournal) {
		t.Fatalf("skipped %+v, want the symlink evil", res.Skipped)
	}
	if b, err := os.ReadFile(precious); err != nil || len(b) != 1<<20 {
		t.Fatalf("the file outside: %d bytes, %v", len(b), err)
	}
	if !exists(t, filepath.Join(root, "evil")) || exists(t, j) || exists(t, trash) {
		t.Fatalf("evil %v, j %v, trash %v", exists(t, filepath.Join(root, "evil")), exists(t, j), exists(t, trash))
	}
}

// TestPruneDamaged: a journal folder Prune cannot measure is skipped and
// reported, and the others are still pruned.
func TestPruneDamaged(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	bad := filepath.Join(root, "bad")
	if err := os.MkdirAll(bad, 0o700); err != nil {
		t.Fatal(err)
	}
	// journal.jsonl is a symlink: not a journal Prune will touch.
	if err := os.Symlink("/etc/hostname", filepath.Join(bad, "journal.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "stray-file"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := journalAt(t, root, "old", 100, 100*day)
	res, err := filehistory.Prune(context.Background(), root, filehistory.PruneOptions{MaxAge: 90 * day, MaxTotal: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(res.Dropped); !slices.Equal(got, []string{"old:age"}) || exists(t, old) {
		t.Fatalf("dropped %v", got)
	}
	var skipped []string
	for _, s := range res.Skipped {
		if !errors.Is(s.Err, filehistory.ErrNotJournal) {
			t.Errorf("skipped %s: %v, want ErrNotJournal", s.Name, s.Err)
		}
		skipped = append(skipped, s.Name)
	}
	slices.Sort(skipped)
	if !slices.Equal(skipped, []string{"bad", "stray-file"}) || !exists(t, bad) {
		t.Fatalf("skipped %v (bad exists %v)", skipped, exists(t, bad))
	}
	// A missing history folder is nothing to prune.
	if res, err := filehistory.Prune(context.Background(), filepath.Join(root, "none"), filehistory.PruneOptions{MaxTotal: 1}); err != nil || len(res.Dropped) != 0 {
		t.Fatalf("missing folder: %+v, %v", res, err)
	}
}

// TestPruneWhileOpening: sessions opening, writing and closing their
// journals while Prune drops everything it may never see a half-deleted
// journal: every open succeeds and a change recorded while open is there
// until the journal is closed. (Run with -race.)
func TestPruneWhileOpening(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ctx := context.Background()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 3 {
		wg.Go(func() {
			s := fmt.Sprintf("s%d", i)
			dir := filepath.Join(root, s)
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				j, err := filehistory.OpenJournal(dir, s, "/ws", 0)
				if err != nil {
					errs <- fmt.Errorf("open %s: %w", s, err)
					return
				}
				err = j.Record(ctx, fmt.Sprint("c", n), "Write", "/ws/f", []byte("old"), true, []byte("new"))
				if err == nil && len(j.Entries()) == 0 {
					err = errors.New("the change vanished while open")
				}
				if cerr := j.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					errs <- fmt.Errorf("%s: %w", s, err)
					return
				}
				time.Sleep(time.Duration(n%3) * time.Millisecond) // closed for a while: fair game
			}
		})
	}
	deadline := time.Now().Add(500 * time.Millisecond)
	drops := 0
	for time.Now().Before(deadline) {
		res, err := filehistory.Prune(ctx, root, filehistory.PruneOptions{MaxTotal: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range res.Skipped {
			t.Errorf("skipped %s: %v", s.Name, s.Err)
		}
		drops += len(res.Dropped)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if drops == 0 {
		t.Fatal("no journal was ever dropped: the test proved nothing")
	}
}
