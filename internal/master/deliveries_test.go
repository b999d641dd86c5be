package master_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/attachment"
	"github.com/ferry-dev/ferry/internal/broker"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// onceCaps is testCaps of a client that answers each prompt once
// (prompts_once), to which the master sends unanswered prompts again.
func onceCaps(machineID string) *protocol.Capabilities {
	caps := testCaps(machineID)
	caps.PromptsOnce = true
	return caps
}

// nextPrompt reads the client's messages up to the next
// control.prompt.request, passing over the control.session.open a new
// connection gets first.
func nextPrompt(c *fakeClient) *protocol.Message {
	c.t.Helper()
	for {
		if m := c.next(protocol.TypeSessionOpen, protocol.TypePromptRequest); m.Type == protocol.TypePromptRequest {
			return m
		}
	}
}

// noPromptBefore sends a control message from ui and fails if the client
// gets a prompt before it (a control.session.open may come first).
func noPromptBefore(ui *peer, c *fakeClient, sessionID string) {
	ui.t.Helper()
	m := protocol.New(protocol.TypeModeSwitch, &protocol.ModeSwitch{Mode: protocol.ModePlan})
	m.SessionID = sessionID
	ui.send(m)
	for {
		got := c.next(protocol.TypeSessionOpen, protocol.TypeModeSwitch)
		if got.MessageID == m.MessageID {
			return
		}
	}
}

// undelivered lists the prompts the store holds as unanswered.
func (e *env) undelivered() []string {
	e.t.Helper()
	ds, err := e.st.Undelivered(testCtx(e.t), "", time.Time{}, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.MessageID
	}
	return ids
}

// TestPromptSentAgainUntilAnswered: a prompt whose client's connection
// dies before the client answers it is sent again, unchanged, to the
// connection the client comes back on, until the client answers it: its
// agent.turn.started, or its error (a refusal, which still reaches the
// UI that sent the prompt). An answered prompt is not sent again.
func TestPromptSentAgainUntilAnswered(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(onceCaps("m1"), ui)
	info, _ := startSession(ui, c)

	req := prompt(ui, c, info.ID, "lost with the connection")
	c.reconnect(ui) // the client read it, and its connection died
	again := nextPrompt(c)
	if again.MessageID != req.MessageID || again.SessionID != info.ID ||
		again.Payload.(*protocol.PromptRequest).PromptText != "lost with the connection" {
		t.Fatalf("sent again: %s %s", again.MessageID, describe(again))
	}
	c.reconnect(ui) // not answered yet: sent again, again
	again = nextPrompt(c)
	if again.MessageID != req.MessageID {
		t.Fatalf("sent again after a second reconnect: %s, want %s", again.MessageID, req.MessageID)
	}
	c.waitAck(turnStart(c, again, "t1").MessageID)
	if ids := e.undelivered(); len(ids) != 0 {
		t.Fatalf("after the turn started, the store holds %v undelivered", ids)
	}
	c.emit(info.ID, protocol.TypeTextDone, &protocol.TextDone{TurnID: "t1", StopReason: protocol.StopEndTurn})
	c.reconnect(ui)
	noPromptBefore(ui, c, info.ID)

	// A refusal answers a prompt too, and still reaches its UI.
	refused := prompt(ui, c, info.ID, "refused")
	c.send(protocol.ErrorMessage(refused.MessageID, info.ID, &protocol.Error{Code: protocol.CodeBusy, Message: "busy"}))
	ui.expectError(refused.MessageID, protocol.CodeBusy, "")
	waitFor(t, "the refusal to answer the prompt", func() bool { return len(e.undelivered()) == 0 })
	c.reconnect(ui)
	noPromptBefore(ui, c, info.ID)
}

// TestPromptNotSentAgainToClientWithoutPromptsOnce: a client that does not
// declare prompts_once might run a copy twice: its prompts are sent once,
// as before, and not recorded as waiting for an answer.
func TestPromptNotSentAgainToClientWithoutPromptsOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	prompt(ui, c, info.ID, "once")
	if ids := e.undelivered(); len(ids) != 0 {
		t.Fatalf("a prompt to a client without prompts_once is recorded undelivered: %v", ids)
	}
	c.reconnect(ui)
	noPromptBefore(ui, c, info.ID)
}

// dropBroker loses every message its node publishes to a topic with
// prefix, as a broker gap does.
type dropBroker struct {
	broker.Broker
	prefix string
}

func (b *dropBroker) Publish(ctx context.Context, topic string, data []byte) error {
	if strings.HasPrefix(topic, b.prefix) {
		return nil
	}
	return b.Broker.Publish(ctx, topic, data)
}

// TestPromptLostBetweenNodesSentAgain: a prompt a UI sends on node 2 is
// stored there and lost on its way to node 1, which holds the client's
// connection (a broker gap); the client stays connected. Node 1's sweep
// finds it unanswered and sends it, once; answered, it is not sent again.
func TestPromptLostBetweenNodesSentAgain(t *testing.T) {
	t.Parallel()
	const sweep = 300 * time.Millisecond
	br := broker.NewMemory()
	t.Cleanup(func() { _ = br.Close() })
	e := newEnv(t, master.Config{Broker: br, RevokeCheck: sweep})
	n2 := e.node(master.Config{Broker: &dropBroker{Broker: br, prefix: "machine."}})
	ui1 := e.dialUI("node 1")
	ui2 := e.dialUIAt(n2.ui, "node 2")
	c := e.connectClient(onceCaps("m1"), ui1)
	waitFor(t, "node 2 to list the machine online", func() bool { return onlineAt(ui2, "m1") })
	info, _ := startSession(ui1, c)

	m := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{Segments: []protocol.PromptSegment{{Kind: protocol.SegmentText, Text: "across a gap"}}})
	m.SessionID = info.ID
	sent := time.Now()
	ui2.send(m)
	req := nextPrompt(c)
	if req.MessageID != m.MessageID {
		t.Fatalf("the client got prompt %s, want %s", req.MessageID, m.MessageID)
	}
	t.Logf("the prompt lost between nodes reached the client %v after it was sent", time.Since(sent).Round(time.Millisecond))
	c.waitAck(turnStart(c, req, "t1").MessageID)
	time.Sleep(3 * sweep)
	noPromptBefore(ui1, c, info.ID)
}

// TestSweepNotStarvedByOfflineMachines: prompts wait for their client as
// long as it takes, so a cluster can hold more undelivered prompts of
// machines that are offline than one scan lists. The sweep used to list
// the oldest of the whole cluster and keep those of its own clients: past
// maxRedeliver older ones, a prompt lost between nodes was never sent
// again to its connected client.
func TestSweepNotStarvedByOfflineMachines(t *testing.T) {
	t.Parallel()
	const sweep = 300 * time.Millisecond
	br := broker.NewMemory()
	t.Cleanup(func() { _ = br.Close() })
	e := newEnv(t, master.Config{Broker: br, RevokeCheck: sweep})
	ctx := testCtx(t)
	if err := e.st.CreateSession(ctx, store.Session{ID: "offline-s", MachineID: "offline", Epoch: "e"}); err != nil {
		t.Fatal(err)
	}
	old := make([]store.Event, master.MaxRedeliver+1)
	for i := range old {
		old[i] = store.Event{MessageID: protocol.NewID(), Type: protocol.TypePromptRequest, Data: []byte(`{}`), Deliver: true}
	}
	if _, err := e.st.AppendEvents(ctx, "offline-s", old); err != nil {
		t.Fatal(err)
	}
	n2 := e.node(master.Config{Broker: &dropBroker{Broker: br, prefix: "machine."}})
	ui1 := e.dialUI("node 1")
	ui2 := e.dialUIAt(n2.ui, "node 2")
	c := e.connectClient(onceCaps("m1"), ui1)
	waitFor(t, "node 2 to list the machine online", func() bool { return onlineAt(ui2, "m1") })
	info, _ := startSession(ui1, c)
	m := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{Segments: []protocol.PromptSegment{{Kind: protocol.SegmentText, Text: "behind the offline ones"}}})
	m.SessionID = info.ID
	ui2.send(m)
	if req := nextPrompt(c); req.MessageID != m.MessageID {
		t.Fatalf("the client got prompt %s, want %s", req.MessageID, m.MessageID)
	}
}

// TestPromptSentAgainWithItsUploads: a prompt sent again carries each
// upload granted again, and the grant fetches the upload's bytes.
func TestPromptSentAgainWithItsUploads(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(onceCaps("m1"), ui)
	info, _ := startSession(ui, c)
	a := e.upload(info.ID, e.ui, "shot.png", string(testPNG))
	p := ui.send(promptWith(info.ID, protocol.ContextFile{FileURL: "ferry-upload:" + a.ok.UploadID, FileName: "shot.png"}))
	if first := c.next(protocol.TypePromptRequest); first.MessageID != p.MessageID {
		t.Fatalf("the client got %s", first.MessageID)
	}
	c.reconnect(ui)
	again := nextPrompt(c)
	files := again.Payload.(*protocol.PromptRequest).ContextFiles
	id, grant, ok := protocol.ParseUploadURL(files[0].FileURL)
	if again.MessageID != p.MessageID || len(files) != 1 || !ok || id != a.ok.UploadID || grant == "" {
		t.Fatalf("the prompt sent again: %s %+v", again.MessageID, files)
	}
	got, pe := (&attachment.Fetcher{Master: e.wsURL("")}).Fetch(testCtx(t), files)
	if pe != nil || !bytes.Equal(got[0].Data, testPNG) {
		t.Fatalf("fetch with the new grant: %+v", pe)
	}
}

// refusalOf reads ui's next session event and checks it is the stored
// refusal of prompt with code, right after seq after.
func refusalOf(ui *peer, prompt, code string, after uint64) *protocol.Message {
	ui.t.Helper()
	m := events(ui, 1, after)[0]
	r, ok := m.Payload.(*protocol.PromptRefused)
	if m.Type != protocol.TypePromptRefused || !ok || m.ParentID != prompt || r.Code != code || r.Message == "" {
		ui.t.Fatalf("%s: got %s (parent %s) %s, want the refusal of prompt %s with %s", ui.name, m.Type, m.ParentID, describe(m), prompt, code)
	}
	return m
}

// TestRefusalOfPromptSentAgainReachesEveryUI: the UI that sent a prompt is
// gone when the client refuses the copy sent again (its connection died
// before it answered the first). The refusal is stored in the session's
// log: a UI watching the session on another node sees it live, and again
// after subscribing anew (a reload), as does a UI that comes later; the
// refusal answers the prompt, which is not sent again.
func TestRefusalOfPromptSentAgainReachesEveryUI(t *testing.T) {
	t.Parallel()
	br := broker.NewMemory()
	t.Cleanup(func() { _ = br.Close() })
	e := newEnv(t, master.Config{Broker: br})
	n2 := e.node(master.Config{Broker: br})
	ui1 := e.dialUI("node 1")
	c := e.connectClient(onceCaps("m1"), ui1)
	info, _ := startSession(ui1, c)

	watcher := e.dialUIAt(n2.ui, "watcher on node 2")
	waitFor(t, "node 2 to list the machine online", func() bool { return onlineAt(watcher, "m1") })
	sub := subscribe(watcher, info.ID, 0, "")
	events(watcher, int(sub.LastSeq), 0)
	sender := e.dialUIAt(n2.ui, "sender on node 2")
	req := prompt(sender, c, info.ID, "refused when sent again")
	if got := events(watcher, 1, sub.LastSeq)[0]; got.MessageID != req.MessageID {
		t.Fatalf("the watcher got %s %s, want the prompt", got.Type, got.MessageID)
	}
	_ = sender.ws.CloseNow() // the sender is gone (a closed laptop)

	c.reconnect(ui1) // the client read the prompt, and its connection died
	again := nextPrompt(c)
	if again.MessageID != req.MessageID {
		t.Fatalf("sent again: %s, want %s", again.MessageID, req.MessageID)
	}
	c.send(protocol.ErrorMessage(again.MessageID, info.ID, &protocol.Error{Code: protocol.CodeBusy, Message: "the session already runs a turn"}))
	live := refusalOf(watcher, req.MessageID, protocol.CodeBusy, sub.LastSeq+1)
	waitFor(t, "the refusal to answer the prompt", func() bool { return len(e.undelivered()) == 0 })
	if evs := storedEvents(t, e.st, info.ID, protocol.TypePromptRefused); len(evs) != 1 {
		t.Fatalf("the store holds %d refusals, want 1", len(evs))
	}

	// A reload: the replay has it, at the same seq.
	sub = subscribe(watcher, info.ID, 0, "")
	if sub.LastSeq != live.Seq || !sub.Recovered {
		t.Fatalf("subscribed again: %+v, want the history up to seq %d", sub, live.Seq)
	}
	replayed := events(watcher, int(sub.LastSeq), 0)
	if r := replayed[len(replayed)-1]; r.MessageID != live.MessageID || r.ParentID != req.MessageID {
		t.Fatalf("the replay ends with %s %s", r.Type, describe(r))
	}
	// A UI that comes later, on node 1, sees it too.
	later := e.dialUIAt(e.wsURL("/v1/ui"), "later on node 1")
	sub = subscribe(later, info.ID, 0, "")
	if got := events(later, int(sub.LastSeq), 0); got[len(got)-1].MessageID != live.MessageID {
		t.Fatalf("a later UI's replay ends with %s", got[len(got)-1].Type)
	}

	c.reconnect(ui1)
	noPromptBefore(ui1, c, info.ID)
}

// TestRefusalShownToItsSenderOnce: the UI that sent a prompt gets the
// client's refusal as an error answering it (to put the prompt back in
// its box) and the stored refusal once, as every UI of the session does;
// a reload still shows it.
func TestRefusalShownToItsSenderOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(onceCaps("m1"), ui)
	info, _ := startSession(ui, c)
	sub := subscribe(ui, info.ID, 0, "")
	events(ui, int(sub.LastSeq), 0)

	req := prompt(ui, c, info.ID, "refused at once")
	events(ui, 1, sub.LastSeq)
	c.send(protocol.ErrorMessage(req.MessageID, info.ID, &protocol.Error{Code: protocol.CodeBusy, Message: "the session already runs a turn"}))
	var errs, refusals int
	var seq uint64
	for errs+refusals < 2 {
		m := ui.next(protocol.TypeError, protocol.TypePromptRefused)
		if m.ParentID != req.MessageID {
			t.Fatalf("got %s about %s", m.Type, m.ParentID)
		}
		if m.Type == protocol.TypeError {
			errs++
		} else {
			refusals++
			seq = m.Seq
		}
	}
	if errs != 1 || refusals != 1 || seq != sub.LastSeq+2 {
		t.Fatalf("the sender got %d errors and %d refusals (seq %d)", errs, refusals, seq)
	}
	ui.sync() // nothing else came

	// Only a prompt this connection carried, once: an error naming it
	// again, or naming a message the client never got, stores nothing.
	c.send(protocol.ErrorMessage(req.MessageID, info.ID, &protocol.Error{Code: protocol.CodeInternal, Message: "again"}))
	c.send(protocol.ErrorMessage(protocol.NewID(), info.ID, &protocol.Error{Code: protocol.CodeBusy, Message: "forged"}))
	noPromptBefore(ui, c, info.ID) // the client's errors were read before this
	ui.sync()
	if evs := storedEvents(t, e.st, info.ID, protocol.TypePromptRefused); len(evs) != 1 {
		t.Fatalf("the store holds %d refusals, want 1", len(evs))
	}

	sub = subscribe(ui, info.ID, sub.LastSeq+1, info.Epoch)
	refusalOf(ui, req.MessageID, protocol.CodeBusy, sub.FromSeq-1)
}
