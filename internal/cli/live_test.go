package cli_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/cli"
	"github.com/ferry-dev/ferry/protocol"
)

func TestLiveCommandsUsage(t *testing.T) {
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
		{[]string{"connect", "--master", "http://127.0.0.1:1"}, "--token (or $FERRY_TOKEN) is required"},
		{[]string{"serve", "extra"}, "takes no arguments"},
		{[]string{"up", "--retention", "0"}, "--retention must be at least 1"},
		{[]string{"token"}, "say create, list or revoke"},
		{[]string{"token", "mint"}, `unknown verb "mint"`},
		{[]string{"token", "create", "--kind", "root"}, "--kind must be client, ui or login"},
		{[]string{"token", "revoke"}, "give one token ID"},
		{[]string{"token", "create", "--machine", "m1"}, "a client token cannot have it"},
		{[]string{"token", "create", "--kind", "client", "--machine", "m1", "--machine", "m2"}, "a client token cannot have it"},
		{[]string{"token", "create", "--kind", "ui", "--machine", ""}, "--machine needs a machine ID"},
	}
	for _, c := range cases {
		code, _, errOut := run(c.args...)
		if code != cli.ExitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("ferry %s: exit %d, stderr %q; want usage error with %q", strings.Join(c.args, " "), code, errOut, c.want)
		}
	}
}

func TestTokenLifecycle(t *testing.T) {
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

// TestUp runs the quick start in-process: it prints a login URL that works
// once, the UI it logs in sees this machine online with the workspace, and
// cancelling stops it cleanly.
func TestUp(t *testing.T) {
	dir := t.TempDir()
	workspace := t.TempDir()
	env := map[string]string{"XDG_DATA_HOME": filepath.Join(dir, "data"), "XDG_STATE_HOME": filepath.Join(dir, "state"), "HOME": dir}
	var out, errb syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, cli.Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }},
			[]string{"up", "--addr", "127.0.0.1:0", "--workspace", workspace})
	}()
	defer func() {
		cancel()
		select {
		case code := <-done:
			if code != cli.ExitOK {
				t.Errorf("up exited %d: %s", code, errb.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("up did not stop after cancel")
		}
	}()
	loginRE := regexp.MustCompile(`(http://127\.0\.0\.1:\d+)/login\?token=(ferry_login_\S+)`)
	var m []string
	for deadline := time.Now().Add(30 * time.Second); m == nil; {
		if m = loginRE.FindStringSubmatch(out.String()); m == nil {
			if time.Now().After(deadline) {
				t.Fatalf("no login URL printed: %q %q", out.String(), errb.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	base := m[1]
	if !strings.Contains(out.String(), workspace) {
		t.Errorf("up does not say which workspace it serves: %q", out.String())
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(m[0])
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "ferry_session" {
			session = c
		}
	}
	if resp.StatusCode != http.StatusSeeOther || session == nil || !session.HttpOnly {
		t.Fatalf("login: %s, cookie %+v", resp.Status, session)
	}
	again, err := noRedirect.Get(m[0])
	if err != nil {
		t.Fatal(err)
	}
	_ = again.Body.Close()
	if again.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a login URL used twice: %s", again.Status)
	}
	// The browser's WebSocket carries the cookie and its own origin.
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	conn, wresp, err := websocket.Dial(wctx, strings.Replace(base, "http", "ws", 1)+"/v1/ui", &websocket.DialOptions{
		HTTPHeader: http.Header{"Cookie": {session.Name + "=" + session.Value}, "Origin": {base}},
	})
	if wresp != nil && wresp.Body != nil {
		_ = wresp.Body.Close()
	}
	if err != nil {
		t.Fatalf("ui with the login cookie: %v", err)
	}
	defer func() { _ = conn.CloseNow() }()
	for {
		list := protocol.New(protocol.TypeMachinesList, &protocol.MachinesList{})
		data, _ := protocol.Encode(list)
		if err := conn.Write(wctx, websocket.MessageText, data); err != nil {
			t.Fatal(err)
		}
		var machines *protocol.Machines
		for machines == nil {
			_, data, err := conn.Read(wctx)
			if err != nil {
				t.Fatalf("no machines answer: %v", err)
			}
			msg, err := protocol.Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			if msg.ParentID == list.MessageID {
				machines, _ = msg.Payload.(*protocol.Machines)
			}
		}
		if len(machines.Machines) == 1 && machines.Machines[0].Online {
			if ws := machines.Machines[0].Workspaces; len(ws) != 1 || ws[0].Path != workspace {
				t.Fatalf("workspaces %+v, want %s", ws, workspace)
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
}
