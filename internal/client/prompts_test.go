package client

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ferry-dev/ferry/protocol"
)

// turnsOf counts the agent.turn.started answering prompt id in msgs.
func turnsOf(msgs []*protocol.Message, id string) int {
	n := 0
	for _, m := range msgs {
		if m.Type == protocol.TypeTurnStarted && m.ParentID == id {
			n++
		}
	}
	return n
}

// runTurn sends p and returns every message up to its turn's end,
// acknowledged.
func runTurn(ctx context.Context, fc *fakeConn, p *protocol.Message) []*protocol.Message {
	fc.send(p)
	msgs := fc.until(ctx, isType(protocol.TypeTextDone))
	fc.ack(msgs[len(msgs)-1].MessageID)
	return msgs
}

// TestPromptDeliveredTwiceStartsOneTurn: the master sends a prompt again
// until it is answered, so a client gets copies: one right behind the
// first (queued while it starts) and one after its turn ended. Each copy
// is dropped: one turn in all, no busy error, and the next prompt runs.
// The client says so in its capabilities (prompts_once).
func TestPromptDeliveredTwiceStartsOneTurn(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	e := m.start(t)
	fc, caps := m.accept(ctx)
	if !caps.PromptsOnce {
		t.Fatal("session.capabilities does not declare prompts_once")
	}
	e.open(ctx, fc, "s1", "echo")
	p := prompt("s1", "once only")
	fc.send(p)
	msgs := runTurn(ctx, fc, p) // the copy right behind it
	fc.send(p)                  // a copy after the turn
	next := prompt("s1", "the next one")
	msgs = append(msgs, runTurn(ctx, fc, next)...)
	if n := turnsOf(msgs, p.MessageID); n != 1 {
		t.Fatalf("a prompt delivered three times started %d turns, want 1", n)
	}
	if n := turnsOf(msgs, next.MessageID); n != 1 {
		t.Fatalf("the next prompt started %d turns, want 1", n)
	}
	for _, msg := range msgs {
		if msg.Type == protocol.TypeError {
			t.Fatalf("a copy was answered with an error: %+v", msg.Payload)
		}
	}
}

// TestPromptDedupSurvivesRestart: a prompt the client answered before a
// restart (started, or refused) is answered the same way after it: the
// started one is dropped, the refused one refused again with the same
// error, and neither runs; a new prompt runs.
func TestPromptDedupSurvivesRestart(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	gate := newGate(0)
	e := m.start(t, withAdapters(gate))
	fc, _ := m.accept(ctx)
	e.open(ctx, fc, "s1", "gate")
	ran := prompt("s1", "runs")
	fc.send(ran)
	fc.until(ctx, func(m *protocol.Message) bool {
		return m.Type == protocol.TypeTurnStarted && m.ParentID == ran.MessageID
	})
	busy := prompt("s1", "while it runs")
	fc.send(busy)
	first := fc.errorFor(ctx, busy.MessageID)
	if first.Code != protocol.CodeBusy {
		t.Fatalf("a prompt during a turn was answered %+v, want busy", first)
	}
	close(gate.release)
	msgs := fc.until(ctx, isType(protocol.TypeTextDone))
	fc.ack(msgs[len(msgs)-1].MessageID)
	waitFor(ctx, t, "the ack", func() bool { return e.c.Pending() == 0 })
	e.stop()

	e2 := m.startOn(t, e.ws, e.stateDir, withAdapters(gate))
	fc2, _ := m.accept(ctx)
	e2.open(ctx, fc2, "s1", "gate")
	next := prompt("s1", "new")
	fc2.send(ran)
	fc2.send(busy)
	fc2.send(next)
	// Everything up to the end of the new prompt's turn.
	var (
		msgs2    []*protocol.Message
		nextTurn string
		again    *protocol.Error
	)
	for {
		msg := fc2.next(ctx)
		msgs2 = append(msgs2, msg)
		switch p := msg.Payload.(type) {
		case *protocol.TurnStarted:
			if msg.ParentID == next.MessageID {
				nextTurn = p.TurnID
			}
		case *protocol.Error:
			if msg.ParentID == busy.MessageID {
				again = p
			}
		}
		if d, ok := msg.Payload.(*protocol.TextDone); ok && d.TurnID == nextTurn {
			break
		}
	}
	if turnsOf(msgs2, ran.MessageID) != 0 || turnsOf(msgs2, busy.MessageID) != 0 || turnsOf(msgs2, next.MessageID) != 1 {
		t.Fatalf("after a restart, copies started turns: %d of the run prompt, %d of the refused one; the new one %d",
			turnsOf(msgs2, ran.MessageID), turnsOf(msgs2, busy.MessageID), turnsOf(msgs2, next.MessageID))
	}
	if again == nil || *again != *first {
		t.Fatalf("the refused prompt after a restart was answered %+v, want the first answer %+v", again, first)
	}
}

// TestAnsweredPromptsBounded: the record keeps the newest
// maxAnsweredPrompts answers, in the outbox's database.
func TestAnsweredPromptsBounded(t *testing.T) {
	t.Parallel()
	out, err := openOutbox(filepath.Join(t.TempDir(), "outbox.db"), 10)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = out.Close() })
	a, err := openAnsweredPrompts(out.db)
	if err != nil {
		t.Fatal(err)
	}
	const over = 10
	busy := &protocol.Error{Code: protocol.CodeBusy, Message: "busy"}
	for i := range maxAnsweredPrompts + over {
		if err := a.refused(fmt.Sprintf("p%d", i), "s1", busy); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range map[int]bool{0: false, over - 1: false, over: true, maxAnsweredPrompts + over - 1: true} {
		done, e, err := a.lookup(fmt.Sprintf("p%d", i))
		if err != nil || done != want || done && *e != *busy {
			t.Fatalf("prompt %d: answered %v (%+v, %v), want %v", i, done, e, err, want)
		}
	}
}
