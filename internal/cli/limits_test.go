package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/binarytest"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/protocol"
)

// upProcess is `ferry up` running as a real process.
type upProcess struct {
	cmd         *exec.Cmd
	base, db    string
	out, errb   *syncBuffer
	loginSecret string
	done        chan struct{}
}

// startUpProcess runs the ferry binary bin as `ferry up` with the echo
// agent (and extra arguments) on a fresh workspace, data and state
// directory, a free loopback port and a real SQLite file, prefixed by
// shell (a bash command line that ends by exec'ing "$@"; "" for none).
// It waits for the login URL and stops the process when the test ends.
func startUpProcess(t *testing.T, bin, shell string, env []string, extra ...string) *upProcess {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	u := &upProcess{db: filepath.Join(dir, "data", "ferry.db"), out: &syncBuffer{}, errb: &syncBuffer{}, done: make(chan struct{})}
	if err := os.MkdirAll(filepath.Dir(u.db), 0o700); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"up", "--addr", "127.0.0.1:0", "--db", u.db, "--workspace", ws}, extra...)
	if shell != "" {
		u.cmd = exec.Command("bash", append([]string{"-c", shell, "ferry", bin}, args...)...)
	} else {
		u.cmd = exec.Command(bin, args...)
	}
	u.cmd.Env = append(append(os.Environ(),
		"XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_STATE_HOME="+filepath.Join(dir, "state"), "HOME="+dir), env...)
	u.cmd.Stdout, u.cmd.Stderr = u.out, u.errb
	if err := u.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = u.cmd.Wait(); close(u.done) }()
	t.Cleanup(func() {
		_ = u.cmd.Process.Signal(os.Interrupt)
		select {
		case <-u.done:
		case <-time.After(20 * time.Second):
			_ = u.cmd.Process.Kill()
			<-u.done
			t.Errorf("ferry up did not stop on SIGINT: %s", u.errb.String())
		}
	})
	loginRE := regexp.MustCompile(`(http://127\.0\.0\.1:\d+)/login\?token=(ferry_login_[A-Za-z0-9_-]+)`)
	deadline := time.After(60 * time.Second)
	for {
		if m := loginRE.FindStringSubmatch(u.out.String()); m != nil {
			u.base, u.loginSecret = m[1], m[2]
			return u
		}
		select {
		case <-u.done:
			t.Fatalf("ferry up exited: %q %q", u.out.String(), u.errb.String())
		case <-deadline:
			t.Fatalf("no login URL printed: %q %q", u.out.String(), u.errb.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ferryCmd runs the binary with args to the end and returns its stdout;
// a failure fails the test.
func ferryCmd(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("ferry %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// uiToken creates a UI token on the process's database.
func (u *upProcess) uiToken(t *testing.T, bin string) string {
	t.Helper()
	return strings.TrimSpace(ferryCmd(t, bin, "token", "create", "--kind", "ui", "--name", "test ui", "--db", u.db))
}

// dialUI opens the UI WebSocket with a bearer UI token, as a script would.
func (u *upProcess) dialUI(t *testing.T, token string) *uiConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	conn, resp, err := websocket.Dial(ctx, strings.Replace(u.base, "http", "ws", 1)+"/v1/ui", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + token}},
	})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		t.Fatalf("dial the UI: %v", err)
	}
	t.Cleanup(func() { _ = conn.CloseNow() })
	conn.SetReadLimit(protocol.MaxMessageBytes)
	return &uiConn{t: t, ctx: ctx, conn: conn}
}

// echoTurn starts an echo session on the one machine, sends prompt and
// returns the turn's agent.text.done.
func (c *uiConn) echoTurn(prompt string) (sessionID string, done *protocol.TextDone) {
	c.t.Helper()
	m := c.machine()
	r := c.request(protocol.New(protocol.TypeSessionStart, &protocol.SessionStart{MachineID: m.ID, WorkspaceID: m.Workspaces[0].ID, Adapter: "echo"}))
	ans, ok := r.Payload.(*protocol.SessionAnswer)
	if !ok {
		c.t.Fatalf("session start answered %s: %+v", r.Type, r.Payload)
	}
	sessionID = ans.Session.ID
	sub := protocol.New(protocol.TypeSessionSubscribe, &protocol.SessionSubscribe{})
	sub.SessionID = sessionID
	if r := c.request(sub); r.Type != protocol.TypeSubscribed {
		c.t.Fatalf("subscribe answered %s: %+v", r.Type, r.Payload)
	}
	msg := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{Segments: []protocol.PromptSegment{{Kind: protocol.SegmentText, Text: prompt}}})
	msg.SessionID = sessionID
	c.send(msg)
	for {
		m := c.next(func(m *protocol.Message) bool { return m.SessionID == sessionID })
		switch p := m.Payload.(type) {
		case *protocol.AgentError:
			c.t.Fatalf("agent error %+v", p)
		case *protocol.TextDone:
			return sessionID, p
		}
	}
}

// openFDs counts the open files of process pid (Linux).
func openFDs(pid int) (int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents), err
}

// TestIdleSocketsDoNotLockOutTheUI (issue 16, item 6): `ferry up` under
// `ulimit -n 1024` holds 1,000 keep-alive sockets that each sent one
// request and then sit idle; a UI still connects, starts a session and
// gets a prompt answered, and ferry holds far fewer than 1,000 files.
// Before the connection cap, the idle sockets stayed open for ever, accept
// failed with EMFILE and the UI could not connect.
func TestIdleSocketsDoNotLockOutTheUI(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skipf("needs bash for ulimit (apt-get install bash): %v", err)
	}
	bin := binarytest.Build(t)
	u := startUpProcess(t, bin, `ulimit -n 1024 && exec "$@"`, nil, "--agent", "echo")
	token := u.uiToken(t, bin)
	pid := u.cmd.Process.Pid // bash exec'd ferry: the same process
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid)); err == nil && !regexp.MustCompile(`Max open files\s+1024\s`).Match(b) {
		t.Fatalf("ferry does not run under ulimit -n 1024:\n%s", b)
	}
	// The machine is online before the flood: the in-process client's
	// connection is authenticated and outside the caps.
	u.dialUI(t, token).machine()

	const sockets = 1000
	addr := strings.TrimPrefix(u.base, "http://")
	var (
		mu      sync.Mutex
		conns   []net.Conn
		answers atomic.Int64
		wg      sync.WaitGroup
		next    atomic.Int64
	)
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	floodCtx, cancelFlood := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancelFlood()
	for range 32 {
		wg.Go(func() {
			d := net.Dialer{Timeout: 5 * time.Second}
			for next.Add(1) <= sockets {
				c, err := d.DialContext(floodCtx, "tcp", addr)
				if err != nil {
					t.Errorf("dial: %v", err)
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err := fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr); err != nil {
					continue // evicted or refused already: fine
				}
				if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
					_ = resp.Body.Close()
					answers.Add(1)
				}
				_ = c.SetDeadline(time.Time{})
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("%d sockets opened, %d answered before going idle", sockets, answers.Load())
	if n, err := openFDs(pid); err == nil {
		t.Logf("ferry holds %d open files with %d idle sockets from its peer", n, sockets)
		if n >= 512 {
			t.Errorf("ferry holds %d open files: idle unauthenticated sockets are not capped", n)
		}
	}

	if !strings.Contains(u.errb.String(), "unauthenticated connections at their cap") {
		t.Errorf("ferry did not say that it closed idle connections: %s", u.errb.String())
	}

	c := u.dialUI(t, token)
	_, done := c.echoTurn("still here")
	if done.StopReason != "end_turn" || done.Text != "echo: still here" {
		t.Fatalf("turn ended %+v", done)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
		t.Fatalf("ferry is gone: %v", err)
	}
}
