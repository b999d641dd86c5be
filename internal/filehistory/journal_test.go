package filehistory_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/contentstore"
	"github.com/ferry-dev/ferry/internal/filehistory"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/internal/vfs"
)

var _ tools.WriteHistory = (*filehistory.Journal)(nil)

// rig is a workspace whose file tools record into a journal.
type rig struct {
	t   *testing.T
	ws  string
	dir string
	fs  *vfs.Local
	j   *filehistory.Journal
	env *tools.Env
}

func newRig(t *testing.T, quota int64) *rig {
	t.Helper()
	ws := t.TempDir()
	fsys, err := vfs.NewLocal(ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fsys.Close() })
	r := &rig{t: t, ws: fsys.Roots()[0], dir: t.TempDir(), fs: fsys}
	r.open(quota)
	return r
}

func (r *rig) open(quota int64) {
	r.t.Helper()
	j, err := filehistory.OpenJournal(r.dir, "sess-1", r.ws, quota)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = j.Close() })
	r.j = j
	r.env = &tools.Env{FS: r.fs, State: tools.NewReadState(), Limits: tools.DefaultLimits(), History: j}
}

func (r *rig) call(tool tools.Tool, id string, in map[string]any) {
	r.t.Helper()
	b, _ := json.Marshal(in)
	if _, err := tools.Invoke(context.Background(), r.env, tool, id, b); err != nil {
		r.t.Fatalf("%s %v: %v", tool.Name(), in, err)
	}
}

func (r *rig) write(rel, content string) {
	r.t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(r.ws, rel)), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.ws, rel), []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) read(rel string) string {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.ws, rel))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// restored undoes sel, which must succeed and leave rel holding want.
func (r *rig) restored(sel filehistory.Selection, rel, want string) {
	r.t.Helper()
	if _, err := r.j.Restore(context.Background(), r.fs, sel); err != nil {
		r.t.Fatalf("restore %+v: %v", sel, err)
	}
	if got := r.read(rel); got != want {
		r.t.Fatalf("%s after restore %+v: %q, want %q", rel, sel, got, want)
	}
}

func (r *rig) edit(id, rel, old, new string) {
	r.t.Helper()
	r.call(tools.Read{}, "read-"+id, map[string]any{"file_path": rel})
	r.call(tools.Edit{}, id, map[string]any{"file_path": rel, "old_string": old, "new_string": new})
}

// Every change ferry's tools make is recorded with its session, turn,
// tool call, path and the hashes before and after.
func TestJournalRecordsToolChanges(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0)
	r.write("a.go", "return x\n")
	if err := r.j.BeginTurn("turn-1"); err != nil {
		t.Fatal(err)
	}
	r.edit("call-1", "a.go", "return x", "return y")
	r.call(tools.Write{}, "call-2", map[string]any{"file_path": "new.txt", "content": "hello\n"})
	es := r.j.Entries()
	if len(es) != 2 {
		t.Fatalf("%d entries, want 2: %+v", len(es), es)
	}
	e := es[0]
	if e.Session != "sess-1" || e.Turn != "turn-1" || e.Call != "call-1" || e.Rel != "a.go" || e.Path != filepath.Join(r.ws, "a.go") ||
		e.Before != filehistory.HashOf([]byte("return x\n")) || e.After != filehistory.HashOf([]byte("return y\n")) {
		t.Fatalf("edit recorded as %+v", e)
	}
	if n := es[1]; n.Call != "call-2" || n.Before != "" || n.After != filehistory.HashOf([]byte("hello\n")) {
		t.Fatalf("new file recorded as %+v", n)
	}
	// The journal survives a restart.
	_ = r.j.Close()
	r.open(0)
	if got := r.j.Entries(); len(got) != 2 || got[0].Call != "call-1" || got[1].After != es[1].After {
		t.Fatalf("after reopening: %+v", got)
	}
}

// Undo restores the content before the call's change; undoing a created
// file deletes it; a second undo of the same call is refused.
func TestJournalUndoRestores(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0)
	r.write("a.go", "return x\n")
	_ = r.j.BeginTurn("turn-1")
	r.edit("call-1", "a.go", "return x", "return y")
	r.call(tools.Write{}, "call-2", map[string]any{"file_path": "dir/new.txt", "content": "hello\n"})
	ctx := context.Background()
	got, err := r.j.Restore(ctx, r.fs, filehistory.Selection{Call: "call-1"})
	if err != nil || len(got) != 1 || got[0].Rel != "a.go" || got[0].Deleted {
		t.Fatalf("undo: %+v %v", got, err)
	}
	if s := r.read("a.go"); s != "return x\n" {
		t.Fatalf("a.go after undo: %q", s)
	}
	got, err = r.j.Restore(ctx, r.fs, filehistory.Selection{Rel: "dir/new.txt"})
	if err != nil || len(got) != 1 || !got[0].Deleted {
		t.Fatalf("undo of a created file: %+v %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(r.ws, "dir", "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("created file still there: %v", err)
	}
	if _, err := r.j.Restore(ctx, r.fs, filehistory.Selection{Call: "call-1"}); !errors.Is(err, filehistory.ErrUndone) {
		t.Fatalf("second undo: %v", err)
	}
	if cs, err := r.j.Changes(r.fs); err != nil || len(cs) != 0 {
		t.Fatalf("changes after undoing everything: %+v %v", cs, err)
	}
}

// An undo of a file someone changed since the agent's edit is refused
// with the file's name, and the file is left as it is.
func TestJournalUndoRefusedWhenChanged(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0)
	r.write("src/a.go", "return x\n")
	_ = r.j.BeginTurn("turn-1")
	r.edit("call-1", "src/a.go", "return x", "return y")
	r.write("src/a.go", "return mine\n") // the user's own change
	_, err := r.j.Restore(context.Background(), r.fs, filehistory.Selection{Call: "call-1"})
	var ce *filehistory.ConflictError
	if !errors.As(err, &ce) || ce.Rel != "src/a.go" || !strings.Contains(err.Error(), "src/a.go") {
		t.Fatalf("undo of a changed file: %v", err)
	}
	if s := r.read("src/a.go"); s != "return mine\n" {
		t.Fatalf("refused undo changed the file: %q", s)
	}
	// The change is still listed, marked modified.
	cs, err := r.j.Changes(r.fs)
	if err != nil || len(cs) != 1 || !cs[0].Modified || cs[0].Rel != "src/a.go" {
		t.Fatalf("changes: %+v %v", cs, err)
	}
	// An earlier edit with a later edit of the agent on top is refused too.
	r.write("src/a.go", "return y\n")
	r.edit("call-2", "src/a.go", "return y", "return z")
	_, err = r.j.Restore(context.Background(), r.fs, filehistory.Selection{Call: "call-1"})
	if !errors.As(err, &ce) || !ce.Later {
		t.Fatalf("undo under a later edit: %v", err)
	}
}

// A rewind checks every file first: one changed file refuses it and no
// file is touched; once it is put back, the rewind restores all of them.
func TestJournalRewindAllOrNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0)
	r.write("a.txt", "a0\n")
	r.write("b.txt", "b0\n")
	_ = r.j.BeginTurn("turn-1")
	r.edit("c1", "a.txt", "a0", "a1")
	_ = r.j.BeginTurn("turn-2")
	r.edit("c2", "a.txt", "a1", "a2")
	r.edit("c3", "b.txt", "b0", "b2")
	r.call(tools.Write{}, "c4", map[string]any{"file_path": "c.txt", "content": "c2\n"})
	_ = r.j.BeginTurn("turn-3")
	r.edit("c5", "b.txt", "b2", "b3")

	r.write("b.txt", "b-user\n")
	_, err := r.j.Restore(context.Background(), r.fs, filehistory.Selection{Turn: "turn-2"})
	var ce *filehistory.ConflictError
	if !errors.As(err, &ce) || ce.Rel != "b.txt" {
		t.Fatalf("rewind over a changed file: %v", err)
	}
	if a, b, c := r.read("a.txt"), r.read("b.txt"), r.read("c.txt"); a != "a2\n" || b != "b-user\n" || c != "c2\n" {
		t.Fatalf("a refused rewind changed files: %q %q %q", a, b, c)
	}
	r.write("b.txt", "b3\n")
	got, err := r.j.Restore(context.Background(), r.fs, filehistory.Selection{Turn: "turn-2"})
	if err != nil || len(got) != 3 {
		t.Fatalf("rewind: %+v %v", got, err)
	}
	if a, b := r.read("a.txt"), r.read("b.txt"); a != "a1\n" || b != "b0\n" {
		t.Fatalf("rewound to %q %q, want a1 b0", a, b)
	}
	if _, err := os.Stat(filepath.Join(r.ws, "c.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("c.txt, created in turn 2, survived the rewind: %v", err)
	}
	if _, err := r.j.Restore(context.Background(), r.fs, filehistory.Selection{Turn: "nope"}); !errors.Is(err, filehistory.ErrUnknownTurn) {
		t.Fatalf("unknown turn: %v", err)
	}
}

// The quota drops the oldest changes first and deletes their contents;
// the newest change stays undoable.
func TestJournalQuotaDropsOldest(t *testing.T) {
	t.Parallel()
	const quota = 10 << 10
	r := newRig(t, quota)
	_ = r.j.BeginTurn("turn-1")
	body := func(i int) string { return strings.Repeat(string(rune('a'+i)), 3000) + "\n" }
	r.call(tools.Write{}, "w0", map[string]any{"file_path": "f.txt", "content": body(0)})
	for i := 1; i < 6; i++ {
		r.call(tools.Read{}, "r", map[string]any{"file_path": "f.txt"})
		r.call(tools.Write{}, "w"+string(rune('0'+i)), map[string]any{"file_path": "f.txt", "content": body(i)})
	}
	if used := r.j.Used(); used > quota {
		t.Fatalf("%d bytes kept, over the %d quota", used, quota)
	}
	es := r.j.Entries()
	if len(es) == 0 || len(es) >= 6 || es[0].Call == "w0" || es[len(es)-1].Call != "w5" {
		t.Fatalf("kept entries %+v: want the oldest dropped, the newest kept", es)
	}
	blobs, _ := os.ReadDir(filepath.Join(r.dir, "blobs"))
	if len(blobs) > len(es)+1 {
		t.Fatalf("%d contents kept for %d changes", len(blobs), len(es))
	}
	if !r.j.Dropped() {
		t.Fatal("Dropped is false after dropping")
	}
	if _, err := r.j.Restore(context.Background(), r.fs, filehistory.Selection{Call: "w0"}); !errors.Is(err, filehistory.ErrDropped) {
		t.Fatalf("undo of a dropped change: %v", err)
	}
	if _, err := r.j.Restore(context.Background(), r.fs, filehistory.Selection{Turn: "turn-1"}); !errors.Is(err, filehistory.ErrDropped) {
		t.Fatalf("rewind past a dropped change: %v", err)
	}
	if _, err := r.j.Restore(context.Background(), r.fs, filehistory.Selection{Call: "w5"}); err != nil {
		t.Fatalf("undo of the newest change: %v", err)
	}
	if s := r.read("f.txt"); s != body(4) {
		t.Fatalf("after undo f.txt starts %q", s[:5])
	}
}

// Record takes a change made outside ferry's tools (Claude Code's).
func TestJournalRecord(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0)
	_ = r.j.BeginTurn("turn-1")
	p := filepath.Join(r.ws, "x.txt")
	r.write("x.txt", "after\n")
	if err := r.j.Record(context.Background(), "toolu_1", "Edit", p, []byte("before\n"), true, []byte("after\n")); err != nil {
		t.Fatal(err)
	}
	es := r.j.Entries()
	if len(es) != 1 || es[0].Call != "toolu_1" || es[0].Tool != "Edit" || es[0].Rel != "x.txt" || es[0].Turn != "turn-1" {
		t.Fatalf("recorded %+v", es)
	}
	r.restored(filehistory.Selection{Call: "toolu_1"}, "x.txt", "before\n")
}

// A kept content that no longer matches its hash (a damaged or tampered
// blob) is never written back: the undo fails and the file stays as it is.
func TestJournalUndoRefusesTamperedContent(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0)
	r.write("a.go", "return x\n")
	_ = r.j.BeginTurn("turn-1")
	r.edit("call-1", "a.go", "return x", "return y")
	h := filehistory.HashOf([]byte("return x\n"))
	if err := os.WriteFile(filepath.Join(r.dir, "blobs", h), []byte("rm -rf ~\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := r.j.Restore(context.Background(), r.fs, filehistory.Selection{Call: "call-1"}); !errors.Is(err, contentstore.ErrCorrupt) {
		t.Fatalf("undo from a tampered content: %v, want contentstore.ErrCorrupt", err)
	}
	if s := r.read("a.go"); s != "return y\n" {
		t.Fatalf("a.go after the refused undo: %q", s)
	}
}
