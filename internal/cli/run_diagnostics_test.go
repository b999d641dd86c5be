package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter/agentspec"
	"github.com/ferry-dev/ferry/internal/agent/agenttest"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/lsp/lsptest"
)

// writeLSPConfig writes $XDG_CONFIG_HOME/ferry/lsp.json and returns
// XDG_CONFIG_HOME.
func writeLSPConfig(t *testing.T, content string) string {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "ferry"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(home, "ferry", "lsp.json"), content)
	return home
}

// TestRunDiagnosticsGopls: ferry run with the real gopls (the user's
// lsp.json names it): the Write that makes a type error gets it in its
// result, the Edit that fixes it gets none (issue 36, item 7).
func TestRunDiagnosticsGopls(t *testing.T) {
	t.Parallel()
	gopls := lsptest.Gopls(t)
	cfg, err := json.Marshal(map[string]any{"servers": map[string]any{".go": map[string]any{"command": []string{gopls}, "wait_ms": 120000}}})
	if err != nil {
		t.Fatal(err)
	}
	home := writeLSPConfig(t, string(cfg))
	srv, dir := fake.New(t), t.TempDir()
	lsptest.GoModule(t, dir)
	bad := "package main\n\nfunc main() {\n\tvar n int = \"one\"\n\t_ = n\n}\n"
	srv.Script(
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Write", Input: map[string]any{"file_path": "main.go", "content": bad}}}},
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": "main.go", "old_string": `"one"`, "new_string": "1"}}}},
		fake.Reply{Text: []string{"Fixed."}},
	)
	out := ferryRunConfig(t, srv, fake.Anthropic, dir, home, "--allow", "Write", "--allow", "Edit", "write main.go")
	if out.code != ExitOK || out.stdout != "Fixed.\n" {
		t.Fatalf("exit %d, stdout %q, stderr %s", out.code, out.stdout, out.stderr)
	}
	reqs := srv.ModelRequests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests", len(reqs))
	}
	wrote := agenttest.ToolResults(reqs[1])
	if len(wrote) != 1 || !strings.Contains(wrote[0].Text, "gopls reports 1 error in main.go after this change:\nmain.go:4:14: cannot use \"one\"") {
		t.Fatalf("Write's result has no type error: %+v", wrote)
	}
	fixed := agenttest.ToolResults(reqs[2])
	if len(fixed) != 1 || fixed[0].IsError || strings.Contains(fixed[0].Text, "gopls") {
		t.Fatalf("Edit's result: %+v", fixed)
	}
}

// TestRunBadLSPConfig: a broken lsp.json stops ferry run before anything
// runs, naming the file and the fault.
func TestRunBadLSPConfig(t *testing.T) {
	t.Parallel()
	home := writeLSPConfig(t, `{"severity": "hint"}`)
	srv, dir := fake.New(t), t.TempDir()
	out := ferryRunConfig(t, srv, fake.Anthropic, dir, home, "hello")
	want := filepath.Join(home, "ferry", "lsp.json")
	if out.code == ExitOK || !strings.Contains(out.stderr, want) || !strings.Contains(out.stderr, `severity "hint"`) {
		t.Fatalf("exit %d, stderr %q", out.code, out.stderr)
	}
	if n := len(srv.ModelRequests()); n != 0 {
		t.Fatalf("%d model requests", n)
	}
}

// TestLiveBadLSPConfig: ferry up and connect with a broken lsp.json
// still offer ferry's agent; the log says diagnostics are off and why.
func TestLiveBadLSPConfig(t *testing.T) {
	t.Parallel()
	home := writeLSPConfig(t, `{"servers": {"go": {}}}`)
	env := Env{Stderr: io.Discard, Getenv: func(k string) string {
		switch k {
		case "ANTHROPIC_API_KEY":
			return "test-key"
		case "XDG_CONFIG_HOME":
			return home
		}
		return ""
	}}
	var logged bytes.Buffer
	ads, err := liveAdapters(env, slog.New(slog.NewTextHandler(&logged, nil)), []agentspec.Spec{{Kind: agentspec.Builtin}}, t.TempDir(), "ferry up")
	if err != nil || len(ads) != 1 || ads[0].Capability().Unavailable != "" {
		t.Fatalf("adapters %v, %v", ads, err)
	}
	if !strings.Contains(logged.String(), "language server diagnostics off") || !strings.Contains(logged.String(), filepath.Join(home, "ferry", "lsp.json")) {
		t.Fatalf("log: %s", logged.String())
	}
}
