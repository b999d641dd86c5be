package web_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// TestBrowserAgentMCP drives a session of ferry's agent whose workspace
// has a .mcp.json, on a phone (web/e2e/mcp.mjs): the approval prompt names
// the server and its command before anything starts; approved, the model's
// call of the server's tool asks permission like any tool, runs, and is
// rendered with its output; the server that exits at once is reported in
// the session and the turn goes on. The approval is kept in the state
// folder. Screenshots: agent-mcp-approval, agent-mcp-call (docs/ui.md).
func TestBrowserAgentMCP(t *testing.T) {
	node, chromium := browserDeps(t)
	dir := t.TempDir()
	server := filepath.Join(dir, "bin", "testserver")
	if out, err := exec.Command("go", "build", "-o", server, "../internal/mcpclient/testdata/testserver").CombinedOutput(); err != nil {
		t.Fatalf("go build the MCP test server: %v\n%s", err, out)
	}
	mcpJSON, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"tools":  map[string]any{"command": server},
		"broken": map[string]any{"command": "sh", "args": []string{"-c", "echo broken on purpose >&2; exit 3"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ws := project(t, dir, map[string]string{".mcp.json": string(mcpJSON)})
	srv := fake.New(t)
	srv.Script(
		fake.Reply{ToolCalls: []fake.ToolCall{{ID: "toolu_mcp", Name: "mcp__tools__echo", Input: map[string]any{"text": "hello from the phone"}}}},
		fake.Reply{Text: []string{"The MCP server echoed it."}},
	)
	_, login := ferryUp(t, upEnv(dir, srv.URL()), "--db", filepath.Join(dir, "ferry.db"), "--workspace", ws, "--agent", "builtin")

	runScript(t, node, "mcp.mjs", map[string]any{
		"chromium": chromium, "screenshots": shotsDir(t, dir), "login": login, "command": server,
	})

	var calls []fake.Request
	for _, r := range srv.ModelRequests() {
		if len(r.ToolNames()) > 0 {
			calls = append(calls, r)
		}
	}
	if len(calls) != 2 || !strings.Contains(strings.Join(calls[0].ToolNames(), ","), "mcp__tools__echo") {
		t.Fatalf("%d model calls of the turn; tools %v", len(calls), calls[0].ToolNames())
	}
	b, _ := json.Marshal(calls[1].Messages())
	if !strings.Contains(string(b), "echo: hello from the phone") {
		t.Errorf("the MCP result did not reach the model: %.2000s", b)
	}
	approvals, err := os.ReadFile(filepath.Join(dir, "state", "ferry", "mcp-approvals.json"))
	if err != nil || !strings.Contains(string(approvals), `"approved"`) {
		t.Errorf("the approval was not kept: %s %v", approvals, err)
	}
}
