package client

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/echo"
	"github.com/ferry-dev/ferry/protocol"
)

// ratioless is an adapter that compacts but cannot aim at a ratio.
type ratioless struct{ gateAdapter }

func (r *ratioless) Capability() protocol.AdapterCapability {
	c := r.gateAdapter.Capability()
	c.ID, c.Name = "ratioless", "Ratioless"
	return c
}

func (r *ratioless) Open(context.Context, adapter.SessionConfig) (adapter.Session, error) {
	return &ratiolessSession{caps: r.Capability()}, nil
}

type ratiolessSession struct {
	gateSession
	caps protocol.AdapterCapability
}

func (s *ratiolessSession) Compact(_ context.Context, req *protocol.SessionCompact) (*protocol.CompactionDone, error) {
	if err := adapter.CheckCompact(s.caps, req, ""); err != nil {
		return nil, err
	}
	return &protocol.CompactionDone{}, nil
}

// A setting the adapter does not honour is refused with a coded
// unsupported naming it: a prompt's turn ends with one agent.error and one
// agent.text.done (stop reason error); a mode switch's config and a
// compaction's ratio get an error naming the field, and nothing changes.
func TestUnhonouredSettingsAreRefused(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	e := m.start(t, withAdapters(echo.New(echo.WithDelay(0)), &ratioless{gateAdapter: *newGate(0)}))
	fc, _ := m.accept(ctx)
	e.open(ctx, fc, "s1", "echo")

	p := prompt("s1", "hello")
	three := 3
	p.Payload.(*protocol.PromptRequest).ConfigOverrides = &protocol.ConfigOverrides{MaxTurns: &three}
	fc.send(p)
	msgs := fc.until(ctx, isType(protocol.TypeTextDone))
	var types []string
	for _, m := range msgs {
		types = append(types, m.Type)
	}
	if strings.Join(types, ",") != "agent.turn.started,agent.error,agent.text.done" {
		t.Fatalf("events %v", types)
	}
	if ae := msgs[1].Payload.(*protocol.AgentError); ae.Code != protocol.CodeUnsupported || !strings.Contains(ae.Message, "payload.config_overrides.max_turns") {
		t.Errorf("agent.error %+v", ae)
	}
	if d := msgs[2].Payload.(*protocol.TextDone); d.StopReason != "error" || d.IsCancelled {
		t.Errorf("text.done %+v", d)
	}

	sw := control("s1", protocol.TypeModeSwitch, &protocol.ModeSwitch{Mode: protocol.ModePlan, Config: json.RawMessage(`{"depth":2}`)})
	fc.send(sw)
	if got := fc.errorFor(ctx, sw.MessageID); got.Code != protocol.CodeUnsupported || got.Field != "payload.config" {
		t.Errorf("mode switch with a config: %+v", got)
	}
	fc.send(prompt("s1", "still default?"))
	if st := fc.expect(ctx, protocol.TypeTurnStarted).Payload.(*protocol.TurnStarted); st.Mode != protocol.ModeDefault {
		t.Errorf("the refused switch changed the mode to %s", st.Mode)
	}
	fc.until(ctx, isType(protocol.TypeTextDone))

	e.open(ctx, fc, "s2", "ratioless")
	half := 0.5
	cp := control("s2", protocol.TypeSessionCompact, &protocol.SessionCompact{TargetTokenRatio: &half})
	fc.send(cp)
	if got := fc.errorFor(ctx, cp.MessageID); got.Code != protocol.CodeUnsupported || got.Field != "payload.target_token_ratio" {
		t.Errorf("compaction with a ratio: %+v", got)
	}
}
