package client

import (
	"testing"

	"github.com/ferry-dev/ferry/protocol"
)

// TestCutTurnEndedAfterRestart: a turn whose process died while it ran
// (its mark is still there: nothing queued its agent.text.done) is ended
// when the client starts again, with an agent.error saying ferry
// restarted and stop_reason error; a turn that ended normally is not
// ended twice. The process death itself is proven end to end in
// internal/e2e (TestUpRestartMidTurn); here the mark is left as a kill
// leaves it.
func TestCutTurnEndedAfterRestart(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	e := m.start(t)
	fc, _ := m.accept(ctx)
	e.open(ctx, fc, "s1", "echo")
	fc.send(prompt("s1", "finished normally"))
	msgs := fc.until(ctx, isType(protocol.TypeTextDone))
	fc.ack(msgs[len(msgs)-1].MessageID)
	waitFor(ctx, t, "the ack", func() bool { return e.c.Pending() == 0 })
	if err := e.c.marks.mark("s1", "turn-cut"); err != nil { // as a kill -9 mid-turn leaves it
		t.Fatal(err)
	}
	e.stop()

	e2 := m.startOn(t, e.ws, e.stateDir)
	fc2, _ := m.accept(ctx)
	ev := fc2.next(ctx)
	ae, ok := ev.Payload.(*protocol.AgentError)
	if !ok || ev.SessionID != "s1" || ae.TurnID != "turn-cut" || ae.Code != CodeRestarted || ae.Message != RestartedMessage {
		t.Fatalf("first message after the restart: %s %+v; want the restart's agent.error", ev.Type, ev.Payload)
	}
	done := fc2.next(ctx)
	td, ok := done.Payload.(*protocol.TextDone)
	if !ok || td.TurnID != "turn-cut" || td.StopReason != "error" || td.IsCancelled {
		t.Fatalf("then: %s %+v; want agent.text.done, stop_reason error", done.Type, done.Payload)
	}
	fc2.ack(done.MessageID)
	// Nothing else: the finished turn is not ended again, and the cut
	// one only once.
	fc2.send(control("s2", protocol.TypeSessionOpen, &protocol.SessionOpen{WorkspaceID: "nope", Adapter: "echo"}))
	if got := fc2.next(ctx); got.Type != protocol.TypeError {
		t.Fatalf("after the cut turn's end: %s %+v", got.Type, got.Payload)
	}
	marks, err := e2.c.marks.list()
	if err != nil || len(marks) != 0 {
		t.Fatalf("marks left: %+v", marks)
	}
}

// TestCutTurnWithFullOutbox: a client that starts with its outbox full
// does not hang in New waiting for room; the cut turn is ended once the
// master's acks make room.
func TestCutTurnWithFullOutbox(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	limit := func(c *Config) { c.OutboxLimit = 2 }
	e := m.start(t, limit)
	fc, _ := m.accept(ctx)
	e.open(ctx, fc, "s1", "echo")
	e.open(ctx, fc, "s2", "echo") // two session.opened, not acknowledged: full
	if err := e.c.marks.mark("s1", "turn-cut"); err != nil {
		t.Fatal(err)
	}
	e.stop()

	m.startOn(t, e.ws, e.stateDir, limit)
	fc2, _ := m.accept(ctx)
	var last *protocol.Message
	for range 2 {
		last = fc2.expect(ctx, protocol.TypeSessionOpened)
	}
	fc2.ack(last.MessageID)
	if ev := fc2.next(ctx); ev.Type != protocol.TypeAgentError {
		t.Fatalf("after the acks: %s %+v, want the restart's agent.error", ev.Type, ev.Payload)
	}
	done := fc2.next(ctx)
	if td, ok := done.Payload.(*protocol.TextDone); !ok || td.TurnID != "turn-cut" || td.StopReason != "error" {
		t.Fatalf("then %s %+v", done.Type, done.Payload)
	}
}
