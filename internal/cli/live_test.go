package cli_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/cli"
	"github.com/ferry-dev/ferry/internal/exectest"
	"github.com/ferry-dev/ferry/internal/master/mastertest"
	"github.com/ferry-dev/ferry/protocol"
)

func TestLiveCommandsUsage(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"serve", "connect", "up", "token"} {
		if code, _, errOut := run("help", cmd); code != cli.ExitOK || !strings.Contains(errOut, "Usage: ferry "+cmd) {
			t.Errorf("help %s: %d %q", cmd, code, errOut)
		}
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"connect", "--token", "x"}, "--master URL is required"},
		{[]string{"connect", "--master", "http://127.0.0.1:1"}, "a client token is required in $FERRY_TOKEN or --token-file"},
		{[]string{"serve", "extra"}, "takes no arguments"},
		{[]string{"up", "--retention", "0"}, "--retention must be at least 1"},
		{[]string{"token"}, "say create, list or revoke"},
		{[]string{"token", "mint"}, `unknown verb "mint"`},
		{[]string{"token", "create", "--kind", "root"}, "--kind must be client, ui or login"},
		{[]string{"token", "revoke"}, "give one token ID"},
		{[]string{"token", "create", "--machine", "m1"}, "a client token cannot have it"},
		{[]string{"token", "create", "--kind", "client", "--machine", "m1", "--machine", "m2"}, "a client token cannot have it"},
		{[]string{"token", "create", "--kind", "ui", "--machine", ""}, "--machine needs a machine ID"},
		{[]string{"up", "--agent", "bogus"}, `--agent "bogus": no such agent; want builtin, echo, claude-code, acp:CMD or script:CMD [agent_unknown]`},
		{[]string{"up", "--agent", "builtin", "--agent", "script:"}, "[agent_no_command]"},
		{[]string{"up", "--agent", "script:a $(b)"}, "command substitution is not expanded"},
		{[]string{"up", "--agent", "script:./a/x.sh", "--agent", "script:/b/x.sh"}, `adapter id "script:x.sh" is already taken`},
		{[]string{"connect", "--master", "http://127.0.0.1:1", "--token", "t", "--agent", "acp:"}, "[agent_no_command]"},
	}
	for _, c := range cases {
		code, _, errOut := run(c.args...)
		if code != cli.ExitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("ferry %s: exit %d, stderr %q; want usage error with %q", strings.Join(c.args, " "), code, errOut, c.want)
		}
	}
}

func TestTokenLifecycle(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "ferry.db")
	code, out, errOut := run("token", "create", "--db", db, "--kind", "client", "--name", "laptop")
	if code != cli.ExitOK || !regexp.MustCompile(`^ferry_client_[A-Za-z0-9_-]{43}\n$`).MatchString(out) {
		t.Fatalf("create: %d %q %q", code, out, errOut)
	}
	id := regexp.MustCompile(`token (\S+) \(client\)`).FindStringSubmatch(errOut)
	if id == nil {
		t.Fatalf("create did not name the token: %q", errOut)
	}
	code, out, _ = run("token", "list", "--db", db)
	if code != cli.ExitOK || !strings.Contains(out, id[1]) || !strings.Contains(out, "laptop") || strings.Contains(out, "ferry_client_") {
		t.Fatalf("list: %d %q (must show the token but never its secret)", code, out)
	}
	if code, _, errOut := run("token", "revoke", "--db", db, id[1]); code != cli.ExitOK {
		t.Fatalf("revoke: %d %q", code, errOut)
	}
	if _, out, _ := run("token", "list", "--db", db); strings.Contains(out, id[1]) {
		t.Fatalf("revoked token still listed: %q", out)
	}
	if code, _, errOut := run("token", "create", "--db", "mysql://x"); code != cli.ExitError || !strings.Contains(errOut, "mysql") {
		t.Fatalf("unknown database scheme: %d %q", code, errOut)
	}
}

// TestTokenMachineScope: --machine limits a ui or login token, list shows
// the scope of every token.
func TestTokenMachineScope(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "ferry.db")
	created := map[string]string{} // token ID → what list must show
	for _, c := range []struct {
		args  []string
		scope string
	}{
		{[]string{"--kind", "ui", "--name", "phone", "--machine", "m1", "--machine", "m2"}, "machines: m1,m2"},
		{[]string{"--kind", "login", "--machine", "m2"}, "machines: m2"},
		{[]string{"--kind", "ui", "--name", "desk"}, "machines: all"},
		{[]string{"--kind", "client"}, "machines: -"},
	} {
		code, out, errOut := run(append([]string{"token", "create", "--db", db}, c.args...)...)
		m := regexp.MustCompile(`token (\S+) \((\w+)\) created, ([^;]*);`).FindStringSubmatch(errOut)
		if code != cli.ExitOK || out == "" || m == nil || m[3] != c.scope {
			t.Fatalf("create %v: %d %q %q; want the scope %q said", c.args, code, out, errOut, c.scope)
		}
		created[m[1]] = c.scope
	}
	code, out, errOut := run("token", "list", "--db", db)
	if code != cli.ExitOK {
		t.Fatalf("list: %d %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(created) {
		t.Fatalf("list shows %d tokens, want %d: %q", len(lines), len(created), out)
	}
	for _, line := range lines {
		cols := strings.Split(line, "\t")
		if want, ok := created[cols[0]]; !ok || cols[len(cols)-1] != want {
			t.Errorf("list line %q: want the scope %q last", line, want)
		}
	}
}

// syncBuffer is a goroutine-safe writer the command prints to while the
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// upInstance is `ferry up` running in-process.
type upInstance struct {
	base, loginURL string
	out, errb      *syncBuffer
}

// startUp runs `ferry up` in-process with args (plus a free loopback
// address and throwaway data and state directories) and the environment
// extra until the test ends, and waits for its login URL.
func startUp(t *testing.T, extra map[string]string, args ...string) *upInstance {
	t.Helper()
	return startUpFor(t, loopbackLogin, extra, args...)
}

// loopbackLogin is the login URL ferry up prints on its loopback --addr.
var loopbackLogin = regexp.MustCompile(`(http://127\.0\.0\.1:\d+)/login\?token=(ferry_login_\S+)`)

// startUpFor is startUp waiting for a login URL loginRE matches (its
// first group the base URL).
func startUpFor(t *testing.T, loginRE *regexp.Regexp, extra map[string]string, args ...string) *upInstance {
	t.Helper()
	dir := t.TempDir()
	env := map[string]string{"XDG_DATA_HOME": filepath.Join(dir, "data"), "XDG_STATE_HOME": filepath.Join(dir, "state"), "HOME": dir}
	for k, v := range extra {
		env[k] = v
	}
	u := &upInstance{out: &syncBuffer{}, errb: &syncBuffer{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, cli.Env{Stdout: u.out, Stderr: u.errb, Getenv: func(k string) string { return env[k] }},
			append([]string{"up", "--addr", "127.0.0.1:0"}, args...))
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != cli.ExitOK {
				t.Errorf("up exited %d: %s", code, u.errb.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("up did not stop after cancel")
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; {
		if m := loginRE.FindStringSubmatch(u.out.String()); m != nil {
			u.base, u.loginURL = m[1], m[0]
			return u
		}
		select {
		case code := <-done:
			t.Fatalf("up exited %d: %q %q", code, u.out.String(), u.errb.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no login URL printed: %q %q", u.out.String(), u.errb.String())
		}
	}
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// login signs in with the login URL as a browser does.
func (u *upInstance) login(t *testing.T) mastertest.Browser {
	t.Helper()
	b, err := mastertest.Login(context.Background(), u.loginURL)
	if err != nil || !b.Cookie.HttpOnly {
		t.Fatalf("login: %v, cookie %+v", err, b.Cookie)
	}
	return b
}

// uiConn is a UI's WebSocket to the master.
type uiConn struct {
	t    *testing.T
	ctx  context.Context
	conn *websocket.Conn
}

// dial opens the UI WebSocket as a browser does: with the cookie, the key
// share and its own origin.
func (u *upInstance) dial(t *testing.T, session mastertest.Browser) *uiConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	conn, resp, err := websocket.Dial(ctx, strings.Replace(u.base, "http", "ws", 1)+"/v1/ui", session.DialOptions())
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		t.Fatalf("ui with the login cookie: %v", err)
	}
	t.Cleanup(func() { _ = conn.CloseNow() })
	conn.SetReadLimit(protocol.MaxMessageBytes)
	return &uiConn{t: t, ctx: ctx, conn: conn}
}

func (c *uiConn) send(m *protocol.Message) {
	c.t.Helper()
	data, err := protocol.Encode(m)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.conn.Write(c.ctx, websocket.MessageText, data); err != nil {
		c.t.Fatal(err)
	}
}

// next reads the next message for which keep is true.
func (c *uiConn) next(keep func(*protocol.Message) bool) *protocol.Message {
	c.t.Helper()
	for {
		_, data, err := c.conn.Read(c.ctx)
		if err != nil {
			c.t.Fatalf("ui read: %v", err)
		}
		msg, err := protocol.Decode(data)
		if err != nil {
			c.t.Fatal(err)
		}
		if keep(msg) {
			return msg
		}
	}
}

// request sends m and returns its answer.
func (c *uiConn) request(m *protocol.Message) *protocol.Message {
	c.t.Helper()
	c.send(m)
	return c.next(func(r *protocol.Message) bool { return r.ParentID == m.MessageID })
}

// machine waits until the one machine is online and returns it.
func (c *uiConn) machine() protocol.Machine {
	c.t.Helper()
	for {
		r := c.request(protocol.New(protocol.TypeMachinesList, &protocol.MachinesList{}))
		machines, ok := r.Payload.(*protocol.Machines)
		if !ok {
			c.t.Fatalf("machines list answered %s: %+v", r.Type, r.Payload)
		}
		if len(machines.Machines) == 1 && machines.Machines[0].Online {
			return machines.Machines[0]
		}
		select {
		case <-c.ctx.Done():
			c.t.Fatal("the machine never came online")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestUp runs the quick start in-process: it prints a login URL that works
// once, the UI it logs in sees this machine online with the workspace, and
// cancelling stops it cleanly.
func TestUp(t *testing.T) {
	t.Parallel()
	workspace := t.TempDir()
	u := startUp(t, nil, "--workspace", workspace)
	if !strings.Contains(u.out.String(), workspace) {
		t.Errorf("up does not say which workspace it serves: %q", u.out.String())
	}
	session := u.login(t)
	again, err := noRedirect.Get(u.loginURL)
	if err != nil {
		t.Fatal(err)
	}
	_ = again.Body.Close()
	if again.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a login URL used twice: %s", again.Status)
	}
	m := u.dial(t, session).machine()
	if ws := m.Workspaces; len(ws) != 1 || ws[0].Path != workspace {
		t.Fatalf("workspaces %+v, want %s", ws, workspace)
	}
	// No --agent, no claude on PATH: the defaults.
	var ids []string
	for _, a := range m.Adapters {
		ids = append(ids, a.ID)
	}
	// ferry's own has no model provider here: offered (disabled, as the
	// UI shows it) but not listed as available, with why on its own line.
	if got := strings.Join(ids, ","); got != "builtin,echo" || !strings.Contains(u.out.String(), "agents: echo\nnot available: builtin: no model provider") {
		t.Fatalf("adapters %s, output %q", got, u.out.String())
	}
}

// TestUpScriptAgent: `ferry up --agent script:…` offers the script agent
// beside echo, and a session a UI starts with it runs the real script on a
// prompt with a picked file, through the whole live path.
func TestUpScriptAgent(t *testing.T) {
	t.Parallel()
	workspace := t.TempDir()
	if err := os.MkdirAll(filepath.Join(workspace, "src"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(workspace, "src", "main.go"), []byte("package main\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "lines.sh")
	exectest.WriteScript(t, script, "#!/bin/sh\nprintf 'prompt: %s\\n' \"$(cat)\"\nfor f in \"$@\"; do printf '%s has %s line(s)\\n' \"$f\" \"$(wc -l < \"$f\" | tr -d ' ')\"; done\n")
	u := startUp(t, nil, "--workspace", workspace, "--agent", "echo", "--agent", "script:"+script)
	c := u.dial(t, u.login(t))
	m := c.machine()
	if len(m.Adapters) != 2 || m.Adapters[0].ID != "echo" || m.Adapters[1].ID != "script:lines.sh" ||
		m.Adapters[1].FileTokens != "arguments" || strings.Join(m.Adapters[1].Modes, ",") != protocol.ModeDefault {
		t.Fatalf("adapters %+v", m.Adapters)
	}

	r := c.request(protocol.New(protocol.TypeSessionStart, &protocol.SessionStart{MachineID: m.ID, WorkspaceID: m.Workspaces[0].ID, Adapter: "script:lines.sh"}))
	ans, ok := r.Payload.(*protocol.SessionAnswer)
	if !ok {
		t.Fatalf("session start answered %s: %+v", r.Type, r.Payload)
	}
	sessionID := ans.Session.ID
	sub := protocol.New(protocol.TypeSessionSubscribe, &protocol.SessionSubscribe{})
	sub.SessionID = sessionID
	if r := c.request(sub); r.Type != protocol.TypeSubscribed {
		t.Fatalf("subscribe answered %s: %+v", r.Type, r.Payload)
	}
	prompt := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{Segments: []protocol.PromptSegment{
		{Kind: protocol.SegmentText, Text: "count "},
		{Kind: protocol.SegmentFile, File: &protocol.PickedFile{Path: "src/main.go"}},
	}})
	prompt.SessionID = sessionID
	c.send(prompt)
	var deltas strings.Builder
	var adapterID string
	var done *protocol.TextDone
	for done == nil {
		msg := c.next(func(m *protocol.Message) bool { return m.SessionID == sessionID })
		switch p := msg.Payload.(type) {
		case *protocol.TurnStarted:
			adapterID = p.Adapter
		case *protocol.TextDelta:
			deltas.WriteString(p.Delta)
		case *protocol.AgentError:
			t.Fatalf("agent error %+v", p)
		case *protocol.TextDone:
			done = p
		}
	}
	want := "prompt: count src/main.go\n" + filepath.Join(workspace, "src", "main.go") + " has 1 line(s)\n"
	if adapterID != "script:lines.sh" || done.StopReason != "end_turn" || done.Text != want || deltas.String() != want {
		t.Fatalf("adapter %q, done %+v, deltas %q; want %q", adapterID, done, deltas.String(), want)
	}
}

// TestUpOffersClaudeCodeWhenInstalled: with no --agent, a claude executable
// on PATH adds claude-code to the defaults. (The executable here is a
// stand-in: offering the adapter does not run it.)
func TestUpOffersClaudeCodeWhenInstalled(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	exectest.WriteScript(t, filepath.Join(bin, "claude"), "#!/bin/sh\nexit 1\n")
	u := startUp(t, map[string]string{"PATH": "relative/dir" + string(os.PathListSeparator) + bin}, "--workspace", t.TempDir())
	m := u.dial(t, u.login(t)).machine()
	var ids []string
	for _, a := range m.Adapters {
		ids = append(ids, a.ID)
	}
	if got := strings.Join(ids, ","); got != "builtin,echo,claude-code" {
		t.Fatalf("adapters %s", got)
	}
	if c := m.Adapters[2]; c.FileTokens != "mention" || !slices.Contains(c.Modes, protocol.ModePlan) {
		t.Fatalf("claude-code capability %+v", c)
	}
}

// TestTokenLoginURL: a login token is printed with its login URL, on the
// default master address or the one --master names, and says which (and
// that it was not checked against a master it could not reach).
func TestTokenLoginURL(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "ferry.db")
	for _, c := range []struct {
		args       []string
		base, note string
	}{
		{nil, "http://127.0.0.1:7860", "the default address"},
		// Masters that cannot be reached from here: the URL is unchecked.
		{[]string{"--master", "https://127.0.0.1:1/"}, "https://127.0.0.1:1", "not checked: could not reach it"},
		{[]string{"--master=http://127.0.0.1:2"}, "http://127.0.0.1:2", "not checked: could not reach it"},
	} {
		code, out, errOut := run(append([]string{"token", "create", "--db", db, "--kind", "login"}, c.args...)...)
		m := regexp.MustCompile(`^(ferry_login_\S+)\n(\S+)\n$`).FindStringSubmatch(out)
		if code != cli.ExitOK || m == nil || m[2] != c.base+"/login?token="+m[1] {
			t.Fatalf("%v: %d %q %q; want the token, then its URL on %s", c.args, code, out, errOut, c.base)
		}
		if !strings.Contains(errOut, "for the master at "+c.base+" ("+c.note) {
			t.Fatalf("%v: stderr %q does not say which master (%s)", c.args, errOut, c.note)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--kind", "login", "--master", "ftp://x"}, "--master must be"},
		{[]string{"--kind", "login", "--master", "127.0.0.1:7860"}, "--master must be"},
		{[]string{"--kind", "ui", "--master", "http://x"}, "a ui token has none"},
	} {
		code, _, errOut := run(append([]string{"token", "create", "--db", db}, c.args...)...)
		if code != cli.ExitUsage || !strings.Contains(errOut, c.want) {
			t.Fatalf("%v: %d %q; want usage error %q", c.args, code, errOut, c.want)
		}
	}
}
