package cli_test

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/protocol"
)

// promptTurn sends text as sessionID's prompt and reads to the turn's end,
// keeping the renames (master.session.changed) seen on the way. It returns
// the types of the session's messages read.
func (c *uiConn) promptTurn(sessionID, text string, renames *[]protocol.SessionInfo) map[string]bool {
	c.t.Helper()
	p := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{Segments: []protocol.PromptSegment{{Kind: protocol.SegmentText, Text: text}}})
	p.SessionID = sessionID
	c.send(p)
	seen := map[string]bool{}
	for {
		msg := c.next(func(m *protocol.Message) bool { return m.SessionID == sessionID })
		seen[msg.Type] = true
		switch p := msg.Payload.(type) {
		case *protocol.SessionChanged:
			if p.Change == protocol.ChangeRenamed {
				*renames = append(*renames, p.Session)
			}
		case *protocol.AgentError:
			c.t.Fatalf("agent error %+v", p)
		case *protocol.TextDone:
			return seen
		}
	}
}

// startSubscribed starts a session of ferry's agent and subscribes to it.
func (c *uiConn) startSubscribed(m protocol.Machine) string {
	c.t.Helper()
	return c.startSubscribedWith(m, "builtin")
}

// startSubscribedWith starts a session of adapterID and subscribes to it.
func (c *uiConn) startSubscribedWith(m protocol.Machine, adapterID string) string {
	c.t.Helper()
	r := c.request(protocol.New(protocol.TypeSessionStart, &protocol.SessionStart{MachineID: m.ID, WorkspaceID: m.Workspaces[0].ID, Adapter: adapterID}))
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
	seen := c.promptTurn(kept, "tidy the readme", &renames)
	// The agent's title reaches the master as a stored event: wait for
	// it, then a second turn, stored after it in order, proves the master
	// has handled it. The title is asked for beside the turn's end, so it
	// may come before text.done.
	if !seen[protocol.TypeAgentTitle] {
		c.next(func(m *protocol.Message) bool { return m.SessionID == kept && m.Type == protocol.TypeAgentTitle })
	}
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

// TestUpClaudeCodeTitles: a Claude Code session under a real `ferry up`,
// with the real CLI against the fake model, is named by Claude Code's
// model after its first answered turn (agent.title, title_source agent);
// when that title call fails (the provider answers 500) the turn still
// ends normally and the session keeps the title the master took from the
// prompt. It needs the CLI (FERRY_TEST_CLAUDE) and sets the environment
// the CLI inherits, so it does not run in parallel.
func TestUpClaudeCodeTitles(t *testing.T) {
	bin := os.Getenv("FERRY_TEST_CLAUDE")
	if bin == "" {
		t.Skip("set FERRY_TEST_CLAUDE to a claude binary: npm install @anthropic-ai/claude-code@2.1.332")
	}
	srv := fake.New(t)
	srv.Route(func(r fake.Request) (fake.Reply, bool) {
		switch {
		case r.IsTitle():
			return fake.Reply{}, false // the fake's title replies
		case len(r.ToolNames()) == 0:
			return fake.Reply{Text: []string{"side"}}, true // other side calls
		}
		return fake.Reply{Text: []string{"Done."}}, true
	})
	t.Setenv("ANTHROPIC_BASE_URL", srv.URL())
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-fake")
	t.Setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
	t.Setenv("DISABLE_TELEMETRY", "1")
	t.Setenv("HOME", t.TempDir())
	u := startUp(t, nil, "--workspace", t.TempDir(), "--agent", "claude-code:"+bin)
	c := u.dial(t, u.login(t))
	m := c.machine()

	// Named by Claude Code's model.
	named := c.startSubscribedWith(m, "claude-code")
	var renames []protocol.SessionInfo
	c.promptTurn(named, "please fix the login bug in auth.go", &renames)
	title := c.next(func(m *protocol.Message) bool { return m.SessionID == named && m.Type == protocol.TypeAgentTitle })
	if got := title.Payload.(*protocol.AgentTitle).Title; got != fake.DefaultTitle {
		t.Fatalf("agent.title %q, want the model's %q", got, fake.DefaultTitle)
	}
	for len(renames) == 0 || renames[len(renames)-1].TitleSource != "agent" {
		msg := c.next(func(m *protocol.Message) bool { return m.SessionID == named && m.Type == protocol.TypeSessionChanged })
		if p := msg.Payload.(*protocol.SessionChanged); p.Change == protocol.ChangeRenamed {
			renames = append(renames, p.Session)
		}
	}
	if got := renames[len(renames)-1]; got.Title != fake.DefaultTitle {
		t.Fatalf("the agent's title is %q, want the model's %q", got.Title, fake.DefaultTitle)
	}

	// The title call fails: the turn ends normally, the prompt's title
	// stays.
	srv.Script(fake.Times(3, fake.Reply{Title: true, Fail: &fake.Failure{Status: http.StatusInternalServerError,
		Header: map[string]string{"x-should-retry": "false"}}})...)
	kept := c.startSubscribedWith(m, "claude-code")
	renames = nil
	c.promptTurn(kept, "tidy the readme file", &renames)
	// The client's log says the title call came to nothing; a second
	// turn, stored after anything it led to, proves the master saw it.
	for deadline := time.Now().Add(time.Minute); !strings.Contains(u.errb.String(), "no title from Claude Code"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the log does not say why the second session has no model title:\n%s", u.errb.String())
		}
	}
	if n := len(srv.TitleRequests()); n < 2 {
		t.Fatalf("%d title requests, want the second session's too", n)
	}
	c.promptTurn(kept, "and the changelog too", &renames)
	for _, r := range renames {
		if r.TitleSource == "agent" {
			t.Fatalf("a failed title call renamed the session: %+v", r)
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
	if titles[named] != fake.DefaultTitle+" (agent)" || !strings.HasSuffix(titles[kept], "(prompt)") || !strings.Contains(strings.ToLower(titles[kept]), "readme") {
		t.Fatalf("titles %v", titles)
	}
}
