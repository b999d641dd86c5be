package web_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/netguard"
	"github.com/ferry-dev/ferry/internal/netguard/netguardtest"
	"github.com/ferry-dev/ferry/internal/tools"
)

// TestBrowserTodoAndWebFetch drives a session of ferry's agent on a phone
// (web/e2e/todo.mjs): the model keeps a todo list, shown as a checklist
// pinned above the prompt box (expanded and folded, rebuilt after a
// reload), and fetches pages: docs.example asked per domain and allowed
// always, 127.0.0.1 allowed once and refused by the network guard before
// connecting. The page server stands for a public host on 127.0.0.2, the
// one address the test's WebFetch policy lets through. Not parallel: it
// sets WebFetch's policy. Screenshots: docs/screenshots/agent-todo-*.png.
func TestBrowserTodoAndWebFetch(t *testing.T) {
	node, chromium := browserDeps(t)
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2: %v", err)
	}
	var hits atomic.Int32
	page := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<h1>Parser</h1><p>Tokens are split on <code>;</code>.</p>"))
	}))
	page.Listener = ln
	page.Start()
	t.Cleanup(page.Close)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	t.Cleanup(tools.SetWebFetchPolicy(netguard.Policy{
		Allow:  func(a netip.Addr) bool { return a == netip.MustParseAddr("127.0.0.2") },
		Lookup: netguardtest.Lookup(map[string]string{"docs.example": "127.0.0.2"}),
	}))

	dir := t.TempDir()
	ws := project(t, dir, map[string]string{"parser.go": "package parser\n"})
	todos := func(items ...map[string]any) fake.Reply {
		return fake.Reply{ToolCalls: []fake.ToolCall{{Name: "TodoWrite", Input: map[string]any{"todos": items}}}}
	}
	item := func(content, status, active string) map[string]any {
		return map[string]any{"content": content, "status": status, "activeForm": active}
	}
	fetch := func(url string) fake.Reply {
		return fake.Reply{ToolCalls: []fake.ToolCall{{Name: "WebFetch", Input: map[string]any{"url": url, "prompt": "How are tokens split?"}}}}
	}
	srv := fake.New(t)
	srv.Script(
		todos(item("Read the parser", "completed", "Reading the parser"), item("Fix the parser", "in_progress", "Fixing the parser"),
			item("Check the docs", "pending", "Checking the docs"), item("Run the tests", "pending", "Running the tests"),
			item("Write the changelog entry", "pending", "Writing the changelog entry")),
		fetch("http://docs.example:"+port+"/parser"),
		fake.Reply{Text: []string{"Tokens are split on semicolons."}}, // WebFetch's separate call
		fetch("http://127.0.0.1:"+port+"/admin"),
		todos(item("a", "in_progress", ""), item("b", "in_progress", "")),
		fake.Reply{Text: []string{"The parser splits on `;`; fixing it next."}},
	)
	base, login := ferryUp(t, upEnv(dir, srv.URL()), "--db", filepath.Join(dir, "ferry.db"), "--workspace", ws, "--agent", "builtin")
	runScript(t, node, "todo.mjs", map[string]any{
		"chromium": chromium, "screenshots": shotsDir(t, dir), "login": login, "base": base,
	})
	if n := hits.Load(); n != 1 {
		t.Errorf("the page server got %d requests, want 1 (docs.example only)", n)
	}
	var side int
	for _, r := range srv.ModelRequests() {
		if r.System() == tools.WebFetchSystem {
			side++
			if len(r.ToolNames()) != 0 {
				t.Errorf("WebFetch's separate call offered tools %v", r.ToolNames())
			}
		}
	}
	if side != 1 {
		t.Errorf("%d separate WebFetch calls, want 1", side)
	}
}
