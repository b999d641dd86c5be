package e2e_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/builtin"
	"github.com/ferry-dev/ferry/internal/adapter/claudecode"
	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/client"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/llm/provider"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// denyWithNote runs one prompt in sess, denying every permission asked
// with note, to the turn's end, and returns the turn's events.
func denyWithNote(t *testing.T, u *ui, sessionID, prompt, note string) *events {
	t.Helper()
	u.prompt(sessionID, text(prompt))
	asked := 0
	ev := u.collect(sessionID, func(m *protocol.Message) bool {
		switch p := m.Payload.(type) {
		case *protocol.InteractionRequest:
			asked++
			a := protocol.New(protocol.TypeInteractionResponse, &protocol.InteractionResponse{
				InteractionID: p.InteractionID, SelectedValue: protocol.Single(protocol.Deny), Note: note})
			a.SessionID = sessionID
			u.send(a)
		case *protocol.TextDone:
			return true
		}
		return false
	})
	if asked == 0 {
		t.Fatal("the agent asked for no permission")
	}
	return ev
}

// toolResultWith reports whether a model request sent a tool_result for
// toolUseID whose text holds want.
func toolResultWith(srv *fake.Server, toolUseID, want string) bool {
	for _, r := range srv.Requests() {
		for _, m := range r.Messages() {
			blocks, _ := m["content"].([]any)
			for _, b := range blocks {
				bm, _ := b.(map[string]any)
				if bm["type"] != "tool_result" || bm["tool_use_id"] != toolUseID {
					continue
				}
				if strings.Contains(payloadText(bm["content"]), want) {
					return true
				}
			}
		}
	}
	return false
}

func payloadText(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var sb strings.Builder
		for _, e := range c {
			if em, ok := e.(map[string]any); ok {
				s, _ := em["text"].(string)
				sb.WriteString(s)
			}
		}
		return sb.String()
	}
	return ""
}

// TestBuiltinModelPickAndDenyNote: through master and client, the UI
// lists the provider's models, picks one with a thinking effort (an
// unknown one is refused naming it), the pick reaches the provider, and a
// denial's note reaches the model in the tool result.
func TestBuiltinModelPickAndDenyNote(t *testing.T) {
	t.Parallel()
	s := newSystem(t, 10000)
	srv := stepModel(t, fake.Reply{ToolCalls: []fake.ToolCall{{ID: "toolu_mv", Name: "Bash", Input: map[string]any{"command": "mv a.txt b.txt"}}}})
	srv.SetModels(fake.Model{ID: "claude-sonnet-4-5", Name: "Sonnet", Thinking: true}, fake.Model{ID: "claude-3-5-haiku-20241022", Name: "Haiku"})
	state, secret := t.TempDir(), ""
	newAdapter := func() adapter.Adapter {
		return builtin.New(builtin.Config{Getenv: func(string) string { return "" },
			Provider: provider.Config{Provider: "anthropic", Model: "claude-3-5-haiku-20241022", BaseURL: srv.URL(), APIKey: "k"}})
	}
	s.startClientIn(state, &secret, newAdapter())
	u := s.ui()
	sess := u.startAdapterSession(builtin.ID)

	list := protocol.New(protocol.TypeModelsList, &protocol.ModelsList{})
	list.SessionID = sess.ID
	r := u.request(list)
	ms, ok := r.Payload.(*protocol.Models)
	if !ok || ms.Default != "claude-3-5-haiku-20241022" || len(ms.Models) != 2 || len(ms.Models[0].Efforts) != 4 {
		t.Fatalf("model list answered %s %+v", r.Type, r.Payload)
	}

	bad := protocol.New(protocol.TypeSessionSettings, &protocol.SessionSettings{Model: "no-such-model"})
	bad.SessionID = sess.ID
	if e, ok := u.request(bad).Payload.(*protocol.Error); !ok || e.Field != "payload.model" || !strings.Contains(e.Message, "no-such-model") {
		t.Fatalf("an unknown model was not refused naming it: %+v", e)
	}
	set := protocol.New(protocol.TypeSessionSettings, &protocol.SessionSettings{Model: "claude-sonnet-4-5", Effort: protocol.EffortHigh})
	set.SessionID = sess.ID
	if st, ok := u.request(set).Payload.(*protocol.Settings); !ok || st.Model != "claude-sonnet-4-5" || st.Effort != protocol.EffortHigh {
		t.Fatalf("settings answered %+v", st)
	}

	denyWithNote(t, u, sess.ID, "rename a.txt", "use git mv instead")
	reqs := srv.ModelRequests()
	var agentReq *fake.Request
	for i := range reqs {
		if len(reqs[i].ToolNames()) > 0 {
			agentReq = &reqs[i]
			break
		}
	}
	if agentReq == nil || agentReq.Model() != "claude-sonnet-4-5" || agentReq.Thinking()["budget_tokens"] != float64(32000) {
		t.Fatalf("the provider was not asked for the picked model with high effort: %+v", agentReq)
	}
	if !toolResultWith(srv, "toolu_mv", "use git mv instead") {
		t.Fatal("the note did not reach the model in the tool result")
	}

	// A new client process gets the session's model again in
	// control.session.open: the master kept it.
	s.stopClient()
	s.startClientIn(state, &secret, newAdapter())
	u.machine() // online again
	n := len(srv.ModelRequests())
	u.prompt(sess.ID, text("again"))
	u.collect(sess.ID, isType(protocol.TypeTextDone))
	after := srv.ModelRequests()[n:]
	if len(after) == 0 || after[len(after)-1].Model() != "claude-sonnet-4-5" || after[len(after)-1].Thinking()["type"] != "enabled" {
		t.Fatalf("after the client restarted the provider was asked %+v, want the picked model with thinking", after)
	}
}

// startClientIn runs a real client with the given adapters and state
// directory (the machine's identity: the same directory is the same
// machine after a restart).
func (s *system) startClientIn(state string, secret *string, adapters ...adapter.Adapter) {
	t := s.t
	t.Helper()
	if s.workspace == "" {
		s.workspace = t.TempDir()
	}
	if *secret == "" {
		var err error
		if *secret, _, err = auth.Issue(context.Background(), s.st, store.TokenClient, "test client", 0); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(client.Config{
		MasterURL: "http://" + s.proxy.addr(), Token: *secret, Workspaces: []string{s.workspace},
		StateDir: state, MachineName: "test-machine", Adapters: adapters,
		Logger: slog.New(slog.DiscardHandler), MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.client, s.cancelCli, s.cliDone = c, cancel, make(chan error, 1)
	go func() { s.cliDone <- c.Run(ctx) }()
}

// TestClaudeCodeDenyNote: the real Claude Code CLI, on the fake Anthropic
// server, asks to write a file; the UI denies with a note, and the
// tool_result the CLI sends its model holds the note.
func TestClaudeCodeDenyNote(t *testing.T) {
	t.Parallel()
	bin := os.Getenv("FERRY_TEST_CLAUDE")
	if bin == "" {
		t.Skip("needs the Claude Code CLI: npm install @anthropic-ai/claude-code@2.1.332 and set FERRY_TEST_CLAUDE (.ci/run does)")
	}
	s := newSystem(t, 10000)
	s.workspace = t.TempDir()
	target := filepath.Join(s.workspace, "out.md")
	srv := stepModel(t, fake.Reply{ToolCalls: []fake.ToolCall{{ID: "toolu_write", Name: "Write", Input: map[string]any{"file_path": target, "content": "# Out\n"}}}})
	s.startHandClient(claudecode.New(claudecode.Config{Command: bin, Env: cliEnv(t, srv), StateDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)}))
	u := s.ui()
	sess := u.startAdapterSession(claudecode.ID)
	ev := denyWithNote(t, u, sess.ID, "write out.md", "name it NOTES.md instead")
	if !toolResultWith(srv, "toolu_write", "name it NOTES.md instead") {
		t.Fatal("the note did not reach Claude Code's model in the tool result")
	}
	// The CLI's own slash commands (its init) reach the UI.
	var cmds *protocol.AgentCommands
	for _, m := range ev.order {
		if c, ok := m.Payload.(*protocol.AgentCommands); ok {
			cmds = c
		}
	}
	if cmds == nil || !slices.ContainsFunc(cmds.Commands, func(c protocol.AgentCommand) bool { return c.Name == "compact" }) {
		t.Fatalf("agent.commands from Claude Code's init: %+v", cmds)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the denied write happened")
	}
}
