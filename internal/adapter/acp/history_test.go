package acp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/acp/acppeer"
	"github.com/ferry-dev/ferry/internal/filehistory"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/protocol"
)

// fs/write_text_file is recorded in the session's file history, under the
// edit tool call that names the file (or an id of its own without one).
func TestFileSystemWriteRecorded(t *testing.T) {
	t.Parallel()
	p := newPeer(t, acppeer.Script{})
	abs := func(name string) string { return filepath.Join(p.ws, name) }
	if err := os.WriteFile(abs("a.txt"), []byte("one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(path, content string) step {
		return step{Request: &acppeer.Request{Method: "fs/write_text_file", Params: map[string]any{"sessionId": acppeer.SessionID, "path": path, "content": content}}}
	}
	p.setScript(t, acppeer.Script{Turns: [][]step{{
		{Update: map[string]any{"sessionUpdate": "tool_call", "toolCallId": "call_7", "title": "Edit a.txt", "kind": "edit", "status": "in_progress",
			"locations": []any{map[string]any{"path": abs("a.txt")}}}},
		{Request: &acppeer.Request{Method: "fs/read_text_file", Params: map[string]any{"sessionId": acppeer.SessionID, "path": abs("a.txt")}}},
		write(abs("a.txt"), "two\n"),
		{Update: map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "call_7", "status": "completed"}},
		write(abs("b.txt"), "bee\n"),
	}}})
	ws := p.ws
	fsysWS, _ := filepath.EvalSymlinks(ws)
	j, err := filehistory.OpenJournal(t.TempDir(), "sess-acp", fsysWS, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	as, err := p.a.Open(ctx, adapter.SessionConfig{SessionID: "sess-acp", Workspace: protocol.Workspace{ID: "w", Name: "w", Path: ws}, History: j})
	if err != nil {
		t.Fatal(err)
	}
	defer as.Close()
	tn := turn("edit")
	if err := j.BeginTurn(tn.ID); err != nil {
		t.Fatal(err)
	}
	if _, res, err := run(t, as.(*session), tn); err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	es := j.Entries()
	if len(es) != 2 {
		t.Fatalf("%d entries, want 2: %+v", len(es), es)
	}
	if e := es[0]; e.Call != "call_7" || e.Turn != tn.ID || e.Rel != "a.txt" ||
		e.Before != filehistory.HashOf([]byte("one\n")) || e.After != filehistory.HashOf([]byte("two\n")) {
		t.Fatalf("a.txt recorded as %+v", e)
	}
	if e := es[1]; !strings.HasPrefix(e.Call, "acp-fs-write-") || e.Before != "" || e.Rel != "b.txt" {
		t.Fatalf("b.txt recorded as %+v", e)
	}
}

// The real agent's Write lands in fs/write_text_file and is recorded under
// the agent's own tool call id, so its diff card's Undo finds it.
func TestRealAgentWriteRecorded(t *testing.T) {
	t.Parallel()
	s, srv, ws := realSession(t)
	j, err := filehistory.OpenJournal(t.TempDir(), "sess-real", ws, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	s.env.History = j // before the first prompt: the dispatcher reads it only for fs requests
	target := filepath.Join(ws, "made.txt")
	const callID = "toolu_write_made"
	srv.Route(func(r fake.Request) (fake.Reply, bool) {
		switch {
		case len(r.ToolNames()) == 0:
			return fake.Reply{Text: []string{"side"}}, true
		case requestToolResult(r, callID) == "":
			return fake.Reply{ToolCalls: []fake.ToolCall{{ID: callID, Name: "mcp__acp__Write", Input: map[string]any{"file_path": target, "content": "made\n"}}}}, true
		}
		return fake.Reply{Text: []string{"Done."}}, true
	})
	tn := turn("write it")
	if err := j.BeginTurn(tn.ID); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := s.Run(ctx, tn, rec.emit); done <- err }()
	ir := rec.ask(t)
	if err := s.Answer(ir.InteractionID, &protocol.InteractionResponse{InteractionID: ir.InteractionID, SelectedValue: protocol.Single(protocol.AllowOnce)}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the turn did not end")
	}
	es := j.Entries()
	if len(es) != 1 || es[0].Call != callID || es[0].Turn != tn.ID || es[0].Rel != "made.txt" || es[0].Before != "" || es[0].After != filehistory.HashOf([]byte("made\n")) {
		t.Fatalf("recorded %+v", es)
	}
}
