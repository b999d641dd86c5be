package client

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/protocol"
)

// telling is an adapter whose sessions say what their agent really
// offers, as an ACP agent's do: its declaration promises default mode
// and compaction, and each session reports plan mode and no compaction.
type telling struct{ gateAdapter }

func (a *telling) Capability() protocol.AdapterCapability {
	c := a.gateAdapter.Capability()
	c.ID, c.Name = "telling", "Telling"
	return c
}

func (a *telling) Open(_ context.Context, cfg adapter.SessionConfig) (adapter.Session, error) {
	c := a.Capability()
	c.ID = "whatever" // the client takes the session's adapter id, not this
	c.Modes = []string{protocol.ModeDefault, protocol.ModePlan}
	c.Compact = false
	cfg.Capabilities(c)
	cfg.Capabilities(c) // the same again is not sent twice
	return &gateSession{g: &a.gateAdapter}, nil
}

// TestSessionCapabilitiesReported: what a session's agent says it offers
// (adapter.SessionConfig.Capabilities) goes to the master as
// agent.capabilities before session.opened, once, under the session's
// adapter id, and the client holds the session to it: the plan mode the
// adapter never declared switches, the compaction it declared is refused.
func TestSessionCapabilitiesReported(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	e := m.start(t, withAdapters(&telling{gateAdapter: *newGate(0)}))
	fc, _ := m.accept(ctx)
	open := protocol.New(protocol.TypeSessionOpen, &protocol.SessionOpen{WorkspaceID: e.c.Workspaces()[0].ID, Adapter: "telling"})
	open.SessionID = "s1"
	fc.send(open)
	msgs := fc.until(ctx, isType(protocol.TypeSessionOpened))
	var reports []*protocol.AgentCapabilities
	for _, m := range msgs {
		if ac, ok := m.Payload.(*protocol.AgentCapabilities); ok {
			reports = append(reports, ac)
			if m.SessionID != "s1" {
				t.Errorf("agent.capabilities for session %q", m.SessionID)
			}
		}
	}
	if len(reports) != 1 || reports[0].Adapter.ID != "telling" || !slices.Equal(reports[0].Adapter.Modes, []string{"default", "plan"}) || reports[0].Adapter.Compact {
		b, _ := json.Marshal(reports)
		t.Fatalf("agent.capabilities before session.opened: %s", b)
	}

	sw := control("s1", protocol.TypeModeSwitch, &protocol.ModeSwitch{Mode: protocol.ModePlan})
	fc.send(sw)
	if got := fc.expect(ctx, protocol.TypeModeChanged); got.ParentID != sw.MessageID {
		t.Fatalf("mode.changed %+v", got)
	}
	cp := control("s1", protocol.TypeSessionCompact, &protocol.SessionCompact{})
	fc.send(cp)
	if got := fc.errorFor(ctx, cp.MessageID); got.Code != protocol.CodeUnsupported || got.Field != "type" {
		t.Fatalf("compaction the session's agent lacks: %+v", got)
	}
}
