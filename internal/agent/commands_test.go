package agent_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/protocol"
)

func commandNames(cs []protocol.AgentCommand) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

// TestCustomCommandsListedAndReloaded: the workspace's and the user's
// command files are listed after ferry's own commands (the workspace's
// description wins on a clash); bad names, built-in names and a file
// linked out of the workspace are not; Refresh reports an added file.
func TestCustomCommandsListedAndReloaded(t *testing.T) {
	t.Parallel()
	ws := canon(t, t.TempDir())
	user := filepath.Join(canon(t, t.TempDir()), "commands")
	cmds := filepath.Join(ws, ".ferry", "commands")
	put(t, filepath.Join(cmds, "review.md"), "---\ndescription: \"Review the diff\"\nargument-hint: <path>\n---\nReview $ARGUMENTS\n")
	put(t, filepath.Join(user, "review.md"), "User review\n")
	put(t, filepath.Join(user, "deploy.md"), "# Deploy to staging\n\nDeploy $1 now.\n")
	put(t, filepath.Join(cmds, "two words.md"), "x")
	put(t, filepath.Join(cmds, "-dash.md"), "x")
	put(t, filepath.Join(cmds, "compact.md"), "x")
	put(t, filepath.Join(cmds, "notes.txt"), "x")
	secret := put(t, filepath.Join(t.TempDir(), "secret.md"), "SECRET")
	if err := os.Symlink(secret, filepath.Join(cmds, "leak.md")); err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		seen [][]protocol.AgentCommand
	)
	p := newMem(step{text: []string{"ok"}})
	a, _ := newAgent(t, p, func(c *agent.Config) {
		c.Workspace, c.UserCommands = ws, user
		c.OnCommands = func(cs []protocol.AgentCommand) { mu.Lock(); seen = append(seen, cs); mu.Unlock() }
	})
	got := a.Commands()
	builtin := len(agent.SlashCommands())
	if names := commandNames(got[builtin:]); !slices.Equal(names, []string{"deploy", "review"}) {
		t.Fatalf("custom commands %v", names)
	}
	if got[builtin] != (protocol.AgentCommand{Name: "deploy", Description: "Deploy to staging"}) ||
		got[builtin+1] != (protocol.AgentCommand{Name: "review", Description: "Review the diff", Hint: "<path>"}) {
		t.Fatalf("commands %+v", got[builtin:])
	}
	if clean := protocol.CleanCommands(got); len(clean) != len(got) {
		t.Fatalf("agent.commands would drop some of %+v", got)
	}
	put(t, filepath.Join(cmds, "fix.md"), "Fix it")
	a.Refresh()
	a.Refresh() // nothing changed: no second report
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || !slices.Contains(commandNames(seen[0]), "fix") {
		t.Fatalf("OnCommands got %+v", seen)
	}
}

// TestCustomCommandRunsAsPrompt: a custom command's expanded text is the
// turn's user message, config_overrides apply as for any prompt, and
// /help lists it.
func TestCustomCommandRunsAsPrompt(t *testing.T) {
	t.Parallel()
	ws := canon(t, t.TempDir())
	put(t, filepath.Join(ws, ".ferry", "commands", "deploy.md"), "Deploy $1 to $2 ($ARGUMENTS); no $3.\r\n")
	p := newMem(step{text: []string{"done"}})
	a, _ := newAgent(t, p, func(c *agent.Config) { c.Workspace = ws })
	res, err := a.Run(testCtx(t), turnOf(protocol.InputSlashCommand, "/deploy api staging", nil), newRecorder().emit)
	if err != nil || res.Final != "done" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	p.mu.Lock()
	msgs := p.reqs[0].Messages
	p.mu.Unlock()
	if got := msgs[len(msgs)-1].Content[0].Text; got != "Deploy api to staging (api staging); no ." {
		t.Fatalf("user message %q", got)
	}
	res, err = a.Run(testCtx(t), turnOf(protocol.InputSlashCommand, "/help", nil), newRecorder().emit)
	if err != nil || !strings.Contains(res.Text, "/deploy") {
		t.Fatalf("/help = %q, %v", res.Text, err)
	}
}
