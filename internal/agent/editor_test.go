//go:build unix

package agent_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/binarytest"
	"github.com/ferry-dev/ferry/internal/editorlink"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/mcpclient"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/protocol"
)

// fakeFiles is an editor's file system: unsaved buffers over the disk; it
// counts and records every request.
type fakeFiles struct {
	mu      sync.Mutex
	buffers map[string]string
	calls   []string
}

func newFakeFiles() *fakeFiles { return &fakeFiles{buffers: map[string]string{}} }

func (f *fakeFiles) ReadTextFile(_ context.Context, path string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "read "+path)
	if s, ok := f.buffers[path]; ok {
		return s, nil
	}
	b, err := os.ReadFile(path)
	return string(b), err
}

func (f *fakeFiles) WriteTextFile(_ context.Context, path, content string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "write "+path)
	f.buffers[path] = content
	return os.WriteFile(path, []byte(content), 0o644) // the editor saves
}

func (f *fakeFiles) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// lending returns a Config.Editor that lends l, swappable by the test.
func lending(l editorlink.Lent) func(*agent.Config) {
	return func(c *agent.Config) { c.Editor = func() editorlink.Lent { return l } }
}

// TestEditorBufferIsWhatTheAgentReads: Read returns the editor's unsaved
// text, not the disk's; an Edit based on it goes to the editor.
func TestEditorBufferIsWhatTheAgentReads(t *testing.T) {
	t.Parallel()
	p := newMem(
		step{tools: []llm.Block{toolCall("r1", "Read", map[string]any{"file_path": "a.txt"})}},
		step{tools: []llm.Block{toolCall("e1", "Edit", map[string]any{"file_path": "a.txt", "old_string": "unsaved", "new_string": "edited"})}},
		step{text: []string{"Done."}},
	)
	files := newFakeFiles()
	a, dir := newAgent(t, p, func(c *agent.Config) {
		lending(editorlink.Lent{Files: files})(c)
		c.Rules = &permission.Rules{Allow: []permission.Rule{{Tool: "Edit"}}}
	})
	path := filepath.Join(canonical(t, dir), "a.txt")
	if err := os.WriteFile(path, []byte("saved on disk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files.buffers[path] = "unsaved in the editor\n"
	rec := newRecorder()
	if _, err := a.Run(testCtx(t), textTurn("edit a.txt"), rec.emit); err != nil {
		t.Fatal(err)
	}
	reqs := p.requests()
	if r := resultText(lastToolResults(reqs[1])[0]); !strings.Contains(r, "unsaved in the editor") || strings.Contains(r, "saved on disk") {
		t.Fatalf("Read gave %q, want the editor's buffer", r)
	}
	if r := lastToolResults(reqs[2])[0]; r.IsError {
		t.Fatalf("Edit failed: %s", resultText(r))
	}
	if got, _ := os.ReadFile(path); string(got) != "edited in the editor\n" {
		t.Fatalf("disk %q after the editor saved", got)
	}
	if !contains(files.log(), "write "+path) {
		t.Fatalf("the edit did not go to the editor: %q", files.log())
	}
	fin := rec.finished()
	if len(fin) != 2 || fin[1].Diff == nil || !strings.Contains(fmt.Sprint(fin[1].Diff), "unsaved") {
		t.Fatalf("the Edit's diff is not against the buffer: %+v", fin)
	}
}

// TestEditorUnsavedChangeAfterReadIsStale: the user types in the editor
// after the agent read the file: the Edit is refused as stale (code 3) and
// nothing is written.
func TestEditorUnsavedChangeAfterReadIsStale(t *testing.T) {
	t.Parallel()
	files := newFakeFiles()
	var path string
	p := newMem(
		step{tools: []llm.Block{toolCall("r1", "Read", map[string]any{"file_path": "a.txt"})}},
		step{tools: []llm.Block{toolCall("e1", "Edit", map[string]any{"file_path": "a.txt", "old_string": "one", "new_string": "three"})}},
		step{text: []string{"Done."}},
	)
	a, dir := newAgent(t, p, func(c *agent.Config) {
		lending(editorlink.Lent{Files: files})(c)
		c.Rules = &permission.Rules{Allow: []permission.Rule{{Tool: "Edit"}}}
	})
	path = filepath.Join(canonical(t, dir), "a.txt")
	if err := os.WriteFile(path, []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	emit := func(ctx context.Context, typ string, payload any) error {
		if f, ok := payload.(*protocol.ToolFinished); ok && f.ToolUseID == "r1" {
			files.mu.Lock()
			files.buffers[path] = "one two\n" // typed, not saved
			files.mu.Unlock()
		}
		return rec.emit(ctx, typ, payload)
	}
	if _, err := a.Run(testCtx(t), textTurn("edit"), emit); err != nil {
		t.Fatal(err)
	}
	r := lastToolResults(p.requests()[2])[0]
	if !r.IsError || !strings.Contains(resultText(r), fmt.Sprintf("code %d", tools.CodeStale)) {
		t.Fatalf("Edit after an unsaved change: %s", resultText(r))
	}
	if contains(files.log(), "write "+path) {
		t.Fatal("the stale edit reached the editor")
	}
}

// TestEditorNeverAskedOutsideTheWorkspace: paths that leave the workspace
// (.., absolute, a symlink out) are refused before the editor is asked.
func TestEditorNeverAskedOutsideTheWorkspace(t *testing.T) {
	t.Parallel()
	outside := canonical(t, t.TempDir())
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel("/", secret)
	attempts := []llm.Block{
		toolCall("o1", "Read", map[string]any{"file_path": secret}),
		toolCall("o2", "Read", map[string]any{"file_path": "link/secret.txt"}),
		toolCall("o3", "Read", map[string]any{"file_path": strings.Repeat("../", 40) + rel}),
		toolCall("o4", "Write", map[string]any{"file_path": secret, "content": "x"}),
		toolCall("o5", "Write", map[string]any{"file_path": "link/new.txt", "content": "x"}),
		toolCall("o6", "Edit", map[string]any{"file_path": "link/secret.txt", "old_string": "secret", "new_string": "x"}),
		toolCall("o7", "Read", map[string]any{"file_path": "/etc/passwd"}),
	}
	p := newMem(step{tools: attempts}, step{text: []string{"Done."}})
	files := newFakeFiles()
	a, dir := newAgent(t, p, func(c *agent.Config) {
		lending(editorlink.Lent{Files: files})(c)
		c.Rules = &permission.Rules{Allow: []permission.Rule{{Tool: "Read"}, {Tool: "Write"}, {Tool: "Edit"}}}
	})
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(testCtx(t), textTurn("escape"), newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	res := lastToolResults(p.requests()[1])
	for i, r := range res {
		if !r.IsError || !strings.Contains(resultText(r), fmt.Sprintf("code %d", tools.CodeOutside)) {
			t.Errorf("%s: %s", attempts[i].ToolUseID, resultText(r))
		}
	}
	if n := len(files.log()); n != 0 {
		t.Fatalf("the editor was asked %d times: %q", n, files.log())
	}
	if got, _ := os.ReadFile(secret); string(got) != "secret\n" {
		t.Fatalf("secret %q", got)
	}
	t.Logf("%d escapes refused, 0 editor requests", len(attempts))
}

// execTerminal is an editor terminal that really runs the command (as an
// editor would, in a child), honouring ctx as a kill.
type execTerminal struct {
	mu      sync.Mutex
	cmds    []editorlink.Command
	started chan struct{}
	killed  chan struct{}
}

func newExecTerminal() *execTerminal {
	return &execTerminal{started: make(chan struct{}, 8), killed: make(chan struct{}, 8)}
}

func (e *execTerminal) Run(ctx context.Context, c editorlink.Command) (string, bool, editorlink.Exit, error) {
	e.mu.Lock()
	e.cmds = append(e.cmds, c)
	e.mu.Unlock()
	cmd := exec.Command(c.Command, c.Args...) //nolint:gosec // the test's own commands
	cmd.Dir = c.Cwd
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=the-editor-s-own") // the editor's environment
	for k, v := range c.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", false, editorlink.Exit{}, err
	}
	e.started <- struct{}{}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		e.killed <- struct{}{}
		return out.String(), false, editorlink.Exit{Signal: "SIGKILL"}, ctx.Err()
	}
	s := out.String()
	truncated := false
	if c.OutputByteLimit > 0 && len(s) > c.OutputByteLimit {
		s, truncated = s[len(s)-c.OutputByteLimit:], true
	}
	code := cmd.ProcessState.ExitCode()
	return s, truncated, editorlink.Exit{Code: &code}, nil
}

// TestBashInTheEditorTerminal: Bash runs through the lent terminal, in
// the workspace, and the model gets exactly what a local run gives it;
// a denied command never reaches the terminal.
func TestBashInTheEditorTerminal(t *testing.T) {
	t.Parallel()
	command := "echo out; echo err >&2; pwd; echo \"key=$ANTHROPIC_API_KEY\"; exit 3"
	script := func() *memProvider {
		return newMem(
			step{tools: []llm.Block{toolCall("b1", "Bash", map[string]any{"command": command})}},
			step{tools: []llm.Block{toolCall("b2", "Bash", map[string]any{"command": "rm -rf /tmp/nothing"})}},
			step{text: []string{"Done."}},
		)
	}
	rules := func(c *agent.Config) {
		c.Rules = &permission.Rules{Allow: []permission.Rule{{Tool: "Bash"}}, Deny: []permission.Rule{{Tool: "Bash", Pattern: "rm:*"}}}
	}
	term := newExecTerminal()
	lent := script()
	a, dir := newAgent(t, lent, func(c *agent.Config) { rules(c); lending(editorlink.Lent{Terminals: term})(c) })
	if _, err := a.Run(testCtx(t), textTurn("run"), newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	local := script()
	b, _ := newAgent(t, local, rules)
	if _, err := b.Run(testCtx(t), textTurn("run"), newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	got := resultText(lastToolResults(lent.requests()[1])[0])
	want := resultText(lastToolResults(local.requests()[1])[0])
	// The two runs are in two workspaces: compare with each one's path.
	want = strings.ReplaceAll(want, canonical(t, b.Workspace()), "WS")
	got = strings.ReplaceAll(got, canonical(t, dir), "WS")
	if got != want || !strings.Contains(got, "Exit code: 3") || !strings.Contains(got, "key=\n") {
		t.Fatalf("through the terminal:\n%s\nlocally:\n%s", got, want)
	}
	term.mu.Lock()
	cmds := term.cmds
	term.mu.Unlock()
	if len(cmds) != 1 || cmds[0].Cwd != a.Workspace() || cmds[0].Args[len(cmds[0].Args)-1] != command ||
		cmds[0].OutputByteLimit != tools.BashMaxOutput || cmds[0].Env["GIT_TERMINAL_PROMPT"] != "0" || cmds[0].Env["ANTHROPIC_API_KEY"] != "" {
		t.Fatalf("terminal commands %+v", cmds)
	}
	if r := lastToolResults(lent.requests()[2])[0]; !r.IsError || !strings.Contains(resultText(r), "Denied") {
		t.Fatalf("denied command: %s", resultText(r))
	}
}

// TestBashInTheEditorTerminalCancelAndTimeout: cancelling the turn kills
// the terminal's command at once; a timeout kills it and is code 18.
func TestBashInTheEditorTerminalCancelAndTimeout(t *testing.T) {
	t.Parallel()
	term := newExecTerminal()
	p := newMem(
		step{tools: []llm.Block{toolCall("b1", "Bash", map[string]any{"command": "echo started; sleep 30", "timeout_ms": 300})}},
		step{tools: []llm.Block{toolCall("b2", "Bash", map[string]any{"command": "sleep 30"})}},
		step{text: []string{"Done."}},
	)
	a, _ := newAgent(t, p, func(c *agent.Config) {
		lending(editorlink.Lent{Terminals: term})(c)
		c.Rules = &permission.Rules{Allow: []permission.Rule{{Tool: "Bash"}}}
	})
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := a.Run(ctx, textTurn("run"), newRecorder().emit)
		done <- err
	}()
	waitFor(t, term.started, "b1 to start in the terminal")
	waitFor(t, term.killed, "b1's timeout to kill it")
	waitFor(t, term.started, "b2 to start in the terminal")
	cancelled := time.Now()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if d := time.Since(cancelled); d > 2*time.Second {
		t.Fatalf("cancel took %s", d)
	}
	select {
	case <-term.killed:
	default:
		t.Fatal("the cancelled command was not killed")
	}
	r := lastToolResults(p.requests()[1])[0]
	if !r.IsError || !strings.Contains(resultText(r), fmt.Sprintf("code %d", tools.CodeTimeout)) || !strings.Contains(resultText(r), "started") {
		t.Fatalf("timeout result: %s", resultText(r))
	}
}

func canonical(t *testing.T, p string) string {
	t.Helper()
	c, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// swappable is a Config.Editor whose lent set the test changes between
// turns.
type swappable struct {
	mu   sync.Mutex
	lent editorlink.Lent
}

func (s *swappable) get() editorlink.Lent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lent
}

func (s *swappable) set(l editorlink.Lent) {
	s.mu.Lock()
	s.lent = l
	s.mu.Unlock()
}

func hasTool(req llm.Request, name string) bool {
	for _, s := range req.Tools {
		if s.Name == name {
			return true
		}
	}
	return false
}

func toolNames(req llm.Request) []string {
	var out []string
	for _, s := range req.Tools {
		out = append(out, s.Name)
	}
	return out
}

func mcpErrors(rec *recorder) []*protocol.AgentError {
	var out []*protocol.AgentError
	for _, p := range rec.of(protocol.TypeAgentError) {
		if e := p.(*protocol.AgentError); e.Code == protocol.AgentCodeMCPServerFailed {
			out = append(out, e)
		}
	}
	return out
}

// TestEditorMCPServers drives the editor's MCP servers with ferry's own
// `ferry mcp` as a real stdio server: its tools are offered to the model
// and a call's result reaches it; a deny rule naming the tool refuses it;
// plan mode refuses a tool that is not read-only; a server that cannot
// start is reported once and the turn goes on; a changed list is
// reconnected at the next turn.
func TestEditorMCPServers(t *testing.T) {
	bin := binarytest.Build(t)
	mcpWS := t.TempDir()
	if err := os.WriteFile(filepath.Join(mcpWS, "hello.txt"), []byte("hello from the MCP server\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ferry := mcpclient.Server{Name: "ferry", Command: bin, Args: []string{"mcp", "--workspace", mcpWS, "--no-history"}}
	broken := mcpclient.Server{Name: "broken", Command: filepath.Join(t.TempDir(), "no-such-server")}
	ed := &swappable{lent: editorlink.Lent{MCPServers: []mcpclient.Server{ferry, broken}}}
	rules := &permission.Rules{}
	for _, s := range []string{"mcp__ferry__Read"} {
		r, err := permission.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		rules.Allow = append(rules.Allow, r)
	}
	deny, err := permission.Parse("mcp__ferry__Write")
	if err != nil {
		t.Fatal(err)
	}
	rules.Deny = append(rules.Deny, deny)
	p := newMem(
		// Turn 1: a read (allowed) and a write (denied by the rule).
		step{tools: []llm.Block{
			toolCall("m1", "mcp__ferry__Read", map[string]any{"file_path": filepath.Join(mcpWS, "hello.txt")}),
			toolCall("m2", "mcp__ferry__Write", map[string]any{"file_path": filepath.Join(mcpWS, "new.txt"), "content": "x"}),
		}},
		step{text: []string{"Read it."}},
		// Turn 2: same servers, nothing new to report.
		step{text: []string{"Still here."}},
		// Turn 3, plan mode: Edit is not read-only.
		step{tools: []llm.Block{toolCall("m3", "mcp__ferry__Edit", map[string]any{"file_path": filepath.Join(mcpWS, "hello.txt"), "old_string": "hello", "new_string": "bye"})}},
		step{text: []string{"Refused."}},
		// Turn 4: the editor lends no server any more.
		step{text: []string{"Gone."}},
		// Turn 5: it lends ferry's again.
		step{text: []string{"Back."}},
	)
	a, _ := newAgent(t, p, func(c *agent.Config) {
		c.Editor = ed.get
		c.Rules = rules
	})
	ctx := testCtx(t)

	rec := newRecorder()
	res, err := a.Run(ctx, textTurn("read it"), rec.emit)
	if err != nil || res.StopReason != agent.StopEndTurn {
		t.Fatalf("turn 1: %+v, %v", res, err)
	}
	reqs := p.requests()
	if !hasTool(reqs[0], "mcp__ferry__Read") || !hasTool(reqs[0], "Read") {
		t.Fatalf("tools offered: %v", toolNames(reqs[0]))
	}
	results := lastToolResults(reqs[1])
	if len(results) != 2 || results[0].IsError || !strings.Contains(resultText(results[0]), "hello from the MCP server") {
		t.Fatalf("the MCP Read's result did not reach the model: %+v", results)
	}
	if !results[1].IsError || !strings.Contains(resultText(results[1]), "Denied by the user's permission rules") {
		t.Fatalf("denied MCP Write: %s", resultText(results[1]))
	}
	if _, err := os.Stat(filepath.Join(mcpWS, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the denied write happened: %v", err)
	}
	errs := mcpErrors(rec)
	if len(errs) != 1 || !strings.Contains(errs[0].Message, `"broken"`) || errs[0].TurnID == "" {
		t.Fatalf("broken server reports: %+v", errs)
	}

	rec = newRecorder()
	if res, err := a.Run(ctx, textTurn("again"), rec.emit); err != nil || res.Final != "Still here." {
		t.Fatalf("turn 2: %+v, %v", res, err)
	}
	if errs := mcpErrors(rec); len(errs) != 0 {
		t.Fatalf("reported again: %+v", errs)
	}

	if err := a.SetMode(protocol.ModePlan); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(ctx, textTurn("edit it"), newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	r := lastToolResults(p.requests()[4])[0]
	if !r.IsError || !strings.Contains(resultText(r), "plan mode") {
		t.Fatalf("plan mode let an MCP Edit through: %s", resultText(r))
	}
	if b, _ := os.ReadFile(filepath.Join(mcpWS, "hello.txt")); !strings.HasPrefix(string(b), "hello") {
		t.Fatalf("file edited in plan mode: %q", b)
	}

	ed.set(editorlink.Lent{})
	if _, err := a.Run(ctx, textTurn("bye"), newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	if last := p.requests()[5]; hasTool(last, "mcp__ferry__Read") || !hasTool(last, "Read") {
		t.Fatalf("tools after the editor dropped its servers: %v", toolNames(last))
	}
	waitNoProcess(t, mcpWS, "the dropped server")

	ed.set(editorlink.Lent{MCPServers: []mcpclient.Server{ferry}})
	if _, err := a.Run(ctx, textTurn("back"), newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	if last := p.requests()[6]; !hasTool(last, "mcp__ferry__Read") {
		t.Fatalf("tools after the editor lent the server again: %v", toolNames(last))
	}
	if n := processesWith(t, mcpWS); n != 1 {
		t.Fatalf("%d server processes running, want 1", n)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	waitNoProcess(t, mcpWS, "the server after the session closed")
}

// processesWith counts the processes whose command line holds s (Linux's
// /proc; elsewhere the test skips).
func processesWith(t *testing.T, s string) int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil || len(dirs) == 0 {
		t.Skip("no /proc to find the MCP server's process in")
	}
	n := 0
	for _, d := range dirs {
		if b, err := os.ReadFile(d); err == nil && bytes.Contains(b, []byte(s)) {
			n++
		}
	}
	return n
}

func waitNoProcess(t *testing.T, s, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for processesWith(t, s) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s still runs", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestEditorWriteKeepsArtifactsAndHistory: a Write through the editor is
// still an artifact and still recorded in the file history, with the
// editor's text as the old content.
func TestEditorWriteKeepsArtifactsAndHistory(t *testing.T) {
	t.Parallel()
	files := newFakeFiles()
	hist := &history{}
	p := newMem(
		step{tools: []llm.Block{toolCall("r1", "Read", map[string]any{"file_path": "report.md"})}},
		step{tools: []llm.Block{toolCall("w1", "Write", map[string]any{"file_path": "report.md", "content": "# Report\n\nDone.\n"})}},
		step{text: []string{"Done."}},
	)
	a, dir := newAgent(t, p, func(c *agent.Config) {
		lending(editorlink.Lent{Files: files})(c)
		c.Artifacts = true
		c.History = hist
		c.Rules = &permission.Rules{Allow: []permission.Rule{{Tool: "Write"}}}
	})
	path := filepath.Join(canonical(t, dir), "report.md")
	if err := os.WriteFile(path, []byte("# Report\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files.buffers[path] = "# Report\n\nTBD (unsaved)\n"
	rec := newRecorder()
	res, err := a.Run(testCtx(t), textTurn("write the report"), rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	if r := lastToolResults(p.requests()[2])[0]; r.IsError {
		t.Fatalf("Write: %s", resultText(r))
	}
	if !contains(files.log(), "write "+path) {
		t.Fatalf("the write did not go to the editor: %q", files.log())
	}
	if len(res.Artifacts) != 1 || res.Artifacts[0].Path() != "report.md" {
		t.Fatalf("artifacts %+v", res.Artifacts)
	}
	if hist.old() != "# Report\n\nTBD (unsaved)\n" {
		t.Fatalf("history kept %q, want the editor's text", hist.old())
	}
}

// history is a tools.FileHistory that keeps the last old content.
type history struct {
	mu   sync.Mutex
	last string
}

func (h *history) Track(_ context.Context, _ string, old []byte, _ bool) error {
	h.mu.Lock()
	h.last = string(old)
	h.mu.Unlock()
	return nil
}

func (h *history) old() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}
