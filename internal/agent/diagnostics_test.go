package agent_test

import (
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/lsp"
	"github.com/ferry-dev/ferry/internal/lsp/lsptest"
	"github.com/ferry-dev/ferry/internal/permission"
)

// TestDiagnosticsAfterEdits: with Config.Diagnostics and the real gopls,
// a Write that makes a type error returns it in its result, and the Edit
// that fixes it returns none (issue 36, item 7).
func TestDiagnosticsAfterEdits(t *testing.T) {
	t.Parallel()
	gopls := lsptest.Gopls(t)
	bad := "package main\n\nfunc main() {\n\tvar n int = \"one\"\n\t_ = n\n}\n"
	p := newMem(
		step{tools: []llm.Block{toolCall("t1", "Write", map[string]any{"file_path": "main.go", "content": bad})}},
		step{tools: []llm.Block{toolCall("t2", "Edit", map[string]any{"file_path": "main.go", "old_string": `"one"`, "new_string": "1"})}},
		step{text: []string{"Fixed."}},
	)
	a, dir := newAgent(t, p, func(c *agent.Config) {
		c.Rules = &permission.Rules{Allow: []permission.Rule{{Tool: "Write"}, {Tool: "Edit"}}}
		c.Diagnostics = &lsp.Config{Servers: map[string]lsp.ServerConfig{".go": {Command: []string{gopls}, WaitMS: 120000}}}
	})
	lsptest.GoModule(t, dir)
	if _, err := a.Run(testCtx(t), textTurn("write main.go"), newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	reqs := p.requests()
	wrote := resultText(lastToolResults(reqs[1])[0])
	if !strings.Contains(wrote, "gopls reports 1 error in main.go after this change:\nmain.go:4:14: cannot use \"one\"") {
		t.Fatalf("Write's result has no type error:\n%s", wrote)
	}
	fixed := resultText(lastToolResults(reqs[2])[0])
	if strings.Contains(fixed, "gopls") || strings.Contains(fixed, "cannot use") {
		t.Fatalf("Edit's result still has diagnostics:\n%s", fixed)
	}
}
