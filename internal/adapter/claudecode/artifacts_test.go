package claudecode

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/protocol"
)

// With artifacts on, the succeeded Write, Edit, MultiEdit and NotebookEdit
// calls hand over their files (agent.artifact with the call's tool_use id
// and the turn id, and Result.Artifacts, in order); the failed call and
// the write outside the workspace hand over nothing, the latter with a log
// line. Off, nothing is handed over.
func TestFakeArtifacts(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			t.Parallel()
			env := openFakeSession(t, "writes", nil, func(c *adapter.SessionConfig) { c.Artifacts = on })
			if err := os.WriteFile(filepath.Join(env.ws, "notes.txt"), []byte("one\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			rec := newRecorder(t)
			turn := adaptertest.TextTurn("write them")
			res, err := env.sess.Run(ctx, turn, rec.emit)
			if err != nil || res.StopReason != protocol.StopEndTurn {
				t.Fatalf("%+v, %v", res, err)
			}
			evs := rec.OfType(protocol.TypeArtifact)
			if !on {
				if len(evs) != 0 || len(res.Artifacts) != 0 {
					t.Fatalf("off: %d events, %d artifacts", len(evs), len(res.Artifacts))
				}
				return
			}
			// A file written twice is handed over once per call, each time
			// with the size it had then.
			want := []struct {
				id, path, mime string
				size           int64
			}{
				{"toolu_w", "out/a.txt", "text/plain", 6}, {"toolu_e", "notes.txt", "text/plain", 4},
				{"toolu_m", "multi.txt", "text/plain", 13}, {"toolu_n", "nb.ipynb", "", 12},
				{"toolu_w2", "out/a.txt", "text/plain", 12},
			}
			if len(evs) != len(want) || len(res.Artifacts) != len(want) {
				t.Fatalf("%d events, %d artifacts, want %d; log:\n%s", len(evs), len(res.Artifacts), len(want), env.logs.String())
			}
			for i, w := range want {
				a := evs[i].(*protocol.Artifact)
				if a.TurnID != turn.ID || a.ToolUseID != w.id || a.Path != w.path || a.Size != w.size || a.FileName != filepath.Base(w.path) {
					t.Errorf("event %d: %+v, want %s %s size %d", i, a, w.id, w.path, w.size)
				}
				if w.mime != "" && !strings.HasPrefix(a.MimeType, w.mime) {
					t.Errorf("event %d: mime %q", i, a.MimeType)
				}
				if f := res.Artifacts[i]; f.Path() != w.path || f.ToolUseID() != w.id || f.Size() != w.size {
					t.Errorf("result %d: %s %s %d", i, f.Path(), f.ToolUseID(), f.Size())
				}
			}
			if log := env.logs.String(); !strings.Contains(log, "not handed over") || !strings.Contains(log, "toolu_o") {
				t.Errorf("no log line for the write outside the workspace:\n%s", log)
			}
		})
	}
}

// The real CLI's Edit and Write hand over the files it wrote: an
// agent.artifact each, whose path and size are those of the bytes on
// disk; its Edit that fails (the text is not in the file) hands over
// nothing.
func TestRealArtifacts(t *testing.T) {
	t.Parallel()
	e := newRealEnv(t)
	path := e.file(t, "notes.txt", "the secret word is pelican\n")
	created := filepath.Join(e.ws, "report.md")
	e.script.add(
		call("toolu_read1", "Read", map[string]any{"file_path": path}),
		call("toolu_edit1", "Edit", map[string]any{"file_path": path, "old_string": "pelican", "new_string": "heron"}),
		call("toolu_edit2", "Edit", map[string]any{"file_path": path, "old_string": "no such text", "new_string": "x"}),
		call("toolu_write1", "Write", map[string]any{"file_path": created, "content": "# Report\n\nfresh\n"}),
		say("Done."),
	)
	as, err := e.adapter().Open(context.Background(), adapter.SessionConfig{SessionID: "ferry-session-1", Mode: protocol.ModeDefault,
		Workspace: protocol.Workspace{ID: "w", Name: "w", Path: e.ws}, Artifacts: true})
	if err != nil {
		t.Fatal(err)
	}
	s := as.(*session)
	defer s.Close()
	turn := adaptertest.TextTurn("change it")
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	rec := newRecorder(t)
	run := runAsync(ctx, s, turn, rec.emit)
answer:
	for {
		select {
		case ir := <-rec.Asks:
			if err := s.Answer(ir.InteractionID, &protocol.InteractionResponse{InteractionID: ir.InteractionID, SelectedValue: protocol.Single(protocol.AllowOnce)}); err != nil {
				t.Fatal(err)
			}
		case <-run.done:
			break answer
		case <-ctx.Done():
			t.Fatal("the turn did not end")
		}
	}
	res, err := run.wait(t, ctx)
	if err != nil || res.StopReason != protocol.StopEndTurn {
		t.Fatalf("%+v, %v", res, err)
	}
	for _, f := range rec.Finished() {
		if f.ToolUseID == "toolu_edit2" && f.Status != protocol.ToolError {
			t.Errorf("the failing Edit finished %s", f.Status)
		}
	}
	want := []struct{ id, rel, content string }{
		{"toolu_edit1", "notes.txt", "the secret word is heron\n"},
		{"toolu_write1", "report.md", "# Report\n\nfresh\n"},
	}
	evs := rec.OfType(protocol.TypeArtifact)
	if len(evs) != len(want) || len(res.Artifacts) != len(want) {
		t.Fatalf("%d agent.artifact events, %d in the result, want %d: %+v", len(evs), len(res.Artifacts), len(want), evs)
	}
	for i, w := range want {
		b, err := os.ReadFile(filepath.Join(e.ws, w.rel))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != w.content {
			t.Errorf("%s on disk: %q, want %q", w.rel, b, w.content)
		}
		a := evs[i].(*protocol.Artifact)
		if a.TurnID != turn.ID || a.ToolUseID != w.id || a.Path != w.rel || a.FileName != w.rel || a.Size != int64(len(b)) || !strings.HasPrefix(a.ArtifactID, "art_") {
			t.Errorf("event %d: %+v, want %s %s size %d", i, a, w.id, w.rel, len(b))
		}
		if f := res.Artifacts[i]; f.Path() != w.rel || f.ToolUseID() != w.id || f.Size() != int64(len(b)) {
			t.Errorf("result %d: %s %s %d", i, f.Path(), f.ToolUseID(), f.Size())
		}
	}
}
