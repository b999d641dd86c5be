package cli_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/cli"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/sqlite"
	"github.com/ferry-dev/ferry/protocol"
)

// upDirs are the database and state directory a `ferry up` uses, kept
// across runs as a real user's are.
type upDirs struct {
	db, state, workspace string
}

func newUpDirs(t *testing.T) upDirs {
	t.Helper()
	dir := t.TempDir()
	d := upDirs{db: filepath.Join(dir, "ferry.db"), state: filepath.Join(dir, "state"), workspace: filepath.Join(dir, "ws")}
	if err := os.MkdirAll(d.workspace, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

// seedMachine leaves the database and the state directory as a `ferry up`
// (or a daemon) killed while serving machine leaves them: the machine row
// owned by a client token named name, still valid. record writes that
// token's ID where ferry up keeps the IDs of its tokens.
func seedMachine(t *testing.T, d upDirs, machine, name string, record bool) store.Token {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, d.db)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	_, tok, err := auth.Issue(ctx, st, store.TokenClient, name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutMachine(ctx, store.Machine{ID: machine, Name: "crashed", TokenID: tok.ID, Capabilities: []byte(`{}`), LastSeen: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(d.state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.state, "machine-id"), []byte(machine+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if record {
		if err := os.WriteFile(filepath.Join(d.state, "up-tokens"), []byte(tok.ID+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return tok
}

// owner returns the ID of the token that owns machine, and the IDs of
// every token.
func machineOwner(t *testing.T, db, machine string) (string, []store.Token) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	ms, err := st.Machines(ctx)
	if err != nil {
		t.Fatal(err)
	}
	toks, err := st.ListTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.ID == machine {
			return m.TokenID, toks
		}
	}
	return "", toks
}

// upRun is one in-process `ferry up` on fixed directories.
type upRun struct {
	base     string
	out, err *syncBuffer
	done     chan int
	cancel   context.CancelFunc
}

// runUpIn starts `ferry up` on d and returns once it printed its address,
// or once it exited (done then holds its exit code).
func runUpIn(t *testing.T, d upDirs) *upRun {
	t.Helper()
	env := map[string]string{"HOME": filepath.Dir(d.db)}
	u := &upRun{out: &syncBuffer{}, err: &syncBuffer{}, done: make(chan int, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	u.cancel = cancel
	go func() {
		u.done <- cli.Run(ctx, cli.Env{Stdout: u.out, Stderr: u.err, Getenv: func(k string) string { return env[k] }},
			[]string{"up", "--addr", "127.0.0.1:0", "--db", d.db, "--state", d.state, "--workspace", d.workspace, "--agent", "echo"})
	}()
	re := regexp.MustCompile(`ferry is up on (http://127\.0\.0\.1:\d+)`)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if m := re.FindStringSubmatch(u.out.String()); m != nil {
			u.base = m[1]
			return u
		}
		select {
		case code := <-u.done:
			u.done <- code
			return u
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("up printed no address: %q %q", u.out.String(), u.err.String())
	return nil
}

// stop cancels up and returns its exit code.
func (u *upRun) stop(t *testing.T) int {
	t.Helper()
	u.cancel()
	select {
	case code := <-u.done:
		return code
	case <-time.After(30 * time.Second):
		t.Fatal("up did not stop after cancel")
		return -1
	}
}

// uiToken creates a UI token on db the way a user would.
func createUIToken(t *testing.T, db string) string {
	t.Helper()
	code, out, errOut := run("token", "create", "--db", db, "--kind", "ui", "--name", "test ui")
	if code != cli.ExitOK {
		t.Fatalf("token create: %d %s", code, errOut)
	}
	return strings.TrimSpace(out)
}

// dialBearer opens the UI WebSocket with a bearer UI token.
func dialBearer(t *testing.T, base, token string, timeout time.Duration) *uiConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	conn, resp, err := websocket.Dial(ctx, strings.Replace(base, "http", "ws", 1)+"/v1/ui", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + token}},
	})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		t.Fatalf("ui dial: %v", err)
	}
	t.Cleanup(func() { _ = conn.CloseNow() })
	conn.SetReadLimit(protocol.MaxMessageBytes)
	return &uiConn{t: t, ctx: ctx, conn: conn}
}

// promptEcho starts an echo session on m and returns the answer to prompt.
func (c *uiConn) promptEcho(m protocol.Machine, prompt string) string {
	c.t.Helper()
	r := c.request(protocol.New(protocol.TypeSessionStart, &protocol.SessionStart{MachineID: m.ID, WorkspaceID: m.Workspaces[0].ID, Adapter: "echo"}))
	ans, ok := r.Payload.(*protocol.SessionAnswer)
	if !ok {
		c.t.Fatalf("session start answered %s: %+v", r.Type, r.Payload)
	}
	sub := protocol.New(protocol.TypeSessionSubscribe, &protocol.SessionSubscribe{})
	sub.SessionID = ans.Session.ID
	if r := c.request(sub); r.Type != protocol.TypeSubscribed {
		c.t.Fatalf("subscribe answered %s: %+v", r.Type, r.Payload)
	}
	p := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{Segments: []protocol.PromptSegment{{Kind: protocol.SegmentText, Text: prompt}}})
	p.SessionID = ans.Session.ID
	c.send(p)
	for {
		msg := c.next(func(m *protocol.Message) bool { return m.SessionID == ans.Session.ID })
		if d, ok := msg.Payload.(*protocol.TextDone); ok {
			return d.Text
		}
	}
}

// TestUpRecoversAfterCrash: a `ferry up` killed while serving leaves its
// client token valid and owning the machine (issue 16 item 1: before, the
// next `ferry up` was refused forever). The next run, on the same database
// and state directory, takes the machine back at once, revokes the dead
// run's token and answers a prompt: with the token recorded in the state
// directory, and with an older version's token that only its name tells.
func TestUpRecoversAfterCrash(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		record bool
	}{{"recorded", true}, {"legacy", false}} {
		t.Run(c.name, func(t *testing.T) {
			d := newUpDirs(t)
			dead := seedMachine(t, d, "machine-"+c.name, "ferry up", c.record)
			u := runUpIn(t, d)
			if u.base == "" {
				t.Fatalf("up exited %d: %s", <-u.done, u.err.String())
			}
			ui := dialBearer(t, u.base, createUIToken(t, d.db), 15*time.Second)
			m := ui.machine()
			if m.ID != "machine-"+c.name {
				t.Fatalf("machine %s online, want the one of the state directory", m.ID)
			}
			if got := ui.promptEcho(m, "back again"); got != "echo: back again" {
				t.Fatalf("answer %q", got)
			}
			own, toks := machineOwner(t, d.db, m.ID)
			for _, tok := range toks {
				if tok.ID == dead.ID {
					t.Errorf("the dead run's token %s is still valid", dead.ID)
				}
			}
			if own == dead.ID || own == "" {
				t.Errorf("machine owned by %q", own)
			}
			rec, err := os.ReadFile(filepath.Join(d.state, "up-tokens"))
			if err != nil || strings.TrimSpace(string(rec)) != own {
				t.Errorf("up-tokens holds %q (%v), want the live token %s only", rec, err, own)
			}
			if fi, err := os.Stat(filepath.Join(d.state, "up-tokens")); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("up-tokens mode: %v %v", fi, err)
			}
			if code := u.stop(t); code != cli.ExitOK {
				t.Fatalf("up exited %d: %s", code, u.err.String())
			}
			// A clean stop revokes the token and forgets it.
			_, toks = machineOwner(t, d.db, m.ID)
			for _, tok := range toks {
				if tok.Kind == store.TokenClient {
					t.Errorf("after a clean stop, client token %s (%s) is still valid", tok.ID, tok.Name)
				}
			}
			if rec, _ := os.ReadFile(filepath.Join(d.state, "up-tokens")); strings.TrimSpace(string(rec)) != "" {
				t.Errorf("after a clean stop, up-tokens holds %q", rec)
			}
		})
	}
}

// TestUpLeavesConnectMachineAlone: when the machine of up's state
// directory is registered with a valid token ferry up did not issue (a
// `ferry connect` daemon's), up takes nothing over: it exits non-zero
// saying which token and what to do, and the machine and the token stay
// as they were.
func TestUpLeavesConnectMachineAlone(t *testing.T) {
	t.Parallel()
	d := newUpDirs(t)
	laptop := seedMachine(t, d, "machine-laptop", "laptop", false)
	u := runUpIn(t, d)
	var code int
	select {
	case code = <-u.done:
	case <-time.After(30 * time.Second):
		u.cancel()
		t.Fatal("up runs on a machine another token owns")
	}
	if msg := u.err.String(); code != cli.ExitError || !strings.Contains(msg, laptop.ID) || !strings.Contains(msg, "ferry token revoke") {
		t.Fatalf("exit %d, stderr %q; want an error naming token %s and how to revoke it", code, msg, laptop.ID)
	}
	own, toks := machineOwner(t, d.db, "machine-laptop")
	if own != laptop.ID {
		t.Errorf("machine now owned by %s, want %s", own, laptop.ID)
	}
	for _, tok := range toks {
		if tok.Kind == store.TokenClient && tok.ID != laptop.ID {
			t.Errorf("client token %s (%s) is valid; want the laptop's only (up's own revoked)", tok.ID, tok.Name)
		}
	}
	if !slices.ContainsFunc(toks, func(tok store.Token) bool { return tok.ID == laptop.ID }) {
		t.Error("the laptop's token was revoked")
	}
}

// TestConnectCannotTakeOverMachine: a daemon with a different valid client
// token that claims the machine `ferry up` serves is refused by the master
// (the machine stays up's, still answering) and `ferry connect` exits
// non-zero at once, saying what to do, instead of retrying forever.
func TestConnectCannotTakeOverMachine(t *testing.T) {
	t.Parallel()
	d := newUpDirs(t)
	u := runUpIn(t, d)
	if u.base == "" {
		t.Fatalf("up exited %d: %s", <-u.done, u.err.String())
	}
	defer func() {
		if code := u.stop(t); code != cli.ExitOK {
			t.Errorf("up exited %d: %s", code, u.err.String())
		}
	}()
	ui := dialBearer(t, u.base, createUIToken(t, d.db), 30*time.Second)
	m := ui.machine()
	upOwner, _ := machineOwner(t, d.db, m.ID)

	code, secret, errOut := run("token", "create", "--db", d.db, "--kind", "client", "--name", "intruder")
	if code != cli.ExitOK {
		t.Fatalf("token create: %s", errOut)
	}
	state := filepath.Join(t.TempDir(), "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "machine-id"), []byte(m.ID+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	env := map[string]string{"FERRY_TOKEN": strings.TrimSpace(secret), "HOME": t.TempDir()}
	code = cli.Run(ctx, cli.Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }},
		[]string{"connect", "--master", u.base, "--state", state, "--workspace", t.TempDir(), "--agent", "echo"})
	if ctx.Err() != nil {
		t.Fatal("ferry connect kept retrying a machine another token owns")
	}
	if msg := errb.String(); code != cli.ExitError || !strings.Contains(msg, "refused machine "+m.ID) || !strings.Contains(msg, "ferry token revoke") {
		t.Fatalf("connect exit %d, stderr %q", code, msg)
	}
	if own, _ := machineOwner(t, d.db, m.ID); own != upOwner {
		t.Fatalf("machine owner %s, want up's %s", own, upOwner)
	}
	if got := ui.promptEcho(ui.machine(), "still mine"); got != "echo: still mine" {
		t.Fatalf("answer %q", got)
	}
}
