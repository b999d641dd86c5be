package agent_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/exectest"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/protocol"
)

// Review mode checks git against the workspace's repository: with `git
// status` allowed by a rule, it runs in a clean repository and is refused,
// without running anything, where the repository's configuration names a
// file system monitor program.
func TestReviewModeReadsTheWorkspaceRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (apt-get install git)")
	}
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	marker := filepath.Join(t.TempDir(), "ran")
	for _, hostile := range []bool{false, true} {
		p := newMem(
			step{tools: []llm.Block{toolCall("g1", "Bash", map[string]any{"command": "git status"})}},
			step{text: []string{"done"}},
		)
		a, dir := newAgent(t, p, func(c *agent.Config) {
			c.Mode = protocol.ModeReview
			c.Rules = &permission.Rules{Allow: []permission.Rule{{Tool: "Bash", Pattern: "git status:*"}}}
		})
		if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v %s", err, out)
		}
		if hostile {
			script := filepath.Join(t.TempDir(), "evil.sh")
			exectest.WriteScript(t, script, "#!/bin/sh\ntouch '"+marker+"'\n")
			if out, err := exec.Command("git", "-C", dir, "config", "core.fsmonitor", script).CombinedOutput(); err != nil {
				t.Fatalf("git config: %v %s", err, out)
			}
		}
		rec := newRecorder()
		if _, err := a.Run(testCtx(t), textTurn("status?"), rec.emit); err != nil {
			t.Fatal(err)
		}
		f := rec.finished()
		want := protocol.ToolOK
		if hostile {
			want = protocol.ToolDenied
		}
		if len(f) != 1 || f[0].Status != want {
			t.Fatalf("hostile=%v: finished %+v", hostile, f)
		}
		if r := lastToolResults(p.requests()[1]); hostile && (len(r) != 1 || !strings.Contains(resultText(r[0]), "core.fsmonitor")) {
			t.Fatalf("refusal %+v", r)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("review mode ran the repository's fsmonitor")
	}
}
