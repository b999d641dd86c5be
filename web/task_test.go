package web_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// TestBrowserAgentTask drives ferry's Task tool in headless Chromium on a
// phone (web/e2e/task.mjs) against a real `ferry up` whose agent talks to
// the fake Anthropic server: the model asks for two sub-agents at once,
// and the transcript shows each Task call with its sub-agent's steps
// folded under it ("3 steps", "2 steps"), not as calls of the turn, also
// after a reload replays the session. See docs/agent.md "Sub-agents (Task)".
func TestBrowserAgentTask(t *testing.T) {
	node, chromium := browserDeps(t)
	dir := t.TempDir()
	ws := project(t, dir, map[string]string{
		"README.md":      "# demo\n",
		"cmd/main.go":    "package main\n\nfunc main() { serve() }\n",
		"cmd/server.go":  "package main\n\n// serve answers HTTP on :8080.\nfunc serve() {}\n",
		"docs/guide.md":  "# Guide\n\nRun `make serve`.\n",
		"docs/deploy.md": "# Deploy\n\nShip the binary.\n",
	})
	srv := fake.New(t)
	call := func(id, name string, input map[string]any) fake.ToolCall {
		return fake.ToolCall{ID: id, Name: name, Input: input}
	}
	// Each sub-agent's steps, by its task; they run side by side, so
	// their requests are answered by task, not in arrival order.
	subs := map[string][]fake.Reply{
		"TASK CODE": {
			{ToolCalls: []fake.ToolCall{call("toolu_c1", "Glob", map[string]any{"pattern": "**/*.go"})}},
			{ToolCalls: []fake.ToolCall{call("toolu_c2", "Grep", map[string]any{"pattern": "func serve"})}},
			{ToolCalls: []fake.ToolCall{call("toolu_c3", "Read", map[string]any{"file_path": "cmd/server.go"})}},
			{Text: []string{"serve() in cmd/server.go:4 answers HTTP on :8080; main calls it."}},
		},
		"TASK DOCS": {
			{ToolCalls: []fake.ToolCall{call("toolu_d1", "Glob", map[string]any{"pattern": "docs/*.md"})}},
			{ToolCalls: []fake.ToolCall{call("toolu_d2", "Read", map[string]any{"file_path": "docs/guide.md"})}},
			{Text: []string{"docs/guide.md says: run make serve."}},
		},
	}
	srv.Route(func(r fake.Request) (fake.Reply, bool) {
		if !strings.Contains(r.System(), "sub-agent of ferry's coding agent") {
			return fake.Reply{}, false
		}
		raw := string(r.Raw)
		for task, replies := range subs {
			if !strings.Contains(raw, task) {
				continue
			}
			// One reply per model call so far: the answered calls say how many.
			n := strings.Count(raw, `"tool_result"`)
			if n >= len(replies) {
				n = len(replies) - 1
			}
			return replies[n], true
		}
		return fake.Reply{}, false
	})
	srv.Script(
		fake.Reply{Text: []string{"I'll look at the code and the docs at the same time."}, ToolCalls: []fake.ToolCall{
			call("toolu_task_code", "Task", map[string]any{"description": "Find the server", "prompt": "TASK CODE: where is the HTTP server started?"}),
			call("toolu_task_docs", "Task", map[string]any{"description": "Read the docs", "prompt": "TASK DOCS: how do the docs say to run it?"}),
		}},
		fake.Reply{Text: []string{"The server starts in `serve()` (cmd/server.go:4) on :8080; the guide says `make serve`."}},
	)
	_, login := ferryUp(t, upEnv(dir, srv.URL()), "--db", filepath.Join(dir, "ferry.db"), "--workspace", ws, "--agent", "builtin")
	runScript(t, node, "task.mjs", map[string]any{
		"chromium": chromium, "screenshots": shotsDir(t, dir), "login": login,
	})
	var subReqs int
	for _, r := range srv.ModelRequests() {
		if strings.Contains(r.System(), "sub-agent") {
			subReqs++
		}
	}
	if subReqs != 7 {
		t.Errorf("%d sub-agent model requests, want 7 (4 + 3)", subReqs)
	}
}
