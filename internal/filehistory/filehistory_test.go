package filehistory_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/filehistory"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/internal/vfs"
)

var _ tools.FileHistory = (*filehistory.Store)(nil)

func TestTrackAndPrune(t *testing.T) {
	t.Parallel()
	s, err := filehistory.Open(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Track(ctx, "/w/a.txt", nil, false); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if err := s.Track(ctx, "/w/a.txt", []byte(strings.Repeat("x", i+1)), true); err != nil {
			t.Fatal(err)
		}
	}
	vs, err := s.Versions("/w/a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 3 {
		t.Fatalf("%d versions kept, want 3", len(vs))
	}
	got, err := vs[0].Content()
	if err != nil || string(got) != "xxxx" || !vs[0].Existed {
		t.Fatalf("newest version %q %v %+v", got, err, vs[0])
	}
	if other, _ := s.Versions("/w/b.txt"); len(other) != 0 {
		t.Fatalf("versions of an untracked file: %v", other)
	}
}

// With the Write tool: the previous content is in the history before the
// file changes, and a history failure refuses the write.
func TestWithWriteTool(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	p := filepath.Join(ws, "notes.md")
	if err := os.WriteFile(p, []byte("first\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fsys, err := vfs.NewLocal(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	histDir := t.TempDir()
	store, err := filehistory.Open(histDir, 0)
	if err != nil {
		t.Fatal(err)
	}
	env := &tools.Env{FS: fsys, State: tools.NewReadState(), Limits: tools.DefaultLimits(), History: store}
	call := func(tool tools.Tool, in map[string]any) error {
		b, _ := json.Marshal(in)
		_, err := tools.Invoke(context.Background(), env, tool, "t1", b)
		return err
	}
	if err := call(tools.Read{}, map[string]any{"file_path": "notes.md"}); err != nil {
		t.Fatal(err)
	}
	if err := call(tools.Write{}, map[string]any{"file_path": "notes.md", "content": "second\n"}); err != nil {
		t.Fatal(err)
	}
	canon, _ := fsys.Resolve("notes.md")
	vs, err := store.Versions(canon)
	if err != nil || len(vs) != 1 {
		t.Fatalf("versions %v %v", vs, err)
	}
	if b, _ := vs[0].Content(); string(b) != "first\n" {
		t.Fatalf("recorded %q", b)
	}
	// A history that cannot record refuses the write.
	if err := os.RemoveAll(histDir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(histDir, []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := call(tools.Write{}, map[string]any{"file_path": "notes.md", "content": "third\n"}); err == nil {
		t.Fatal("write went ahead although its history could not be recorded")
	}
	if b, _ := os.ReadFile(p); string(b) != "second\n" {
		t.Fatalf("file changed without history: %q", b)
	}
}
