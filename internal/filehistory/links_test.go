//go:build unix

package filehistory_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/filehistory"
	"github.com/ferry-dev/ferry/internal/tools"
)

// Issue 31 item 1.6: undo and rewind never write through a link they did
// not make. The agent changes a file; then the file (or a folder on its
// path) is swapped for a symbolic link to another file holding exactly
// what the agent left, or for another file with that content, either
// before the restore or between its checks and its writes (as another
// process could). Each restore (undo of the call, undo of the file,
// rewind of the turn) is refused with a *ConflictError saying why, and
// nothing changes: not the link, not what it points at, not the other
// file.
func TestRestoreRefusesSwappedFiles(t *testing.T) {
	t.Parallel()
	const agents = "agent's version\n"
	cases := []struct {
		name string
		// create: the agent created the file (undo deletes it) rather than
		// edited it (undo writes the old content).
		create bool
		// swap replaces what the agent left at rel; it returns the files
		// that must stay as they are, with their content.
		swap     func(r *rig) map[string]string
		wantLink bool
	}{
		{name: "file is now a symlink to a file with the agent's content", wantLink: true, swap: func(r *rig) map[string]string {
			r.write("b.txt", agents)
			replaceWithLink(r, "d/a.txt", filepath.Join(r.ws, "b.txt"))
			return map[string]string{"b.txt": agents}
		}},
		{name: "created file is now a symlink", create: true, wantLink: true, swap: func(r *rig) map[string]string {
			r.write("b.txt", agents)
			replaceWithLink(r, "d/a.txt", "../b.txt")
			return map[string]string{"b.txt": agents}
		}},
		{name: "parent folder is now a symlink", wantLink: true, swap: func(r *rig) map[string]string {
			r.write("other/a.txt", agents)
			if err := os.Rename(filepath.Join(r.ws, "d"), filepath.Join(r.ws, "gone")); err != nil {
				r.t.Fatal(err)
			}
			if err := os.Symlink("other", filepath.Join(r.ws, "d")); err != nil {
				r.t.Fatal(err)
			}
			return map[string]string{"other/a.txt": agents, "gone/a.txt": agents}
		}},
		{name: "created file under a folder now a symlink", create: true, wantLink: true, swap: func(r *rig) map[string]string {
			r.write("other/a.txt", agents)
			if err := os.Rename(filepath.Join(r.ws, "d"), filepath.Join(r.ws, "gone")); err != nil {
				r.t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(r.ws, "other"), filepath.Join(r.ws, "d")); err != nil {
				r.t.Fatal(err)
			}
			return map[string]string{"other/a.txt": agents}
		}},
		{name: "file replaced by another file (rename over it)", swap: func(r *rig) map[string]string {
			r.write("b.txt", agents)
			if err := os.Rename(filepath.Join(r.ws, "b.txt"), filepath.Join(r.ws, "d/a.txt")); err != nil {
				r.t.Fatal(err)
			}
			return map[string]string{"d/a.txt": agents}
		}},
		{name: "created file replaced by another file", create: true, swap: func(r *rig) map[string]string {
			r.write("b.txt", agents)
			if err := os.Rename(filepath.Join(r.ws, "b.txt"), filepath.Join(r.ws, "d/a.txt")); err != nil {
				r.t.Fatal(err)
			}
			return map[string]string{"d/a.txt": agents}
		}},
	}
	for _, c := range cases {
		for _, how := range []string{"call", "file", "turn"} {
			for _, racing := range []bool{false, true} {
				name := c.name + "/" + how
				if racing {
					name += "/racing"
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					r := newRig(t, 0)
					if err := os.Mkdir(filepath.Join(r.ws, "d"), 0o755); err != nil {
						t.Fatal(err)
					}
					if !c.create {
						r.write("d/a.txt", "the user's version\n")
					}
					if err := r.j.BeginTurn("turn-1"); err != nil {
						t.Fatal(err)
					}
					if c.create {
						r.call(tools.Write{}, "call-1", map[string]any{"file_path": "d/a.txt", "content": agents})
					} else {
						r.call(tools.Read{}, "read-1", map[string]any{"file_path": "d/a.txt"})
						r.call(tools.Write{}, "call-1", map[string]any{"file_path": "d/a.txt", "content": agents})
					}
					var (
						keep   map[string]string
						stamps = map[string]time.Time{}
						link   string
					)
					swap := func() {
						keep = c.swap(r)
						for rel := range keep {
							stamps[rel] = mtime(t, filepath.Join(r.ws, rel))
						}
						link, _ = os.Readlink(filepath.Join(r.ws, "d/a.txt"))
					}
					if racing {
						filehistory.SetBeforeWrite(r.j, swap)
					} else {
						swap()
					}

					sel := map[string]filehistory.Selection{"call": {Call: "call-1"}, "file": {Rel: "d/a.txt"}, "turn": {Turn: "turn-1"}}[how]
					restored, err := r.j.Restore(context.Background(), r.fs, sel)
					var ce *filehistory.ConflictError
					if !errors.As(err, &ce) || ce.Rel != "d/a.txt" || ce.Later || ce.Link != c.wantLink || ce.Replaced == c.wantLink {
						t.Fatalf("restore: %v (%+v), restored %+v; want a conflict on d/a.txt (link %v)", err, ce, restored, c.wantLink)
					}
					for rel, want := range keep {
						if got := r.read(rel); got != want {
							t.Errorf("%s after the refused restore: %q, want %q", rel, got, want)
						}
						if got := mtime(t, filepath.Join(r.ws, rel)); !got.Equal(stamps[rel]) {
							t.Errorf("%s was written by the refused restore", rel)
						}
					}
					if now, _ := os.Readlink(filepath.Join(r.ws, "d/a.txt")); now != link {
						t.Errorf("d/a.txt links to %q after the refused restore, was %q", now, link)
					}
					if es := r.j.Entries(); len(es) != 1 || es[0].Undone {
						t.Errorf("the change is marked undone: %+v", es)
					}
					// The listing says an undo would be refused.
					changes, err := r.j.Changes(r.fs)
					if err != nil || len(changes) != 1 || !changes[0].Modified {
						t.Errorf("changes: %+v, %v; want d/a.txt marked modified", changes, err)
					}
				})
			}
		}
	}
}

// A file the agent wrote, then left alone: it is the same file (the same
// inode), so undo restores it; the identity recorded survives a restart.
func TestRestoreSameFileAfterReopen(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0)
	r.write("a.txt", "one\n")
	r.call(tools.Read{}, "read-1", map[string]any{"file_path": "a.txt"})
	r.call(tools.Write{}, "call-1", map[string]any{"file_path": "a.txt", "content": "two\n"})
	_ = r.j.Close()
	r.open(0)
	r.restored(filehistory.Selection{Call: "call-1"}, "a.txt", "one\n")
}

// An undo writes a new file (a new inode): the change before it now
// names that file, so a rewind after a restart still restores, and a file
// renamed over it afterwards is refused.
func TestRestoreAfterUndoKeepsTheFile(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0)
	r.write("a.txt", "one\n")
	if err := r.j.BeginTurn("turn-1"); err != nil {
		t.Fatal(err)
	}
	r.call(tools.Read{}, "read-1", map[string]any{"file_path": "a.txt"})
	r.call(tools.Write{}, "call-1", map[string]any{"file_path": "a.txt", "content": "two\n"})
	r.call(tools.Write{}, "call-2", map[string]any{"file_path": "a.txt", "content": "three\n"})
	if _, err := r.j.Restore(context.Background(), r.fs, filehistory.Selection{Call: "call-2"}); err != nil {
		t.Fatal(err)
	}
	_ = r.j.Close()
	r.open(0)
	// Another file renamed over it, with the same content: refused.
	r.write("b.txt", "two\n")
	if err := os.Rename(filepath.Join(r.ws, "a.txt"), filepath.Join(r.ws, "kept.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(r.ws, "b.txt"), filepath.Join(r.ws, "a.txt")); err != nil {
		t.Fatal(err)
	}
	var ce *filehistory.ConflictError
	if _, err := r.j.Restore(context.Background(), r.fs, filehistory.Selection{Turn: "turn-1"}); !errors.As(err, &ce) || !ce.Replaced {
		t.Fatalf("rewind over another file: %v", err)
	}
	// The undo's own file back in place: the rewind restores.
	if err := os.Rename(filepath.Join(r.ws, "kept.txt"), filepath.Join(r.ws, "a.txt")); err != nil {
		t.Fatal(err)
	}
	r.restored(filehistory.Selection{Turn: "turn-1"}, "a.txt", "one\n")
}

// A journal of an older ferry records no file identity: its changes are
// restored by content, and a symbolic link is still refused.
func TestRestoreOlderJournalWithoutIdentity(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0)
	r.write("a.txt", "one\n")
	r.write("b.txt", "one\n")
	r.call(tools.Read{}, "read-1", map[string]any{"file_path": "a.txt"})
	r.call(tools.Write{}, "call-1", map[string]any{"file_path": "a.txt", "content": "two\n"})
	r.call(tools.Read{}, "read-2", map[string]any{"file_path": "b.txt"})
	r.call(tools.Write{}, "call-2", map[string]any{"file_path": "b.txt", "content": "two\n"})
	_ = r.j.Close()
	name := filepath.Join(r.dir, "journal.jsonl")
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	old := regexp.MustCompile(`,"file_id":\{[^}]*\}`).ReplaceAll(b, nil)
	if bytes.Equal(old, b) || bytes.Contains(old, []byte("file_id")) {
		t.Fatalf("the journal records no file_id to strip:\n%s", b)
	}
	if err := os.WriteFile(name, old, 0o600); err != nil {
		t.Fatal(err)
	}
	r.open(0)
	// a.txt: another file with the agent's content; unknown identity, so
	// the content decides.
	r.write("c.txt", "two\n")
	if err := os.Rename(filepath.Join(r.ws, "c.txt"), filepath.Join(r.ws, "a.txt")); err != nil {
		t.Fatal(err)
	}
	r.restored(filehistory.Selection{Call: "call-1"}, "a.txt", "one\n")
	// b.txt: a link to a file with the agent's content is refused.
	r.write("d.txt", "two\n")
	replaceWithLink(r, "b.txt", "d.txt")
	var ce *filehistory.ConflictError
	if _, err := r.j.Restore(context.Background(), r.fs, filehistory.Selection{Call: "call-2"}); !errors.As(err, &ce) || !ce.Link {
		t.Fatalf("undo through a link: %v", err)
	}
	if got := r.read("d.txt"); got != "two\n" {
		t.Fatalf("d.txt after the refused undo: %q", got)
	}
}

func replaceWithLink(r *rig, rel, target string) {
	r.t.Helper()
	p := filepath.Join(r.ws, rel)
	if err := os.Remove(p); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		r.t.Fatal(err)
	}
}

func mtime(t *testing.T, path string) time.Time {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}
