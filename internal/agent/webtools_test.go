package agent_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/netguard"
	"github.com/ferry-dev/ferry/internal/netguard/netguardtest"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/protocol"
)

// WebFetch through the agent: the user is asked per domain ("allow
// always" records the domain's rule, so the second fetch from it does not
// ask), the page goes through a separate model call whose answer is the
// result and whose usage counts in the session; a name resolving to
// 10.0.0.1 is refused. Not parallel: it sets WebFetch's network policy.
func TestWebFetchAsksPerDomainAndCountsUsage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<h1>Flags</h1><p>Use <code>--fast</code>.</p>"))
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	t.Cleanup(tools.SetWebFetchPolicy(netguard.Policy{
		Allow:  func(a netip.Addr) bool { return a.IsLoopback() },
		Lookup: netguardtest.Lookup(map[string]string{"docs.example": "127.0.0.1", "intranet.example": "10.0.0.1"}),
	}))
	page := "http://docs.example:" + port + "/flags"
	fetch := func(id, url string) step {
		return step{tools: []llm.Block{toolCall(id, "WebFetch", map[string]any{"url": url, "prompt": "Which flag?"})}}
	}
	p := newMem(
		fetch("f1", page),
		step{text: []string{"The page says --fast."}, usage: llm.Usage{InputTokens: 50, OutputTokens: 5}}, // the separate call
		fetch("f2", page),
		step{text: []string{"Still --fast."}, usage: llm.Usage{InputTokens: 50, OutputTokens: 5}},
		fetch("f3", "http://intranet.example:"+port+"/"),
		step{text: []string{"Use --fast."}, usage: llm.Usage{InputTokens: 10, OutputTokens: 2}},
	)
	a, _ := newAgent(t, p, nil)
	rec := newRecorder()
	ctx := testCtx(t)
	go func() {
		for i := 0; ; i++ {
			select {
			case ir := <-rec.asks:
				if i == 0 {
					if ir.Title != "Allow WebFetch to fetch from docs.example?" || !strings.Contains(ir.Options[1].Description, "WebFetch(domain:docs.example)") {
						t.Errorf("request %q %+v", ir.Title, ir.Options)
					}
					_ = a.Answer(ir.InteractionID, &protocol.InteractionResponse{SelectedValue: protocol.Single(protocol.AllowAlways)})
					continue
				}
				if ir.Title != "Allow WebFetch to fetch from intranet.example?" {
					t.Errorf("request %q", ir.Title)
				}
				_ = a.Answer(ir.InteractionID, &protocol.InteractionResponse{SelectedValue: protocol.Single(protocol.AllowOnce)})
			case <-ctx.Done():
				return
			}
		}
	}()
	res, err := a.Run(ctx, textTurn("which flag?"), rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rec.of(protocol.TypeInteractionRequest)); n != 2 {
		t.Errorf("%d permission requests, want 2 (allow always covers docs.example; intranet.example asks)", n)
	}
	if rules := a.Rules(); !strings.Contains(ruleList(rules.Allow), "WebFetch(domain:docs.example)") {
		t.Errorf("allow rules %v", rules.Allow)
	}
	reqs := p.requests()
	side := reqs[1]
	if side.System != tools.WebFetchSystem || len(side.Tools) != 0 || len(side.Messages) != 1 ||
		!strings.Contains(side.Messages[0].Content[0].Text, "# Flags") || !strings.Contains(side.Messages[0].Content[0].Text, "Question: Which flag?") {
		t.Errorf("separate call %+v", side)
	}
	fin := rec.finished()
	if len(fin) != 3 || fin[0].Status != protocol.ToolOK || !strings.Contains(fin[0].Output, "The page says --fast.") {
		t.Fatalf("finished %+v", fin)
	}
	if fin[2].Status != protocol.ToolError || fin[2].ErrorCode != tools.CodeWeb || !strings.Contains(fin[2].Output, "non-public") {
		t.Errorf("intranet fetch %+v", fin[2])
	}
	if r := lastToolResults(reqs[len(reqs)-1]); len(r) != 1 || !r[0].IsError {
		t.Errorf("intranet result %+v", r)
	}
	u, _, _ := a.Usage()
	// 110 from the separate calls and the last answer, 30 from the three
	// fetching steps (the mem provider's default usage).
	if u.InputTokens != 140 || res.Usage.InputTokens != 140 || res.NumTurns != 4 {
		t.Errorf("session usage %+v, prompt usage %+v, %d turns: the separate calls must count", u, res.Usage, res.NumTurns)
	}
	us := rec.of(protocol.TypeUsage)
	if last := us[len(us)-1].(*protocol.Usage); last.InputTokens != 140 {
		t.Errorf("last agent.usage %+v", last)
	}
}

func ruleList(rs []permission.Rule) string {
	var out []string
	for _, r := range rs {
		out = append(out, r.String())
	}
	return strings.Join(out, " ")
}

// A deny rule for the domain refuses without asking or connecting; in
// headless runs an unruled domain is denied.
func TestWebFetchDeniedDomain(t *testing.T) {
	t.Parallel()
	p := newMem(
		step{tools: []llm.Block{toolCall("f1", "WebFetch", map[string]any{"url": "https://evil.example/x", "prompt": "?"})}},
		step{tools: []llm.Block{toolCall("f2", "WebFetch", map[string]any{"url": "https://other.example/x", "prompt": "?"})}},
		step{text: []string{"ok"}},
	)
	a, _ := newAgent(t, p, func(c *agent.Config) {
		c.Headless = true
		c.Rules = &permission.Rules{Deny: []permission.Rule{{Tool: "WebFetch", Pattern: "domain:evil.example"}}}
	})
	rec := newRecorder()
	if _, err := a.Run(testCtx(t), textTurn("go"), rec.emit); err != nil {
		t.Fatal(err)
	}
	fin := rec.finished()
	if len(fin) != 2 || fin[0].Status != protocol.ToolDenied || !strings.Contains(fin[0].Output, "permission rules") ||
		fin[1].Status != protocol.ToolDenied || !strings.Contains(fin[1].Output, "headless") {
		t.Fatalf("finished %+v", fin)
	}
}

// TodoWrite keeps the list for the session, runs in plan mode, refuses a
// bad list, and the list survives a restart (Restore rebuilds it from the
// history).
func TestTodoWriteKeptAndRestored(t *testing.T) {
	t.Parallel()
	todos := func(id string, items ...map[string]any) step {
		return step{tools: []llm.Block{toolCall(id, "TodoWrite", map[string]any{"todos": items})}}
	}
	p := newMem(
		todos("t1", map[string]any{"content": "Read", "status": "in_progress"}, map[string]any{"content": "Plan", "status": "pending"}),
		todos("t2", map[string]any{"content": "Read", "status": "completed"}, map[string]any{"content": "Plan", "status": "in_progress", "activeForm": "Planning"}),
		todos("t3", map[string]any{"content": "Read", "status": "in_progress"}, map[string]any{"content": "Plan", "status": "in_progress"}),
		step{text: []string{"planned"}},
	)
	var snap agent.Snapshot
	a, dir := newAgent(t, p, func(c *agent.Config) {
		c.Mode = protocol.ModePlan
		c.OnStep = func(s agent.Snapshot) { snap = s }
	})
	rec := newRecorder()
	if _, err := a.Run(testCtx(t), textTurn("plan it"), rec.emit); err != nil {
		t.Fatal(err)
	}
	fin := rec.finished()
	if len(fin) != 3 || fin[0].Status != protocol.ToolOK || fin[1].Status != protocol.ToolOK || fin[2].Status != protocol.ToolError {
		t.Fatalf("finished %+v", fin)
	}
	want := func(a *agent.Agent) {
		t.Helper()
		got := a.TodoList()
		if len(got) != 2 || got[0].Status != tools.TodoCompleted || got[1].ActiveForm != "Planning" {
			t.Fatalf("todo list %+v", got)
		}
	}
	want(a)
	b, err := agent.New(agent.Config{Provider: newMem(), Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if _, err := b.Restore(snap); err != nil {
		t.Fatal(err)
	}
	want(b)
}
