package protocol_test

import (
	"errors"
	"testing"

	"github.com/ferry-dev/ferry/protocol"
)

func goldenCaps(t *testing.T) *protocol.Capabilities {
	t.Helper()
	m, err := protocol.Decode(readGolden(t, "session.capabilities"))
	if err != nil {
		t.Fatal(err)
	}
	return m.Payload.(*protocol.Capabilities)
}

func TestCapabilitiesCheck(t *testing.T) {
	full := goldenCaps(t)

	noSearch := goldenCaps(t)
	noSearch.FileReferences = nil

	workspaceOnly := goldenCaps(t)
	workspaceOnly.FileReferences.SearchScopes = []string{"workspace"}

	defaultOnly := goldenCaps(t)
	defaultOnly.Adapters[0].Modes = []string{"default"}
	defaultOnly.Adapters[0].Cancel = false
	defaultOnly.Adapters[0].Compact = false
	defaultOnly.Adapters[0].InputTypes = []string{"text"}

	noCompactType := goldenCaps(t)
	noCompactType.Messages = []string{"control.prompt.request"}

	search := func(scope string) *protocol.Message {
		n := 20
		return protocol.New(protocol.TypeFileSearch, &protocol.FileSearch{QueryID: protocol.NewID(), Scope: scope, MaxResults: &n})
	}
	cases := []struct {
		name  string
		caps  *protocol.Capabilities
		msg   *protocol.Message
		field string // "" = allowed
	}{
		{"search allowed", full, search("global"), ""},
		{"no search block", noSearch, search("workspace"), "type"},
		{"scope not offered", workspaceOnly, search("project"), "payload.scope"},
		{"mode offered", full, protocol.New(protocol.TypeModeSwitch, &protocol.ModeSwitch{Mode: "plan"}), ""},
		{"mode not offered", defaultOnly, protocol.New(protocol.TypeModeSwitch, &protocol.ModeSwitch{Mode: "plan"}), "payload.mode"},
		{"cancel not offered", defaultOnly, protocol.New(protocol.TypePromptCancel, &protocol.PromptCancel{TargetTurnID: "t"}), "type"},
		{"compact not offered", defaultOnly, protocol.New(protocol.TypeSessionCompact, &protocol.SessionCompact{}), "type"},
		{"input type not offered", defaultOnly, protocol.New(protocol.TypePromptRequest, &protocol.PromptRequest{PromptText: "x", InputType: "piped_stdin"}), "payload.input_type"},
		{"type not handled", noCompactType, protocol.New(protocol.TypeSessionCompact, &protocol.SessionCompact{}), "type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.caps.Check(c.msg, "builtin")
			if c.field == "" {
				if err != nil {
					t.Fatalf("want allowed, got %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, protocol.ErrUnsupported) || err.Field != c.field {
				t.Fatalf("want unsupported at %q, got %v", c.field, err)
			}
		})
	}
}

// TestCheckForSession: a session's own capability (agent.capabilities)
// replaces its adapter's declaration for Check, both ways: a mode the
// agent turned out to have is let through, compaction it turned out to
// lack is refused; other adapters and the original are unchanged.
func TestCheckForSession(t *testing.T) {
	caps := goldenCaps(t)
	caps.Adapters[0].Modes = []string{"default"}
	caps.Adapters[0].Compact = true
	sc := caps.Adapters[0]
	sc.Modes = []string{"default", "plan"}
	sc.Compact = false
	sess := caps.ForSession(&sc)
	if e := sess.Check(protocol.New(protocol.TypeModeSwitch, &protocol.ModeSwitch{Mode: "plan"}), sc.ID); e != nil {
		t.Errorf("plan, which the session's agent has: %v", e)
	}
	if e := sess.Check(protocol.New(protocol.TypeSessionCompact, &protocol.SessionCompact{}), sc.ID); e == nil || e.Field != "type" {
		t.Errorf("compact, which the session's agent lacks: %v", e)
	}
	if e := caps.Check(protocol.New(protocol.TypeModeSwitch, &protocol.ModeSwitch{Mode: "plan"}), sc.ID); e == nil {
		t.Error("ForSession changed the adapter's own declaration")
	}
	if caps.ForSession(nil) != caps {
		t.Error("ForSession(nil) is not the capabilities as they are")
	}
	bad := sc
	bad.Attachments = []string{"video"}
	m := protocol.New(protocol.TypeAgentCapabilities, &protocol.AgentCapabilities{Adapter: bad})
	m.SessionID = "s"
	data, err := protocol.Encode(m)
	if err == nil {
		_, err = protocol.Decode(data)
	}
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Field != "payload.adapter.attachments[0]" {
		t.Errorf("an unknown attachment kind: %v", err)
	}
}
