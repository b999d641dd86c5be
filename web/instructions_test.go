package web_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/agent/agenttest"
	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// TestBrowserInstructionsAndCommands drives a phone (390x844) against a
// real `ferry up` whose agent talks to the fake Anthropic server
// (web/e2e/instructions.mjs): the session's settings name the instruction
// files in the agent's system prompt (the user's, the repository root's,
// the workspace's), and a custom command of .ferry/commands is picked from
// the `/` menu and run. The fake server shows what the model got: the
// files' text in the system prompt, outermost first, and the command's
// text with its argument. See docs/agent.md.
func TestBrowserInstructionsAndCommands(t *testing.T) {
	node, chromium := browserDeps(t)
	dir := t.TempDir()
	repo := project(t, dir, map[string]string{
		".git/HEAD":                          "ref: refs/heads/main\n",
		"AGENTS.md":                          "REPO-RULE: run make test before you answer.\n",
		"app/AGENTS.md":                      "APP-RULE: the app is written in Go.\n",
		"app/main.go":                        "package main\n",
		"app/.ferry/commands/review.md":      "---\ndescription: Review a file for bugs\nargument-hint: <file>\n---\nREVIEW-CMD: review $ARGUMENTS for bugs, worst first.\n",
		"app/.ferry/commands/bad name.md":    "not a command",
		"../config/ferry/AGENTS.md":          "USER-RULE: answer in plain English.\n",
		"../config/ferry/commands/deploy.md": "Deploy $1 to staging.\n",
	})
	ws := filepath.Join(repo, "app")
	srv := fake.New(t)
	srv.Script(fake.Reply{Text: []string{"No bugs in main.go."}})
	env := upEnv(dir, srv.URL())
	env["XDG_CONFIG_HOME"] = filepath.Join(dir, "config")
	_, login := ferryUp(t, env, "--db", filepath.Join(dir, "ferry.db"), "--workspace", ws, "--agent", "builtin")

	runScript(t, node, "instructions.mjs", map[string]any{
		"chromium": chromium, "screenshots": shotsDir(t, dir), "login": login,
		"files": []string{"config/ferry/AGENTS.md", "../AGENTS.md", "AGENTS.md"},
	})

	var turn []fake.Request
	for _, r := range srv.ModelRequests() {
		if len(r.ToolNames()) > 0 {
			turn = append(turn, r)
		}
	}
	if len(turn) != 1 {
		t.Fatalf("%d model requests of the turn, want 1", len(turn))
	}
	sys := turn[0].System()
	u, r, a := strings.Index(sys, "USER-RULE"), strings.Index(sys, "REPO-RULE"), strings.Index(sys, "APP-RULE")
	if u < 0 || r < 0 || a < 0 || u > r || r > a {
		t.Errorf("instructions missing or out of order (%d %d %d) in the system prompt: %q", u, r, a, sys)
	}
	if got := agenttest.LastUserText(turn[0]); !strings.Contains(got, "REVIEW-CMD: review main.go for bugs, worst first.") {
		t.Errorf("the command's text did not reach the model: %q", got)
	}
}
