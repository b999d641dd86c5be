package acp

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/acp/acppeer"
	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/internal/adapter/framing"
	"github.com/ferry-dev/ferry/internal/agent/agenttest"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/protocol"
)

// conformanceProof names this package's tests that show the effect of
// what an ACP session honours.
var conformanceProof = map[string]string{
	adapter.SettingDeniedTools:  "TestDeniedToolsRefuseFileSystemCalls",
	adapter.SettingAllowedTools: "TestPermissionRulesAnswerWithoutAsking",
}

// slashProof names the test showing a slash command keeps the settings an
// ACP session honours (it is one session/prompt like any other).
var slashProof = map[string]string{
	adapter.SettingDeniedTools:  "TestSlashCommandCarriesSettings",
	adapter.SettingAllowedTools: "TestSlashCommandCarriesSettings",
	adapter.SettingContextFiles: "TestSlashCommandCarriesSettings",
}

// TestConformance runs the adapter conformance suite on an ACP session
// with the scripted peer and checks its row of the table in
// docs/adapters.md.
func TestConformance(t *testing.T) {
	var p *peerEnv
	// sent runs a prompt and returns the text block the agent got.
	sent := func(t *testing.T, s adapter.Session, text, inputType string) string {
		t.Helper()
		o := adaptertest.RunTurn(t, s, adaptertest.Request(text, inputType))
		if o.Err != nil || len(o.Errors()) > 0 {
			t.Fatalf("Run: %v %+v", o.Err, o.Errors())
		}
		prompts := p.receivedMethod(t, "session/prompt")
		blocks, _ := prompts[len(prompts)-1]["prompt"].([]any)
		if len(blocks) == 0 {
			t.Fatal("the agent got an empty prompt")
		}
		got, _ := blocks[0].(map[string]any)["text"].(string)
		return got
	}
	p = newPeer(t, acppeer.Script{Init: promptCaps(true, true), ByText: map[string][]step{
		"hello": {{Text: "hi"}},
		"hang":  {{Text: "working"}, {WaitCancel: true}, {Respond: map[string]any{"stopReason": "cancelled"}}},
	}})
	f := adaptertest.Fixture{
		Name:      "acp (scripted peer)",
		Adapter:   p.a,
		Workspace: p.ws,
		Answer:    "hello there",
		Hang:      "hang on",
		Effects: map[string]adaptertest.Effect{
			adapter.SettingContextFiles: func(t *testing.T, s adapter.Session) {
				o := adaptertest.RunTurnWith(t, s, adaptertest.Request("hello, what is attached?", protocol.InputText), adaptertest.Attachments())
				if o.Err != nil || len(o.Errors()) > 0 {
					t.Fatalf("Run: %v %+v", o.Err, o.Errors())
				}
				prompts := p.receivedMethod(t, "session/prompt")
				raw, _ := json.Marshal(prompts[len(prompts)-1]["prompt"])
				if !strings.Contains(string(raw), base64.StdEncoding.EncodeToString(adaptertest.AttachedPNG)) || !strings.Contains(string(raw), adaptertest.AttachedNote) {
					t.Errorf("the agent got %s, want the image and the note", raw)
				}
			},
			// A slash command is the agent's own: it gets the text as typed.
			protocol.InputSlashCommand: func(t *testing.T, s adapter.Session) {
				if got := sent(t, s, "/compact keep it short", protocol.InputSlashCommand); got != "/compact keep it short" {
					t.Errorf("the agent got %q", got)
				}
			},
			protocol.InputPipedStdin: func(t *testing.T, s adapter.Session) {
				if got := sent(t, s, "hello from a pipe", protocol.InputPipedStdin); !strings.Contains(got, "<stdin>\nhello from a pipe\n</stdin>") {
					t.Errorf("the agent got %q, want the input framed as piped material", got)
				}
			},
			protocol.InputContinuation: func(t *testing.T, s adapter.Session) {
				if got := sent(t, s, "continue", protocol.InputContinuation); got != framing.ContinueText {
					t.Errorf("the agent got %q", got)
				}
			},
		},
		ProvedBy:      conformanceProof,
		SlashProvedBy: slashProof,
	}
	adaptertest.CheckTable(t, f.Name, adaptertest.Run(t, f))
}

// TestConformanceRealAgent runs the suite on the real claude-code-acp
// (FERRY_TEST_ACP_AGENT) against the fake Anthropic server.
func TestConformanceRealAgent(t *testing.T) {
	a, srv := realAdapter(t)
	f := realConformanceFixture(t, "acp (claude-code-acp)", a, srv)
	adaptertest.CheckTable(t, f.Name, adaptertest.Run(t, f))
}

// TestConformanceOpencode runs the suite on the real opencode
// (FERRY_TEST_OPENCODE, `opencode acp`) against the fake OpenAI-format
// server: the second independent ACP implementation ferry is proven
// against.
func TestConformanceOpencode(t *testing.T) {
	a, srv := opencodeAdapter(t, opencodePermissions)
	f := realConformanceFixture(t, "acp (opencode)", a, srv)
	adaptertest.CheckTable(t, f.Name, adaptertest.Run(t, f))
}

// realConformanceFixture is the suite's fixture for a real ACP agent a
// whose model is srv: a side request (a title: no tools) gets "side", a
// prompt saying "hang on" a held stream, any other "done"; the effects
// are read from what the model got.
func realConformanceFixture(t *testing.T, name string, a *Adapter, srv *fake.Server) adaptertest.Fixture {
	t.Helper()
	srv.Route(func(r fake.Request) (fake.Reply, bool) {
		if len(r.ToolNames()) == 0 {
			return fake.Reply{Text: []string{"side"}}, true
		}
		if strings.Contains(agenttest.LastUserText(r), "hang on") {
			return fake.Reply{Text: []string{"working"}, Hold: true}, true
		}
		return fake.Reply{Text: []string{"done"}}, true
	})
	// sent runs a prompt and returns the last user text the model got.
	sent := func(t *testing.T, s adapter.Session, text, inputType string) string {
		t.Helper()
		o := adaptertest.RunTurn(t, s, adaptertest.Request(text, inputType))
		if o.Err != nil || len(o.Errors()) > 0 {
			t.Fatalf("Run: %v %+v", o.Err, o.Errors())
		}
		reqs := srv.ModelRequests()
		for i := len(reqs) - 1; i >= 0; i-- {
			if len(reqs[i].ToolNames()) > 0 {
				return agenttest.LastUserText(reqs[i])
			}
		}
		t.Fatal("no model request")
		return ""
	}
	proof := maps.Clone(conformanceProof)
	proof[protocol.InputSlashCommand] = "TestConformance" // the scripted peer shows what ferry sends
	return adaptertest.Fixture{
		Name:    name,
		Adapter: a,
		Answer:  "hello there",
		Hang:    "hang on",
		Effects: map[string]adaptertest.Effect{
			adapter.SettingContextFiles: func(t *testing.T, s adapter.Session) {
				o := adaptertest.RunTurnWith(t, s, adaptertest.Request("what is attached?", protocol.InputText), adaptertest.Attachments())
				if o.Err != nil || len(o.Errors()) > 0 {
					t.Fatalf("Run: %v %+v", o.Err, o.Errors())
				}
				var img, note bool
				for _, r := range srv.ModelRequests() {
					for _, b := range r.UserBlocks() {
						img = img || b.Type == "image" && b.Data == base64.StdEncoding.EncodeToString(adaptertest.AttachedPNG)
						note = note || strings.Contains(b.Text, adaptertest.AttachedNote)
					}
				}
				if !img || !note {
					t.Errorf("the model got the image: %v, the note: %v", img, note)
				}
			},
			protocol.InputPipedStdin: func(t *testing.T, s adapter.Session) {
				if got := sent(t, s, "error: disk full", protocol.InputPipedStdin); !strings.Contains(got, "<stdin>\nerror: disk full\n</stdin>") {
					t.Errorf("the model got %q, want the input framed as piped material", got)
				}
			},
			protocol.InputContinuation: func(t *testing.T, s adapter.Session) {
				if got := sent(t, s, "continue", protocol.InputContinuation); !strings.Contains(got, framing.ContinueText) {
					t.Errorf("the model got %q", got)
				}
			},
		},
		ProvedBy:      proof,
		SlashProvedBy: slashProof,
	}
}
