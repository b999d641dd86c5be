package mcpclient

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/mcpclient/mcptest"
	"github.com/ferry-dev/ferry/internal/tokencount"
	"github.com/ferry-dev/ferry/internal/tools"
)

// TestStdioListAndCall: a real stdio server's tools are offered as
// mcp__NAME__TOOL with its descriptions, schemas and read-only hints, and
// a call reaches it.
func TestStdioListAndCall(t *testing.T) {
	s := connect(t, []Server{stdio(t, "test")}, Options{})
	st := status(t, s, "test")
	if !st.OK || st.Err != "" || st.Tools != len(s.Tools()) || st.Tools < 8 {
		t.Fatalf("status %+v with %d tools", st, len(s.Tools()))
	}
	echo := tool(t, s, "mcp__test__echo")
	if !echo.ReadOnly() || echo.Description() != "Echoes its text." {
		t.Errorf("echo: read-only %v, description %q", echo.ReadOnly(), echo.Description())
	}
	if tool(t, s, "mcp__test__fail").ReadOnly() {
		t.Error("fail has no read-only hint but is read-only")
	}
	var schema map[string]any
	if err := json.Unmarshal(echo.InputSchema(), &schema); err != nil || schema["type"] != "object" || schema["properties"] == nil {
		t.Errorf("echo's schema %s (%v)", echo.InputSchema(), err)
	}
	res, err := run(t, s, "mcp__test__echo", map[string]any{"text": "hi"})
	if err != nil || text(res) != "echo: hi" {
		t.Fatalf("echo: %v, %v", res, err)
	}
	// Not an object: refused before the server is asked.
	_, err = tool(t, s, "mcp__test__echo").Run(context.Background(), &tools.Env{}, json.RawMessage(`[1]`))
	wantCode(t, err, tools.CodeInvalidInput, "JSON object")
}

// TestResults: each kind of content reaches the model as the package doc
// says: an error result is a CodeMCP error with the server's text, images
// are image blocks, structured content is JSON text, resources are named
// by URI with their text, and a huge text is cut to the token gate with a
// note.
func TestResults(t *testing.T) {
	s := connect(t, []Server{stdio(t, "test")}, Options{})

	_, err := run(t, s, "mcp__test__fail", nil)
	wantCode(t, err, tools.CodeMCP, "fail", "server test", "it broke on purpose")

	res, err := run(t, s, "mcp__test__image", map[string]any{"w": 5, "h": 4})
	if err != nil {
		t.Fatal(err)
	}
	checkImage(t, res, "5×4")

	// Over MaxImageDimension: shrunk as Read shrinks it.
	res, err = run(t, s, "mcp__test__image", map[string]any{"w": 2600, "h": 10})
	if err != nil {
		t.Fatal(err)
	}
	checkImage(t, res, "resized to 2000×")

	res, err = run(t, s, "mcp__test__structured", nil)
	if err != nil || text(res) != `{"answer":42}` {
		t.Fatalf("structured: %q, %v", text(res), err)
	}

	res, err = run(t, s, "mcp__test__resources", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := text(res)
	for _, want := range []string{"[resource link file:///srv/x.txt (x.txt, text/plain, 12 bytes)]", "[resource mem://note (text/plain)]\nnote body", "mem://blob (application/octet-stream): 3 bytes of binary data, not shown", "resource mem://pic"} {
		if !strings.Contains(got, want) {
			t.Errorf("resources text lacks %q:\n%s", want, got)
		}
	}
	if n := countImages(res); n != 1 {
		t.Errorf("resources: %d images, want the embedded PNG", n)
	}

	for _, size := range []int{200 << 10, 4 << 20} {
		res, err = run(t, s, "mcp__test__huge", map[string]any{"bytes": size})
		if err != nil {
			t.Fatal(err)
		}
		got = text(res)
		if !strings.Contains(got, "[ferry cut this result") || !strings.HasPrefix(got, "line 0000001 ") {
			t.Fatalf("%d bytes: no cut note or wrong start: %.200q … %.300q", size, got, got[max(0, len(got)-300):])
		}
		n, err := tokencount.Default().CountTokens(context.Background(), got)
		if err != nil {
			t.Fatal(err)
		}
		if lim := tools.DefaultLimits().MaxReadTokens; n > lim+200 || n < lim/2 {
			t.Errorf("%d bytes cut to %d tokens, want near the %d limit", size, n, lim)
		}
	}
	// Under the gate: whole.
	res, err = run(t, s, "mcp__test__huge", map[string]any{"bytes": 20000})
	if err != nil || text(res) != mcptest.Huge(20000) {
		t.Fatalf("20000 bytes came back as %d bytes, %v", len(text(res)), err)
	}
}

func countImages(r *tools.Result) int {
	n := 0
	for _, b := range r.Blocks {
		if b.Type == "image" {
			n++
		}
	}
	return n
}

func checkImage(t *testing.T, res *tools.Result, desc string) {
	t.Helper()
	if countImages(res) != 1 || !strings.Contains(text(res), desc) || !strings.HasPrefix(text(res), "a picture") {
		t.Fatalf("image result %+v, want one image and %q", res.Blocks, desc)
	}
	for _, b := range res.Blocks {
		if b.Type == "image" {
			data, err := base64.StdEncoding.DecodeString(b.Data)
			if err != nil || b.MediaType != "image/png" || len(data) < 8 || string(data[1:4]) != "PNG" {
				t.Errorf("image block %s, %d bytes, %v", b.MediaType, len(data), err)
			}
		}
	}
}

// TestCallTimeoutAndCancel: a call past CallTimeout is a CodeTimeout error
// and a cancelled ctx ends the call; in both the server is told (its
// handler's ctx ends, which the SDK does on notifications/cancelled).
func TestCallTimeoutAndCancel(t *testing.T) {
	s := connect(t, []Server{stdio(t, "test")}, Options{CallTimeout: 300 * time.Millisecond})
	dir := t.TempDir()
	marker := filepath.Join(dir, "timeout")
	start := time.Now()
	_, err := run(t, s, "mcp__test__sleep", map[string]any{"marker": marker})
	wantCode(t, err, tools.CodeTimeout, "sleep", "300ms")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("timed out after %s", d)
	}
	waitFile(t, marker)

	s2 := connect(t, []Server{stdio(t, "test")}, Options{})
	marker = filepath.Join(dir, "cancel")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start = time.Now()
	_, err = tool(t, s2, "mcp__test__sleep").Run(ctx, &tools.Env{}, json.RawMessage(`{"marker":"`+marker+`"}`))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancel took %s", d)
	}
	waitFile(t, marker)
	// The server still answers.
	if res, err := run(t, s2, "mcp__test__echo", map[string]any{"text": "after"}); err != nil || text(res) != "echo: after" {
		t.Fatalf("after cancel: %v, %v", res, err)
	}
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("the server never saw the cancellation (no %s)", path)
}

// TestCrash: a server that exits mid-session answers its tools with an
// error naming it, its exit status and stderr; Status says so; the other
// server keeps working.
func TestCrash(t *testing.T) {
	s := connect(t, []Server{stdio(t, "a"), stdio(t, "b")}, Options{})
	_, err := run(t, s, "mcp__a__crash", nil)
	wantCode(t, err, tools.CodeMCP, "MCP server a exited", "exit status 3", "crashing on purpose")
	_, err = run(t, s, "mcp__a__echo", map[string]any{"text": "x"})
	wantCode(t, err, tools.CodeMCP, "MCP server a exited", "exit status 3")
	st := status(t, s, "a")
	if st.OK || !strings.Contains(st.Err, "exited: exit status 3") || !strings.Contains(st.Err, "crashing on purpose") {
		t.Errorf("status of a: %+v", st)
	}
	if res, err := run(t, s, "mcp__b__echo", map[string]any{"text": "still"}); err != nil || text(res) != "echo: still" {
		t.Fatalf("b after a crashed: %v, %v", res, err)
	}
	if st := status(t, s, "b"); !st.OK {
		t.Errorf("status of b: %+v", st)
	}
}

// TestEnvCwdExpand: Env adds to the environment, Cwd is relative to the
// workspace (the workspace when empty), and Getenv expands ${VAR}.
func TestEnvCwdExpand(t *testing.T) {
	ws := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MCPCLIENT_FROM_FERRY", "inherited")
	a := stdio(t, "a")
	a.Env = map[string]string{"MCPCLIENT_X": "${TOKEN}-${MISSING:-dflt}"}
	a.Cwd = "sub"
	b := stdio(t, "b")
	env := map[string]string{"TOKEN": "t0k"}
	s := connect(t, []Server{a, b}, Options{Workspace: ws, Getenv: func(k string) string { return env[k] }})
	res, err := run(t, s, "mcp__a__env", map[string]any{"name": "MCPCLIENT_X"})
	if err != nil || text(res) != "MCPCLIENT_X=t0k-dflt\ncwd="+filepath.Join(ws, "sub") {
		t.Fatalf("a: %q, %v", text(res), err)
	}
	res, err = run(t, s, "mcp__b__env", map[string]any{"name": "MCPCLIENT_FROM_FERRY"})
	if err != nil || text(res) != "MCPCLIENT_FROM_FERRY=inherited\ncwd="+ws {
		t.Fatalf("b: %q, %v", text(res), err)
	}
	// A command found on the PATH its Env sets.
	bin := t.TempDir()
	if err := os.Symlink(testServer, filepath.Join(bin, "mcp-test-server")); err != nil {
		t.Fatal(err)
	}
	d := Server{Name: "d", Command: "mcp-test-server", Env: map[string]string{"PATH": bin}}
	s = connect(t, []Server{d}, Options{})
	if res, err := run(t, s, "mcp__d__env", map[string]any{"name": "PATH"}); err != nil || !strings.HasPrefix(text(res), "PATH="+bin+"\n") {
		t.Fatalf("d: %v, %v (status %+v)", res, err, s.Status())
	}
	// An unset variable without a default: that server is not started.
	c := stdio(t, "c")
	c.Args = []string{"${NOPE}"}
	s = connect(t, []Server{c}, Options{Getenv: func(string) string { return "" }})
	if st := status(t, s, "c"); st.OK || !strings.Contains(st.Err, "NOPE is not set") {
		t.Errorf("status %+v", st)
	}
}

// TestToolListChanged: a server that adds a tool mid-session (and says so)
// has it offered by the next Tools, named as the others; tools handed out
// before keep working.
func TestToolListChanged(t *testing.T) {
	for _, mode := range []string{"stdio", "http"} {
		t.Run(mode, func(t *testing.T) {
			srv := stdio(t, "s")
			if mode == "http" {
				ts, _ := httpServer(t)
				srv = Server{Name: "s", URL: ts.URL}
			}
			s := connect(t, []Server{srv}, Options{})
			before := len(s.Tools())
			echo := tool(t, s, "mcp__s__echo")
			if res, err := run(t, s, "mcp__s__grow", nil); err != nil || text(res) != "grew" {
				t.Fatalf("grow: %v, %v", res, err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for len(s.Tools()) == before && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if res, err := run(t, s, "mcp__s__grown", nil); err != nil || text(res) != "grown ok" {
				t.Fatalf("grown: %v, %v", res, err)
			}
			if st := status(t, s, "s"); st.Tools != before+1 {
				t.Errorf("status %+v, want %d tools", st, before+1)
			}
			if res, err := echo.Run(context.Background(), &tools.Env{}, json.RawMessage(`{"text":"old"}`)); err != nil || text(res) != "echo: old" {
				t.Errorf("a tool from before: %v, %v", res, err)
			}
		})
	}
}

// TestOverlongMessage: a stdio server that sends a message over the
// SDK's 16 MB frame bound is disconnected with an error saying so (the
// call it answered can no longer be told), and killed.
func TestOverlongMessage(t *testing.T) {
	s := connect(t, []Server{stdio(t, "big")}, Options{})
	_, err := run(t, s, "mcp__big__huge", map[string]any{"bytes": 17 << 20})
	wantCode(t, err, tools.CodeMCP, "MCP server big was disconnected: it sent a message over 16 MB")
	if st := status(t, s, "big"); st.OK || !strings.Contains(st.Err, "over 16 MB") {
		t.Errorf("status %+v", st)
	}
	pid := s.servers[0].stdio.p.Pid()
	if alive(pid) {
		t.Errorf("server %d still runs", pid)
	}
}
