package builtin_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/builtin"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/llm/provider"
	"github.com/ferry-dev/ferry/protocol"
)

// TestInstructionsAndCommandsReported: Open reports the user's and the
// workspace's instruction files and custom commands
// ($XDG_CONFIG_HOME/ferry), and an open session reports a command file
// added later without a turn, so the UI's / menu follows the folder.
func TestInstructionsAndCommandsReported(t *testing.T) {
	t.Parallel()
	srv := fake.New(t)
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	conf := t.TempDir()
	write := func(p, s string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(conf, "ferry", "AGENTS.md"), "mine")
	write(filepath.Join(conf, "ferry", "commands", "standup.md"), "Write my standup")
	write(filepath.Join(ws, "AGENTS.md"), "project")
	var (
		mu    sync.Mutex
		cmds  [][]protocol.AgentCommand
		files [][]protocol.InstructionFile
	)
	cfg := builtin.Config{
		Getenv: func(k string) string {
			if k == "XDG_CONFIG_HOME" {
				return conf
			}
			return ""
		},
		Provider: provider.Config{Provider: string(fake.Anthropic), Model: "test-model", BaseURL: srv.BaseURL(fake.Anthropic), APIKey: "test-key"},
	}
	s, err := builtin.New(cfg).Open(context.Background(), adapter.SessionConfig{SessionID: protocol.NewID(),
		Workspace: protocol.Workspace{ID: "w", Name: "w", Path: ws},
		Commands:  func(c []protocol.AgentCommand) { mu.Lock(); cmds = append(cmds, c); mu.Unlock() },
		Instructions: func(f []protocol.InstructionFile) {
			mu.Lock()
			files = append(files, f)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	names := func(cs []protocol.AgentCommand) (out []string) {
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	mu.Lock()
	if len(files) != 1 || !slices.Equal(files[0], []protocol.InstructionFile{{Path: filepath.Join(conf, "ferry", "AGENTS.md"), Bytes: 4}, {Path: filepath.Join(ws, "AGENTS.md"), Bytes: 7}}) {
		t.Fatalf("Open reported instructions %+v", files)
	}
	if len(cmds) != 1 || !slices.Contains(names(cmds[0]), "standup") {
		t.Fatalf("Open reported commands %+v", cmds)
	}
	mu.Unlock()
	write(filepath.Join(ws, ".ferry", "commands", "triage.md"), "Triage the issues")
	deadline := time.Now().Add(15 * time.Second)
	for {
		mu.Lock()
		n, last := len(cmds), cmds[len(cmds)-1]
		mu.Unlock()
		if n == 2 && slices.Contains(names(last), "triage") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new command was not reported: %+v", last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
