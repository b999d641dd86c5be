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
