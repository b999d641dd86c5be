package builtin_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/internal/adapter/builtin"
	"github.com/ferry-dev/ferry/internal/agent/agenttest"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/llm/provider"
	"github.com/ferry-dev/ferry/protocol"
)

// TestConformance runs the adapter conformance suite on ferry's agent
// against the fake provider and checks its row of the table in
// docs/adapters.md.
func TestConformance(t *testing.T) {
	srv := fake.New(t)
	// Scripted replies first; then "hang" holds its stream open and any
	// other request is answered "done".
	srv.Route(func(r fake.Request) (fake.Reply, bool) {
		if srv.Pending() > 0 {
			return fake.Reply{}, false
		}
		if strings.Contains(agenttest.LastUserText(r), "hang on") {
			return fake.Reply{Text: []string{"working"}, Hold: true}, true
		}
		return fake.Reply{Text: []string{"done"}}, true
	})
	ws := t.TempDir()
	a := builtin.New(builtin.Config{
		Getenv:   func(string) string { return "" },
		Provider: provider.Config{Provider: string(fake.Anthropic), Model: "test-model", BaseURL: srv.BaseURL(fake.Anthropic), APIKey: "test-key"},
		// A question nobody answers is denied soon, so an allow rule that
		// did not hold fails the test instead of hanging it.
		InteractionTimeout: 2 * time.Second,
	})
	lastUser := func(t *testing.T) string {
		t.Helper()
		reqs := srv.ModelRequests()
		if len(reqs) == 0 {
			t.Fatal("no model request")
		}
		return agenttest.LastUserText(reqs[len(reqs)-1])
	}
	overrides := func(text string, o protocol.ConfigOverrides) *protocol.PromptRequest {
		req := adaptertest.Request(text, protocol.InputText)
		req.ConfigOverrides = &o
		return req
	}
	toolStatus := func(o adaptertest.Outcome) []string {
		var out []string
		for _, e := range o.Events {
			if f, ok := e.Payload.(*protocol.ToolFinished); ok {
				out = append(out, f.Status)
			}
		}
		return out
	}
	f := adaptertest.Fixture{
		Name:      "builtin",
		Adapter:   a,
		Workspace: ws,
		Answer:    "hello there",
		Slash:     "/help",
		Hang:      "hang on",
		Effects: map[string]adaptertest.Effect{
			adapter.SettingJSONSchema: func(t *testing.T, s adapter.Session) {
				srv.Script(fake.Reply{Text: []string{`{"ok": true}`}})
				o := adaptertest.RunTurn(t, s, overrides("is it ok?", protocol.ConfigOverrides{JSONSchema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)}))
				if string(o.Result.Structured) != `{"ok":true}` {
					t.Errorf("structured result %s, want {\"ok\":true}", o.Result.Structured)
				}
			},
			adapter.SettingMaxTurns: func(t *testing.T, s adapter.Session) {
				srv.Script(fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Glob", Input: map[string]any{"pattern": "*"}}}})
				one := 1
				o := adaptertest.RunTurn(t, s, overrides("look around", protocol.ConfigOverrides{MaxTurns: &one}))
				if o.Result.StopReason != "max_turns" {
					t.Errorf("stop reason %q, want max_turns", o.Result.StopReason)
				}
			},
			adapter.SettingDeniedTools: func(t *testing.T, s adapter.Session) {
				srv.Script(fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Glob", Input: map[string]any{"pattern": "*"}}}})
				o := adaptertest.RunTurn(t, s, overrides("look around", protocol.ConfigOverrides{DeniedTools: []string{"Glob"}}))
				if got := toolStatus(o); len(got) != 1 || got[0] != "denied" {
					t.Errorf("tool statuses %v, want [denied]", got)
				}
			},
			adapter.SettingAllowedTools: func(t *testing.T, s adapter.Session) {
				srv.Script(fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Bash", Input: map[string]any{"command": "echo hi"}}}})
				o := adaptertest.RunTurn(t, s, overrides("say hi", protocol.ConfigOverrides{AllowedTools: []string{"Bash(echo hi)"}}))
				if got := toolStatus(o); len(got) != 1 || got[0] != "ok" {
					t.Errorf("tool statuses %v, want [ok]", got)
				}
				for _, e := range o.Events {
					if e.Type == protocol.TypeInteractionRequest {
						t.Error("the allowed command was asked about")
					}
				}
			},
			adapter.SettingContextFiles: func(t *testing.T, s adapter.Session) {
				o := adaptertest.RunTurnWith(t, s, adaptertest.Request("what is attached?", protocol.InputText), adaptertest.Attachments())
				checkNoError(t, o)
				reqs := srv.ModelRequests()
				var img, note bool
				for _, b := range reqs[len(reqs)-1].UserBlocks() {
					img = img || b.Type == "image" && b.Data == base64.StdEncoding.EncodeToString(adaptertest.AttachedPNG)
					note = note || b.Type == "text" && strings.Contains(b.Text, adaptertest.AttachedNote)
				}
				if !img || !note {
					t.Errorf("the model got the image: %v, the note: %v", img, note)
				}
			},
			protocol.InputPipedStdin: func(t *testing.T, s adapter.Session) {
				adaptertest.RunTurn(t, s, adaptertest.Request("error: disk full", protocol.InputPipedStdin))
				if got := lastUser(t); !strings.Contains(got, "<stdin>\nerror: disk full\n</stdin>") {
					t.Errorf("the model got %q, want the input framed as piped material", got)
				}
			},
			protocol.InputContinuation: func(t *testing.T, s adapter.Session) {
				adaptertest.RunTurn(t, s, adaptertest.Request("continue", protocol.InputContinuation))
				if got := lastUser(t); got != "Continue where you left off." {
					t.Errorf("the model got %q", got)
				}
			},
			protocol.InputSlashCommand: func(t *testing.T, s adapter.Session) {
				n := len(srv.ModelRequests())
				o := adaptertest.RunTurn(t, s, adaptertest.Request("/help", protocol.InputSlashCommand))
				if !strings.HasPrefix(o.Text(), "Commands:") || len(srv.ModelRequests()) != n {
					t.Errorf("/help answered %q after %d model requests", o.Text(), len(srv.ModelRequests())-n)
				}
			},
		},
		ProvedBy: map[string]string{adapter.SettingTargetTokenRatio: "TestCompaction"},
	}
	adaptertest.CheckTable(t, f.Name, adaptertest.Run(t, f))
}

func checkNoError(t *testing.T, o adaptertest.Outcome) {
	t.Helper()
	if o.Err != nil {
		t.Errorf("Run: %v", o.Err)
	}
	if errs := o.Errors(); len(errs) > 0 {
		t.Errorf("agent.error %s: %s", errs[0].Code, errs[0].Message)
	}
}
