package acp

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/acp/acppeer"
	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/protocol"
)

// capsLog collects what a session reports through
// SessionConfig.Capabilities.
type capsLog struct {
	mu  sync.Mutex
	got []protocol.AdapterCapability
}

func (l *capsLog) report(c protocol.AdapterCapability) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, c)
}

func (l *capsLog) last(t *testing.T) protocol.AdapterCapability {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.got) == 0 {
		t.Fatal("the session reported no capability")
	}
	return l.got[len(l.got)-1]
}

// openWithCaps opens a session of p whose reports go to l.
func (p *peerEnv) openWithCaps(t *testing.T, l *capsLog) *session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := adaptertest.Open(t, ctx, p.a, adapter.SessionConfig{SessionID: protocol.NewID(), Workspace: protocol.Workspace{ID: "w", Name: "w", Path: p.ws},
		Mode: protocol.ModeDefault, Capabilities: l.report})
	return s.(*session)
}

// TestCapabilityPromisesNoAgentFeature: before any agent runs, the
// adapter declares only what every ACP agent offers: default mode, no
// compaction, text attachments.
func TestCapabilityPromisesNoAgentFeature(t *testing.T) {
	t.Parallel()
	a, err := New(Config{Command: []string{"/opt/agents/gemini", "--experimental-acp"}})
	if err != nil {
		t.Fatal(err)
	}
	c := a.Capability()
	if !slices.Equal(c.Modes, []string{protocol.ModeDefault}) || c.Compact || !slices.Equal(c.Attachments, []string{protocol.AttachText}) {
		t.Fatalf("capability modes %v compact %v attachments %v: it promises what an agent may lack", c.Modes, c.Compact, c.Attachments)
	}
}

// TestCapabilitiesFollowTheAgent: once the agent answered initialize and
// session/new, the session reports what it really offers: the modes it
// has (plan here, no review), the attachment kinds its prompt capabilities
// take, and compaction once it lists a compact command; every mode
// reported switches, and compaction is not refused.
func TestCapabilitiesFollowTheAgent(t *testing.T) {
	t.Parallel()
	modes := map[string]any{"modes": map[string]any{"currentModeId": "code", "availableModes": []any{
		map[string]any{"id": "code", "name": "Code"}, map[string]any{"id": "architect", "name": "Plan"}}}}
	compact := step{Update: map[string]any{"sessionUpdate": "available_commands_update", "availableCommands": []any{map[string]any{"name": "compact", "description": "compact"}}}}
	p := newPeer(t, acppeer.Script{Init: promptCaps(true, false), Session: modes, Turns: [][]step{{compact, {Text: "ok"}}, {{Text: "compacted"}}}})
	var l capsLog
	s := p.openWithCaps(t, &l)
	c := l.last(t)
	if c.ID != p.a.ID() || !slices.Equal(c.Modes, []string{protocol.ModeDefault, protocol.ModePlan}) || c.Compact ||
		!slices.Equal(c.Attachments, []string{protocol.AttachText, protocol.AttachImage}) {
		t.Fatalf("after the handshake: %+v", c)
	}
	for _, m := range c.Modes {
		if err := s.SetMode(m, nil); err != nil {
			t.Errorf("SetMode(%s), a reported mode: %v", m, err)
		}
	}
	if _, res, err := run(t, s, turn("hello")); err != nil || res.StopReason != protocol.StopEndTurn {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if c = l.last(t); !c.Compact {
		t.Fatalf("after the agent listed /compact: compact %v", c.Compact)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Compact(ctx, nil); err != nil {
		t.Fatalf("Compact, reported: %v", err)
	}
}

// TestCapabilitiesOfAPlainAgent: an agent with no modes, no commands and
// no prompt capabilities is reported as default mode only, no compaction,
// text attachments only; a switch to default, the one mode reported, works.
func TestCapabilitiesOfAPlainAgent(t *testing.T) {
	t.Parallel()
	p := newPeer(t, acppeer.Script{})
	var l capsLog
	s := p.openWithCaps(t, &l)
	c := l.last(t)
	if !slices.Equal(c.Modes, []string{protocol.ModeDefault}) || c.Compact || !slices.Equal(c.Attachments, []string{protocol.AttachText}) {
		t.Fatalf("reported %+v", c)
	}
	if err := s.SetMode(protocol.ModeDefault, nil); err != nil {
		t.Fatalf("SetMode(default) = %v", err)
	}
}

// TestModesFromConfigOptions: an agent that offers its modes as a session
// config option of category mode (opencode: configOptions, no modes) has
// them reported and switched like ACP modes: with session/set_config_option
// on that option. Its own switch (config_option_update) is followed like a
// current_mode_update.
func TestModesFromConfigOptions(t *testing.T) {
	t.Parallel()
	options := func(current string) []any {
		return []any{
			map[string]any{"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": "fake/m",
				"options": []any{map[string]any{"value": "fake/m", "name": "M"}}},
			map[string]any{"id": "mode", "name": "Session Mode", "category": "mode", "type": "select", "currentValue": current,
				"options": []any{map[string]any{"value": "build", "name": "build"}, map[string]any{"value": "plan", "name": "plan"}}},
		}
	}
	p := newPeer(t, acppeer.Script{Session: map[string]any{"configOptions": options("build")}, Turns: [][]step{
		{{Update: map[string]any{"sessionUpdate": "config_option_update", "configOptions": options("plan")}}, {Text: "planning"}},
	}})
	var l capsLog
	s := p.openWithCaps(t, &l)
	if c := l.last(t); !slices.Equal(c.Modes, []string{protocol.ModeDefault, protocol.ModePlan}) {
		t.Fatalf("reported modes %v, want default and plan", c.Modes)
	}
	for _, m := range []string{protocol.ModePlan, protocol.ModeDefault} {
		if err := s.SetMode(m, nil); err != nil {
			t.Fatalf("SetMode(%s): %v", m, err)
		}
	}
	var values []any
	for _, params := range p.receivedMethod(t, "session/set_config_option") {
		if params["configId"] != "mode" || params["sessionId"] != acppeer.SessionID {
			t.Errorf("session/set_config_option %v", params)
		}
		values = append(values, params["value"])
	}
	if !slices.Equal(values, []any{"plan", "build"}) {
		t.Fatalf("set the mode option to %v, want plan then build", values)
	}
	rec, _, err := run(t, s, turn("make a plan"))
	if err != nil {
		t.Fatal(err)
	}
	var changed []string
	for _, e := range rec.OfType(protocol.TypeModeChanged) {
		changed = append(changed, e.(*protocol.ModeChanged).Mode)
	}
	if !slices.Equal(changed, []string{protocol.ModePlan}) || s.currentMode() != protocol.ModePlan {
		t.Fatalf("mode changes %v, mode now %s; want the agent's switch to plan followed", changed, s.currentMode())
	}
}
