package cli_test

import (
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/protocol"
)

// promptTurn sends text as sessionID's prompt and reads to the turn's end,
// keeping the renames (master.session.changed) seen on the way.
func (c *uiConn) promptTurn(sessionID, text string, renames *[]protocol.SessionInfo) {
	c.t.Helper()
	p := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{Segments: []protocol.PromptSegment{{Kind: protocol.SegmentText, Text: text}}})
	p.SessionID = sessionID
	c.send(p)
	for {
		msg := c.next(func(m *protocol.Message) bool { return m.SessionID == sessionID })
		switch p := msg.Payload.(type) {
		case *protocol.SessionChanged:
			if p.Change == protocol.ChangeRenamed {
				*renames = append(*renames, p.Session)
			}
		case *protocol.AgentError:
			c.t.Fatalf("agent error %+v", p)
		case *protocol.TextDone:
			return
		}
	}
}

// startSubscribed starts a session of ferry's agent and subscribes to it.
func (c *uiConn) startSubscribed(m protocol.Machine) string {
	c.t.Helper()
	r := c.request(protocol.New(protocol.TypeSessionStart, &protocol.SessionStart{MachineID: m.ID, WorkspaceID: m.Workspaces[0].ID, Adapter: "builtin"}))
	ans, ok := r.Payload.(*protocol.SessionAnswer)
	if !ok {
		c.t.Fatalf("session start answered %s: %+v", r.Type, r.Payload)
	}
	sub := protocol.New(protocol.TypeSessionSubscribe, &protocol.SessionSubscribe{})
	sub.SessionID = ans.Session.ID
	if r := c.request(sub); r.Type != protocol.TypeSubscribed {
		c.t.Fatalf("subscribe answered %s: %+v", r.Type, r.Payload)
	}
	return ans.Session.ID
}

// TestUpBuiltinTitles: with the defaults of a real `ferry up` and a model
// provider, a session of ferry's agent is named by the model after its
// first answered turn (title_source agent, replacing the one the master
// took from the prompt), with one bounded, tool-less request; a session a
// person renamed keeps the person's name.
func TestUpBuiltinTitles(t *testing.T) {
	t.Parallel()
	srv := fake.New(t)
	u := startUp(t, map[string]string{"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": srv.URL()},
		"--workspace", t.TempDir(), "--agent", "builtin")
	c := u.dial(t, u.login(t))
	m := c.machine()

	// Named by the model.
	srv.Script(fake.Reply{Text: []string{"The login bug is fixed."}})
	named := c.startSubscribed(m)
	var renames []protocol.SessionInfo
	c.promptTurn(named, "please fix the login bug", &renames)
	for len(renames) == 0 || renames[len(renames)-1].TitleSource != "agent" {
		msg := c.next(func(m *protocol.Message) bool { return m.SessionID == named && m.Type == protocol.TypeSessionChanged })
		if p := msg.Payload.(*protocol.SessionChanged); p.Change == protocol.ChangeRenamed {
			renames = append(renames, p.Session)
		}
	}
	if got := renames[len(renames)-1]; got.Title != fake.DefaultTitle {
		t.Fatalf("the agent's title is %q, want the model's %q", got.Title, fake.DefaultTitle)
	}
	titleReqs := srv.TitleRequests()
	if len(titleReqs) != 1 || titleReqs[0].Body["max_tokens"] != float64(40) || len(titleReqs[0].ToolNames()) != 0 {
		t.Fatalf("%d title requests (%v), want one of 40 tokens without tools", len(titleReqs), titleReqs)
	}

	// A person's name stays: renamed before the first prompt, the model
	// is still asked, but its title changes nothing.
	srv.Script(fake.Reply{Text: []string{"Done."}}, fake.Reply{Text: []string{"Done again."}})
	kept := c.startSubscribed(m)
	rn := protocol.New(protocol.TypeSessionRename, &protocol.SessionRename{Title: "Keep my name"})
	rn.SessionID = kept
	if r := c.request(rn); r.Type == protocol.TypeError {
		t.Fatalf("rename answered %+v", r.Payload)
	}
	renames = nil
	c.promptTurn(kept, "tidy the readme", &renames)
	// The agent's title reaches the master as a stored event: wait for
	// it, then a second turn, stored after it in order, proves the master
	// has handled it.
	c.next(func(m *protocol.Message) bool { return m.SessionID == kept && m.Type == protocol.TypeAgentTitle })
	c.promptTurn(kept, "and the changelog", &renames)
	for _, r := range renames {
		if r.Title != "Keep my name" {
			t.Fatalf("a person's name was replaced: %+v", r)
		}
	}
	list := c.request(protocol.New(protocol.TypeSessionsList, &protocol.SessionsList{}))
	ss, ok := list.Payload.(*protocol.Sessions)
	if !ok {
		t.Fatalf("sessions list answered %s: %+v", list.Type, list.Payload)
	}
	titles := map[string]string{}
	for _, s := range ss.Sessions {
		titles[s.ID] = s.Title + " (" + s.TitleSource + ")"
	}
	if titles[kept] != "Keep my name (user)" || titles[named] != fake.DefaultTitle+" (agent)" {
		t.Fatalf("titles %v", titles)
	}
	if n := len(srv.TitleRequests()); n != 2 || strings.Contains(u.errb.String(), "test-key") {
		t.Fatalf("%d title requests after two sessions, want 2 (stderr %q)", n, u.errb.String())
	}
}
