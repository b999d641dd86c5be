package protocol_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/protocol"
)

// TestWorktreeValidation refuses every bad isolation, ship and worktree
// field with invalid_value naming the field.
func TestWorktreeValidation(t *testing.T) {
	iso := func(k string, v any) []byte {
		return mutate(t, "ui.session.start", func(_, p map[string]any) { p["isolation"].(map[string]any)[k] = v })
	}
	openIso := func(k string, v any) []byte {
		return mutate(t, "control.session.open", func(_, p map[string]any) { p["isolation"].(map[string]any)[k] = v })
	}
	ship := func(k string, v any) []byte {
		return mutate(t, "control.worktree.ship", func(_, p map[string]any) { p[k] = v })
	}
	cases := []struct {
		name  string
		input []byte
		field string
	}{
		{"name upper case", iso("name", "Fix"), "payload.isolation.name"},
		{"name slash", iso("name", "a/b"), "payload.isolation.name"},
		{"name dot dot", iso("name", ".."), "payload.isolation.name"},
		{"name leading dash", iso("name", "-rf"), "payload.isolation.name"},
		{"name double dash", iso("name", "a--b"), "payload.isolation.name"},
		{"name too long", iso("name", strings.Repeat("a", 41)), "payload.isolation.name"},
		{"group too long", iso("group", strings.Repeat("a", 65)), "payload.isolation.group"},
		{"group space", iso("group", "a b"), "payload.isolation.group"},
		{"base option", iso("base", "--upload-pack=x"), "payload.isolation.base"},
		{"base dotdot", iso("base", "main..x"), "payload.isolation.base"},
		{"base lock", iso("base", "main.lock"), "payload.isolation.base"},
		{"base control", iso("base", "ma\x01in"), "payload.isolation.base"},
		{"base colon", iso("base", "HEAD:x"), "payload.isolation.base"},
		{"open base option", openIso("base", "-x"), "payload.isolation.base"},
		{"open name", openIso("name", "A"), "payload.isolation.name"},
		{"strategy", ship("strategy", "rebase"), "payload.strategy"},
		{"remote option", ship("remote", "--mirror"), "payload.remote"},
		{"remote space", ship("remote", "a b"), "payload.remote"},
		{"message too big", ship("message", strings.Repeat("é", 40<<10)), "payload.message"},
		{"status setup", mutate(t, "session.worktree.status", func(_, p map[string]any) { at(p, "worktree")["setup"] = "maybe" }), "payload.worktree.setup"},
		{"diff status", mutate(t, "session.worktree.diff", func(_, p map[string]any) { at(p, "files", 0)["status"] = "typechange" }), "payload.files[0].status"},
		{"conflict code", mutate(t, "session.worktree.conflict", func(_, p map[string]any) { p["code"] = "busy" }), "payload.code"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := protocol.Decode(c.input)
			var pe *protocol.Error
			if !errors.As(err, &pe) || pe.Code != protocol.CodeInvalidValue || !strings.HasPrefix(pe.Field, c.field) {
				t.Fatalf("got %v, want invalid_value at %s", err, c.field)
			}
		})
	}
}

func TestWorktreeShipDefaults(t *testing.T) {
	raw := mutate(t, "control.worktree.ship", func(_, p map[string]any) {
		delete(p, "strategy")
		delete(p, "remote")
	})
	m, err := protocol.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	p := m.Payload.(*protocol.WorktreeShip)
	if p.Strategy != "squash" || p.Remote != "origin" {
		t.Fatalf("defaults: strategy %q remote %q", p.Strategy, p.Remote)
	}
}

func TestWorktreeNames(t *testing.T) {
	for _, n := range []string{"a", "fix-1", strings.Repeat("a", 40)} {
		if !protocol.ValidWorktreeName(n) {
			t.Errorf("%q refused", n)
		}
	}
	for _, n := range []string{"", "A", "a-", "-a", "a--b", "a_b", strings.Repeat("a", 41)} {
		if protocol.ValidWorktreeName(n) {
			t.Errorf("%q accepted", n)
		}
	}
	if protocol.SentBy(protocol.TypeWorktreeRemove, protocol.RoleUI) {
		t.Error("a UI may not send control.worktree.remove")
	}
	if !protocol.SentBy(protocol.TypeWorktreeShip, protocol.RoleUI) || protocol.SentBy(protocol.TypeWorktreeShip, protocol.RoleClient) {
		t.Error("control.worktree.ship: UI and master only")
	}
}
