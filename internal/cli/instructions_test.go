package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/agent/agenttest"
	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// ferryRunConfig is ferryRun with $XDG_CONFIG_HOME set to configHome, where
// ferry finds the user's AGENTS.md and commands.
func ferryRunConfig(t *testing.T, srv *fake.Server, f fake.Format, dir, configHome string, args ...string) runOut {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second) // gopls loads the module at its first edit
	defer cancel()
	var stdout, stderr bytes.Buffer
	env := Env{
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string {
			switch k {
			case "ANTHROPIC_API_KEY", "OPENAI_API_KEY":
				return "test-key"
			case "XDG_STATE_HOME":
				return testStateHome
			case "XDG_CONFIG_HOME":
				return configHome
			}
			return ""
		},
	}
	full := append([]string{"run", "--provider", string(f), "--model", "test-model", "--base-url", srv.BaseURL(f), "--workspace", dir}, args...)
	return runOut{Run(ctx, env, full), stdout.String(), stderr.String()}
}

func mkfile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, content)
}

// TestRunProjectInstructions: ferry run's model sees the user's AGENTS.md,
// the repository root's AGENTS.md and the workspace's CLAUDE.md (it has no
// AGENTS.md) in its system prompt, outermost first, each under its path.
func TestRunProjectInstructions(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server, repo string) {
		if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		ws := filepath.Join(repo, "svc")
		cfg := t.TempDir()
		mkfile(t, filepath.Join(cfg, "ferry", "AGENTS.md"), "USER-RULE: answer in English.\n")
		mkfile(t, filepath.Join(repo, "AGENTS.md"), "REPO-RULE: run make test.\n")
		mkfile(t, filepath.Join(ws, "CLAUDE.md"), "WS-RULE: the service is in Go.\n")
		srv.Script(fake.Reply{Text: []string{"ok"}})
		out := ferryRunConfig(t, srv, f, ws, cfg, "hello")
		if out.code != ExitOK {
			t.Fatalf("exit %d, stderr %s", out.code, out.stderr)
		}
		sys := srv.ModelRequests()[0].System()
		u, r, w := strings.Index(sys, "USER-RULE"), strings.Index(sys, "REPO-RULE"), strings.Index(sys, "WS-RULE")
		if u < 0 || r < 0 || w < 0 || u > r || r > w {
			t.Fatalf("instructions missing or out of order (%d %d %d) in %q", u, r, w, sys)
		}
		for _, p := range []string{filepath.Join(cfg, "ferry", "AGENTS.md"), filepath.Join(repo, "AGENTS.md"), filepath.Join(ws, "CLAUDE.md")} {
			real, _ := filepath.EvalSymlinks(p)
			if !strings.Contains(sys, real) && !strings.Contains(sys, p) {
				t.Fatalf("system prompt does not name %s: %q", p, sys)
			}
		}
	})
}

// TestRunCustomCommand: a Markdown file in .ferry/commands is a slash
// command: `ferry run "/review foo"` sends its text with $ARGUMENTS and $1
// replaced; the user's folder has the same name too, and the workspace's
// wins.
func TestRunCustomCommand(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server, dir string) {
		cfg := t.TempDir()
		mkfile(t, filepath.Join(dir, ".ferry", "commands", "review.md"),
			"---\ndescription: Review a file\n---\nREVIEW-CMD: review $ARGUMENTS carefully (first: $1).\n")
		mkfile(t, filepath.Join(cfg, "ferry", "commands", "review.md"), "USER-REVIEW: not this one $ARGUMENTS\n")
		srv.Script(fake.Reply{Text: []string{"reviewed"}})
		out := ferryRunConfig(t, srv, f, dir, cfg, "/review foo.go bar.go")
		if out.code != ExitOK || out.stdout != "reviewed\n" {
			t.Fatalf("exit %d, stdout %q, stderr %s", out.code, out.stdout, out.stderr)
		}
		reqs := srv.ModelRequests()
		if len(reqs) != 1 {
			t.Fatalf("%d model requests", len(reqs))
		}
		got := agenttest.LastUserText(reqs[0])
		if !strings.Contains(got, "REVIEW-CMD: review foo.go bar.go carefully (first: foo.go).") || strings.Contains(got, "USER-REVIEW") || strings.Contains(got, "description:") {
			t.Fatalf("user message %q", got)
		}
	})
}

// TestRunCustomCommandRefusals: a command file over the size bound is
// refused with a clear error naming it (no model call); a file whose name
// is not a valid command name is not a command; a built-in name stays the
// built-in.
func TestRunCustomCommandRefusals(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server, dir string) {
		cmds := filepath.Join(dir, ".ferry", "commands")
		mkfile(t, filepath.Join(cmds, "huge.md"), strings.Repeat("x", 100<<10))
		mkfile(t, filepath.Join(cmds, "bad name.md"), "BAD-NAME $ARGUMENTS")
		mkfile(t, filepath.Join(cmds, "help.md"), "NOT-HELP")
		out := ferryRunConfig(t, srv, f, dir, "", "/huge")
		if out.code == ExitOK || !strings.Contains(out.stderr, "huge.md") || !strings.Contains(out.stderr, "KiB") {
			t.Fatalf("oversized command: exit %d, stdout %q, stderr %q", out.code, out.stdout, out.stderr)
		}
		out = ferryRunConfig(t, srv, f, dir, "", "/bad name")
		if !strings.Contains(out.stdout, "Unknown command") {
			t.Fatalf("bad file name ran: exit %d, stdout %q, stderr %q", out.code, out.stdout, out.stderr)
		}
		out = ferryRunConfig(t, srv, f, dir, "", "/help")
		if out.code != ExitOK || !strings.HasPrefix(out.stdout, "Commands:") {
			t.Fatalf("/help: exit %d, stdout %q, stderr %q", out.code, out.stdout, out.stderr)
		}
		if n := len(srv.ModelRequests()); n != 0 {
			t.Fatalf("%d model requests", n)
		}
	})
}
