package master_test

import (
	"testing"

	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/protocol"
)

// The agent's own slash commands are relayed to the UI and the latest
// list is kept in the session's snapshot.
func TestCommandsInSnapshot(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	subscribe(ui, info.ID, 1, info.Epoch)
	c.emit(info.ID, protocol.TypeCommands, &protocol.AgentCommands{Commands: []protocol.AgentCommand{{Name: "review"}}})
	last := c.emit(info.ID, protocol.TypeCommands, &protocol.AgentCommands{Commands: []protocol.AgentCommand{{Name: "init", Description: "Write AGENTS.md"}}})
	evs := events(ui, 2, 1)
	if evs[1].Type != protocol.TypeCommands {
		t.Fatalf("relayed %s, want agent.commands", evs[1].Type)
	}
	c.waitAck(last.MessageID)
	sub := subscribe(e.dialUI("snapshot"), info.ID, 1, "foreign")
	if sub.Snapshot == nil || len(sub.Snapshot.Commands) != 1 || sub.Snapshot.Commands[0] != (protocol.AgentCommand{Name: "init", Description: "Write AGENTS.md"}) {
		t.Fatalf("snapshot commands %+v", sub.Snapshot)
	}
}
