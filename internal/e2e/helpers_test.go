package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/echo"
	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/client"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/sqlite"
	"github.com/ferry-dev/ferry/protocol"
)

// wait bounds every wait of these tests: long enough for a loaded CI
// machine, short enough that a hang fails instead of blocking the suite.
const wait = 20 * time.Second

// system is a master on a real SQLite file, behind a TCP proxy that the
// client dials, so a test can cut the client's connection or restart the
// master on the same address.
type system struct {
	t         *testing.T
	dbPath    string
	st        store.Store
	m         *master.Master
	srv       *http.Server
	ln        net.Listener
	addr      string // the master's own address
	proxy     *proxy
	retention int
	uiToken   string
	client    *client.Client
	cancelCli context.CancelFunc
	cliDone   chan error
	workspace string
}

func newSystem(t *testing.T, retention int) *system {
	t.Helper()
	s := &system{t: t, dbPath: filepath.Join(t.TempDir(), "ferry.db"), retention: retention}
	s.startMaster()
	ctx := context.Background()
	var err error
	s.uiToken, _, err = auth.Issue(ctx, s.st, store.TokenUI, "test ui", 0)
	if err != nil {
		t.Fatal(err)
	}
	s.proxy = newProxy(t, s.addr)
	t.Cleanup(s.stop)
	return s
}

func (s *system) startMaster() {
	t := s.t
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, s.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	m, err := master.New(ctx, master.Config{Store: st, Retention: s.retention, OfflineGrace: 2 * time.Second, PingInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	addr := s.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var ln net.Listener
	// The port was just freed by the previous master; retry briefly in case
	// the kernel still holds it.
	for deadline := time.Now().Add(wait); ; {
		ln, err = net.Listen("tcp", addr)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	s.st, s.m, s.ln, s.addr = st, m, ln, ln.Addr().String()
	s.srv = &http.Server{Handler: m.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
}

// stopMaster shuts the master down gracefully and closes its store.
func (s *system) stopMaster() {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := s.m.Shutdown(ctx); err != nil {
		s.t.Errorf("master shutdown: %v", err)
	}
	_ = s.srv.Shutdown(ctx)
	if err := s.st.Close(); err != nil {
		s.t.Errorf("store close: %v", err)
	}
}

func (s *system) restartMaster() {
	s.stopMaster()
	s.startMaster()
}

// startClient runs a real client (with the echo adapter) on a fresh
// workspace holding a few files, through the proxy.
func (s *system) startClient(delay time.Duration) {
	t := s.t
	t.Helper()
	if s.workspace == "" {
		s.workspace = t.TempDir()
		for name, body := range map[string]string{
			"web/router.ts":             "export const router = 1\n",
			"router/middleware/auth.ts": "export const auth = 1\n",
			"README.md":                 "# demo\n",
		} {
			p := filepath.Join(s.workspace, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	secret, _, err := auth.Issue(context.Background(), s.st, store.TokenClient, "test client", 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{
		MasterURL:   "http://" + s.proxy.addr(),
		Token:       secret,
		Workspaces:  []string{s.workspace},
		StateDir:    filepath.Join(t.TempDir(), "client"),
		MachineName: "test-machine",
		Adapters:    []adapter.Adapter{echo.New(echo.WithDelay(delay))},
		MinBackoff:  20 * time.Millisecond,
		MaxBackoff:  200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.client, s.cancelCli, s.cliDone = c, cancel, make(chan error, 1)
	go func() { s.cliDone <- c.Run(ctx) }()
}

func (s *system) stop() {
	if s.cancelCli != nil {
		s.cancelCli()
		select {
		case err := <-s.cliDone:
			if err != nil {
				s.t.Errorf("client run: %v", err)
			}
		case <-time.After(wait):
			s.t.Error("client did not stop")
		}
		_ = s.client.Close()
	}
	s.proxy.close()
	s.stopMaster()
}

// ui is a browser UI's WebSocket, read by one goroutine into a channel.
type ui struct {
	t    *testing.T
	conn *websocket.Conn
	in   chan *protocol.Message
	done chan struct{}
}

func (s *system) ui() *ui {
	t := s.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, "ws://"+s.addr+"/v1/ui", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + s.uiToken}},
	})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		t.Fatalf("dial ui: %v", err)
	}
	conn.SetReadLimit(protocol.MaxMessageBytes)
	u := &ui{t: t, conn: conn, in: make(chan *protocol.Message, 10000), done: make(chan struct{})}
	go func() {
		defer close(u.done)
		for {
			_, data, err := conn.Read(context.Background())
			if err != nil {
				return
			}
			m, err := protocol.DecodeRelayed(data)
			if err != nil {
				t.Errorf("ui got an undecodable message: %v: %s", err, data)
				return
			}
			u.in <- m
		}
	}()
	t.Cleanup(u.close)
	return u
}

func (u *ui) close() {
	_ = u.conn.Close(websocket.StatusNormalClosure, "")
	<-u.done
}

func (u *ui) send(m *protocol.Message) {
	u.t.Helper()
	data, err := protocol.Encode(m)
	if err != nil {
		u.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := u.conn.Write(ctx, websocket.MessageText, data); err != nil {
		u.t.Fatalf("ui send %s: %v", m.Type, err)
	}
}

// next returns the next message of one of types (others are passed to
// skipped, which may be nil), failing the test after the bounded wait.
func (u *ui) next(skipped func(*protocol.Message), types ...string) *protocol.Message {
	u.t.Helper()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case m := <-u.in:
			for _, ty := range types {
				if m.Type == ty {
					return m
				}
			}
			if skipped != nil {
				skipped(m)
			}
		case <-timer.C:
			u.t.Fatalf("no %v within %s", types, wait)
			return nil
		}
	}
}

// request sends m and returns the answer whose parent_id is m's id.
func (u *ui) request(m *protocol.Message) *protocol.Message {
	u.t.Helper()
	u.send(m)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case r := <-u.in:
			if r.ParentID == m.MessageID {
				return r
			}
		case <-timer.C:
			u.t.Fatalf("no answer to %s within %s", m.Type, wait)
			return nil
		}
	}
}

// machine waits until the test machine is online and returns it.
func (u *ui) machine() protocol.Machine {
	u.t.Helper()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		r := u.request(protocol.New(protocol.TypeMachinesList, &protocol.MachinesList{}))
		ms, ok := r.Payload.(*protocol.Machines)
		if !ok {
			u.t.Fatalf("machines list answered %s", r.Type)
		}
		for _, m := range ms.Machines {
			if m.Online && m.Name == "test-machine" {
				return m
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	u.t.Fatal("the test machine never came online")
	return protocol.Machine{}
}

// startSession starts an echo session on the test machine's workspace and
// subscribes to it.
func (u *ui) startSession() protocol.SessionInfo {
	u.t.Helper()
	m := u.machine()
	r := u.request(protocol.New(protocol.TypeSessionStart, &protocol.SessionStart{
		MachineID: m.ID, WorkspaceID: m.Workspaces[0].ID, Adapter: "echo", Title: "e2e",
	}))
	ans, ok := r.Payload.(*protocol.SessionAnswer)
	if !ok {
		u.t.Fatalf("session start answered %s: %+v", r.Type, r.Payload)
	}
	u.subscribe(ans.Session.ID, 0, "")
	return ans.Session
}

func (u *ui) subscribe(sessionID string, after uint64, epoch string) *protocol.Subscribed {
	u.t.Helper()
	m := protocol.New(protocol.TypeSessionSubscribe, &protocol.SessionSubscribe{AfterSeq: after, Epoch: epoch})
	m.SessionID = sessionID
	r := u.request(m)
	sub, ok := r.Payload.(*protocol.Subscribed)
	if !ok {
		u.t.Fatalf("subscribe answered %s: %+v", r.Type, r.Payload)
	}
	return sub
}

func (u *ui) prompt(sessionID string, segs ...protocol.PromptSegment) {
	u.t.Helper()
	m := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{Segments: segs})
	m.SessionID = sessionID
	u.send(m)
}

func text(s string) protocol.PromptSegment {
	return protocol.PromptSegment{Kind: protocol.SegmentText, Text: s}
}

func file(path string) protocol.PromptSegment {
	return protocol.PromptSegment{Kind: protocol.SegmentFile, File: &protocol.PickedFile{Path: path}}
}

// events collects a session's persisted events (by seq) until a message
// satisfies stop.
type events struct {
	bySeq map[uint64]*protocol.Message
	order []*protocol.Message
}

// allowTurn sends prompt to the session and allows every permission the
// agent asks for until the turn ends, which must be end_turn; see, when
// not nil, gets each of the session's events on the way.
func (u *ui) allowTurn(sessionID, prompt string, see func(*protocol.Message)) *events {
	u.t.Helper()
	u.prompt(sessionID, text(prompt))
	return u.collect(sessionID, func(m *protocol.Message) bool {
		if see != nil {
			see(m)
		}
		switch p := m.Payload.(type) {
		case *protocol.InteractionRequest:
			a := protocol.New(protocol.TypeInteractionResponse, &protocol.InteractionResponse{
				InteractionID: p.InteractionID, SelectedValue: protocol.Single(protocol.AllowOnce)})
			a.SessionID = sessionID
			u.send(a)
		case *protocol.TextDone:
			if p.StopReason != protocol.StopEndTurn {
				u.t.Fatalf("the turn ended with %s: %q", p.StopReason, p.Text)
			}
			return true
		}
		return false
	})
}

func (u *ui) collect(sessionID string, stop func(*protocol.Message) bool) *events {
	u.t.Helper()
	ev := &events{bySeq: map[uint64]*protocol.Message{}}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case m := <-u.in:
			if m.SessionID != sessionID || m.Seq == 0 {
				continue
			}
			if prev, dup := ev.bySeq[m.Seq]; dup && prev.Type != protocol.TypeInteractionRequest {
				u.t.Fatalf("seq %d delivered twice (%s, then %s)", m.Seq, prev.Type, m.Type)
			}
			ev.bySeq[m.Seq] = m
			ev.order = append(ev.order, m)
			if stop(m) {
				return ev
			}
		case <-timer.C:
			u.t.Fatalf("stop condition not met within %s; got %d events", wait, len(ev.order))
			return nil
		}
	}
}

func isType(ty string) func(*protocol.Message) bool {
	return func(m *protocol.Message) bool { return m.Type == ty }
}

// proxy forwards TCP connections to the master's current address and can
// cut every connection at once, as a network failure would.
type proxy struct {
	t      *testing.T
	ln     net.Listener
	mu     sync.Mutex
	target string
	conns  map[net.Conn]bool
	closed bool
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, ln: ln, target: target, conns: map[net.Conn]bool{}}
	go p.accept()
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		target := p.target
		p.mu.Unlock()
		up, err := net.Dial("tcp", target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = c.Close()
			_ = up.Close()
			return
		}
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		go pipe(c, up)
		go pipe(up, c)
	}
}

func pipe(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		_ = err // a cut connection ends here; nothing to report
	}
	_ = dst.Close()
	_ = src.Close()
}

// cut closes every proxied connection; new ones are still accepted.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	_ = p.ln.Close()
	p.cut()
}

func payloadJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
