package agent_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/protocol"
)

func put(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// canon is dir with its symbolic links resolved (the agent's paths are).
func canon(t *testing.T, dir string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// systemOf runs one text turn and returns the system prompt the model got.
func systemOf(t *testing.T, a *agent.Agent, p *memProvider) string {
	t.Helper()
	if _, err := a.Run(testCtx(t), textTurn("hi"), newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reqs[len(p.reqs)-1].System
}

// TestInstructionsFromParentsUpToTheRepository: the workspace's and each
// parent folder's AGENTS.md up to the repository root (the folder holding
// .git) are in the system prompt, outermost first under their paths, with
// the user's file first; CLAUDE.md only where a folder has no AGENTS.md;
// nothing above the repository.
func TestInstructionsFromParentsUpToTheRepository(t *testing.T) {
	t.Parallel()
	top := canon(t, t.TempDir())
	repo := filepath.Join(top, "repo")
	ws := filepath.Join(repo, "pkg", "svc")
	put(t, filepath.Join(repo, ".git", "HEAD"), "ref: refs/heads/main\n")
	put(t, filepath.Join(top, "AGENTS.md"), "ABOVE-REPO")
	put(t, filepath.Join(repo, "AGENTS.md"), "REPO-AGENTS")
	put(t, filepath.Join(repo, "CLAUDE.md"), "REPO-CLAUDE")
	put(t, filepath.Join(repo, "pkg", "CLAUDE.md"), "PKG-CLAUDE")
	put(t, filepath.Join(ws, "AGENTS.md"), "WS-AGENTS")
	user := put(t, filepath.Join(top, "config", "ferry", "AGENTS.md"), "USER-AGENTS")
	p := newMem(step{text: []string{"ok"}})
	a, _ := newAgent(t, p, func(c *agent.Config) { c.Workspace, c.UserInstructions = ws, user })
	sys := systemOf(t, a, p)
	var at []int
	for _, s := range []string{"USER-AGENTS", "REPO-AGENTS", "PKG-CLAUDE", "WS-AGENTS"} {
		at = append(at, strings.Index(sys, s))
	}
	if slices.Contains(at, -1) || !slices.IsSorted(at) {
		t.Fatalf("instructions at %v in %q", at, sys)
	}
	if strings.Contains(sys, "ABOVE-REPO") || strings.Contains(sys, "REPO-CLAUDE") {
		t.Fatalf("a file above the repository or a CLAUDE.md beside an AGENTS.md is in %q", sys)
	}
	want := []protocol.InstructionFile{{Path: user, Bytes: 11}, {Path: filepath.Join(repo, "AGENTS.md"), Bytes: 11},
		{Path: filepath.Join(repo, "pkg", "CLAUDE.md"), Bytes: 10}, {Path: filepath.Join(ws, "AGENTS.md"), Bytes: 9}}
	if got := a.Instructions(); !slices.Equal(got, want) {
		t.Fatalf("Instructions %+v, want %+v", got, want)
	}
	for _, f := range want {
		if !strings.Contains(sys, "## "+f.Path+"\n") {
			t.Fatalf("no heading naming %s in %q", f.Path, sys)
		}
	}
	if !strings.HasSuffix(sys, "Mode: default. You may read, search, change files and run commands.") {
		t.Fatalf("the mode's section is not last: %q", sys)
	}
}

// TestInstructionsWithoutRepository: outside a repository only the
// workspace's own file counts.
func TestInstructionsWithoutRepository(t *testing.T) {
	t.Parallel()
	top := canon(t, t.TempDir())
	ws := filepath.Join(top, "ws")
	put(t, filepath.Join(top, "AGENTS.md"), "PARENT")
	put(t, filepath.Join(ws, "CLAUDE.md"), "WS-CLAUDE")
	p := newMem(step{text: []string{"ok"}})
	a, _ := newAgent(t, p, func(c *agent.Config) { c.Workspace = ws })
	sys := systemOf(t, a, p)
	if strings.Contains(sys, "PARENT") || !strings.Contains(sys, "WS-CLAUDE") {
		t.Fatalf("system prompt %q", sys)
	}
}

// TestInstructionsCapped: the files together take at most
// MaxInstructionBytes; the innermost keeps its room first, and each cut
// file says so in the prompt and in Instructions.
func TestInstructionsCapped(t *testing.T) {
	t.Parallel()
	top := canon(t, t.TempDir())
	ws := filepath.Join(top, "ws")
	big := strings.Repeat("w", agent.MaxInstructionBytes-100) + strings.Repeat("é", 500) // 1000 bytes over
	put(t, filepath.Join(ws, "AGENTS.md"), big)
	user := put(t, filepath.Join(top, "u", "AGENTS.md"), "USER-"+strings.Repeat("u", 2000))
	p := newMem(step{text: []string{"ok"}})
	a, _ := newAgent(t, p, func(c *agent.Config) { c.Workspace, c.UserInstructions = ws, user })
	sys := systemOf(t, a, p)
	files := a.Instructions()
	if len(files) != 2 || !files[0].Truncated || !files[1].Truncated || files[1].Bytes != int64(len(big)) {
		t.Fatalf("Instructions %+v", files)
	}
	if strings.Count(sys, "w")+strings.Count(sys, "é")*2 > agent.MaxInstructionBytes+200 || strings.Contains(sys, "USER-") {
		t.Fatalf("over the cap: %d bytes", len(sys))
	}
	if strings.Count(sys, "[ferry cut this file here") != 2 || !strings.Contains(sys, "40 KiB") {
		t.Fatalf("no visible cut note in %q", sys[len(sys)-600:])
	}
	if !strings.Contains(sys, "é\n\n[ferry cut") && !strings.Contains(sys, "w\n\n[ferry cut") {
		t.Fatal("the cut split a character")
	}
}

// TestInstructionsReload: an edited, added or removed AGENTS.md is in the
// system prompt from the next turn, and OnInstructions hears of it.
func TestInstructionsReload(t *testing.T) {
	t.Parallel()
	ws := canon(t, t.TempDir())
	var (
		mu   sync.Mutex
		seen [][]protocol.InstructionFile
	)
	p := newMem(step{text: []string{"1"}}, step{text: []string{"2"}}, step{text: []string{"3"}}, step{text: []string{"4"}})
	a, _ := newAgent(t, p, func(c *agent.Config) {
		c.Workspace = ws
		c.OnInstructions = func(f []protocol.InstructionFile) { mu.Lock(); seen = append(seen, f); mu.Unlock() }
	})
	if sys := systemOf(t, a, p); strings.Contains(sys, "# Instructions") {
		t.Fatalf("instructions without a file: %q", sys)
	}
	put(t, filepath.Join(ws, "AGENTS.md"), "FIRST")
	if sys := systemOf(t, a, p); !strings.Contains(sys, "FIRST") {
		t.Fatalf("added file not seen: %q", sys)
	}
	put(t, filepath.Join(ws, "AGENTS.md"), "SECOND, longer")
	if sys := systemOf(t, a, p); !strings.Contains(sys, "SECOND") || strings.Contains(sys, "FIRST") {
		t.Fatalf("edit not seen: %q", sys)
	}
	if err := os.Remove(filepath.Join(ws, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	if sys := systemOf(t, a, p); strings.Contains(sys, "SECOND") {
		t.Fatalf("removed file still there: %q", sys)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 || len(seen[0]) != 1 || seen[1][0].Bytes != 14 || len(seen[2]) != 0 {
		t.Fatalf("OnInstructions got %+v", seen)
	}
}

// TestInstructionsSymlinks: the workspace's AGENTS.md is read as the file
// tools read: a link to a file inside the workspace is followed, a link
// out of it is left out (and CLAUDE.md does not stand in); a parent's file
// must resolve inside the repository.
func TestInstructionsSymlinks(t *testing.T) {
	t.Parallel()
	top := canon(t, t.TempDir())
	secret := put(t, filepath.Join(top, "secret.txt"), "SECRET")
	repo := filepath.Join(top, "repo")
	put(t, filepath.Join(repo, ".git", "HEAD"), "x")
	if err := os.Symlink(secret, filepath.Join(repo, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(repo, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(out, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	put(t, filepath.Join(out, "CLAUDE.md"), "OUT-CLAUDE")
	in := filepath.Join(repo, "in")
	put(t, filepath.Join(in, "docs", "agents.md"), "LINKED-IN")
	if err := os.Symlink("docs/agents.md", filepath.Join(in, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ws, want string
	}{{out, ""}, {in, "LINKED-IN"}} {
		p := newMem(step{text: []string{"ok"}})
		a, _ := newAgent(t, p, func(c *agent.Config) { c.Workspace = tc.ws })
		sys := systemOf(t, a, p)
		if strings.Contains(sys, "SECRET") || strings.Contains(sys, "OUT-CLAUDE") || !strings.Contains(sys, tc.want) {
			t.Fatalf("workspace %s: system prompt %q", tc.ws, sys)
		}
		if tc.want == "" && len(a.Instructions()) != 0 {
			t.Fatalf("workspace %s: Instructions %+v", tc.ws, a.Instructions())
		}
	}
}

// TestInstructionsFIFO: a FIFO in the place of an AGENTS.md (the user's, a
// parent's, the workspace's) or of a command file is left out at once and
// never holds the turn up.
func TestInstructionsFIFO(t *testing.T) {
	t.Parallel()
	top := canon(t, t.TempDir())
	repo := filepath.Join(top, "repo")
	ws := filepath.Join(repo, "ws")
	put(t, filepath.Join(repo, ".git", "HEAD"), "x")
	put(t, filepath.Join(ws, "CLAUDE.md"), "WS-CLAUDE")
	user := filepath.Join(top, "user", "AGENTS.md")
	put(t, filepath.Join(top, "user", "commands", "ok.md"), "fine")
	for _, p := range []string{filepath.Join(repo, "AGENTS.md"), filepath.Join(ws, "AGENTS.md"), user, filepath.Join(top, "user", "commands", "pipe.md")} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Skipf("no FIFOs here: %v", err)
		}
	}
	p := newMem(step{text: []string{"ok"}})
	a, _ := newAgent(t, p, func(c *agent.Config) {
		c.Workspace, c.UserInstructions, c.UserCommands = ws, user, filepath.Join(top, "user", "commands")
	})
	sys := systemOf(t, a, p)
	if len(a.Instructions()) != 0 || strings.Contains(sys, "WS-CLAUDE") {
		t.Fatalf("Instructions %+v, system prompt %q", a.Instructions(), sys)
	}
	if names := commandNames(a.Commands()[len(agent.SlashCommands()):]); !slices.Equal(names, []string{"ok"}) {
		t.Fatalf("custom commands %v", names)
	}
}
