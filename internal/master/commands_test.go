package master_test

import (
	"strings"
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

// A denial's note to an adapter without deny_note is refused naming the
// field and settles nothing: the same denial without the note still wins,
// and one with the note reaches a client whose adapter takes it.
func TestDenyNoteNeedsTheCapability(t *testing.T) {
	t.Parallel()
	for _, takes := range []bool{false, true} {
		e := newEnv(t, master.Config{})
		ui := e.dialUI("UI")
		caps := testCaps("m1")
		caps.Adapters[0].DenyNote = takes
		c := e.connectClient(caps, ui)
		info, _ := startSession(ui, c)
		subscribe(ui, info.ID, 1, info.Epoch)
		req := prompt(ui, c, info.ID, "clean up")
		turnStart(c, req, "turn-1")
		interaction(c, info.ID, "turn-1", "q1", 0)
		events(ui, 3, 1)
		noted := protocol.New(protocol.TypeInteractionResponse, &protocol.InteractionResponse{InteractionID: "q1",
			SelectedValue: protocol.Single(protocol.Deny), Note: "use git mv instead"})
		noted.SessionID = info.ID
		ui.send(noted)
		if !takes {
			ui.expectError(noted.MessageID, protocol.CodeUnsupported, "payload.note")
			plain := answer(ui, info.ID, "q1", protocol.Deny)
			if got := c.next(protocol.TypeInteractionResponse); got.MessageID != plain.MessageID {
				t.Fatalf("forwarded %s, want the plain denial %s", got.MessageID, plain.MessageID)
			}
			continue
		}
		got := c.next(protocol.TypeInteractionResponse)
		if r, ok := got.Payload.(*protocol.InteractionResponse); !ok || r.Note != "use git mv instead" {
			t.Fatalf("forwarded %+v, want the note", got.Payload)
		}
		if r := resolved(t, ui, "q1", "answered"); r.Note != "use git mv instead" {
			t.Fatalf("resolved %+v, want the note", r)
		}
	}
}

// A session of an adapter the machine says cannot start is refused with
// the machine's reason, and no session is created.
func TestStartUnavailableAdapterRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	caps := testCaps("m1")
	caps.Adapters[0].Unavailable = "no model provider: set ANTHROPIC_API_KEY and restart ferry up"
	e.connectClient(caps, ui)
	req := ui.send(protocol.New(protocol.TypeSessionStart, &protocol.SessionStart{MachineID: "m1", WorkspaceID: "ws1", Adapter: "echo"}))
	if e := ui.expectError(req.MessageID, protocol.CodeUnsupported, "payload.adapter"); !strings.Contains(e.Message, "restart ferry up") {
		t.Fatalf("refusal %q does not say what to do", e.Message)
	}
	ui.send(protocol.New(protocol.TypeSessionsList, &protocol.SessionsList{}))
	if ss := ui.next(protocol.TypeSessions).Payload.(*protocol.Sessions).Sessions; len(ss) != 0 {
		t.Fatalf("sessions %+v, want none", ss)
	}
}
