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

// TestHistoryRefusesSwappedFiles is issue 31 item 1.6 through the client,
// as the UI asks: ferry's agent writes notes.txt in one turn and d/x.txt
// in the next. notes.txt is then a symbolic link to other.txt, which holds
// exactly the agent's version: undo of the call, undo of the file and the
// rewind are each refused with file_changed naming notes.txt, and
// other.txt keeps the agent's version (before the fix the undo wrote
// through the link into it). Put back as a regular file with the agent's
// content, notes.txt is another file than the agent left: still refused.
// A folder on the path swapped for a link (d → e) is refused the same way.
func TestHistoryRefusesSwappedFiles(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := fake.New(t)
	f := fake.Anthropic
	ads := withAdapters(builtin.New(builtin.Config{
		Getenv:   func(string) string { return "" },
		Provider: provider.Config{Provider: string(f), Model: "test-model", BaseURL: srv.BaseURL(f), APIKey: "k"},
		Rules:    permission.Rules{Allow: []permission.Rule{{Tool: "Write"}}},
	}))
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	ws, state := newWorkspace(t), t.TempDir()
	e := m.startOn(t, ws, state, ads)
	fc, _ := m.accept(ctx)
	e.open(ctx, fc, "s1", builtin.ID)
	write := func(path string) (turnID, callID string) {
		t.Helper()
		srv.Script(fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Write", Input: map[string]any{"file_path": path, "content": "agent\n"}}}},
			fake.Reply{Text: []string{"wrote"}})
		fc.send(prompt("s1", "write "+path))
		for _, msg := range fc.until(ctx, isType(protocol.TypeTextDone)) {
			switch p := msg.Payload.(type) {
			case *protocol.TurnStarted:
				turnID = p.TurnID
			case *protocol.ToolFinished:
				if p.ToolName == "Write" && p.Status == "ok" {
					callID = p.ToolUseID
				}
			}
		}
		if turnID == "" || callID == "" {
			t.Fatalf("the turn writing %s: turn %q, call %q", path, turnID, callID)
		}
		return turnID, callID
	}
	t1, c1 := write("notes.txt")
	_, c2 := write("d/x.txt")

	refused := func(rel string, reqs ...*protocol.Message) {
		t.Helper()
		for _, req := range reqs {
			fc.send(req)
			got := fc.until(ctx, func(x *protocol.Message) bool { return x.ParentID == req.MessageID })
			pe, ok := got[len(got)-1].Payload.(*protocol.Error)
			if !ok {
				t.Fatalf("%s answered %s %+v; want file_changed naming %s", req.Type, got[len(got)-1].Type, got[len(got)-1].Payload, rel)
			}
			if pe.Code != protocol.CodeFileChanged || !strings.Contains(pe.Message, rel) || !strings.Contains(pe.Message, "nothing was restored") {
				t.Fatalf("%s answered %+v; want file_changed naming %s", req.Type, pe, rel)
			}
		}
	}
	unchanged := func(files map[string]string) {
		t.Helper()
		for name, want := range files {
			b, err := os.ReadFile(filepath.Join(ws, name))
			if err != nil || string(b) != want {
				t.Fatalf("%s after the refused restores: %q, %v; want %q", name, b, err, want)
			}
		}
	}
	undoCall := func(id string) *protocol.Message {
		return control("s1", protocol.TypeHistoryUndo, &protocol.HistoryUndo{ToolUseID: id})
	}
	undoFile := func(p string) *protocol.Message {
		return control("s1", protocol.TypeHistoryUndo, &protocol.HistoryUndo{Path: p})
	}
	rewind := control("s1", protocol.TypeHistoryRewind, &protocol.HistoryRewind{TurnID: t1})

	// notes.txt → other.txt, holding the agent's version. The file that
	// replaces the link later is made now, while the agent's file exists,
	// so that it cannot get its inode back.
	notes, other := filepath.Join(ws, "notes.txt"), filepath.Join(ws, "other.txt")
	for _, p := range []string{other, notes + ".new"} {
		if err := os.WriteFile(p, []byte("agent\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(notes); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("other.txt", notes); err != nil {
		t.Fatal(err)
	}
	refused("notes.txt", undoCall(c1), undoFile("notes.txt"), rewind)
	unchanged(map[string]string{"other.txt": "agent\n", "notes.txt": "agent\n", "d/x.txt": "agent\n"})
	if fi, err := os.Lstat(notes); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("notes.txt is no longer the link: %v, %v", fi, err)
	}

	// A regular file again, with the agent's content, renamed over the
	// link as an editor saves: another file.
	if err := os.Rename(notes+".new", notes); err != nil {
		t.Fatal(err)
	}
	refused("notes.txt", undoCall(c1), undoFile("notes.txt"))
	unchanged(map[string]string{"other.txt": "agent\n", "notes.txt": "agent\n"})

	// d → e, where e/x.txt holds the agent's version.
	if err := os.Rename(filepath.Join(ws, "d"), filepath.Join(ws, "gone")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, "e"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "e", "x.txt"), []byte("agent\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("e", filepath.Join(ws, "d")); err != nil {
		t.Fatal(err)
	}
	refused("d/x.txt", undoCall(c2), undoFile("d/x.txt"))
	unchanged(map[string]string{"e/x.txt": "agent\n", "gone/x.txt": "agent\n"})
}
