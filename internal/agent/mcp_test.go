package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/mcpclient/mcptest"
	"github.com/ferry-dev/ferry/internal/mcpconfig"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/protocol"
)

var (
	testServerOnce sync.Once
	testServerBin  string
	testServerErr  error
)

// mcpTestServer builds mcpclient's test server (internal/mcpclient/
// testdata/testserver): read-only echo and image, non-read-only fail and
// crash; "exit" exits at once, "hang" never answers.
func mcpTestServer(t *testing.T) string {
	t.Helper()
	testServerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "agent-mcp-")
		if err != nil {
			testServerErr = err
			return
		}
		testServerBin = filepath.Join(dir, "testserver")
		out, err := exec.Command("go", "build", "-o", testServerBin, "../mcpclient/testdata/testserver").CombinedOutput()
		if err != nil {
			testServerErr = fmt.Errorf("go build the MCP test server: %w\n%s", err, out)
		}
	})
	if testServerErr != nil {
		t.Fatal(testServerErr)
	}
	return testServerBin
}

// mcpFiles writes the workspace's .mcp.json and the user's mcp.json
// (either may be nil) and returns the sources of a session on ws.
func mcpFiles(t *testing.T, ws string, workspace, user map[string]any) *mcpconfig.Sources {
	t.Helper()
	home := t.TempDir()
	env := map[string]string{"XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state")}
	write := func(path string, servers map[string]any) {
		if servers == nil {
			return
		}
		b, err := json.Marshal(map[string]any{"mcpServers": servers})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(ws, ".mcp.json"), workspace)
	write(filepath.Join(home, "config", "ferry", "mcp.json"), user)
	ws, err := filepath.EvalSymlinks(ws) // approvals are keyed by the canonical path
	if err != nil {
		t.Fatal(err)
	}
	src, err := mcpconfig.DefaultSources(ws, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// answerAsks answers every interaction of rec with value, and sends the
// requests it answered to got.
func answerAsks(a **agent.Agent, rec *recorder, value string, got chan<- *protocol.InteractionRequest) {
	go func() {
		for req := range rec.asks {
			got <- req
			_ = (*a).Answer(req.InteractionID, &protocol.InteractionResponse{InteractionID: req.InteractionID, SelectedValue: protocol.Single(value)})
		}
	}()
}

func mustRule(t *testing.T, s string) permission.Rule {
	t.Helper()
	r, err := permission.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestWorkspaceMCPAskedBeforeAnythingStarts: a workspace's .mcp.json
// starts nothing until the user approves it (asked with a permission
// interaction naming each server and its command); approved, its tools
// and the user's are offered and a call's result reaches the model; a
// server that exits at once is reported once and the turn goes on; plan
// mode refuses a tool not marked read-only and runs a read-only one; a
// deny rule refuses a tool; a server that crashes mid-turn is reported
// in that turn. The approval is kept: the next session does not ask.
func TestWorkspaceMCPAskedBeforeAnythingStarts(t *testing.T) {
	bin := mcpTestServer(t)
	marker := "mcp-marker-" + fmt.Sprint(time.Now().UnixNano())
	ws := t.TempDir()
	src := mcpFiles(t, ws,
		map[string]any{"t": map[string]any{"command": bin, "args": []string{"", marker}}, "dead": map[string]any{"command": bin, "args": []string{"exit"}}},
		map[string]any{"mine": map[string]any{"command": bin, "args": []string{"", marker}}})
	p := newMem(
		step{tools: []llm.Block{toolCall("c1", "mcp__t__echo", map[string]any{"text": "hi"}), toolCall("c2", "mcp__mine__echo", map[string]any{"text": "no"})}},
		step{text: []string{"Echoed."}},
		// plan mode
		step{tools: []llm.Block{toolCall("c3", "mcp__t__fail", map[string]any{}), toolCall("c4", "mcp__t__echo", map[string]any{"text": "plan"})}},
		step{text: []string{"Planned."}},
		// default mode: the server crashes
		step{tools: []llm.Block{toolCall("c5", "mcp__t__crash", map[string]any{})}},
		step{text: []string{"It crashed."}},
	)
	var a *agent.Agent
	a, _ = newAgent(t, p, func(c *agent.Config) {
		c.Workspace = ws
		c.MCP = src
		c.Rules = &permission.Rules{Deny: []permission.Rule{mustRule(t, "mcp__mine__echo")}, Allow: []permission.Rule{mustRule(t, "mcp__t")}}
	})
	ctx := testCtx(t)
	rec := newRecorder()
	got := make(chan *protocol.InteractionRequest, 4)
	// Look before answering: nothing may run while the question is open.
	go func() {
		req := <-rec.asks
		running := processesWith(t, marker)
		got <- req
		if running != 0 {
			got <- nil
		}
		_ = a.Answer(req.InteractionID, &protocol.InteractionResponse{InteractionID: req.InteractionID, SelectedValue: protocol.Single(protocol.AllowAlways)})
	}()
	res, err := a.Run(ctx, textTurn("echo"), rec.emit)
	if err != nil || res.Final != "Echoed." {
		t.Fatalf("turn 1: %+v %v", res, err)
	}
	req := <-got
	select {
	case <-got:
		t.Fatal("an MCP server ran before the user approved the workspace's .mcp.json")
	default:
	}
	if req.Kind != protocol.InteractionPermission || !strings.Contains(req.Title, ".mcp.json") || !strings.Contains(req.Title, "dead, t") ||
		!strings.Contains(req.Message, "`t`: `"+bin+"  "+marker+"`") || len(req.Options) != 3 || req.DefaultValue != protocol.Deny {
		t.Fatalf("approval request: %+v", req)
	}
	reqs := p.requests()
	for _, n := range []string{"mcp__t__echo", "mcp__mine__echo", "Read"} {
		if !hasTool(reqs[0], n) {
			t.Fatalf("%s not offered: %v", n, toolNames(reqs[0]))
		}
	}
	r := lastToolResults(reqs[1])
	if len(r) != 2 || r[0].IsError || !strings.Contains(resultText(r[0]), "echo: hi") {
		t.Fatalf("echo result: %+v", r)
	}
	if !r[1].IsError || !strings.Contains(resultText(r[1]), "Denied by the user's permission rules") {
		t.Fatalf("denied call: %s", resultText(r[1]))
	}
	errs := mcpErrors(rec)
	if len(errs) != 1 || !strings.Contains(errs[0].Message, `"dead"`) || !strings.Contains(errs[0].Message, "exit") {
		t.Fatalf("the server that exits at once: %+v", errs)
	}
	if d, err := src.Approvals.Decision(src.Workspace, mcpconfig.Sum(readFile(t, filepath.Join(ws, ".mcp.json")))); err != nil || d != mcpconfig.Approved {
		t.Fatalf("approval kept: %q %v", d, err)
	}

	if err := a.SetMode(protocol.ModePlan); err != nil {
		t.Fatal(err)
	}
	rec = newRecorder()
	if res, err := a.Run(ctx, textTurn("plan"), rec.emit); err != nil || res.Final != "Planned." {
		t.Fatalf("turn 2: %+v %v", res, err)
	}
	if len(rec.of(protocol.TypeInteractionRequest)) != 0 || len(mcpErrors(rec)) != 0 {
		t.Fatalf("asked or reported again: %+v", rec.all())
	}
	r = lastToolResults(p.requests()[3])
	if !r[0].IsError || !strings.Contains(resultText(r[0]), "plan mode") || r[1].IsError || !strings.Contains(resultText(r[1]), "echo: plan") {
		t.Fatalf("plan mode: %s | %s", resultText(r[0]), resultText(r[1]))
	}

	if err := a.SetMode(protocol.ModeDefault); err != nil {
		t.Fatal(err)
	}
	rec = newRecorder()
	if res, err := a.Run(ctx, textTurn("crash"), rec.emit); err != nil || res.Final != "It crashed." {
		t.Fatalf("turn 3: %+v %v", res, err)
	}
	if errs := mcpErrors(rec); len(errs) != 1 || !strings.Contains(errs[0].Message, `"t"`) || !strings.Contains(errs[0].Message, "exit") {
		t.Fatalf("crash mid-turn: %+v", errs)
	}

	// A new session of the same workspace: approved already.
	p2 := newMem(step{text: []string{"ok"}})
	b, _ := newAgent(t, p2, func(c *agent.Config) { c.Workspace = ws; c.MCP = src })
	rec = newRecorder()
	if _, err := b.Run(ctx, textTurn("again"), rec.emit); err != nil {
		t.Fatal(err)
	}
	if len(rec.of(protocol.TypeInteractionRequest)) != 0 || !hasTool(p2.requests()[0], "mcp__t__echo") {
		t.Fatalf("second session: asks %d, tools %v", len(rec.of(protocol.TypeInteractionRequest)), toolNames(p2.requests()[0]))
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWorkspaceMCPChangedFileAskedAgain: a changed .mcp.json is asked
// about again at the next turn; "never" starts nothing and is not asked
// again for that content, "not now" is asked again in the next session.
func TestWorkspaceMCPChangedFileAskedAgain(t *testing.T) {
	bin := mcpTestServer(t)
	ws := t.TempDir()
	src := mcpFiles(t, ws, map[string]any{"t": map[string]any{"command": bin}}, nil)
	p := newMem(step{text: []string{"1"}}, step{text: []string{"2"}}, step{text: []string{"3"}})
	var a *agent.Agent
	a, _ = newAgent(t, p, func(c *agent.Config) { c.Workspace = ws; c.MCP = src })
	ctx := testCtx(t)
	got := make(chan *protocol.InteractionRequest, 8)

	rec := newRecorder()
	answerAsks(&a, rec, protocol.AllowAlways, got)
	if _, err := a.Run(ctx, textTurn("1"), rec.emit); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !hasTool(p.requests()[0], "mcp__t__echo") {
		t.Fatalf("approved: %d asks, tools %v", len(got), toolNames(p.requests()[0]))
	}
	<-got
	// The file changes: a new server name, asked again; "never".
	mcpFiles(t, ws, map[string]any{"u": map[string]any{"command": bin}}, nil)
	rec = newRecorder()
	answerAsks(&a, rec, "never", got)
	if _, err := a.Run(ctx, textTurn("2"), rec.emit); err != nil {
		t.Fatal(err)
	}
	if req := <-got; !strings.Contains(req.Title, "(u)") {
		t.Fatalf("asked about %q", req.Title)
	}
	if tl := toolNames(p.requests()[1]); hasTool(p.requests()[1], "mcp__u__echo") || hasTool(p.requests()[1], "mcp__t__echo") {
		t.Fatalf("tools after never: %v", tl)
	}
	rec = newRecorder()
	if _, err := a.Run(ctx, textTurn("3"), rec.emit); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.of(protocol.TypeInteractionRequest)); n != 0 {
		t.Fatalf("never: asked %d times again", n)
	}

	// "Not now": asked again by the next session only.
	mcpFiles(t, ws, map[string]any{"v": map[string]any{"command": bin}}, nil)
	p2 := newMem(step{text: []string{"a"}}, step{text: []string{"b"}})
	var b *agent.Agent
	b, _ = newAgent(t, p2, func(c *agent.Config) { c.Workspace = ws; c.MCP = src })
	rec = newRecorder()
	answerAsks(&b, rec, protocol.Deny, got)
	for i := range 2 {
		if _, err := b.Run(ctx, textTurn("x"), rec.emit); err != nil {
			t.Fatal(err)
		}
		if hasTool(p2.requests()[i], "mcp__v__echo") {
			t.Fatal("a server started after not now")
		}
	}
	if n := len(rec.of(protocol.TypeInteractionRequest)); n != 1 {
		t.Fatalf("not now: asked %d times in one session, want 1", n)
	}
	d, err := src.Approvals.Decision(src.Workspace, mcpconfig.Sum(readFile(t, filepath.Join(ws, ".mcp.json"))))
	if err != nil || d != mcpconfig.Unknown {
		t.Fatalf("not now was recorded: %q %v", d, err)
	}
}

// TestWorkspaceMCPHeadless: nobody can be asked, so an unapproved
// .mcp.json starts nothing and the user is told to pass --trust-mcp;
// with Trust its servers run, and nothing is recorded.
func TestWorkspaceMCPHeadless(t *testing.T) {
	bin := mcpTestServer(t)
	marker := "mcp-headless-" + fmt.Sprint(time.Now().UnixNano())
	ws := t.TempDir()
	src := mcpFiles(t, ws, map[string]any{"t": map[string]any{"command": bin, "args": []string{"", marker}}}, nil)
	p := newMem(step{text: []string{"no"}})
	a, _ := newAgent(t, p, func(c *agent.Config) { c.Workspace = ws; c.MCP = src; c.Headless = true })
	rec := newRecorder()
	if _, err := a.Run(testCtx(t), textTurn("x"), rec.emit); err != nil {
		t.Fatal(err)
	}
	errs := mcpErrors(rec)
	if len(errs) != 1 || !strings.Contains(errs[0].Message, "--trust-mcp") || !strings.Contains(errs[0].Message, "not approved") {
		t.Fatalf("headless report: %+v", errs)
	}
	if hasTool(p.requests()[0], "mcp__t__echo") || processesWith(t, marker) != 0 || len(rec.of(protocol.TypeInteractionRequest)) != 0 {
		t.Fatal("an unapproved server started headless, or a question was asked")
	}

	trusted := *src
	trusted.Trust = true
	p2 := newMem(step{tools: []llm.Block{toolCall("c1", "mcp__t__echo", map[string]any{"text": "trusted"})}}, step{text: []string{"yes"}})
	b, _ := newAgent(t, p2, func(c *agent.Config) {
		c.Workspace, c.MCP, c.Headless = ws, &trusted, true
		c.Rules = &permission.Rules{Allow: []permission.Rule{mustRule(t, "mcp__t__echo")}}
	})
	rec = newRecorder()
	if _, err := b.Run(testCtx(t), textTurn("x"), rec.emit); err != nil {
		t.Fatal(err)
	}
	if r := lastToolResults(p2.requests()[1]); len(r) != 1 || !strings.Contains(resultText(r[0]), "echo: trusted") {
		t.Fatalf("trusted call: %+v", r)
	}
	if _, err := os.Stat(src.Approvals.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("--trust-mcp recorded an approval: %v", err)
	}
}

// TestMCPServerThatHangsIsBounded: a server that never answers is given
// up after the connect timeout, reported, and the turn goes on.
func TestMCPServerThatHangsIsBounded(t *testing.T) {
	bin := mcpTestServer(t)
	p := newMem(step{text: []string{"went on"}})
	a, ws := newAgent(t, p, nil)
	_ = a.Close()
	src := mcpFiles(t, ws, nil, map[string]any{"slow": map[string]any{"command": bin, "args": []string{"hang"}}})
	a, _ = newAgent(t, p, func(c *agent.Config) { c.Workspace = ws; c.MCP = src; c.MCPConnectTimeout = 500 * time.Millisecond })
	rec := newRecorder()
	start := time.Now()
	res, err := a.Run(context.Background(), textTurn("x"), rec.emit)
	if err != nil || res.Final != "went on" {
		t.Fatalf("%+v %v", res, err)
	}
	if errs := mcpErrors(rec); len(errs) != 1 || !strings.Contains(errs[0].Message, "within 500ms") {
		t.Fatalf("hung server: %+v", errs)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the turn waited %s for a hung server", d)
	}
}

// TestMCPConfigProblemsReported: a bad user file is reported once, coded,
// and the turn goes on.
func TestMCPConfigProblemsReported(t *testing.T) {
	ws := t.TempDir()
	src := mcpFiles(t, ws, nil, map[string]any{"bad": map[string]any{"type": "sse", "url": "https://x/sse"}})
	p := newMem(step{text: []string{"1"}}, step{text: []string{"2"}})
	a, _ := newAgent(t, p, func(c *agent.Config) { c.Workspace = ws; c.MCP = src })
	for i := range 2 {
		rec := newRecorder()
		if _, err := a.Run(testCtx(t), textTurn("x"), rec.emit); err != nil {
			t.Fatal(err)
		}
		errs := mcpErrors(rec)
		if i == 0 && (len(errs) != 1 || !strings.Contains(errs[0].Message, mcpconfig.CodeUnsupported) || !strings.Contains(errs[0].Message, `"bad"`)) {
			t.Fatalf("first report: %+v", errs)
		}
		if i == 1 && len(errs) != 0 {
			t.Fatalf("reported again: %+v", errs)
		}
	}
}

// TestUserMCPOverHTTP: a streamable-HTTP server of the user's mcp.json is
// used without asking, its ${VAR} header expanded from the environment.
func TestUserMCPOverHTTP(t *testing.T) {
	var (
		mu  sync.Mutex
		got string
	)
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		mu.Lock()
		got = r.Header.Get("X-Token")
		mu.Unlock()
		return mcptest.Server(mcptest.Options{})
	}, nil)
	hs := httptest.NewServer(h)
	// Registered first, so it runs after the agent's Close: the server's
	// open stream would hold Close up while the session lives.
	t.Cleanup(hs.Close)
	ws := t.TempDir()
	src := mcpFiles(t, ws, nil, map[string]any{"web": map[string]any{"type": "http", "url": hs.URL, "headers": map[string]string{"X-Token": "${MCP_TOKEN}"}}})
	src.Getenv = func(k string) string {
		if k == "MCP_TOKEN" {
			return "sekrit"
		}
		return ""
	}
	p := newMem(step{tools: []llm.Block{toolCall("h1", "mcp__web__echo", map[string]any{"text": "over http"})}}, step{text: []string{"ok"}})
	a, _ := newAgent(t, p, func(c *agent.Config) {
		c.Workspace, c.MCP = ws, src
		c.Rules = &permission.Rules{Allow: []permission.Rule{mustRule(t, "mcp__web")}}
	})
	rec := newRecorder()
	if _, err := a.Run(testCtx(t), textTurn("x"), rec.emit); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.of(protocol.TypeInteractionRequest)); n != 0 {
		t.Fatalf("the user's own file was asked about (%d)", n)
	}
	if r := lastToolResults(p.requests()[1]); len(r) != 1 || r[0].IsError || !strings.Contains(resultText(r[0]), "echo: over http") {
		t.Fatalf("result: %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if got != "sekrit" {
		t.Fatalf("header X-Token %q, want the expanded variable", got)
	}
}
