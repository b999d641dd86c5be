package master_test

import (
	"testing"

	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/protocol"
)

// control.history.* from a UI reach the session's client; the list's
// answer (session.history.changes) goes to the asker only and is not
// stored; a refusal goes to the asker; agent.files.restored is stored and
// relayed to every UI watching; a client without the messages refuses.
func TestHistoryRouted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui1, ui2 := e.dialUI("UI 1"), e.dialUI("UI 2")
	caps := testCaps("m1")
	caps.Messages = append(caps.Messages, protocol.TypeHistoryUndo, protocol.TypeHistoryRewind, protocol.TypeHistoryList)
	c := e.connectClient(caps, ui1)
	waitMachine(ui2, "m1", true)
	info, _ := startSession(ui1, c)
	subscribe(ui1, info.ID, 1, info.Epoch)
	subscribe(ui2, info.ID, 1, info.Epoch)

	send := func(typ string, p any) *protocol.Message {
		m := protocol.New(typ, p)
		m.SessionID = info.ID
		ui1.send(m)
		got := c.next(typ)
		if got.MessageID != m.MessageID || got.SessionID != info.ID {
			t.Fatalf("forwarded %s", describe(got))
		}
		return got
	}
	list := send(protocol.TypeHistoryList, &protocol.HistoryList{})
	ans := list.Reply(protocol.TypeHistoryChanges, &protocol.HistoryChanges{Files: []protocol.ChangedFile{{Path: "a.go", ToolUseIDs: []string{"t1"}, TurnIDs: []string{"turn-1"}}}})
	c.send(ans)
	if got := ui1.next(protocol.TypeHistoryChanges); got.ParentID != list.MessageID || got.Payload.(*protocol.HistoryChanges).Files[0].Path != "a.go" {
		t.Fatalf("changes %s", describe(got))
	}
	ui2.sync()
	if evs := storedEvents(t, e.st, info.ID, protocol.TypeHistoryChanges); len(evs) != 0 {
		t.Fatalf("changes were stored: %+v", evs)
	}

	undo := send(protocol.TypeHistoryUndo, &protocol.HistoryUndo{ToolUseID: "t1"})
	c.send(protocol.ErrorMessage(undo.MessageID, info.ID, &protocol.Error{Code: protocol.CodeFileChanged, Field: "payload.tool_use_id", Message: "a.go changed since the agent's edit"}))
	ui1.expectError(undo.MessageID, protocol.CodeFileChanged, "payload.tool_use_id")
	ui2.sync()

	rewind := send(protocol.TypeHistoryRewind, &protocol.HistoryRewind{TurnID: "turn-1"})
	done := rewind.Reply(protocol.TypeFilesRestored, &protocol.FilesRestored{Kind: protocol.RestoreRewind, TurnID: "turn-1",
		Files: []protocol.RestoredFile{{Path: "a.go"}}, Conversation: protocol.ConversationRewound})
	c.emitMsg(done)
	for _, ui := range []*peer{ui1, ui2} {
		got := ui.next(protocol.TypeFilesRestored)
		if got.ParentID != rewind.MessageID || got.Payload.(*protocol.FilesRestored).Files[0].Path != "a.go" {
			t.Fatalf("%s: restored %s", ui.name, describe(got))
		}
	}
	if evs := storedEvents(t, e.st, info.ID, protocol.TypeFilesRestored); len(evs) != 1 {
		t.Fatalf("%d agent.files.restored stored, want 1", len(evs))
	}

	// Bad input is refused by the master, naming the field.
	bad := protocol.New(protocol.TypeHistoryUndo, &protocol.HistoryUndo{})
	bad.SessionID = info.ID
	ui1.send(bad)
	ui1.expectError(bad.MessageID, protocol.CodeInvalidValue, "payload")

	// A client that does not declare the messages is not sent them.
	e2 := newEnv(t, master.Config{})
	ui3 := e2.dialUI("UI 3")
	c2 := e2.connectClient(testCaps("m2"), ui3)
	info2, _ := startSession(ui3, c2)
	m := protocol.New(protocol.TypeHistoryList, &protocol.HistoryList{})
	m.SessionID = info2.ID
	ui3.send(m)
	ui3.expectError(m.MessageID, protocol.CodeUnsupported, "type")
}
