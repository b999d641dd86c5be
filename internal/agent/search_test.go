package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/permission"
)

// TestSearchesSkipDeniedFiles: Grep and Glob over the workspace leave out
// the files a Read deny rule names, and links to them, so a denied file
// cannot be read by searching the directory around it.
func TestSearchesSkipDeniedFiles(t *testing.T) {
	t.Parallel()
	srv := fake.New(t)
	a, dir := fakeAgent(t, srv, fake.Anthropic, func(c *agent.Config) {
		c.Rules = &permission.Rules{Deny: []permission.Rule{{Tool: "Read", Pattern: "secret.txt"}, {Tool: "Read", Pattern: "keys/**"}}}
	})
	const secret = "the-secret-value-16"
	for name, content := range map[string]string{"secret.txt": secret, "keys/id": secret, "notes.txt": "not " + secret[4:]} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("secret.txt", filepath.Join(dir, "link_to_secret")); err != nil {
		t.Fatal(err)
	}
	srv.Script(
		reply(fake.ToolCall{Name: "Grep", Input: map[string]any{"pattern": "secret-value", "output_mode": "content"}}),
		reply(fake.ToolCall{Name: "Grep", Input: map[string]any{"pattern": "secret-value"}}),
		reply(fake.ToolCall{Name: "Glob", Input: map[string]any{"pattern": "**"}}),
		fake.Reply{Text: []string{"done"}},
	)
	rec := newRecorder()
	if _, err := a.Run(testCtx(t), textTurn("go"), rec.emit); err != nil {
		t.Fatal(err)
	}
	fin := rec.finished()
	if len(fin) != 3 {
		t.Fatalf("%d tool calls finished", len(fin))
	}
	for _, f := range fin {
		if f.Status != "ok" {
			t.Fatalf("%s: %s %q", f.ToolName, f.Status, f.Output)
		}
		for _, leak := range []string{secret, "secret.txt", "link_to_secret", "keys/id"} {
			if strings.Contains(f.Output, leak) {
				t.Errorf("%s output shows %q: %q", f.ToolName, leak, f.Output)
			}
		}
		if !strings.Contains(f.Output, "notes.txt") {
			t.Errorf("%s output lost notes.txt: %q", f.ToolName, f.Output)
		}
	}
}
