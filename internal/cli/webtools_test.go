package cli

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ferry-dev/ferry/internal/agent/agenttest"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/netguard"
	"github.com/ferry-dev/ferry/internal/netguard/netguardtest"
	"github.com/ferry-dev/ferry/internal/tools"
)

// pageServer serves a page on 127.0.0.2, the one loopback address the
// test's WebFetch policy lets through (standing for a public host), and
// counts the requests it gets.
func pageServer(t *testing.T) (port string, hits *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2: %v", err)
	}
	hits = &atomic.Int32{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<h1>Install</h1><p>Run <code>go install ./cmd/ferry</code>.</p>"))
	}))
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	_, port, _ = net.SplitHostPort(ln.Addr().String())
	return port, hits
}

// webPolicy lets WebFetch reach 127.0.0.2 only, with names of the test
// (no real DNS): docs.example is the page server, intranet.example
// resolves to 10.0.0.1.
func webPolicy(t *testing.T) {
	t.Helper()
	t.Cleanup(tools.SetWebFetchPolicy(netguard.Policy{
		Allow:  func(a netip.Addr) bool { return a == netip.MustParseAddr("127.0.0.2") },
		Lookup: netguardtest.Lookup(map[string]string{"docs.example": "127.0.0.2", "intranet.example": "10.0.0.1"}),
	}))
}

// WebFetch through the real `ferry run`: a domain --allow lets the fetch
// run (its question answered by a separate model call, counted in the
// usage), a URL to 127.0.0.1 and a name resolving to 10.0.0.1 are refused
// before connecting even when allowed, a domain with no rule is denied
// (headless), a deny rule wins. Not parallel: it sets WebFetch's policy.
func TestRunWebFetch(t *testing.T) {
	port, hits := pageServer(t)
	webPolicy(t)
	for _, f := range formats {
		t.Run(string(f), func(t *testing.T) {
			srv, dir := fake.New(t), t.TempDir()
			before := hits.Load()
			fetch := func(url string) fake.Reply {
				return fake.Reply{ToolCalls: []fake.ToolCall{{Name: "WebFetch", Input: map[string]any{"url": url, "prompt": "How do I install it?"}}}}
			}
			srv.Script(
				fetch("http://docs.example:"+port+"/install"),
				fake.Reply{Text: []string{"Run go install ./cmd/ferry."}}, // the separate call
				fetch("http://127.0.0.1:"+port+"/install"),
				fetch("http://intranet.example:"+port+"/"),
				fetch("https://elsewhere.example/"),
				fetch("http://evil.example/"),
				fake.Reply{Text: []string{"Install with go install."}},
			)
			out := ferryRun(t, srv, f, dir, "",
				"--allow", "WebFetch(domain:docs.example)", "--allow", "WebFetch(domain:127.0.0.1)", "--allow", "WebFetch(domain:intranet.example)",
				"--deny", "WebFetch(domain:evil.example)", "how do I install ferry?")
			if out.code != ExitOK || out.stdout != "Install with go install.\n" {
				t.Fatalf("exit %d, stdout %q, stderr %s", out.code, out.stdout, out.stderr)
			}
			reqs := srv.ModelRequests()
			if len(reqs) != 7 {
				t.Fatalf("%d model requests, want 7", len(reqs))
			}
			side := reqs[1]
			if len(side.ToolNames()) != 0 || side.System() != tools.WebFetchSystem || !strings.Contains(agenttest.LastUserText(side), "# Install") {
				t.Errorf("separate call: tools %v, system %q, text %q", side.ToolNames(), side.System(), agenttest.LastUserText(side))
			}
			for i, want := range map[int]string{
				2: "Run go install ./cmd/ferry.",
				3: "127.0.0.1 is, or resolves to, a loopback, private",
				4: "intranet.example is, or resolves to, a loopback, private",
				5: "headless",
				6: "permission rules",
			} {
				r := agenttest.ToolResults(reqs[i])
				if len(r) != 1 || !strings.Contains(r[0].Text, want) || (i > 2) != r[0].IsError {
					t.Errorf("request %d: result %+v, want %q", i, r, want)
				}
			}
			if n := hits.Load() - before; n != 1 {
				t.Errorf("the page server got %d requests, want 1", n)
			}
			for _, want := range []string{"denied WebFetch(https://elsewhere.example/)", "denied WebFetch(http://evil.example/)"} {
				if !strings.Contains(out.stderr, want) {
					t.Errorf("stderr lacks %q: %s", want, out.stderr)
				}
			}
		})
	}
}

// TodoWrite through `ferry run`, in plan mode: a list is saved, a list
// with two items in progress is refused with code 1.
func TestRunTodoWrite(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server, dir string) {
		todo := func(items ...map[string]any) fake.Reply {
			return fake.Reply{ToolCalls: []fake.ToolCall{{Name: "TodoWrite", Input: map[string]any{"todos": items}}}}
		}
		srv.Script(
			todo(map[string]any{"content": "Read the code", "status": "in_progress", "activeForm": "Reading the code"}, map[string]any{"content": "Write the plan", "status": "pending"}),
			todo(map[string]any{"content": "a", "status": "in_progress"}, map[string]any{"content": "b", "status": "in_progress"}),
			fake.Reply{Text: []string{"Planned."}},
		)
		out := ferryRun(t, srv, f, dir, "", "--mode", "plan", "plan the work")
		if out.code != ExitOK || out.stdout != "Planned.\n" {
			t.Fatalf("exit %d, stdout %q, stderr %s", out.code, out.stdout, out.stderr)
		}
		reqs := srv.ModelRequests()
		if r := agenttest.ToolResults(reqs[1]); len(r) != 1 || r[0].IsError || !strings.Contains(r[0].Text, "The todo list is saved: 2 items") {
			t.Errorf("saved: %+v", r)
		}
		if r := agenttest.ToolResults(reqs[2]); len(r) != 1 || !r[0].IsError || !strings.Contains(r[0].Text, "code 1") || !strings.Contains(r[0].Text, "both in_progress") {
			t.Errorf("refused: %+v", r)
		}
	})
}
