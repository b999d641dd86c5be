package claudecode

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/internal/adapter/framing"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/protocol"
)

// TestConformance runs the adapter conformance suite on the real Claude
// Code CLI (FERRY_TEST_CLAUDE) against the fake Anthropic server and checks
// its row of the table in docs/adapters.md.
func TestConformance(t *testing.T) {
	e := newRealEnv(t)
	// Any prompt is answered "done"; "hang" streams, then holds its stream
	// open until the CLI lets go of it.
	e.srv.Route(func(r fake.Request) (fake.Reply, bool) {
		if len(r.ToolNames()) == 0 {
			return fake.Reply{Text: []string{"side"}}, true
		}
		e.script.mu.Lock()
		e.script.reqs = append(e.script.reqs, r)
		e.script.mu.Unlock()
		last := lastUserJSON(r)
		if strings.Contains(last, "hang on") {
			return fake.Reply{Text: []string{"working"}, Hold: true}, true
		}
		if strings.Contains(last, `\u003csummary\u003e`) {
			// /compact's request (the JSON escapes <>): Claude Code asks
			// again for a summary without its tags, and then builds an
			// empty message.
			return fake.Reply{Text: []string{"<analysis>A few prompts.</analysis>\n<summary>The user sent a few prompts.</summary>"}}, true
		}
		if strings.Contains(last, "touch it") && !strings.Contains(last, "tool_result") {
			return fake.Reply{ToolCalls: []fake.ToolCall{{ID: "toolu_touch", Name: "Bash", Input: map[string]any{"command": "touch denied.txt", "description": "touch"}}}}, true
		}
		return fake.Reply{Text: []string{"done"}}, true
	})
	// sent runs a prompt and returns the last user message the model got,
	// as JSON.
	sent := func(t *testing.T, s adapter.Session, text, inputType string) string {
		t.Helper()
		o := adaptertest.RunTurn(t, s, adaptertest.Request(text, inputType))
		if o.Err != nil || len(o.Errors()) > 0 {
			t.Fatalf("Run: %v %+v", o.Err, o.Errors())
		}
		reqs := e.script.requests()
		if len(reqs) == 0 {
			t.Fatal("no model request")
		}
		return lastUserJSON(reqs[len(reqs)-1])
	}
	f := adaptertest.Fixture{
		Name:      "claude-code (real CLI)",
		Adapter:   e.adapter(),
		Workspace: e.ws,
		Answer:    "hello there",
		Hang:      "hang on",
		Effects: map[string]adaptertest.Effect{
			// ferry's PreToolUse hook refuses what the prompt denies
			// (Claude Code's --disallowedTools would too: the reason the
			// model reads says who refused).
			adapter.SettingDeniedTools: func(t *testing.T, s adapter.Session) {
				req := adaptertest.Request("touch it", protocol.InputText)
				req.ConfigOverrides = &protocol.ConfigOverrides{DeniedTools: []string{"Bash(touch:*)"}}
				o := adaptertest.RunTurn(t, s, req)
				var status string
				for _, e := range o.Events {
					if f, ok := e.Payload.(*protocol.ToolFinished); ok {
						status = f.Status
					}
				}
				if _, err := os.Stat(filepath.Join(e.ws, "denied.txt")); err == nil || status != protocol.ToolDenied {
					t.Errorf("the denied command ran (status %q, stat %v)", status, err)
				}
				reqs := e.script.requests()
				if got := lastUserJSON(reqs[len(reqs)-1]); !strings.Contains(got, "denied_tools rule of this prompt") {
					t.Errorf("the model was told %s, want ferry's refusal", got)
				}
			},
			adapter.SettingContextFiles: func(t *testing.T, s adapter.Session) {
				o := adaptertest.RunTurnWith(t, s, adaptertest.Request("what is attached?", protocol.InputText), adaptertest.Attachments())
				if o.Err != nil || len(o.Errors()) > 0 {
					t.Fatalf("Run: %v %+v", o.Err, o.Errors())
				}
				reqs := e.script.requests()
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
				if got := sent(t, s, "error: disk full", protocol.InputPipedStdin); !strings.Contains(got, `<stdin>\nerror: disk full\n</stdin>`) {
					t.Errorf("the model got %s, want the input framed as piped material", got)
				}
			},
			protocol.InputContinuation: func(t *testing.T, s adapter.Session) {
				if got := sent(t, s, "continue", protocol.InputContinuation); !strings.Contains(got, framing.ContinueText) {
					t.Errorf("the model got %s", got)
				}
			},
		},
		ProvedBy: map[string]string{
			adapter.SettingJSONSchema:   "TestRealSchemaAndMaxTurns",
			adapter.SettingMaxTurns:     "TestRealSchemaAndMaxTurns",
			adapter.SettingAllowedTools: "TestRealSchemaAndMaxTurns",
			protocol.InputSlashCommand:  "TestRealCompact", // /compact, sent as typed
		},
		// A slash command's settings are the CLI's flags, as a prompt's
		// are; attached files are refused (the suite checks).
		SlashProvedBy: map[string]string{
			adapter.SettingJSONSchema:   "TestSlashCommandSettings",
			adapter.SettingMaxTurns:     "TestSlashCommandSettings",
			adapter.SettingAllowedTools: "TestSlashCommandSettings",
			adapter.SettingDeniedTools:  "TestSlashCommandSettings",
		},
	}
	adaptertest.CheckTable(t, f.Name, adaptertest.Run(t, f))
}

// lastUserJSON is the request's last user message, as JSON.
func lastUserJSON(r fake.Request) string {
	msgs := r.Messages()
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i]["role"] == "user" {
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(msgs[i]["content"])
			return b.String()
		}
	}
	return ""
}
