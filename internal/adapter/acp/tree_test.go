//go:build unix

package acp

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter/acp/acppeer"
)

// Close kills what the agent runs in a session of its own (claude-code-acp
// runs Claude Code, which runs each Bash command under setsid): below an
// agent that waits for it, and below one that exits at the end of its
// input. A daemon that left every process ferry can see survives, but
// holding the agent's output open it cannot keep Close from returning.
func TestCloseKillsSetsidDescendants(t *testing.T) {
	t.Parallel()
	const agent = `"$0" -test.run='^$'`
	for _, c := range []struct {
		name, script string
		killed       bool
	}{
		{"agent-waits", `setsid sleep 300 & echo $! > "$1"; ` + agent + `; wait`, true},
		{"agent-exits", `setsid sleep 300 & echo $! > "$1"; exec ` + agent, true},
		{"daemon", `(setsid sleep 300 & echo $! > "$1"); exec ` + agent, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newPeer(t, acppeer.Script{Turns: [][]step{{{Text: "hi"}}}})
			pidFile := filepath.Join(t.TempDir(), "pid")
			p.a.cfg.Command = []string{"sh", "-c", c.script, os.Args[0], pidFile}
			s := p.open(t, "")
			if _, res, err := run(t, s, turn("go")); err != nil || res.Text != "hi" {
				t.Fatalf("Run = %+v, %v", res, err)
			}
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || !alive(pid) {
				t.Fatalf("no setsid descendant (%q, %v)", b, err)
			}
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
			closed := make(chan struct{})
			go func() { _ = s.Close(); close(closed) }()
			select {
			case <-closed:
			case <-time.After(30 * time.Second):
				t.Fatal("Close did not return")
			}
			deadline := time.Now().Add(10 * time.Second)
			for c.killed && alive(pid) {
				if time.Now().After(deadline) {
					t.Fatalf("the setsid descendant %d outlived Close", pid)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
