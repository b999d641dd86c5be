package master_test

import (
	"testing"

	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/protocol"
)

// TestSessionCapabilitiesHold: what a session's agent really offers
// (agent.capabilities) replaces its adapter's declaration for that
// session's control messages: review, which the adapter never declared,
// is forwarded; compaction, which the agent lacks, is refused naming the
// type; another session of the same adapter keeps the declaration. The
// latest report is kept in the session's snapshot.
func TestSessionCapabilitiesHold(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	other, _ := startSession(ui, c)
	subscribe(ui, info.ID, 1, info.Epoch)
	sc := c.caps.Adapters[0]
	sc.Modes = []string{protocol.ModeDefault, protocol.ModeReview}
	sc.Compact = false
	last := c.emit(info.ID, protocol.TypeAgentCapabilities, &protocol.AgentCapabilities{Adapter: sc})
	c.waitAck(last.MessageID)
	if evs := events(ui, 1, 1); evs[0].Type != protocol.TypeAgentCapabilities {
		t.Fatalf("relayed %s, want agent.capabilities", evs[0].Type)
	}

	review := protocol.New(protocol.TypeModeSwitch, &protocol.ModeSwitch{Mode: protocol.ModeReview})
	review.SessionID = info.ID
	ui.send(review)
	if got := c.next(protocol.TypeModeSwitch); got.MessageID != review.MessageID {
		t.Fatalf("forwarded %s, want the switch to review", got.MessageID)
	}
	compact := protocol.New(protocol.TypeSessionCompact, &protocol.SessionCompact{})
	compact.SessionID = info.ID
	ui.send(compact)
	ui.expectError(compact.MessageID, protocol.CodeUnsupported, "type")

	// The other session of the adapter is held to its declaration.
	otherReview := protocol.New(protocol.TypeModeSwitch, &protocol.ModeSwitch{Mode: protocol.ModeReview})
	otherReview.SessionID = other.ID
	ui.send(otherReview)
	ui.expectError(otherReview.MessageID, protocol.CodeUnsupported, "payload.mode")

	sub := subscribe(e.dialUI("snapshot"), info.ID, 1, "foreign")
	if sub.Snapshot == nil || sub.Snapshot.Capabilities == nil || sub.Snapshot.Capabilities.Compact || len(sub.Snapshot.Capabilities.Modes) != 2 {
		t.Fatalf("snapshot capabilities %+v", sub.Snapshot)
	}
}
