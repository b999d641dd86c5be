package client

import (
	"slices"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/protocol"
)

// TestWaitingListedOnReconnect: an answer the master sent while the
// connection was dying is lost with it; on reconnecting, the client lists
// the interactions its agent still waits on, so the master can send their
// settlement again, and the agent gets it. Once answered, an interaction is
// no longer listed.
func TestWaitingListedOnReconnect(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	ask := &askAdapter{waiting: map[string]chan *protocol.InteractionResponse{}}
	e := m.start(t, withAdapters(ask))
	fc, _ := m.accept(ctx)
	e.open(ctx, fc, "s1", "ask")
	fc.send(prompt("s1", "0"))
	msgs := fc.until(ctx, isType(protocol.TypeInteractionRequest))
	req := msgs[len(msgs)-1].Payload.(*protocol.InteractionRequest)

	// The answer goes out as the connection dies: lost.
	fc.send(control("s1", protocol.TypeInteractionResponse, &protocol.InteractionResponse{InteractionID: "elsewhere", SelectedValue: protocol.Single("a")}))
	fc.drop()
	fc, _ = m.accept(ctx)
	msgs = fc.until(ctx, isType(protocol.TypeInteractionsWaiting))
	if got := waitingIn(msgs, "s1"); !slices.Equal(got, []string{req.InteractionID}) {
		t.Fatalf("session.interactions.waiting lists %v, want [%s]", got, req.InteractionID)
	}
	// The master sends the settlement again; the agent takes it.
	fc.send(control("s1", protocol.TypeInteractionResponse, &protocol.InteractionResponse{InteractionID: req.InteractionID, SelectedValue: protocol.Single("a")}))
	msgs = fc.until(ctx, isType(protocol.TypeTextDone))
	if done := msgs[len(msgs)-1].Payload.(*protocol.TextDone); done.Text != "a" {
		t.Fatalf("the turn ended with %q, want the answer a", done.Text)
	}

	// Answered: a later reconnect lists nothing; the next message after
	// it is the next turn's.
	fc.drop()
	fc, _ = m.accept(ctx)
	fc.send(prompt("s1", "0"))
	for _, m := range fc.until(ctx, isType(protocol.TypeTurnStarted)) {
		if m.Type == protocol.TypeInteractionsWaiting {
			t.Fatalf("an answered interaction is still listed: %+v", m.Payload)
		}
	}
}

func waitingIn(msgs []*protocol.Message, sessionID string) []string {
	var ids []string
	for _, m := range msgs {
		if p, ok := m.Payload.(*protocol.InteractionsWaiting); ok && m.SessionID == sessionID {
			ids = append(ids, p.InteractionIDs...)
		}
	}
	slices.Sort(ids)
	return ids
}

// TestWaitingListedEveryPing: an answer lost between master nodes while
// the client's connection stayed up (a broker gap) would leave the agent
// waiting until the next reconnect; the client lists what its agent waits
// on again after every ping, on the same connection.
func TestWaitingListedEveryPing(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	ask := &askAdapter{waiting: map[string]chan *protocol.InteractionResponse{}}
	e := m.start(t, withAdapters(ask), func(c *Config) { c.PingInterval = 20 * time.Millisecond })
	fc, _ := m.accept(ctx)
	e.open(ctx, fc, "s1", "ask")
	fc.send(prompt("s1", "0"))
	msgs := fc.until(ctx, isType(protocol.TypeInteractionRequest))
	req := msgs[len(msgs)-1].Payload.(*protocol.InteractionRequest)
	for range 2 {
		msgs = fc.until(ctx, isType(protocol.TypeInteractionsWaiting))
		if got := waitingIn(msgs[len(msgs)-1:], "s1"); !slices.Equal(got, []string{req.InteractionID}) {
			t.Fatalf("session.interactions.waiting lists %v, want [%s]", got, req.InteractionID)
		}
	}
	fc.send(control("s1", protocol.TypeInteractionResponse, &protocol.InteractionResponse{InteractionID: req.InteractionID, SelectedValue: protocol.Single("a")}))
	fc.until(ctx, isType(protocol.TypeTextDone))
}
