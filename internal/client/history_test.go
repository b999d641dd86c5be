package client

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter/builtin"
	"github.com/ferry-dev/ferry/internal/adapter/echo"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/llm/provider"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/protocol"
)

// A session's file history end to end through the client, with ferry's
// agent on the fake provider: the changes are listed with their diff, an
// undo of a file changed since is refused naming it (the file untouched),
// an undo restores, the journal survives a restart of the client, a rewind
// takes back the files (deleting what the agent created) and the
// conversation; an agent whose conversation ferry cannot rewind says so.
func TestHistoryThroughClient(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := fake.New(t)
	f := fake.Anthropic
	ads := withAdapters(builtin.New(builtin.Config{
		Getenv:   func(string) string { return "" },
		Provider: provider.Config{Provider: string(f), Model: "test-model", BaseURL: srv.BaseURL(f), APIKey: "k"},
		Rules:    permission.Rules{Allow: []permission.Rule{{Tool: "Write"}, {Tool: "Edit"}}},
	}), echo.New(echo.WithDelay(0)))
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	ws, state := newWorkspace(t), t.TempDir()
	e := m.startOn(t, ws, state, ads)
	fc, caps := m.accept(ctx)
	if !slices.Contains(caps.Messages, protocol.TypeHistoryRewind) {
		t.Fatalf("capabilities lack the history messages: %v", caps.Messages)
	}
	for _, a := range caps.Adapters {
		if want := a.ID == builtin.ID; a.RewindConversation != want {
			t.Fatalf("adapter %s declares rewind_conversation %v", a.ID, a.RewindConversation)
		}
	}
	e.open(ctx, fc, "s1", builtin.ID)
	file := filepath.Join(ws, "notes.txt")
	read := func() string {
		b, err := os.ReadFile(file)
		if err != nil {
			return "<missing>"
		}
		return string(b)
	}
	turn := func(text string, replies ...fake.Reply) (turnID, editID string) {
		t.Helper()
		srv.Script(replies...)
		fc.send(prompt("s1", text))
		for _, msg := range fc.until(ctx, isType(protocol.TypeTextDone)) {
			switch p := msg.Payload.(type) {
			case *protocol.TurnStarted:
				turnID = p.TurnID
			case *protocol.ToolFinished:
				if p.ToolName == "Edit" && p.Diff != nil {
					editID = p.ToolUseID
				}
			}
		}
		return turnID, editID
	}
	call := func(name string, in map[string]any) fake.Reply {
		return fake.Reply{ToolCalls: []fake.ToolCall{{Name: name, Input: in}}}
	}
	t1, _ := turn("FIRST", call("Write", map[string]any{"file_path": "notes.txt", "content": "one\n"}), fake.Reply{Text: []string{"wrote"}})
	_, edit := turn("SECOND", call("Read", map[string]any{"file_path": "notes.txt"}),
		call("Edit", map[string]any{"file_path": "notes.txt", "old_string": "one", "new_string": "two"}), fake.Reply{Text: []string{"edited"}})
	if read() != "two\n" || edit == "" {
		t.Fatalf("notes.txt %q, edit %q", read(), edit)
	}

	ask := func(typ string, p any) *protocol.Message {
		t.Helper()
		m := control("s1", typ, p)
		fc.send(m)
		got := fc.until(ctx, func(x *protocol.Message) bool { return x.ParentID == m.MessageID })
		return got[len(got)-1]
	}
	list := func() *protocol.HistoryChanges {
		t.Helper()
		got := ask(protocol.TypeHistoryList, &protocol.HistoryList{})
		hc, ok := got.Payload.(*protocol.HistoryChanges)
		if !ok {
			t.Fatalf("list answered %s %+v", got.Type, got.Payload)
		}
		return hc
	}
	hc := list()
	if len(hc.Files) != 1 || hc.Files[0].Path != "notes.txt" || !hc.Files[0].Created || len(hc.Files[0].ToolUseIDs) != 2 ||
		hc.Files[0].Diff == nil || !hc.Files[0].Diff.IsNewFile || hc.Files[0].Modified {
		t.Fatalf("changes %+v", hc.Files)
	}

	// Someone changes the file: undo is refused, naming it.
	if err := os.WriteFile(file, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := ask(protocol.TypeHistoryUndo, &protocol.HistoryUndo{ToolUseID: edit})
	pe, ok := got.Payload.(*protocol.Error)
	if !ok || pe.Code != protocol.CodeFileChanged || pe.Field != "payload.tool_use_id" || !strings.Contains(pe.Message, "notes.txt") {
		t.Fatalf("undo of a changed file answered %s %+v", got.Type, got.Payload)
	}
	if read() != "mine\n" {
		t.Fatalf("a refused undo changed the file: %q", read())
	}
	if hc := list(); !hc.Files[0].Modified {
		t.Fatalf("the changed file is not marked modified: %+v", hc.Files[0])
	}

	// Put back as the agent left it, then restart the client: the history
	// is still there, and the undo restores.
	if err := os.WriteFile(file, []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.stop()
	e = m.startOn(t, ws, state, ads)
	fc, _ = m.accept(ctx)
	e.open(ctx, fc, "s1", builtin.ID)
	got = ask(protocol.TypeHistoryUndo, &protocol.HistoryUndo{ToolUseID: edit})
	fr, ok := got.Payload.(*protocol.FilesRestored)
	if !ok || fr.Kind != protocol.RestoreUndo || len(fr.Files) != 1 || fr.Files[0].Path != "notes.txt" || fr.Files[0].Deleted {
		t.Fatalf("undo answered %s %+v", got.Type, got.Payload)
	}
	if read() != "one\n" {
		t.Fatalf("after undo: %q", read())
	}
	// The rewind takes back the created file; the conversation began before
	// the restart and was kept with its turn starts, so it is rewound too.
	got = ask(protocol.TypeHistoryRewind, &protocol.HistoryRewind{TurnID: t1})
	fr, ok = got.Payload.(*protocol.FilesRestored)
	if !ok || len(fr.Files) != 1 || !fr.Files[0].Deleted || fr.Conversation != protocol.ConversationRewound {
		t.Fatalf("rewind answered %s %+v", got.Type, got.Payload)
	}
	if read() != "<missing>" {
		t.Fatalf("the created file survived the rewind: %q", read())
	}

	// A turn after the restart is rewound with its conversation.
	t3, _ := turn("THIRD", call("Write", map[string]any{"file_path": "notes.txt", "content": "three\n"}), fake.Reply{Text: []string{"wrote"}})
	got = ask(protocol.TypeHistoryRewind, &protocol.HistoryRewind{TurnID: t3})
	if fr, ok := got.Payload.(*protocol.FilesRestored); !ok || fr.Conversation != protocol.ConversationRewound || len(fr.Files) != 1 {
		t.Fatalf("rewind of a live turn answered %s %+v", got.Type, got.Payload)
	}
	turn("FOURTH", fake.Reply{Text: []string{"ok"}})
	reqs := srv.ModelRequests()
	if last := strings.Join(lastTexts(reqs[len(reqs)-1]), " "); strings.Contains(last, "THIRD") || strings.Contains(last, "FIRST") || strings.Contains(last, "SECOND") {
		t.Fatalf("a rewound turn reached the model: %v", last)
	}

	// An agent whose conversation ferry cannot rewind: files only.
	e.open(ctx, fc, "s2", "echo")
	fc.send(prompt("s2", "hello"))
	var echoTurn string
	for _, msg := range fc.until(ctx, isType(protocol.TypeTextDone)) {
		if p, ok := msg.Payload.(*protocol.TurnStarted); ok {
			echoTurn = p.TurnID
		}
	}
	m2 := control("s2", protocol.TypeHistoryRewind, &protocol.HistoryRewind{TurnID: echoTurn})
	fc.send(m2)
	last := fc.until(ctx, func(x *protocol.Message) bool { return x.ParentID == m2.MessageID })
	if fr, ok := last[len(last)-1].Payload.(*protocol.FilesRestored); !ok || fr.Conversation != protocol.ConversationNotRewound ||
		!strings.HasPrefix(fr.ConversationNote, "files rewound; the agent's conversation was not") {
		t.Fatalf("echo rewind answered %+v", last[len(last)-1].Payload)
	}
	m3 := control("s2", protocol.TypeHistoryRewind, &protocol.HistoryRewind{TurnID: "no-such-turn"})
	fc.send(m3)
	if pe := fc.errorFor(ctx, m3.MessageID); pe.Code != protocol.CodeNotFound || pe.Field != "payload.turn_id" {
		t.Fatalf("unknown turn: %+v", pe)
	}
}

// lastTexts is the request's messages as JSON, one string each.
func lastTexts(r fake.Request) []string {
	var out []string
	for _, m := range r.Messages() {
		if b, err := json.Marshal(m); err == nil {
			out = append(out, string(b))
		}
	}
	return out
}
