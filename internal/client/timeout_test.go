package client

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/protocol"
)

// askAdapter's turns ask one single_select question with the timeout_ms
// the prompt text gives (0: none of its own) and end with the answer
// they got: its value, or "denied" for none.
type askAdapter struct {
	mu      sync.Mutex
	waiting map[string]chan *protocol.InteractionResponse
}

func (a *askAdapter) Capability() protocol.AdapterCapability {
	return protocol.AdapterCapability{ID: "ask", Name: "Ask", Modes: []string{protocol.ModeDefault},
		InputTypes: []string{protocol.InputText}, Interactions: []string{protocol.InteractionSingleSelect}, FileTokens: "literal"}
}

func (a *askAdapter) Open(context.Context, adapter.SessionConfig) (adapter.Session, error) {
	return a, nil
}

func (a *askAdapter) Run(ctx context.Context, turn adapter.Turn, emit adapter.Emit) (adapter.Result, error) {
	ms, err := strconv.Atoi(turn.Request.PromptText)
	if err != nil {
		return adapter.Result{}, err
	}
	id := protocol.NewID()
	ch := make(chan *protocol.InteractionResponse, 1)
	a.mu.Lock()
	a.waiting[id] = ch
	a.mu.Unlock()
	if err := emit(ctx, protocol.TypeInteractionRequest, &protocol.InteractionRequest{
		InteractionID: id, TurnID: turn.ID, Kind: protocol.InteractionSingleSelect, Title: "Which?",
		Options: []protocol.Option{{Value: "a", Label: "A"}, {Value: "b", Label: "B"}}, DefaultValue: "b", TimeoutMS: ms,
	}); err != nil {
		return adapter.Result{}, err
	}
	select {
	case <-ctx.Done():
		return adapter.Result{}, ctx.Err()
	case r := <-ch:
		if r == nil {
			return adapter.Result{Text: "denied", StopReason: "end_turn"}, nil
		}
		return adapter.Result{Text: r.SelectedValue.Values[0], StopReason: "end_turn"}, nil
	}
}

func (a *askAdapter) Answer(id string, resp *protocol.InteractionResponse) error {
	a.mu.Lock()
	ch, ok := a.waiting[id]
	delete(a.waiting, id)
	a.mu.Unlock()
	if !ok {
		return adapter.ErrUnknownInteraction
	}
	ch <- resp
	return nil
}

func (a *askAdapter) SetMode(string, json.RawMessage) error { return nil }
func (a *askAdapter) Compact(context.Context, *protocol.SessionCompact) (*protocol.CompactionDone, error) {
	return nil, nil
}
func (a *askAdapter) Close() error { return nil }

// TestPermissionTimeout: the client fills in the session's timeout on a
// question that has none, keeps an adapter's own, hands the adapter the
// answer a control.interaction.timeout carries (nil when it carries none),
// and takes the session's own timeout from control.session.settings and
// control.session.open.
func TestPermissionTimeout(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	ask := &askAdapter{waiting: map[string]chan *protocol.InteractionResponse{}}
	e := m.start(t, withAdapters(ask), func(c *Config) { c.PermissionTimeout = 2 * time.Minute })
	fc, _ := m.accept(ctx)
	opened := e.open(ctx, fc, "s1", "ask").Payload.(*protocol.SessionOpened)
	if opened.Settings == nil || *opened.Settings != (protocol.Settings{PermissionTimeoutMS: 120000}) {
		t.Fatalf("session.opened settings %+v, want the client's default", opened.Settings)
	}

	// turn prompts with the adapter's own timeout, checks the timeout_ms
	// the master sees, times it out with tm and returns the turn's text.
	turn := func(own, want int, tm *protocol.InteractionTimeout) string {
		t.Helper()
		fc.send(prompt("s1", strconv.Itoa(own)))
		fc.expect(ctx, protocol.TypeTurnStarted)
		req := fc.expect(ctx, protocol.TypeInteractionRequest).Payload.(*protocol.InteractionRequest)
		if req.TimeoutMS != want {
			t.Fatalf("timeout_ms %d, want %d", req.TimeoutMS, want)
		}
		tm.InteractionID = req.InteractionID
		fc.send(control("s1", protocol.TypeInteractionTimeout, tm))
		msgs := fc.until(ctx, isType(protocol.TypeTextDone))
		return msgs[len(msgs)-1].Payload.(*protocol.TextDone).Text
	}
	b := protocol.Single("b")
	if got := turn(0, 120000, &protocol.InteractionTimeout{SelectedValue: &b}); got != "b" {
		t.Errorf("timed out with the default b: the adapter got %q", got)
	}
	if got := turn(5000, 5000, &protocol.InteractionTimeout{}); got != "denied" {
		t.Errorf("timed out with no answer: the adapter got %q", got)
	}

	set := func(ms *int, want protocol.Settings) {
		t.Helper()
		m := control("s1", protocol.TypeSessionSettings, &protocol.SessionSettings{PermissionTimeoutMS: ms})
		fc.send(m)
		got := fc.expect(ctx, protocol.TypeSettings)
		if got.ParentID != m.MessageID || *got.Payload.(*protocol.Settings) != want {
			t.Fatalf("session.settings %+v answering %s, want %+v", got.Payload, got.ParentID, want)
		}
	}
	ms := 30000
	set(&ms, protocol.Settings{PermissionTimeoutMS: 30000, PermissionTimeoutSet: true})
	if got := turn(0, 30000, &protocol.InteractionTimeout{SelectedValue: &b}); got != "b" {
		t.Errorf("the adapter got %q", got)
	}
	zero := 0
	set(&zero, protocol.Settings{PermissionTimeoutMS: 0, PermissionTimeoutSet: true})
	turn(0, 0, &protocol.InteractionTimeout{})
	set(nil, protocol.Settings{PermissionTimeoutMS: 120000})

	// A repeated control.session.open carries the master's record.
	open := control("s1", protocol.TypeSessionOpen, &protocol.SessionOpen{WorkspaceID: e.c.Workspaces()[0].ID, Adapter: "ask", PermissionTimeoutMS: &ms})
	fc.send(open)
	if got := fc.expect(ctx, protocol.TypeSessionOpened).Payload.(*protocol.SessionOpened).Settings; *got != (protocol.Settings{PermissionTimeoutMS: 30000, PermissionTimeoutSet: true}) {
		t.Fatalf("reopened with %+v", got)
	}
	turn(0, 30000, &protocol.InteractionTimeout{})
}

// TestPermissionAdvertisesDeny: a permission an adapter asks without a
// default_value (echo's, ACP's) reaches the master advertising deny, the
// answer its timeout applies, like ferry's agent and Claude Code's
// permissions; the timeout's deny reaches the adapter.
func TestPermissionAdvertisesDeny(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	e := m.start(t, func(c *Config) { c.PermissionTimeout = time.Minute })
	fc, _ := m.accept(ctx)
	e.open(ctx, fc, "s1", "echo")
	fc.send(prompt("s1", "ask: may I?"))
	fc.expect(ctx, protocol.TypeTurnStarted)
	req := fc.expect(ctx, protocol.TypeInteractionRequest).Payload.(*protocol.InteractionRequest)
	if req.Kind != protocol.InteractionPermission || req.DefaultValue != protocol.Deny || req.TimeoutMS != 60000 {
		t.Fatalf("request %+v, want a permission advertising deny with the session's timeout", req)
	}
	ans := req.TimeoutAnswer()
	if ans == nil {
		t.Fatal("no timeout answer")
	}
	fc.send(control("s1", protocol.TypeInteractionTimeout, &protocol.InteractionTimeout{InteractionID: req.InteractionID, SelectedValue: &ans.SelectedValue}))
	msgs := fc.until(ctx, isType(protocol.TypeTextDone))
	if got := msgs[len(msgs)-1].Payload.(*protocol.TextDone).Text; got != "denied" {
		t.Fatalf("the turn ended with %q, want denied", got)
	}
}
