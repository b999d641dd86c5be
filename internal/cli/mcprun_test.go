package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/agent/agenttest"
	"github.com/ferry-dev/ferry/internal/binarytest"
	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// mcpRun runs `ferry run` against srv (Anthropic format) in dir with
// XDG_CONFIG_HOME and XDG_STATE_HOME of its own, the workspace's
// .mcp.json holding servers (none: no file).
func mcpRun(t *testing.T, srv *fake.Server, dir string, servers map[string]any, args ...string) runOut {
	t.Helper()
	if servers != nil {
		b, err := json.Marshal(map[string]any{"mcpServers": servers})
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, ".mcp.json"), string(b))
	}
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	env := Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string {
		switch k {
		case "ANTHROPIC_API_KEY":
			return "test-key"
		case "XDG_STATE_HOME":
			return filepath.Join(home, "state")
		case "XDG_CONFIG_HOME":
			return filepath.Join(home, "config")
		case "PATH":
			return os.Getenv("PATH")
		}
		return ""
	}}
	f := fake.Anthropic
	full := append([]string{"run", "--provider", string(f), "--model", "test-model", "--base-url", srv.BaseURL(f), "--workspace", dir, "--no-history"}, args...)
	code := Run(ctx, env, full)
	if _, err := os.Stat(filepath.Join(home, "state", "ferry", "mcp-approvals.json")); err == nil {
		t.Error("ferry run recorded an MCP approval")
	}
	return runOut{code, stdout.String(), stderr.String()}
}

// TestRunMCPEverything: server-everything (the MCP project's reference
// server, pinned, over stdio) in the workspace's .mcp.json: refused
// without --trust-mcp (stderr says to pass it, nothing is offered); with
// it the model calls echo and gets the text and an image's tool result;
// plan mode refuses a tool not marked read-only; a deny rule refuses one.
func TestRunMCPEverything(t *testing.T) {
	bin := os.Getenv("FERRY_TEST_MCP_EVERYTHING")
	if bin == "" {
		t.Skip("set FERRY_TEST_MCP_EVERYTHING to mcp-server-everything: npm install --prefix DIR @modelcontextprotocol/server-everything@2026.8.31, then DIR/node_modules/.bin/mcp-server-everything")
	}
	servers := map[string]any{"everything": map[string]any{"command": bin, "args": []string{"stdio"}}}
	srv, dir := fake.New(t), t.TempDir()

	srv.Script(fake.Reply{Text: []string{"No MCP."}})
	out := mcpRun(t, srv, dir, servers, "use the echo tool")
	if out.code != ExitOK || !strings.Contains(out.stderr, "--trust-mcp") || !strings.Contains(out.stderr, "(everything)") {
		t.Fatalf("untrusted: exit %d, stderr %s", out.code, out.stderr)
	}
	if names := srv.ModelRequests()[0].ToolNames(); slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "mcp__") }) {
		t.Fatalf("untrusted .mcp.json's tools offered: %v", names)
	}

	srv, dir = fake.New(t), t.TempDir()
	srv.Script(
		fake.Reply{ToolCalls: []fake.ToolCall{
			{Name: "mcp__everything__echo", Input: map[string]any{"message": "through ferry run"}},
			{Name: "mcp__everything__get-tiny-image", Input: map[string]any{}},
			{Name: "mcp__everything__get-sum", Input: map[string]any{"a": 2, "b": 3}},
		}},
		fake.Reply{Text: []string{"Echoed."}},
	)
	out = mcpRun(t, srv, dir, servers, "--trust-mcp", "--allow", "mcp__everything", "--deny", "mcp__everything__get-sum", "use the echo tool")
	if out.code != ExitOK || out.stdout != "Echoed.\n" {
		t.Fatalf("trusted: exit %d, stdout %q, stderr %s", out.code, out.stdout, out.stderr)
	}
	r := agenttest.ToolResults(srv.ModelRequests()[1])
	if len(r) != 3 || r[0].IsError || !strings.Contains(r[0].Text, "through ferry run") || r[1].IsError {
		t.Fatalf("results: %+v", r)
	}
	if raw, _ := json.Marshal(srv.ModelRequests()[1].Messages()); !bytes.Contains(raw, []byte(`"type":"image"`)) {
		t.Fatal("the tiny image did not reach the model as an image block")
	}
	if !r[2].IsError || !strings.Contains(r[2].Text, "permission rules") {
		t.Fatalf("denied get-sum: %+v", r[2])
	}

	srv, dir = fake.New(t), t.TempDir()
	srv.Script(
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "mcp__everything__toggle-simulated-logging", Input: map[string]any{}}, {Name: "mcp__everything__echo", Input: map[string]any{"message": "in plan"}}}},
		fake.Reply{Text: []string{"Planned."}},
	)
	out = mcpRun(t, srv, dir, servers, "--trust-mcp", "--allow", "mcp__everything", "--mode", "plan", "plan it")
	if out.code != ExitOK {
		t.Fatalf("plan: exit %d, stderr %s", out.code, out.stderr)
	}
	r = agenttest.ToolResults(srv.ModelRequests()[1])
	if len(r) != 2 || !r[0].IsError || !strings.Contains(r[0].Text, "plan mode") || r[1].IsError || !strings.Contains(r[1].Text, "in plan") {
		t.Fatalf("plan mode results: %+v", r)
	}
}

// TestRunMCPFerryAsServer: ferry's own `ferry mcp` (the built binary) as
// the workspace's MCP server, beside one that exits at once: the failing
// one is noted on stderr, and the model's call of ferry's Read through MCP
// gets the file.
func TestRunMCPFerryAsServer(t *testing.T) {
	bin := binarytest.Build(t)
	other := t.TempDir()
	writeFile(t, filepath.Join(other, "note.txt"), "served by ferry mcp\n")
	servers := map[string]any{
		"ferry":  map[string]any{"command": bin, "args": []string{"mcp", "--workspace", other, "--no-history"}},
		"broken": map[string]any{"command": "sh", "args": []string{"-c", "echo broken on purpose >&2; exit 3"}},
	}
	srv, dir := fake.New(t), t.TempDir()
	srv.Script(
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "mcp__ferry__Read", Input: map[string]any{"file_path": filepath.Join(other, "note.txt")}}}},
		fake.Reply{Text: []string{"Read through MCP."}},
	)
	out := mcpRun(t, srv, dir, servers, "--trust-mcp", "--allow", "mcp__ferry__Read", "read it")
	if out.code != ExitOK || out.stdout != "Read through MCP.\n" {
		t.Fatalf("exit %d, stdout %q, stderr %s", out.code, out.stdout, out.stderr)
	}
	if !strings.Contains(out.stderr, `MCP server "broken" is not available`) || !strings.Contains(out.stderr, "exit status 3") || !strings.Contains(out.stderr, "broken on purpose") {
		t.Fatalf("stderr lacks the broken server: %s", out.stderr)
	}
	r := agenttest.ToolResults(srv.ModelRequests()[1])
	if len(r) != 1 || r[0].IsError || !strings.Contains(r[0].Text, "served by ferry mcp") {
		t.Fatalf("result: %+v", r)
	}
}

// TestRunTrustMCPOnlyForBuiltin: --trust-mcp is ferry's agent's own.
func TestRunTrustMCPOnlyForBuiltin(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }},
		[]string{"run", "--agent", "echo", "--trust-mcp", "hi"})
	if code != ExitUsage || !strings.Contains(stderr.String(), "--trust-mcp only apply to --agent builtin") {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
}
