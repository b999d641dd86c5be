package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ferry-dev/ferry/internal/netguard"
	"github.com/ferry-dev/ferry/internal/netguard/netguardtest"
	"github.com/ferry-dev/ferry/internal/tools"
)

// The WebFetch tests change the package's network policy (a global), so
// none of them runs in parallel; parallel tests start after them.

// fakeDNS answers names of the tests; any other is unknown. No test
// needs real DNS.
func fakeDNS(names map[string]string) func(context.Context, string) ([]netip.Addr, error) {
	return func(_ context.Context, host string) ([]netip.Addr, error) {
		if a, ok := names[host]; ok {
			return []netip.Addr{netip.MustParseAddr(a)}, nil
		}
		return nil, errors.New("no such host")
	}
}

func webFetch(t *testing.T, env *tools.Env, url, prompt string) (*tools.Result, error) {
	t.Helper()
	in, _ := json.Marshal(map[string]string{"url": url, "prompt": prompt})
	if env == nil {
		env = &tools.Env{}
	}
	return tools.Invoke(t.Context(), env, tools.WebFetch{}, "toolu_w", in)
}

// The real policy (public addresses only), with a resolver seam: every
// non-public target is refused before any connection, whatever name or
// form the URL gives it; bad schemes and user information too.
func TestWebFetchRefusesBeforeConnecting(t *testing.T) {
	srv, conns := netguardtest.CountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("secret")) }))
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	defer tools.SetWebFetchPolicy(netguard.Policy{Lookup: fakeDNS(map[string]string{
		"intranet.example": "10.0.0.1", "localhost": "127.0.0.1", "metadata.example": "169.254.169.254",
	})})()
	asked := 0
	env := &tools.Env{AskModel: func(context.Context, string, string, int) (string, error) { asked++; return "", nil }}
	for _, c := range []struct {
		url  string
		code int
	}{
		{srv.URL + "/", tools.CodeWeb},
		{"http://localhost:" + port + "/", tools.CodeWeb},
		{"http://intranet.example:" + port + "/", tools.CodeWeb},
		{"https://intranet.example/", tools.CodeWeb},
		{"http://metadata.example/latest/meta-data/", tools.CodeWeb},
		{"http://[::1]:" + port + "/", tools.CodeWeb},
		{"http://[::ffff:127.0.0.1]:" + port + "/", tools.CodeWeb},
		{"http://169.254.169.254/latest/meta-data/", tools.CodeWeb},
		{"http://192.168.1.1/", tools.CodeWeb},
		{"http://0.0.0.0:" + port + "/", tools.CodeWeb},
		{"ftp://example.com/file", tools.CodeInvalidInput},
		{"file:///etc/passwd", tools.CodeInvalidInput},
		{"https://user:pw@example.com/", tools.CodeInvalidInput},
		{"example.com", tools.CodeInvalidInput},
	} {
		res, err := webFetch(t, env, c.url, "what is here?")
		if err == nil {
			t.Errorf("%s: fetched: %v", c.url, res.Blocks)
			continue
		}
		if got := tools.CodeOf(err); got != c.code {
			t.Errorf("%s: code %d (%v), want %d", c.url, got, err, c.code)
		}
		if c.code == tools.CodeWeb && !strings.Contains(err.Error(), "non-public") {
			t.Errorf("%s: %v, want the address refusal", c.url, err)
		}
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("%d connections reached the loopback server", n)
	}
	if asked != 0 {
		t.Fatalf("the model was asked %d times about refused URLs", asked)
	}
}

// allowLoopback lets the tests' loopback servers stand for public hosts.
func allowLoopback(t *testing.T, names map[string]string) {
	t.Helper()
	t.Cleanup(tools.SetWebFetchPolicy(netguard.Policy{Allow: func(a netip.Addr) bool { return a.IsLoopback() }, Lookup: fakeDNS(names)}))
}

// HTML becomes Markdown, and the model's separate call gets it with the
// question; its answer is the result.
func TestWebFetchHTMLToMarkdown(t *testing.T) {
	srv, _ := netguardtest.CountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><html><head><title>T</title><script>var x=1;</script></head><body>
<h1>Release notes</h1><p>Version <strong>1.2</strong> adds <a href="/docs/flags">new flags</a>.</p>
<ul><li>--fast</li><li>--safe</li></ul></body></html>`))
	}))
	allowLoopback(t, nil)
	var system, question string
	env := &tools.Env{AskModel: func(_ context.Context, s, q string, maxTokens int) (string, error) {
		system, question = s, q
		if maxTokens <= 0 {
			t.Errorf("maxTokens %d", maxTokens)
		}
		return "Version 1.2 adds --fast and --safe.", nil
	}}
	res, err := webFetch(t, env, srv.URL+"/notes", "Which flags are new?")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Release notes", "**1.2**", "[new flags](" + srv.URL + "/docs/flags)", "- --fast", "Question: Which flags are new?"} {
		if !strings.Contains(question, want) {
			t.Errorf("the question lacks %q:\n%s", want, question)
		}
	}
	if strings.Contains(question, "var x=1") || strings.Contains(question, "<h1>") {
		t.Errorf("script or tags reached the model:\n%s", question)
	}
	if system != tools.WebFetchSystem {
		t.Errorf("system %q", system)
	}
	text := res.Blocks[0].Text
	if !strings.Contains(text, "URL: "+srv.URL+"/notes") || !strings.Contains(text, "Version 1.2 adds --fast and --safe.") || !strings.Contains(text, "text/html") {
		t.Errorf("result %q", text)
	}
	if res.Changed {
		t.Error("WebFetch reported a change")
	}
}

// Other text is taken as it is, binary refused, HTTP errors reported,
// large bodies cut, and without AskModel the text itself is the result.
func TestWebFetchContent(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/a.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"<b>": 1}`))
	})
	mux.HandleFunc("/a.png", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00"))
	})
	mux.HandleFunc("/nul.txt", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("a\x00b"))
	})
	mux.HandleFunc("/big.txt", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte(strings.Repeat("0123456789abcdef", (tools.WebFetchMaxBody+(1<<20))/16)))
	})
	mux.HandleFunc("/gone", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "gone", http.StatusNotFound) })
	srv, _ := netguardtest.CountingServer(t, mux)
	allowLoopback(t, nil)

	res, err := webFetch(t, nil, srv.URL+"/a.json", "keys?")
	if err != nil || !strings.Contains(res.Blocks[0].Text, `{"<b>": 1}`) {
		t.Errorf("json: %v %v", res, err)
	}
	for _, p := range []string{"/a.png", "/nul.txt"} {
		if _, err := webFetch(t, nil, srv.URL+p, "what?"); tools.CodeOf(err) != tools.CodeEncoding {
			t.Errorf("%s: %v, want code %d", p, err, tools.CodeEncoding)
		}
	}
	if _, err := webFetch(t, nil, srv.URL+"/gone", "what?"); tools.CodeOf(err) != tools.CodeWeb || !strings.Contains(err.Error(), "404") {
		t.Errorf("404: %v", err)
	}
	var got string
	env := &tools.Env{AskModel: func(_ context.Context, _, q string, _ int) (string, error) { got = q; return "ok", nil }}
	res, err = webFetch(t, env, srv.URL+"/big.txt", "what?")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Blocks[0].Text, "was not") || !strings.Contains(got, "more bytes, left out") || len(got) > tools.WebFetchMaxContent+2000 {
		t.Errorf("caps: result %q, question of %d bytes", res.Blocks[0].Text, len(got))
	}
}

// Redirects on the same host are followed, each re-checked after a new
// resolution (a name that now resolves to a private address is refused);
// one to another host is not followed but told to the model.
func TestWebFetchRedirects(t *testing.T) {
	var lookups atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close") // the redirect dials again
		http.Redirect(w, r, "/new", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/new", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("moved here")) })
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://10.0.0.1/admin", http.StatusFound)
	})
	srv, conns := netguardtest.CountingServer(t, mux)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	t.Cleanup(tools.SetWebFetchPolicy(netguard.Policy{
		Allow: func(a netip.Addr) bool { return a.IsLoopback() },
		Lookup: func(_ context.Context, host string) ([]netip.Addr, error) {
			switch host {
			case "docs.example":
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			case "rebind.example": // public first, then private
				if lookups.Add(1) == 1 {
					return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
				}
				return []netip.Addr{netip.MustParseAddr("10.0.0.1")}, nil
			}
			return nil, errors.New("no such host")
		},
	}))
	res, err := webFetch(t, nil, "http://docs.example:"+port+"/old", "what?")
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Blocks[0].Text; !strings.Contains(text, "Final URL: http://docs.example:"+port+"/new") || !strings.Contains(text, "moved here") {
		t.Errorf("same-host redirect: %q", text)
	}
	res, err = webFetch(t, nil, "http://docs.example:"+port+"/away", "what?")
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Blocks[0].Text; !strings.Contains(text, "http://10.0.0.1/admin") || !strings.Contains(text, "call WebFetch again") {
		t.Errorf("cross-host redirect: %q", text)
	}
	before := conns.Load()
	_, err = webFetch(t, nil, "http://rebind.example:"+port+"/old", "what?")
	if tools.CodeOf(err) != tools.CodeWeb || !strings.Contains(err.Error(), "non-public") {
		t.Errorf("redirect to a name now resolving to 10.0.0.1: %v", err)
	}
	if n := conns.Load() - before; n != 1 {
		t.Errorf("%d connections for the rebinding fetch, want 1 (the first request only)", n)
	}
}
