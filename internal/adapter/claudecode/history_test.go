package claudecode

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/filehistory"
	"github.com/ferry-dev/ferry/internal/vfs"
	"github.com/ferry-dev/ferry/protocol"
	"github.com/ferry-dev/ferry/protocol/fileref"
)

// The real CLI's Edit and Write are recorded in the session's file
// history with their tool_use ids, the content before and after; undo of
// the Edit puts the file back, undo of the Write deletes the new file.
func TestRealEditRecorded(t *testing.T) {
	t.Parallel()
	e := newRealEnv(t)
	path := e.file(t, "notes.txt", "the secret word is pelican\n")
	created := filepath.Join(e.ws, "new.txt")
	e.script.add(
		call("toolu_read1", "Read", map[string]any{"file_path": path}),
		call("toolu_edit1", "Edit", map[string]any{"file_path": path, "old_string": "pelican", "new_string": "heron"}),
		call("toolu_write1", "Write", map[string]any{"file_path": created, "content": "fresh\n"}),
		say("Done."),
	)
	fsys, err := vfs.NewLocal(e.ws)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	j, err := filehistory.OpenJournal(t.TempDir(), "ferry-session-1", fsys.Roots()[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	as, err := e.adapter().Open(context.Background(), adapter.SessionConfig{SessionID: "ferry-session-1", Mode: protocol.ModeDefault,
		Workspace: protocol.Workspace{ID: "w", Name: "w", Path: e.ws}, History: j})
	if err != nil {
		t.Fatal(err)
	}
	s := as.(*session)
	defer s.Close()

	req := &protocol.PromptRequest{PromptText: "change it", InputType: protocol.InputText}
	turn := adapter.Turn{ID: protocol.NewID(), Request: req, Prompt: fileref.Parse(req.PromptText, nil)}
	if err := j.BeginTurn(turn.ID); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	rec := newRecorder(t)
	run := runAsync(ctx, s, turn, rec.emit)
	for range 2 {
		ir := rec.nextAsk(ctx)
		if err := s.Answer(ir.InteractionID, &protocol.InteractionResponse{InteractionID: ir.InteractionID, SelectedValue: protocol.Single(protocol.AllowOnce)}); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := run.wait(t, ctx); err != nil || res.StopReason != "end_turn" {
		t.Fatalf("%+v, %v", res, err)
	}
	es := j.Entries()
	if len(es) != 2 {
		t.Fatalf("%d entries, want 2: %+v", len(es), es)
	}
	if x := es[0]; x.Call != "toolu_edit1" || x.Tool != "Edit" || x.Turn != turn.ID || x.Rel != "notes.txt" ||
		x.Before != filehistory.HashOf([]byte("the secret word is pelican\n")) || x.After != filehistory.HashOf([]byte("the secret word is heron\n")) {
		t.Fatalf("Edit recorded as %+v", x)
	}
	if x := es[1]; x.Call != "toolu_write1" || x.Tool != "Write" || x.Before != "" || x.After != filehistory.HashOf([]byte("fresh\n")) {
		t.Fatalf("Write recorded as %+v", x)
	}
	if _, err := j.Restore(ctx, fsys, filehistory.Selection{Turn: turn.ID}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "the secret word is pelican\n" {
		t.Fatalf("notes.txt after the rewind: %q", b)
	}
	if _, err := os.Stat(created); !os.IsNotExist(err) {
		t.Fatalf("new.txt after the rewind: %v", err)
	}
}
