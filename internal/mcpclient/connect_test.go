package mcpclient

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ferry-dev/ferry/internal/binarytest"
	"github.com/ferry-dev/ferry/internal/mcpclient/mcptest"
	"github.com/ferry-dev/ferry/internal/tools"
)

// httpServer serves mcptest over streamable HTTP on loopback and counts
// the requests that carried the header X-Test: yes.
func httpServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	srv := mcptest.Server(mcptest.Options{})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var withHeader atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test") == "yes" {
			withHeader.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts, &withHeader
}

// TestHTTP: a streamable-HTTP server's tools are listed and called with
// the configured headers; error and image results convert as over stdio;
// a server that goes away answers CodeMCP.
func TestHTTP(t *testing.T) {
	ts, withHeader := httpServer(t)
	s := connect(t, []Server{{Name: "web", URL: ts.URL, Headers: map[string]string{"X-Test": "yes"}}}, Options{})
	if st := status(t, s, "web"); !st.OK || st.Tools < 7 {
		t.Fatalf("status %+v", st)
	}
	res, err := run(t, s, "mcp__web__echo", map[string]any{"text": "over http"})
	if err != nil || text(res) != "echo: over http" {
		t.Fatalf("echo: %v, %v", res, err)
	}
	if withHeader.Load() < 2 {
		t.Errorf("%d requests carried the configured header", withHeader.Load())
	}
	_, err = run(t, s, "mcp__web__fail", nil)
	wantCode(t, err, tools.CodeMCP, "it broke on purpose")
	res, err = run(t, s, "mcp__web__image", nil)
	if err != nil {
		t.Fatal(err)
	}
	checkImage(t, res, "4×3")

	ts.CloseClientConnections()
	ts.Close()
	_, err = run(t, s, "mcp__web__echo", map[string]any{"text": "gone"})
	wantCode(t, err, tools.CodeMCP, "web")
}

// TestConnectFailures: servers that cannot start, exit at once, never
// answer, refuse the connection or are misconfigured are each reported
// in Status with why, within ConnectTimeout, and the good servers work.
func TestConnectFailures(t *testing.T) {
	// None, and a nil Set, are fine.
	empty := Connect(context.Background(), nil, Options{})
	var nilSet *Set
	if len(empty.Tools()) != 0 || len(empty.Status()) != 0 || empty.Close() != nil || nilSet.Tools() != nil || nilSet.Close() != nil {
		t.Fatal("an empty Set is not empty")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/mcp"
	_ = ln.Close()
	ts, _ := httpServer(t)
	servers := []Server{
		stdio(t, "good"),
		{Name: "nocommand", Command: filepath.Join(t.TempDir(), "no-such-server")},
		stdio(t, "exits", "exit"),
		stdio(t, "hangs", "hang"),
		{Name: "refused", URL: refused},
		{Name: "badurl", URL: "ftp://example.com/x"},
		{Name: "both", Command: "x", URL: ts.URL},
		{Name: "neither"},
		{Name: "good"},
		{Command: "x"},
		{Name: "web", URL: ts.URL},
	}
	start := time.Now()
	s := connect(t, servers, Options{ConnectTimeout: 2 * time.Second})
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Connect took %s with a 2s ConnectTimeout", d)
	}
	want := map[string][]string{
		"nocommand": {"no-such-server"},
		"exits":     {"exited", "exit status 2", "cannot start: no config"},
		"hangs":     {"did not finish connecting within 2s", "testserver: hanging"},
		"refused":   {"could not connect", "refused"},
		"badurl":    {"want an http:// or https:// URL"},
		"both":      {"both a command and a URL"},
		"neither":   {"neither a command nor a URL"},
		"":          {"no name"},
	}
	st := s.Status()
	if len(st) != len(servers) {
		t.Fatalf("%d statuses for %d servers", len(st), len(servers))
	}
	for i, x := range st {
		switch {
		case i == 0 || i == len(st)-1:
			if !x.OK || x.Err != "" {
				t.Errorf("%s: %+v", x.Name, x)
			}
		case i == 8:
			if x.OK || !strings.Contains(x.Err, `another server is named "good"`) {
				t.Errorf("duplicate: %+v", x)
			}
		default:
			if x.OK || x.Tools != 0 {
				t.Errorf("%s: %+v", x.Name, x)
			}
			for _, w := range want[x.Name] {
				if !strings.Contains(x.Err, w) {
					t.Errorf("%s: %q lacks %q", x.Name, x.Err, w)
				}
			}
		}
	}
	for _, name := range []string{"mcp__good__echo", "mcp__web__echo"} {
		if res, err := run(t, s, name, map[string]any{"text": "ok"}); err != nil || text(res) != "echo: ok" {
			t.Errorf("%s: %v, %v", name, res, err)
		}
	}
	for _, tl := range s.Tools() {
		if !strings.HasPrefix(tl.Name(), "mcp__good__") && !strings.HasPrefix(tl.Name(), "mcp__web__") {
			t.Errorf("tool %s of a failed server", tl.Name())
		}
	}
}

// TestCloseLeavesNothing: Close kills every stdio server's tree (also what
// a server started), ends calls in flight, and leaves no goroutine.
func TestCloseLeavesNothing(t *testing.T) {
	ts, _ := httpServer(t)
	// Warm up what stays for the process (the HTTP server's, the SDK's).
	warm := Connect(context.Background(), []Server{{Name: "web", URL: ts.URL}}, Options{})
	_ = warm.Close()
	before := runtime.NumGoroutine()

	// b stays after its stdin closed: only the kill ends it.
	s := Connect(context.Background(), []Server{stdio(t, "a"), stdio(t, "b", "stubborn"), {Name: "web", URL: ts.URL}}, Options{})
	res, err := run(t, s, "mcp__a__spawn", nil)
	if err != nil {
		t.Fatal(err)
	}
	grandchild, err := strconv.Atoi(text(res))
	if err != nil {
		t.Fatal(err)
	}
	var leaders []int
	for _, srv := range s.servers {
		if srv.stdio != nil {
			leaders = append(leaders, srv.stdio.p.Pid())
		}
	}
	if len(leaders) != 2 {
		t.Fatalf("%d stdio servers running", len(leaders))
	}
	// A call in flight when Close comes.
	callDone := make(chan error, 1)
	go func() {
		_, err := tool(t, s, "mcp__b__sleep").Run(context.Background(), &tools.Env{}, []byte(`{}`))
		callDone <- err
	}()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("Close took %s", d)
	}
	select {
	case err := <-callDone:
		wantCode(t, err, tools.CodeMCP, "MCP server b")
	case <-time.After(5 * time.Second):
		t.Fatal("the call in flight did not end with Close")
	}
	_ = s.Close() // idempotent
	for _, pid := range append(leaders, grandchild) {
		if alive(pid) {
			t.Errorf("process %d still runs after Close", pid)
		}
	}
	for _, pid := range leaders {
		if left := inGroup(pid); len(left) > 0 {
			t.Errorf("process group %d still holds %v", pid, left)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
	if _, err := run(t, s, "mcp__a__echo", nil); err == nil {
		t.Error("a call after Close succeeded")
	}
}

// inGroup lists the live (not zombie) processes of process group pgid.
func inGroup(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// After "(comm)": state, ppid, pgrp.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			out = append(out, pid)
		}
	}
	return out
}

// alive reports whether pid runs (waiting a little for it to die); a
// zombie waiting for its reaper counts as dead.
func alive(pid int) bool {
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return syscall.Kill(pid, 0) == nil
		}
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(fields) > 0 && fields[0] == "Z" {
			return false
		}
		if time.Now().After(deadline) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOddTools: a hand-written server's tools with invalid characters,
// colliding and over-long names get valid, unique names of at most 64
// characters, the same on every connect; non-object schemas are left out
// with a note; a stray non-JSON line on its stdout is skipped.
func TestOddTools(t *testing.T) {
	names := func() []string {
		s := connect(t, []Server{stdio(t, "raw.srv", "raw")}, Options{})
		var out []string
		for _, tl := range s.Tools() {
			out = append(out, tl.Name())
		}
		st := status(t, s, "raw.srv")
		if !st.OK || st.Tools != 6 {
			t.Fatalf("status %+v", st)
		}
		for _, w := range []string{`"string_schema" left out`, `"array_schema" left out`, `"no_type" left out`} {
			if !strings.Contains(st.Err, w) {
				t.Errorf("status note %q lacks %q", st.Err, w)
			}
		}
		res, err := run(t, s, "mcp__raw_srv__ok", nil)
		if err != nil || text(res) != "raw ok" {
			t.Errorf("ok: %v, %v", res, err)
		}
		return out
	}
	first := names()
	seen := map[string]bool{}
	for _, n := range first {
		if len(n) > 64 || seen[n] || strings.Trim(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
			t.Errorf("bad or repeated name %q", n)
		}
		seen[n] = true
	}
	if !seen["mcp__raw_srv__dotted_name__"] || !seen["mcp__raw_srv__ok"] {
		t.Errorf("names %v", first)
	}
	if again := names(); strings.Join(again, ",") != strings.Join(first, ",") {
		t.Errorf("names changed between connects:\n%v\n%v", first, again)
	}
	// A server without the tools capability is connected with none.
	s := connect(t, []Server{stdio(t, "none", "raw", "notools")}, Options{})
	if st := status(t, s, "none"); !st.OK || st.Tools != 0 || st.Err != "the server offers no tools" {
		t.Errorf("status %+v", st)
	}
}

// TestFerryMCP: ferry's own `ferry mcp` as a stdio server: its file tools
// are offered and Read reads a file of its workspace.
func TestFerryMCP(t *testing.T) {
	bin := binarytest.Build(t)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello from the workspace\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := connect(t, []Server{{Name: "ferry", Command: bin, Args: []string{"mcp", "--workspace", ws, "--no-history"}}}, Options{Workspace: ws})
	if st := status(t, s, "ferry"); !st.OK {
		t.Fatalf("status %+v", st)
	}
	read := tool(t, s, "mcp__ferry__Read")
	if !read.ReadOnly() || tool(t, s, "mcp__ferry__Write").ReadOnly() {
		t.Error("Read should be read-only and Write not")
	}
	res, err := run(t, s, "mcp__ferry__Read", map[string]any{"file_path": filepath.Join(ws, "hello.txt")})
	if err != nil || !strings.Contains(text(res), "hello from the workspace") {
		t.Fatalf("Read: %v, %v", res, err)
	}
	_, err = run(t, s, "mcp__ferry__Read", map[string]any{"file_path": filepath.Join(ws, "missing.txt")})
	wantCode(t, err, tools.CodeMCP, "ferry", "code 4")
}
