package master_test

import (
	"testing"

	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/protocol"
)

// The agent's instruction files are relayed to the UI and the latest list
// is kept in the session's snapshot, so a UI that comes late names them.
func TestInstructionsInSnapshot(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	subscribe(ui, info.ID, 1, info.Epoch)
	c.emit(info.ID, protocol.TypeInstructions, &protocol.AgentInstructions{Files: []protocol.InstructionFile{{Path: "/w/CLAUDE.md", Bytes: 3}}})
	want := protocol.InstructionFile{Path: "/w/AGENTS.md", Bytes: 50000, Truncated: true}
	last := c.emit(info.ID, protocol.TypeInstructions, &protocol.AgentInstructions{Files: []protocol.InstructionFile{want}})
	evs := events(ui, 2, 1)
	if evs[1].Type != protocol.TypeInstructions {
		t.Fatalf("relayed %s, want agent.instructions", evs[1].Type)
	}
	c.waitAck(last.MessageID)
	sub := subscribe(e.dialUI("snapshot"), info.ID, 1, "foreign")
	if sub.Snapshot == nil || len(sub.Snapshot.Instructions) != 1 || sub.Snapshot.Instructions[0] != want {
		t.Fatalf("snapshot instructions %+v", sub.Snapshot)
	}
}
