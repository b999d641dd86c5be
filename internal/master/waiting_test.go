package master_test

import (
	"testing"

	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/protocol"
)

// TestWaitingGetsSettlementsAgain: a control message to a client is sent
// at most once, so an answer or a timeout sent while its connection was
// dying is lost. A client that reconnects lists what its agent still waits
// on (session.interactions.waiting) and gets each settled one's
// settlement again, with the recorded answer; open and unknown ones get
// nothing, and another machine's session is refused.
func TestWaitingGetsSettlementsAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	subscribe(ui, info.ID, 1, info.Epoch)
	req := prompt(ui, c, info.ID, "go")
	turnStart(c, req, "turn-1")
	question(c, info.ID, "turn-1", "answered", 0, protocol.InteractionSingleSelect, "")
	question(c, info.ID, "turn-1", "timedout", 100, protocol.InteractionSingleSelect, "dev")
	q := question(c, info.ID, "turn-1", "open", 0, protocol.InteractionSingleSelect, "")
	events(ui, 5, 1)
	c.waitAck(q.MessageID)

	answer(ui, info.ID, "answered", "main")
	// Both settlements reach the client once (in either order), and are
	// lost with it.
	for range 2 {
		c.next(protocol.TypeInteractionResponse, protocol.TypeInteractionTimeout)
	}
	for range 2 { // in either order
		ui.next(protocol.TypeInteractionResolved)
	}
	c.reconnect(ui)

	w := protocol.New(protocol.TypeInteractionsWaiting, &protocol.InteractionsWaiting{InteractionIDs: []string{"answered", "timedout", "open", "never-asked"}})
	w.SessionID = info.ID
	c.send(w)
	var gotAnswer, gotTimeout bool
	for !gotAnswer || !gotTimeout {
		m := c.next(protocol.TypeSessionOpen, protocol.TypeInteractionResponse, protocol.TypeInteractionTimeout)
		switch p := m.Payload.(type) {
		case *protocol.InteractionResponse:
			if gotAnswer || p.InteractionID != "answered" || !equal(values(&p.SelectedValue), []string{"main"}) {
				t.Fatalf("control.interaction.response %s", describe(m))
			}
			gotAnswer = true
		case *protocol.InteractionTimeout:
			if gotTimeout || p.InteractionID != "timedout" || !equal(values(p.SelectedValue), []string{"dev"}) {
				t.Fatalf("control.interaction.timeout %s", describe(m))
			}
			gotTimeout = true
		}
	}
	clientSync(ui, c, info.ID) // nothing for the open or the unknown one

	// A machine cannot ask about another machine's session.
	other := e.connectClient(testCaps("m2"), ui)
	w2 := protocol.New(protocol.TypeInteractionsWaiting, &protocol.InteractionsWaiting{InteractionIDs: []string{"answered"}})
	w2.SessionID = info.ID
	other.send(w2)
	other.expectError(w2.MessageID, protocol.CodeNotFound, "session_id")
}
