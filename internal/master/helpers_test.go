package master_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/sqlite"
	"github.com/ferry-dev/ferry/protocol"
)

// wait bounds every wait in these tests; a working master answers in far less.
const wait = 20 * time.Second

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	t.Cleanup(cancel)
	return ctx
}

// newStore opens a real SQLite file.
func newStore(t testing.TB, path string) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	return st
}

// env is a master on a real SQLite file behind a loopback HTTP server.
type env struct {
	t      testing.TB
	cfg    master.Config
	path   string
	st     store.Store
	m      *master.Master
	srv    *httptest.Server
	client string // client token secret
	ui     string // UI token secret
	// sendBuffer, when set, fixes the master's socket send buffer (no
	// autotuning), so that a peer that does not read backs up sooner.
	sendBuffer int
	// wrap, when set, wraps the store the master uses (to inject failures).
	wrap func(store.Store) store.Store
}

func logger(t testing.TB) *slog.Logger {
	if testing.Verbose() && os.Getenv("FERRY_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// newEnv starts a master; cfg's zero fields get test-friendly values.
func newEnv(t testing.TB, cfg master.Config, opts ...func(*env)) *env {
	t.Helper()
	if cfg.OfflineGrace == 0 {
		cfg.OfflineGrace = 200 * time.Millisecond
	}
	if cfg.PingInterval == 0 {
		cfg.PingInterval = time.Minute // pings are tested on their own
	}
	cfg.Logger = logger(t)
	e := &env{t: t, cfg: cfg, path: filepath.Join(t.TempDir(), "ferry.db")}
	for _, o := range opts {
		o(e)
	}
	e.st = newStore(t, e.path)
	var err error
	if e.client, _, err = auth.Issue(testCtx(t), e.st, store.TokenClient, "laptop", 0); err != nil {
		t.Fatal(err)
	}
	if e.ui, _, err = auth.Issue(testCtx(t), e.st, store.TokenUI, "browser", time.Hour); err != nil {
		t.Fatal(err)
	}
	e.startMaster()
	t.Cleanup(e.stop)
	return e
}

func (e *env) startMaster() {
	e.t.Helper()
	cfg := e.cfg
	cfg.Store = e.st
	if e.wrap != nil {
		cfg.Store = e.wrap(e.st)
	}
	m, err := master.New(testCtx(e.t), cfg)
	if err != nil {
		e.t.Fatalf("master.New: %v", err)
	}
	e.m = m
	e.srv = httptest.NewUnstartedServer(m.Handler())
	if n := e.sendBuffer; n > 0 {
		e.srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
			if tc, ok := c.(*net.TCPConn); ok && s == http.StateNew {
				_ = tc.SetWriteBuffer(n)
			}
		}
	}
	e.srv.Start()
}

func (e *env) stop() {
	if e.m == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := e.m.Shutdown(ctx); err != nil {
		e.t.Errorf("Shutdown: %v", err)
	}
	e.srv.Close()
	_ = e.st.Close()
	e.m = nil
}

// restart stops the master and starts a new one on the same SQLite file.
func (e *env) restart() {
	e.t.Helper()
	e.stop()
	e.st = newStore(e.t, e.path)
	e.startMaster()
}

func (e *env) wsURL(path string) string {
	return "ws" + strings.TrimPrefix(e.srv.URL, "http") + path
}

// peer is a raw WebSocket peer speaking the protocol: a fake UI or client.
type peer struct {
	t    testing.TB
	name string
	ws   *websocket.Conn
	// skip lists types next() passes over unless asked for them.
	skip []string
	// skipStatus: next() passes over status changes (master.session.changed
	// with change status) unless asked for master.session.changed.
	skipStatus bool
	// acked is the newest master.ack seen (client peers).
	acked []string
}

// dial opens a WebSocket; when the upgrade is refused it returns the HTTP
// status and the start of the body.
func dial(t testing.TB, url string, h http.Header) (p *peer, status int, body []byte, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: h})
	if resp != nil {
		status = resp.StatusCode
		if resp.Body != nil {
			body, _ = io.ReadAll(io.LimitReader(resp.Body, 1024))
			_ = resp.Body.Close()
		}
	}
	if err != nil {
		return nil, status, body, err
	}
	ws.SetReadLimit(-1)
	p = &peer{t: t, ws: ws}
	t.Cleanup(func() { _ = ws.CloseNow() })
	return p, status, nil, nil
}

func bearer(secret string) http.Header {
	return http.Header{"Authorization": {"Bearer " + secret}}
}

func (e *env) dialUI(name string) *peer {
	e.t.Helper()
	p, _, _, err := dial(e.t, e.wsURL("/v1/ui"), bearer(e.ui))
	if err != nil {
		e.t.Fatalf("dial UI: %v", err)
	}
	p.name = name
	p.skip, p.skipStatus = []string{protocol.TypeMachineStatus}, true
	// Once answered, the UI is registered for machine status broadcasts
	// (a UI lists the machines first; status changes follow).
	p.sync()
	return p
}

func (e *env) dialClient() *peer {
	e.t.Helper()
	p, _, _, err := dial(e.t, e.wsURL("/v1/client"), bearer(e.client))
	if err != nil {
		e.t.Fatalf("dial client: %v", err)
	}
	p.name = "client"
	p.skip = []string{protocol.TypeAck}
	return p
}

func (p *peer) sendRaw(b []byte) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := p.ws.Write(ctx, websocket.MessageText, b); err != nil {
		p.t.Fatalf("%s: write: %v", p.name, err)
	}
}

func (p *peer) send(m *protocol.Message) *protocol.Message {
	p.t.Helper()
	b, err := protocol.Encode(m)
	if err != nil {
		p.t.Fatalf("%s: encode %s: %v", p.name, m.Type, err)
	}
	p.sendRaw(b)
	return m
}

// read returns the next message, whatever it is.
func (p *peer) read() (*protocol.Message, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	typ, b, err := p.ws.Read(ctx)
	if err != nil {
		return nil, err
	}
	if typ != websocket.MessageText {
		p.t.Fatalf("%s: got a binary frame", p.name)
	}
	m, err := protocol.Decode(b)
	if err != nil {
		p.t.Fatalf("%s: the master sent an invalid message %s: %v", p.name, b, err)
	}
	if m.Type == protocol.TypeAck {
		p.acked = append(p.acked, m.Payload.(*protocol.Ack).Through)
	}
	return m, nil
}

// next returns the next message not in p.skip (unless wanted).
func (p *peer) next(want ...string) *protocol.Message {
	p.t.Helper()
	for {
		m, err := p.read()
		if err != nil {
			p.t.Fatalf("%s: read (waiting for %v): %v", p.name, want, err)
		}
		if (slices.Contains(p.skip, m.Type) || p.skipStatus && isStatus(m)) && !slices.Contains(want, m.Type) {
			continue
		}
		if len(want) > 0 && !slices.Contains(want, m.Type) {
			p.t.Fatalf("%s: got %s %s, want %v", p.name, m.Type, describe(m), want)
		}
		return m
	}
}

// isStatus reports whether m is a status change: master.session.changed
// with change status.
func isStatus(m *protocol.Message) bool {
	p, ok := m.Payload.(*protocol.SessionChanged)
	return ok && p.Change == protocol.ChangeStatus
}

func describe(m *protocol.Message) string {
	b, _ := json.Marshal(m.Payload)
	if len(b) > 300 {
		b = append(b[:300], "…"...)
	}
	return string(b)
}

// expectError reads the next message and checks it is an error with code
// (and field, when not empty) about parent.
func (p *peer) expectError(parent, code, field string) *protocol.Error {
	p.t.Helper()
	m := p.next(protocol.TypeError)
	e := m.Payload.(*protocol.Error)
	if e.Code != code || field != "" && e.Field != field {
		p.t.Fatalf("%s: got error %s (field %q: %s), want %s (field %q)", p.name, e.Code, e.Field, e.Message, code, field)
	}
	if m.ParentID != parent {
		p.t.Fatalf("%s: error parent_id %q, want %q", p.name, m.ParentID, parent)
	}
	return e
}

// sync checks the connection still works and nothing else was queued before
// the answer: it asks for the machines and expects master.machines next.
func (p *peer) sync() {
	p.t.Helper()
	req := p.send(protocol.New(protocol.TypeMachinesList, &protocol.MachinesList{}))
	m := p.next(protocol.TypeMachines)
	if m.ParentID != req.MessageID {
		p.t.Fatalf("%s: master.machines answers %s, want %s", p.name, m.ParentID, req.MessageID)
	}
}

// waitClosed reads until the master closes the connection and returns the
// messages read before that.
func (p *peer) waitClosed() ([]*protocol.Message, error) {
	var got []*protocol.Message
	for {
		m, err := p.read()
		if err != nil {
			return got, err
		}
		got = append(got, m)
	}
}

// testCaps is what the fake client announces.
func testCaps(machineID string) *protocol.Capabilities {
	return &protocol.Capabilities{
		ProtocolVersion: 1,
		Client:          protocol.ClientInfo{Name: "fake", Version: "0"},
		Machine:         &protocol.MachineInfo{ID: machineID, Name: "laptop " + machineID},
		Workspaces:      []protocol.Workspace{{ID: "ws1", Name: "proj", Path: "/home/me/proj"}},
		Adapters: []protocol.AdapterCapability{{
			ID: "echo", Name: "Echo", Modes: []string{protocol.ModeDefault, protocol.ModePlan},
			InputTypes: []string{protocol.InputText}, Interactions: []string{protocol.InteractionPermission},
			Cancel: true, Compact: true, FileTokens: "file_list",
		}},
		Messages: []string{
			protocol.TypePromptRequest, protocol.TypePromptCancel, protocol.TypeInteractionResponse,
			protocol.TypeInteractionTimeout, protocol.TypeSessionCompact, protocol.TypeModeSwitch,
			protocol.TypeFileSearch, protocol.TypeFileSearchCancel, protocol.TypeSessionOpen,
		},
		FileReferences: &protocol.FileRefCapabilities{
			Search: true, SearchScopes: []string{protocol.ScopeWorkspace}, MaxResultsCap: 50,
			PositionEncoding: protocol.PositionUTF16, TokenSyntaxVersion: 1,
		},
	}
}

// fakeClient is a raw client peer with an outbox: what it sent and the
// master has not acknowledged yet, re-sent after a reconnect.
type fakeClient struct {
	*peer
	e      *env
	caps   *protocol.Capabilities
	mu     sync.Mutex
	outbox []*protocol.Message
}

// connectClient dials, announces caps and waits until ui (if any) sees the
// machine online.
func (e *env) connectClient(caps *protocol.Capabilities, ui *peer) *fakeClient {
	e.t.Helper()
	c := &fakeClient{peer: e.dialClient(), e: e, caps: caps}
	c.send(protocol.New(protocol.TypeCapabilities, caps))
	if ui != nil {
		waitMachine(ui, caps.Machine.ID, true)
	}
	return c
}

// reconnect dials again with the same capabilities and re-sends every
// unacknowledged event in order.
func (c *fakeClient) reconnect(ui *peer) {
	c.t.Helper()
	_ = c.ws.CloseNow()
	c.peer = c.e.dialClient()
	c.send(protocol.New(protocol.TypeCapabilities, c.caps))
	if ui != nil {
		waitMachine(ui, c.caps.Machine.ID, true)
	}
	c.mu.Lock()
	out := slices.Clone(c.outbox)
	c.mu.Unlock()
	for _, m := range out {
		c.send(m)
	}
}

// emit sends a persistable event and keeps it until acknowledged.
func (c *fakeClient) emit(sessionID, typ string, payload any) *protocol.Message {
	c.t.Helper()
	m := protocol.New(typ, payload)
	m.SessionID = sessionID
	return c.emitMsg(m)
}

func (c *fakeClient) emitMsg(m *protocol.Message) *protocol.Message {
	c.mu.Lock()
	c.outbox = append(c.outbox, m)
	c.mu.Unlock()
	c.send(m)
	return m
}

// applyAcks drops acknowledged events from the outbox.
func (c *fakeClient) applyAcks() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, through := range c.acked {
		if i := slices.IndexFunc(c.outbox, func(m *protocol.Message) bool { return m.MessageID == through }); i >= 0 {
			c.outbox = slices.Clone(c.outbox[i+1:])
		}
	}
	c.acked = nil
}

// waitAck reads until the master acknowledges id (cumulatively).
func (c *fakeClient) waitAck(id string) {
	c.t.Helper()
	for {
		c.applyAcks()
		c.mu.Lock()
		pending := slices.ContainsFunc(c.outbox, func(m *protocol.Message) bool { return m.MessageID == id })
		c.mu.Unlock()
		if !pending {
			return
		}
		m := c.next(protocol.TypeAck)
		c.acked = append(c.acked[:0], m.Payload.(*protocol.Ack).Through)
	}
}

func waitMachine(ui *peer, id string, online bool) protocol.Machine {
	ui.t.Helper()
	for {
		m := ui.next(protocol.TypeMachineStatus)
		mc := m.Payload.(*protocol.MachineStatus).Machine
		if mc.ID == id && mc.Online == online {
			return mc
		}
	}
}

// startSession has ui start a session on the client and the client open it.
func startSession(ui *peer, c *fakeClient) (protocol.SessionInfo, *protocol.Message) {
	ui.t.Helper()
	req := ui.send(protocol.New(protocol.TypeSessionStart, &protocol.SessionStart{
		MachineID: c.caps.Machine.ID, WorkspaceID: "ws1", Adapter: "echo", Title: "t",
	}))
	open := c.next(protocol.TypeSessionOpen)
	p := open.Payload.(*protocol.SessionOpen)
	if p.WorkspaceID != "ws1" || p.Adapter != "echo" || p.Mode != protocol.ModeDefault || open.SessionID == "" {
		ui.t.Fatalf("control.session.open %+v for session %q", p, open.SessionID)
	}
	opened := protocol.New(protocol.TypeSessionOpened, &protocol.SessionOpened{Adapter: "echo", Mode: protocol.ModeDefault})
	opened.SessionID, opened.ParentID = open.SessionID, open.MessageID
	c.emitMsg(opened)
	ans := ui.next(protocol.TypeSessionAnswer)
	if ans.ParentID != req.MessageID || ans.SessionID != open.SessionID {
		ui.t.Fatalf("master.session answers %s for %s, want %s for %s", ans.ParentID, ans.SessionID, req.MessageID, open.SessionID)
	}
	info := ans.Payload.(*protocol.SessionAnswer).Session
	if info.ID != open.SessionID || info.MachineID != c.caps.Machine.ID || info.LastSeq != 1 {
		ui.t.Fatalf("master.session %+v", info)
	}
	return info, opened
}

// subscribe subscribes ui to a session and returns the answer.
func subscribe(ui *peer, sessionID string, afterSeq uint64, epoch string) *protocol.Subscribed {
	ui.t.Helper()
	req := protocol.New(protocol.TypeSessionSubscribe, &protocol.SessionSubscribe{AfterSeq: afterSeq, Epoch: epoch})
	req.SessionID = sessionID
	ui.send(req)
	m := ui.next(protocol.TypeSubscribed)
	if m.ParentID != req.MessageID || m.SessionID != sessionID {
		ui.t.Fatalf("master.subscribed answers %s/%s", m.ParentID, m.SessionID)
	}
	return m.Payload.(*protocol.Subscribed)
}

// events reads n session events and checks their seqs run on from after.
func events(ui *peer, n int, after uint64) []*protocol.Message {
	ui.t.Helper()
	out := make([]*protocol.Message, 0, n)
	for range n {
		m := ui.next()
		if m.Seq != after+1 {
			ui.t.Fatalf("%s: got %s seq %d, want seq %d", ui.name, m.Type, m.Seq, after+1)
		}
		after = m.Seq
		out = append(out, m)
	}
	return out
}

// prompt sends a ui.prompt of plain text and returns the request the
// client received.
func prompt(ui *peer, c *fakeClient, sessionID, text string) *protocol.Message {
	ui.t.Helper()
	m := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{Segments: []protocol.PromptSegment{{Kind: protocol.SegmentText, Text: text}}})
	m.SessionID = sessionID
	ui.send(m)
	req := c.next(protocol.TypePromptRequest)
	if req.MessageID != m.MessageID || req.SessionID != sessionID {
		ui.t.Fatalf("control.prompt.request %s/%s, want %s/%s", req.MessageID, req.SessionID, m.MessageID, sessionID)
	}
	return req
}

// turnStart answers a prompt request with agent.turn.started.
func turnStart(c *fakeClient, req *protocol.Message, turnID string) *protocol.Message {
	m := protocol.New(protocol.TypeTurnStarted, &protocol.TurnStarted{TurnID: turnID, InputType: protocol.InputText, Mode: protocol.ModeDefault, Adapter: "echo"})
	m.SessionID, m.ParentID = req.SessionID, req.MessageID
	return c.emitMsg(m)
}

func delta(c *fakeClient, sessionID, turnID, text string) *protocol.Message {
	return c.emit(sessionID, protocol.TypeTextDelta, &protocol.TextDelta{TurnID: turnID, Delta: text})
}

// storedEvents returns the session's retained events of type typ.
func storedEvents(t testing.TB, st store.Store, sessionID, typ string) []store.Event {
	t.Helper()
	evs, err := st.Events(testCtx(t), sessionID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(evs, func(e store.Event) bool { return typ != "" && e.Type != typ })
}

func isClosed(err error) bool {
	return err != nil && (websocket.CloseStatus(err) != -1 || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "closed"))
}

// secondNode starts another master node beside the env's, on cfg (store
// and logger default to the env's), stopped at cleanup, and returns the
// URL of its /v1/ui.
func (e *env) secondNode(cfg master.Config) string {
	t := e.t
	t.Helper()
	if cfg.Store == nil {
		cfg.Store = e.st
	}
	if cfg.Logger == nil {
		cfg.Logger = logger(t)
	}
	cfg.OfflineGrace, cfg.PingInterval = 200*time.Millisecond, time.Minute
	m, err := master.New(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = m.Shutdown(ctx)
		srv.Close()
	})
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/v1/ui"
}
