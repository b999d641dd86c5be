package client

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/echo"
	"github.com/ferry-dev/ferry/protocol"
)

// fakeMaster speaks the master's side of /v1/client, per the binding flow:
// Bearer auth (401 before the upgrade), strict decoding of what the client
// sends, master.ack when asked to.
type fakeMaster struct {
	t     *testing.T
	srv   *httptest.Server
	token string
	conns chan *fakeConn
	// reject makes the endpoint answer 503, as a master that is down.
	reject atomic.Bool
	// autoAck acks every kept message as it arrives.
	autoAck atomic.Bool
	// deaf stops reading after session.capabilities, so pings go unanswered.
	deaf atomic.Bool
	auth chan string
	// gone is closed when the test ends.
	gone chan struct{}
	// uploads, when set, serves GET /v1/uploads/… as the master does.
	uploads atomic.Pointer[http.HandlerFunc]
}

type fakeConn struct {
	t    *testing.T
	m    *fakeMaster
	ws   *websocket.Conn
	msgs chan *protocol.Message
	done chan struct{}
	// dropped is closed by drop.
	dropped chan struct{}
	once    sync.Once
}

func newFakeMaster(t *testing.T) *fakeMaster {
	t.Helper()
	m := &fakeMaster{t: t, token: "ferry_client_" + strings.Repeat("A", 43), conns: make(chan *fakeConn, 16), auth: make(chan string, 64), gone: make(chan struct{})}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	t.Cleanup(func() { close(m.gone) })
	return m
}

func (m *fakeMaster) serve(w http.ResponseWriter, r *http.Request) {
	if h := m.uploads.Load(); h != nil && strings.HasPrefix(r.URL.Path, "/v1/uploads/") {
		(*h)(w, r)
		return
	}
	if r.URL.Path != "/v1/client" {
		http.NotFound(w, r)
		return
	}
	if m.reject.Load() {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	select {
	case m.auth <- r.Header.Get("Authorization"):
	default:
	}
	if r.Header.Get("Authorization") != "Bearer "+m.token {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(protocol.Error{Code: protocol.CodeUnauthorized, Message: "bad token"})
		return
	}
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		m.t.Errorf("accept: %v", err)
		return
	}
	ws.SetReadLimit(protocol.MaxMessageBytes)
	fc := &fakeConn{t: m.t, m: m, ws: ws, msgs: make(chan *protocol.Message, 100000), done: make(chan struct{}), dropped: make(chan struct{})}
	m.conns <- fc
	fc.read(r.Context())
}

// read decodes every frame as the real master does; a frame it would
// refuse fails the test.
func (fc *fakeConn) read(ctx context.Context) {
	defer close(fc.msgs)
	defer close(fc.done)
	defer fc.drop()
	for {
		typ, data, err := fc.ws.Read(ctx)
		if err != nil {
			return
		}
		if typ == websocket.MessageBinary {
			// A download's data frame, kept in order among the messages.
			fc.msgs <- &protocol.Message{Type: binaryFrame, Payload: data}
			continue
		}
		msg, err := protocol.DecodeFrom(protocol.RoleClient, data)
		if err != nil {
			fc.t.Errorf("the client sent a message the master refuses: %v\n%s", err, data)
			continue
		}
		if fc.m.autoAck.Load() && kept(msg.Type) {
			fc.send(protocol.New(protocol.TypeAck, &protocol.Ack{Through: msg.MessageID}))
		}
		fc.msgs <- msg
		if fc.m.deaf.Load() {
			// Not reading means not answering pings.
			select {
			case <-fc.dropped:
			case <-fc.m.gone:
			}
			return
		}
	}
}

// binaryFrame is the Type of the pseudo-message that carries a binary
// frame (its Payload is the frame's bytes).
const binaryFrame = "binary"

func kept(typ string) bool {
	switch typ {
	case protocol.TypeSessionOpened, protocol.TypeWorktreeState, protocol.TypeWorktreeSetup, protocol.TypeWorktreeShipped, protocol.TypeWorktreeTested:
		return true
	}
	return strings.HasPrefix(typ, "agent.")
}

func (fc *fakeConn) send(m *protocol.Message) {
	data, err := protocol.Encode(m)
	if err != nil {
		fc.t.Errorf("encode: %v", err)
		return
	}
	fc.sendRaw(websocket.MessageText, data)
}

func (fc *fakeConn) sendRaw(typ websocket.MessageType, data []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := fc.ws.Write(ctx, typ, data); err != nil {
		fc.t.Logf("fake master write: %v", err)
	}
}

func (fc *fakeConn) ack(id string) {
	fc.send(protocol.New(protocol.TypeAck, &protocol.Ack{Through: id}))
}

func (fc *fakeConn) drop() {
	fc.once.Do(func() {
		close(fc.dropped)
		_ = fc.ws.CloseNow()
	})
}

// next returns the next message, failing the test when none comes in time.
func (fc *fakeConn) next(ctx context.Context) *protocol.Message {
	fc.t.Helper()
	select {
	case m, ok := <-fc.msgs:
		if !ok {
			fc.t.Fatal("the connection closed while a message was expected")
		}
		return m
	case <-ctx.Done():
		fc.t.Fatal("no message in time")
		return nil
	}
}

// expect returns the next message and checks its type.
func (fc *fakeConn) expect(ctx context.Context, typ string) *protocol.Message {
	fc.t.Helper()
	m := fc.next(ctx)
	if m.Type != typ {
		fc.t.Fatalf("got %s (%+v), want %s", m.Type, m.Payload, typ)
	}
	return m
}

// until returns every message up to and including the first that
// satisfies stop.
func (fc *fakeConn) until(ctx context.Context, stop func(*protocol.Message) bool) []*protocol.Message {
	fc.t.Helper()
	var out []*protocol.Message
	for {
		m := fc.next(ctx)
		out = append(out, m)
		if stop(m) {
			return out
		}
	}
}

func isType(typ string) func(*protocol.Message) bool {
	return func(m *protocol.Message) bool { return m.Type == typ }
}

// errorFor waits for the error answering parent.
func (fc *fakeConn) errorFor(ctx context.Context, parent string) *protocol.Error {
	fc.t.Helper()
	msgs := fc.until(ctx, func(m *protocol.Message) bool { return m.Type == protocol.TypeError && m.ParentID == parent })
	return msgs[len(msgs)-1].Payload.(*protocol.Error)
}

// accept waits for the next connection and its session.capabilities.
func (m *fakeMaster) accept(ctx context.Context) (*fakeConn, *protocol.Capabilities) {
	m.t.Helper()
	select {
	case fc := <-m.conns:
		caps := fc.expect(ctx, protocol.TypeCapabilities)
		return fc, caps.Payload.(*protocol.Capabilities)
	case <-ctx.Done():
		m.t.Fatal("the client did not connect in time")
		return nil, nil
	}
}

// noConn checks that no new connection is waiting.
func (m *fakeMaster) noConn() {
	m.t.Helper()
	select {
	case <-m.conns:
		m.t.Fatal("the client reconnected")
	default:
	}
}

// testEnv is a client under test with its workspace and state directory.
type testEnv struct {
	t        *testing.T
	m        *fakeMaster
	c        *Client
	ws       string
	stateDir string
	runErr   chan error
	cancel   context.CancelFunc
}

type envOpt func(*Config)

func withAdapters(a ...adapter.Adapter) envOpt { return func(c *Config) { c.Adapters = a } }

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func discardLogger() *slog.Logger {
	if os.Getenv("FERRY_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// newWorkspace makes a folder with a few files.
func newWorkspace(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "proj")
	for name, body := range map[string]string{
		"main.go":         "package main\n",
		"README.md":       "# proj\n",
		"internal/x/x.go": "package x\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func (m *fakeMaster) config(t *testing.T, ws, stateDir string, opts ...envOpt) Config {
	cfg := Config{
		MasterURL:   m.srv.URL,
		Token:       m.token,
		Workspaces:  []string{ws},
		StateDir:    stateDir,
		MachineName: "test-machine",
		Adapters:    []adapter.Adapter{echo.New(echo.WithDelay(0))},
		Logger:      discardLogger(),
		MinBackoff:  5 * time.Millisecond,
		MaxBackoff:  50 * time.Millisecond,
	}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// start creates a client on a new workspace and runs it.
func (m *fakeMaster) start(t *testing.T, opts ...envOpt) *testEnv {
	t.Helper()
	return m.startOn(t, newWorkspace(t), t.TempDir(), opts...)
}

func (m *fakeMaster) startOn(t *testing.T, ws, stateDir string, opts ...envOpt) *testEnv {
	t.Helper()
	return m.startWith(t, ws, stateDir, nil, opts...)
}

// startWith lets before adjust the client between New and Run.
func (m *fakeMaster) startWith(t *testing.T, ws, stateDir string, before func(*Client), opts ...envOpt) *testEnv {
	t.Helper()
	c, err := New(m.config(t, ws, stateDir, opts...))
	if err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(c)
	}
	e := &testEnv{t: t, m: m, c: c, ws: ws, stateDir: stateDir, runErr: make(chan error, 1)}
	e.run()
	t.Cleanup(e.stop)
	return e
}

func (e *testEnv) run() {
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	go func() { e.runErr <- e.c.Run(ctx) }()
}

// stop ends Run (it must return nil) and closes the client.
func (e *testEnv) stop() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	e.cancel = nil
	select {
	case err := <-e.runErr:
		if err != nil {
			e.t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		e.t.Error("Run did not return after cancel")
	}
	if err := e.c.Close(); err != nil {
		e.t.Errorf("Close: %v", err)
	}
}

// open opens a session on the client's first workspace and returns the
// session.opened.
func (e *testEnv) open(ctx context.Context, fc *fakeConn, sessionID, adapterID string) *protocol.Message {
	e.t.Helper()
	m := protocol.New(protocol.TypeSessionOpen, &protocol.SessionOpen{WorkspaceID: e.c.Workspaces()[0].ID, Adapter: adapterID})
	m.SessionID = sessionID
	fc.send(m)
	// The agent may tell its commands (agent.commands) and instruction
	// files (agent.instructions) while it opens.
	seen := fc.until(ctx, func(m *protocol.Message) bool {
		return m.Type != protocol.TypeCommands && m.Type != protocol.TypeInstructions
	})
	got := seen[len(seen)-1]
	if got.Type != protocol.TypeSessionOpened {
		e.t.Fatalf("got %s (%+v), want session.opened", got.Type, got.Payload)
	}
	if got.ParentID != m.MessageID || got.SessionID != sessionID {
		e.t.Fatalf("session.opened %+v answers %s", got, m.MessageID)
	}
	return got
}

// control builds a control message of a session.
func control(sessionID, typ string, payload any) *protocol.Message {
	m := protocol.New(typ, payload)
	m.SessionID = sessionID
	return m
}

func prompt(sessionID, text string, refs ...protocol.FileReference) *protocol.Message {
	return control(sessionID, protocol.TypePromptRequest, &protocol.PromptRequest{PromptText: text, InputType: protocol.InputText, FileReferences: refs})
}

// waitFor polls cond until it holds or ctx ends (for state the wire does
// not show, such as the outbox's length).
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// gateAdapter is a test adapter whose turns emit one delta, wait for a
// release (or cancellation), then emit more.
type gateAdapter struct {
	opens   atomic.Int32
	release chan struct{}
	after   int
	// emitting counts Emit calls started, emitted those that returned.
	emitting, emitted atomic.Int32
}

func newGate(after int) *gateAdapter {
	return &gateAdapter{release: make(chan struct{}), after: after}
}

func (g *gateAdapter) Capability() protocol.AdapterCapability {
	return protocol.AdapterCapability{
		ID: "gate", Name: "Gate", Modes: []string{protocol.ModeDefault}, InputTypes: []string{protocol.InputText},
		Cancel: true, Compact: true, FileTokens: "literal",
	}
}

func (g *gateAdapter) Open(context.Context, adapter.SessionConfig) (adapter.Session, error) {
	g.opens.Add(1)
	return &gateSession{g: g}, nil
}

type gateSession struct{ g *gateAdapter }

func (s *gateSession) Run(ctx context.Context, turn adapter.Turn, emit adapter.Emit) (adapter.Result, error) {
	var text strings.Builder
	say := func(d string) error {
		s.g.emitting.Add(1)
		defer s.g.emitted.Add(1)
		if err := emit(ctx, protocol.TypeTextDelta, &protocol.TextDelta{TurnID: turn.ID, Delta: d}); err != nil {
			return err
		}
		text.WriteString(d)
		return nil
	}
	if err := say("a"); err != nil {
		return adapter.Result{}, err
	}
	select {
	case <-ctx.Done():
		return adapter.Result{Text: text.String()}, ctx.Err()
	case <-s.g.release:
	}
	for i := range s.g.after {
		if err := say(" " + string(rune('b'+i%26))); err != nil {
			return adapter.Result{Text: text.String()}, err
		}
	}
	return adapter.Result{Text: text.String(), StopReason: "end_turn"}, nil
}

func (s *gateSession) Answer(string, *protocol.InteractionResponse) error {
	return adapter.ErrUnknownInteraction
}
func (s *gateSession) SetMode(string, json.RawMessage) error { return nil }
func (s *gateSession) Compact(context.Context, *protocol.SessionCompact) (*protocol.CompactionDone, error) {
	return &protocol.CompactionDone{}, nil
}
func (s *gateSession) Close() error { return nil }
