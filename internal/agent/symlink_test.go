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

// TestDeniedFilesThroughSymlinks: denied_tools hold end to end when the
// model reaches a denied file through a symbolic link (issue 16, item 4):
// a Read of a link to the secret, a Write through a linked directory, an
// Edit with ".." after a link, and a Bash call declaring it writes there
// are all refused, and nothing of the secret reaches the model.
func TestDeniedFilesThroughSymlinks(t *testing.T) {
	t.Parallel()
	srv := fake.New(t)
	a, dir := fakeAgent(t, srv, fake.Anthropic, func(c *agent.Config) {
		c.Rules = &permission.Rules{
			Allow: []permission.Rule{{Tool: "Write"}, {Tool: "Edit"}, {Tool: "Bash"}},
			Deny:  []permission.Rule{{Tool: "Read", Pattern: "secret.txt"}, {Tool: "Edit", Pattern: "protected/**"}},
		}
	})
	const secret = "the-secret-value-16"
	for name, content := range map[string]string{"secret.txt": secret, "protected/keep.txt": "keep\n", "sub/inner/x": ""} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"link_to_secret": "secret.txt", "plink": "protected", "deep": "protected/../sub/inner"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	srv.Script(
		reply(fake.ToolCall{Name: "Read", Input: map[string]any{"file_path": "link_to_secret"}}),
		reply(fake.ToolCall{Name: "Read", Input: map[string]any{"file_path": filepath.Join(dir, "link_to_secret")}}),
		reply(fake.ToolCall{Name: "Grep", Input: map[string]any{"pattern": "secret", "path": "link_to_secret"}}),
		reply(fake.ToolCall{Name: "Write", Input: map[string]any{"file_path": "plink/keep.txt", "content": "overwritten\n"}}),
		reply(fake.ToolCall{Name: "Write", Input: map[string]any{"file_path": "deep/../../protected/new.txt", "content": "x\n"}}),
		reply(fake.ToolCall{Name: "Bash", Input: map[string]any{"command": "true", "artifact_paths": []any{"plink/keep.txt"}}}),
		reply(fake.ToolCall{Name: "Read", Input: map[string]any{"file_path": "sub/inner/x"}}),
		fake.Reply{Text: []string{"done"}},
	)
	rec := newRecorder()
	if _, err := a.Run(testCtx(t), textTurn("go"), rec.emit); err != nil {
		t.Fatal(err)
	}
	var st []string
	for _, f := range rec.finished() {
		st = append(st, f.ToolName+":"+f.Status)
		if strings.Contains(f.Output, secret) {
			t.Errorf("%s output holds the secret: %q", f.ToolName, f.Output)
		}
	}
	want := "Read:denied,Read:denied,Grep:denied,Write:denied,Write:denied,Bash:denied,Read:ok"
	if got := strings.Join(st, ","); got != want {
		t.Fatalf("statuses %s, want %s", got, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "protected/keep.txt")); string(b) != "keep\n" {
		t.Fatalf("protected/keep.txt changed: %q", b)
	}
	if _, err := os.Lstat(filepath.Join(dir, "protected/new.txt")); err == nil {
		t.Fatal("protected/new.txt was created through deep/../..")
	}
}
