package master_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// deltaTexts returns the text of the agent.text.delta events among evs.
func deltaTexts(evs []*protocol.Message) []string {
	var out []string
	for _, ev := range evs {
		if d, ok := ev.Payload.(*protocol.TextDelta); ok {
			out = append(out, d.Delta)
		}
	}
	return out
}

func TestUIResume(t *testing.T) {
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	subscribe(ui, info.ID, 1, info.Epoch)
	req := prompt(ui, c, info.ID, "count")
	turnStart(c, req, "turn-1")
	for i := range 5 {
		delta(c, info.ID, "turn-1", fmt.Sprint(i))
	}
	seen := events(ui, 4, 1) // up to seq 5: prompt, turn.started, deltas 0 and 1
	_ = ui.ws.CloseNow()

	// Mid-turn, while the UI is away.
	var last *protocol.Message
	for i := 5; i < 10; i++ {
		last = delta(c, info.ID, "turn-1", fmt.Sprint(i))
	}
	c.waitAck(last.MessageID)
	c.applyAcks()

	// Resume from seq 5 while the client keeps streaming: events stored
	// between the subscription's read of the store and its replay must come
	// after the replay, once each.
	errc := make(chan error, 1)
	restore := master.SetSubscribeHook(func(string) { errc <- streamMore(c, info.ID, 10, 60) })
	defer restore()
	ui2 := e.dialUI("UI again")
	sub := subscribe(ui2, info.ID, 5, info.Epoch)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !sub.Recovered || sub.FromSeq != 6 || sub.LastSeq != 13 || sub.Epoch != info.Epoch {
		t.Fatalf("subscribed %+v", sub)
	}
	// seq 4 is delta 0, seq 63 delta 59.
	rest := events(ui2, 58, 5)
	got := append(deltaTexts(seen), deltaTexts(rest)...)
	for i, d := range got {
		if d != fmt.Sprint(i) {
			t.Fatalf("delta %d is %q (all: %q)", i, d, got)
		}
	}
	if len(got) != 60 {
		t.Fatalf("%d deltas, want 60", len(got))
	}
	ui2.sync()
}

// streamMore sends deltas from..to-1 and waits until the master stored them
// all. It runs inside the master (the subscribe hook), so it reports errors
// instead of failing the test from the wrong goroutine.
func streamMore(c *fakeClient, sessionID string, from, to int) error {
	var ids []string
	for i := from; i < to; i++ {
		m := protocol.New(protocol.TypeTextDelta, &protocol.TextDelta{TurnID: "turn-1", Delta: fmt.Sprint(i)})
		m.SessionID = sessionID
		b, err := protocol.Encode(m)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		err = c.ws.Write(ctx, websocket.MessageText, b)
		cancel()
		if err != nil {
			return err
		}
		ids = append(ids, m.MessageID)
	}
	for {
		m, err := c.read()
		if err != nil {
			return err
		}
		if m.Type == protocol.TypeAck && m.Payload.(*protocol.Ack).Through == ids[len(ids)-1] {
			return nil
		}
	}
}

// TestClientReconnect: a client that drops mid-turn re-sends what the
// master did not acknowledge; events already stored are not relayed again.
func TestClientReconnect(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	subscribe(ui, info.ID, 1, info.Epoch)
	req := prompt(ui, c, info.ID, "count")
	turnStart(c, req, "turn-1")
	for i := range 5 {
		delta(c, info.ID, "turn-1", fmt.Sprint(i))
	}
	first := events(ui, 7, 1) // stored and relayed, but the client never saw the acks
	_ = c.ws.CloseNow()
	waitMachine(ui, "m1", false)
	// Produced while the master was unreachable: only in the outbox.
	for i := 5; i < 8; i++ {
		m := protocol.New(protocol.TypeTextDelta, &protocol.TextDelta{TurnID: "turn-1", Delta: fmt.Sprint(i)})
		m.SessionID = info.ID
		c.mu.Lock()
		c.outbox = append(c.outbox, m)
		c.mu.Unlock()
	}
	c.reconnect(ui) // re-sends session.opened, turn.started and deltas 0..7
	done := c.emit(info.ID, protocol.TypeTextDone, &protocol.TextDone{TurnID: "turn-1", StopReason: "end_turn"})
	rest := events(ui, 4, 8)
	got := append(deltaTexts(first), deltaTexts(rest)...)
	if strings.Join(got, ",") != "0,1,2,3,4,5,6,7" || rest[3].Type != protocol.TypeTextDone {
		t.Fatalf("deltas %q, last %s", got, rest[3].Type)
	}
	c.waitAck(done.MessageID)
	ui.sync()
	evs := storedEvents(t, e.st, info.ID, "")
	ids := map[string]bool{}
	for _, ev := range evs {
		if ids[ev.MessageID] {
			t.Fatalf("message %s stored twice", ev.MessageID)
		}
		ids[ev.MessageID] = true
	}
	if len(evs) != 12 {
		t.Fatalf("%d events stored, want 12", len(evs))
	}
	// The snapshot folded each delta in once.
	checkSnapshotText(t, e.dialUI("snapshot"), info.ID, "01234567")
}

// checkSnapshotText subscribes with a foreign epoch, which always answers
// with a snapshot, and checks it holds one turn with text want.
func checkSnapshotText(t *testing.T, ui *peer, sessionID, want string) {
	t.Helper()
	sub := subscribe(ui, sessionID, 1, "foreign")
	if sub.Recovered || sub.Snapshot == nil || len(sub.Snapshot.Turns) != 1 {
		t.Fatalf("subscribed %+v", sub)
	}
	if got := sub.Snapshot.Turns[0].Text; got != want {
		t.Fatalf("snapshot turn text %q, want %q", got, want)
	}
}

func TestMasterRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	subscribe(ui, info.ID, 1, info.Epoch)
	req := prompt(ui, c, info.ID, "count")
	turnStart(c, req, "turn-1")
	var m *protocol.Message
	for i := range 3 {
		m = delta(c, info.ID, "turn-1", fmt.Sprint(i))
	}
	c.waitAck(m.MessageID)
	for i := 3; i < 6; i++ {
		delta(c, info.ID, "turn-1", fmt.Sprint(i)) // maybe stored, maybe acknowledged
	}

	e.restart()

	// The UI saw some events, then a service-restart close (the drain).
	seen, err := ui.waitClosed()
	if websocket.CloseStatus(err) != websocket.StatusServiceRestart {
		t.Fatalf("UI connection ended with %v, want 1012 (service restart)", err)
	}
	var lastSeq uint64 = 1
	for _, ev := range seen {
		if ev.Seq != 0 {
			if ev.Seq != lastSeq+1 {
				t.Fatalf("before the restart: seq %d after %d", ev.Seq, lastSeq)
			}
			lastSeq = ev.Seq
		}
	}
	c.applyAcks()

	ui2 := e.dialUI("UI after restart")
	c.reconnect(ui2)
	done := c.emit(info.ID, protocol.TypeTextDone, &protocol.TextDone{TurnID: "turn-1", StopReason: "end_turn"})
	sub := subscribe(ui2, info.ID, lastSeq, info.Epoch)
	if !sub.Recovered || sub.FromSeq != lastSeq+1 {
		t.Fatalf("subscribed after the restart: %+v", sub)
	}
	// Events through text.done: 1 opened, 2 prompt, 3 turn.started, 4..9 deltas, 10 done.
	rest := events(ui2, int(10-lastSeq), lastSeq)
	got := append(deltaTexts(seen), deltaTexts(rest)...)
	if strings.Join(got, ",") != "0,1,2,3,4,5" || rest[len(rest)-1].MessageID != done.MessageID {
		t.Fatalf("deltas across the restart %q", got)
	}
	c.waitAck(done.MessageID)
	// The new master rebuilt the snapshot from the store.
	checkSnapshotText(t, e.dialUI("snapshot"), info.ID, "012345")

	// The new master opens the session on the new connection before the
	// next prompt.
	p := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{Segments: []protocol.PromptSegment{{Kind: protocol.SegmentText, Text: "again"}}})
	p.SessionID = info.ID
	ui2.send(p)
	if open := c.next(protocol.TypeSessionOpen); open.SessionID != info.ID || open.Payload.(*protocol.SessionOpen).WorkspaceID != "ws1" {
		t.Fatalf("open %s", describe(open))
	}
	if r := c.next(protocol.TypePromptRequest); r.MessageID != p.MessageID {
		t.Fatalf("prompt %s", r.MessageID)
	}
	if ev := ui2.next(); ev.Type != protocol.TypePromptRequest || ev.Seq != 11 {
		t.Fatalf("after the restart: %s seq %d", ev.Type, ev.Seq)
	}
}

func TestRetentionNotRecovered(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{Retention: 4})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	req := prompt(ui, c, info.ID, "count")
	turnStart(c, req, "turn-1")
	for i := range 20 {
		delta(c, info.ID, "turn-1", fmt.Sprint(i%10))
	}
	done := c.emit(info.ID, protocol.TypeTextDone, &protocol.TextDone{TurnID: "turn-1", StopReason: "end_turn"})
	c.waitAck(done.MessageID)
	const last = 24 // opened, prompt, started, 20 deltas, done
	// Trims run beside the writer (its saver), so shortly after the ack.
	waitFor(t, "the old events trimmed", func() bool {
		oldest, err := e.st.OldestSeq(testCtx(t), info.ID)
		return err == nil && oldest > last-4
	})

	for _, tc := range []struct {
		name     string
		after    uint64
		epoch    string
		reason   string
		snapshot bool
	}{
		{"beyond retention", 1, info.Epoch, "retention", true},
		{"from the start", 0, "", "retention", true},
		{"other epoch", 5, "another-history", "epoch", true},
		{"ahead of history", 99, info.Epoch, "epoch", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := e.dialUI(tc.name)
			sub := subscribe(u, info.ID, tc.after, tc.epoch)
			if sub.Recovered || sub.Reason != tc.reason || sub.Snapshot == nil || sub.LastSeq != last || sub.FromSeq != last+1 {
				t.Fatalf("subscribed %+v", sub)
			}
			snap := sub.Snapshot
			if snap.Session.ID != info.ID || snap.Session.LastSeq != last || len(snap.Turns) != 1 {
				t.Fatalf("snapshot %+v", snap)
			}
			turn := snap.Turns[0]
			if turn.TurnID != "turn-1" || turn.Prompt != "count" || !turn.Done || turn.Text != "01234567890123456789" {
				t.Fatalf("snapshot turn %+v", turn)
			}
			u.sync() // no replay follows
		})
	}
	// Within retention, resuming still works.
	sub := subscribe(ui, info.ID, last-2, info.Epoch)
	if !sub.Recovered {
		t.Fatalf("subscribed within retention: %+v", sub)
	}
	events(ui, 2, last-2)
	// Live events follow a snapshot.
	u := e.dialUI("live")
	subscribe(u, info.ID, 1, info.Epoch)
	prompt(ui, c, info.ID, "more")
	if ev := u.next(); ev.Type != protocol.TypePromptRequest || ev.Seq != last+1 {
		t.Fatalf("live after snapshot: %s seq %d", ev.Type, ev.Seq)
	}
	if oldest, err := e.st.OldestSeq(testCtx(t), info.ID); err != nil || oldest <= 1 {
		t.Fatalf("oldest retained seq %d (%v): nothing was trimmed", oldest, err)
	}
}

func TestSlowConsumerDropped(t *testing.T) {
	t.Parallel()
	// A small fixed send buffer makes the slow UI back up after a few
	// hundred kilobytes instead of the several megabytes TCP autotuning
	// would buffer.
	e := newEnv(t, master.Config{QueueSize: 16}, func(e *env) { e.sendBuffer = 32 << 10 })
	fast, slow := e.dialUI("fast UI"), e.dialUI("slow UI")
	c := e.connectClient(testCaps("m1"), fast)
	info, _ := startSession(fast, c)
	subscribe(fast, info.ID, 1, info.Epoch)
	subscribe(slow, info.ID, 1, info.Epoch)
	req := prompt(fast, c, info.ID, "flood")
	turnStart(c, req, "turn-1")
	// The fast UI reads each round before the next is sent: it keeps up
	// by construction, while the slow one reads nothing.
	const rounds, perRound = 100, 4
	const n = rounds * perRound
	chunk := strings.Repeat("x", 8<<10)
	events(fast, 2, 1) // prompt, turn.started
	seq := uint64(3)
	for range rounds {
		for range perRound {
			delta(c, info.ID, "turn-1", chunk)
		}
		events(fast, perRound, seq)
		seq += perRound
	}
	msgs, err := slow.waitClosed()
	if !isClosed(err) {
		t.Fatalf("slow UI: %v", err)
	}
	deltas := 0
	for _, m := range msgs {
		if m.Type == protocol.TypeTextDelta {
			deltas++
		}
		if m.Type == protocol.TypeError && m.Payload.(*protocol.Error).Code != protocol.CodeSlowConsumer {
			t.Fatalf("slow UI got error %s", describe(m))
		}
	}
	t.Logf("the slow UI got %d deltas before it was dropped", deltas)
	if deltas >= n {
		t.Fatalf("the slow UI got all %d deltas: it was not dropped", deltas)
	}
}

func TestDeadPeerDropped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{PingInterval: 100 * time.Millisecond})
	ui := e.dialUI("UI")
	// The client announces itself and then never reads again, so it never
	// answers a ping.
	e.connectClient(testCaps("m1"), ui)
	waitMachine(ui, "m1", false)
	ui.sync() // the UI, which reads, is kept
}

// failingStore fails AppendEvents while fail is set.
type failingStore struct {
	store.Store
	fail atomic.Bool
}

func (f *failingStore) AppendEvents(ctx context.Context, id string, evs []store.Event) ([]store.Event, error) {
	if f.fail.Load() {
		return nil, errors.New("disk on fire at /var/lib/secret")
	}
	return f.Store.AppendEvents(ctx, id, evs)
}

// TestStoreFailure: an event the store refuses is not acknowledged; the
// client is told only "internal" and disconnected, and its re-sent events
// are stored in order after it reconnects.
func TestStoreFailure(t *testing.T) {
	t.Parallel()
	var fs *failingStore
	e := newEnv(t, master.Config{}, func(e *env) {
		e.wrap = func(st store.Store) store.Store { fs = &failingStore{Store: st}; return fs }
	})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	subscribe(ui, info.ID, 1, info.Epoch)
	req := prompt(ui, c, info.ID, "go")
	m := turnStart(c, req, "turn-1")
	c.waitAck(m.MessageID)
	events(ui, 2, 1)

	fs.fail.Store(true)
	delta(c, info.ID, "turn-1", "a")
	delta(c, info.ID, "turn-1", "b")
	msgs, err := c.waitClosed()
	if !isClosed(err) {
		t.Fatalf("client connection: %v", err)
	}
	for _, m := range msgs {
		if e, ok := m.Payload.(*protocol.Error); ok && (e.Code != protocol.CodeInternal || strings.Contains(e.Message, "secret")) {
			t.Fatalf("the client was told %+v", e)
		}
	}
	fs.fail.Store(false)
	c.applyAcks()
	c.reconnect(ui)
	last := delta(c, info.ID, "turn-1", "c")
	got := deltaTexts(events(ui, 3, 3))
	if strings.Join(got, "") != "abc" {
		t.Fatalf("deltas after the failure: %q", got)
	}
	c.waitAck(last.MessageID)
}
