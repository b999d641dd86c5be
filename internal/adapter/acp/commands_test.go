package acp

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/acp/acppeer"
	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/protocol"
)

// The agent's available_commands_update reaches SessionConfig.Commands
// with names, descriptions and hints; a denial's note is not declared
// (ACP's permission outcome has no room for text).
func TestCommandsReported(t *testing.T) {
	t.Parallel()
	p := newPeer(t, acppeer.Script{Turns: [][]step{{
		{Update: map[string]any{"sessionUpdate": "available_commands_update", "availableCommands": []any{
			map[string]any{"name": "review", "description": "Review the changes", "input": map[string]any{"hint": "focus"}},
			map[string]any{"name": "init", "description": "Write AGENTS.md"},
		}}},
		{Text: "ok"},
	}}})
	var (
		mu  sync.Mutex
		got [][]protocol.AgentCommand
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := adaptertest.Open(t, ctx, p.a, adapter.SessionConfig{SessionID: protocol.NewID(), Workspace: protocol.Workspace{ID: "w", Name: "w", Path: p.ws},
		Commands: func(c []protocol.AgentCommand) {
			mu.Lock()
			got = append(got, c)
			mu.Unlock()
		}}).(*session)
	run(t, s, turn("hi"))
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || len(got[0]) != 2 || got[0][0] != (protocol.AgentCommand{Name: "review", Description: "Review the changes", Hint: "focus"}) || got[0][1].Name != "init" {
		t.Fatalf("commands reported %+v", got)
	}
	if p.a.Capability().DenyNote {
		t.Fatal("an ACP agent cannot carry a denial's note, but deny_note is declared")
	}
}

// An agent whose command is not found is unavailable, saying how to fix it
// for the command the user ran; one that is found is not.
func TestUnavailableWithoutCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, err := New(Config{Command: []string{filepath.Join(dir, "no-agent")}, HostCommand: "ferry up"})
	if err != nil {
		t.Fatal(err)
	}
	if u := a.Capability().Unavailable; !strings.Contains(u, `"no-agent"`) || !strings.HasSuffix(u, "restart ferry up") || strings.Contains(u, dir) {
		t.Fatalf("unavailable %q", u)
	}
	ok, err := New(Config{Command: []string{"sh"}})
	if err != nil {
		t.Fatal(err)
	}
	if u := ok.Capability().Unavailable; u != "" {
		t.Fatalf("a command on PATH is unavailable: %q", u)
	}
}

// TestSessionInfoTitle: a title in the agent's session_info_update (ACP's
// unstable session metadata) reaches SessionConfig.Title; a null title
// (cleared) reports nothing.
func TestSessionInfoTitle(t *testing.T) {
	t.Parallel()
	p := newPeer(t, acppeer.Script{Turns: [][]step{{
		{Update: map[string]any{"sessionUpdate": "session_info_update", "title": "Fix the login bug"}},
		{Update: map[string]any{"sessionUpdate": "session_info_update", "title": nil}},
		{Text: "ok"},
	}}})
	var (
		mu  sync.Mutex
		got []string
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := adaptertest.Open(t, ctx, p.a, adapter.SessionConfig{SessionID: protocol.NewID(), Workspace: protocol.Workspace{ID: "w", Name: "w", Path: p.ws},
		Title: func(title string) {
			mu.Lock()
			got = append(got, title)
			mu.Unlock()
		}}).(*session)
	run(t, s, turn("hi"))
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != "Fix the login bug" {
		t.Fatalf("titles reported %q", got)
	}
}
