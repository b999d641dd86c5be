package web_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// TestBrowserAgent drives the agent choices in headless Chromium against
// two real `ferry up` processes (web/e2e/agent.mjs): one whose agent talks
// to the fake Anthropic server (pick a model and a thinking effort, deny a
// call with a note) and one with no model provider (only startable agents
// offered, ferry's agent explained for ferry up). The fake server shows
// what the browser's choices made the agent send. See docs/ui.md.
func TestBrowserAgent(t *testing.T) {
	node, chromium := browserDeps(t)
	dir := t.TempDir()
	ws := project(t, dir, map[string]string{"a.txt": "a\n"})
	const (
		picked   = "claude-sonnet-4-5"
		fallback = "claude-3-5-haiku-20241022"
		note     = "use git mv instead"
	)
	srv := fake.New(t)
	srv.SetModels(fake.Model{ID: picked, Name: "Claude Sonnet 4.5", Thinking: true}, fake.Model{ID: fallback, Name: "Claude Haiku 3.5"})
	srv.Script(
		fake.Reply{ToolCalls: []fake.ToolCall{{ID: "toolu_mv", Name: "Bash", Input: map[string]any{"command": "mv a.txt b.txt"}}}},
		fake.Reply{Text: []string{"I will use git mv."}},
	)
	env := upEnv(dir, srv.URL())
	env["FERRY_MODEL"] = fallback
	_, login := ferryUp(t, env, "--db", filepath.Join(dir, "ferry.db"), "--workspace", ws, "--agent", "builtin", "--agent", "echo")

	// No provider at all: another ferry up, its own state.
	dir2 := t.TempDir()
	_, login2 := ferryUp(t, upEnv(dir2, ""), "--db", filepath.Join(dir2, "ferry.db"), "--workspace", ws, "--agent", "builtin", "--agent", "echo")

	runScript(t, node, "agent.mjs", map[string]any{
		"chromium": chromium, "screenshots": shotsDir(t, dir),
		"picker": map[string]any{"login": login, "model": picked, "default_model": fallback, "note": note},
		"none":   map[string]any{"login": login2},
	})

	var turn []fake.Request
	for _, r := range srv.ModelRequests() {
		if len(r.ToolNames()) > 0 {
			turn = append(turn, r)
		}
	}
	if len(turn) != 2 {
		t.Fatalf("%d model requests of the turn, want 2", len(turn))
	}
	for i, r := range turn {
		if r.Model() != picked || r.Thinking()["type"] != "enabled" || r.Thinking()["budget_tokens"] != float64(32000) {
			t.Errorf("request %d: model %q thinking %v, want %s with high effort (32000)", i, r.Model(), r.Thinking(), picked)
		}
	}
	b, _ := json.Marshal(turn[1].Messages())
	if !bytes.Contains(b, []byte("toolu_mv")) || !strings.Contains(string(b), note) {
		t.Errorf("the note did not reach the model with the denied call's result: %.2000s", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); err == nil {
		t.Error("the denied command ran")
	}
}
