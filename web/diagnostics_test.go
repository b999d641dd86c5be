package web_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/lsp/lsptest"
)

// TestBrowserDiagnostics: a UI session of ferry's agent with the real
// gopls (the user's lsp.json names it), on a 390x844 phone
// (web/e2e/diagnostics.mjs): the Write the user allows makes a type
// error and its result, shown in the tool's card, carries gopls's
// error; the Edit that fixes it carries none (issue 36, item 7).
func TestBrowserDiagnostics(t *testing.T) {
	node, chromium := browserDeps(t)
	gopls := lsptest.Gopls(t)
	dir := t.TempDir()
	ws := project(t, dir, map[string]string{"go.mod": "module example.com/m\n\ngo 1.26\n"})
	config := filepath.Join(dir, "config")
	if err := os.MkdirAll(filepath.Join(config, "ferry"), 0o700); err != nil {
		t.Fatal(err)
	}
	lspJSON, _ := json.Marshal(map[string]any{"servers": map[string]any{".go": map[string]any{"command": []string{gopls}, "wait_ms": 120000}}})
	if err := os.WriteFile(filepath.Join(config, "ferry", "lsp.json"), lspJSON, 0o600); err != nil {
		t.Fatal(err)
	}
	bad := "package main\n\nfunc main() {\n\tvar n int = \"one\"\n\t_ = n\n}\n"
	srv := fake.New(t)
	srv.Script(
		fake.Reply{Text: []string{"Writing main.go."}, ToolCalls: []fake.ToolCall{{Name: "Write", Input: map[string]any{"file_path": "main.go", "content": bad}}}},
		fake.Reply{Text: []string{"gopls says n is an int: fixing."}, ToolCalls: []fake.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": "main.go", "old_string": `"one"`, "new_string": "1"}}}},
		fake.Reply{Text: []string{"main.go builds."}},
	)
	env := upEnv(dir, srv.URL())
	env["XDG_CONFIG_HOME"] = config
	_, login := ferryUp(t, env, "--db", filepath.Join(dir, "ferry.db"), "--workspace", ws, "--agent", "builtin")
	runScript(t, node, "diagnostics.mjs", map[string]any{"chromium": chromium, "screenshots": shotsDir(t, dir), "login": login})

	got, err := os.ReadFile(filepath.Join(ws, "main.go"))
	if err != nil || !strings.Contains(string(got), "var n int = 1") {
		t.Fatalf("main.go after the turn: %q, %v", got, err)
	}
}
