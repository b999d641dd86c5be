package claudecode

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/protocol"
	"github.com/ferry-dev/ferry/protocol/fileref"
)

// testTimeout bounds every wait of a test, so a hung CLI fails the test.
const testTimeout = 60 * time.Second

type event struct {
	typ     string
	payload any
}

// recorder is a turn's Emit: it validates every event the way the client
// does (encode, then strict decode as a client message), keeps it, and
// signals interactions.
type recorder struct {
	t      *testing.T
	mu     sync.Mutex
	events []event
	asks   chan *protocol.InteractionRequest
	seen   chan string
}

func newRecorder(t *testing.T) *recorder {
	return &recorder{t: t, asks: make(chan *protocol.InteractionRequest, 16), seen: make(chan string, 4096)}
}

func (r *recorder) emit(ctx context.Context, typ string, payload any) error {
	if !strings.HasPrefix(typ, "agent.") || typ == protocol.TypeTextDone || typ == protocol.TypeTurnStarted {
		r.t.Errorf("the adapter emitted %s", typ)
	}
	m := protocol.New(typ, payload)
	m.SessionID = "s1"
	data, err := protocol.Encode(m)
	if err == nil {
		_, err = protocol.DecodeFrom(protocol.RoleClient, data)
	}
	if err != nil {
		r.t.Errorf("invalid %s event: %v", typ, err)
	}
	r.mu.Lock()
	r.events = append(r.events, event{typ, payload})
	r.mu.Unlock()
	if ir, ok := payload.(*protocol.InteractionRequest); ok {
		r.asks <- ir
	}
	select {
	case r.seen <- typ:
	default:
	}
	return ctx.Err()
}

func (r *recorder) all() []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event(nil), r.events...)
}

func (r *recorder) ofType(typ string) []any {
	var out []any
	for _, e := range r.all() {
		if e.typ == typ {
			out = append(out, e.payload)
		}
	}
	return out
}

func (r *recorder) text(channel string) string {
	var b strings.Builder
	for _, p := range r.ofType(protocol.TypeTextDelta) {
		if d := p.(*protocol.TextDelta); d.Channel == channel {
			b.WriteString(d.Delta)
		}
	}
	return b.String()
}

func (r *recorder) finished() []*protocol.ToolFinished {
	var out []*protocol.ToolFinished
	for _, p := range r.ofType(protocol.TypeToolFinished) {
		out = append(out, p.(*protocol.ToolFinished))
	}
	return out
}

func (r *recorder) errors() []*protocol.AgentError {
	var out []*protocol.AgentError
	for _, p := range r.ofType(protocol.TypeAgentError) {
		out = append(out, p.(*protocol.AgentError))
	}
	return out
}

// waitFor waits for an event of type typ.
func (r *recorder) waitFor(ctx context.Context, typ string) bool {
	for {
		select {
		case got := <-r.seen:
			if got == typ {
				return true
			}
		case <-ctx.Done():
			return false
		}
	}
}

// nextAsk waits for the next interaction request.
func (r *recorder) nextAsk(ctx context.Context) *protocol.InteractionRequest {
	r.t.Helper()
	select {
	case ir := <-r.asks:
		return ir
	case <-ctx.Done():
		r.t.Fatal("no interaction request came")
		return nil
	}
}

// textTurn is a turn with plain text.
func textTurn(text string) adapter.Turn {
	req := &protocol.PromptRequest{PromptText: fileref.Escape(text), InputType: protocol.InputText}
	return adapter.Turn{ID: protocol.NewID(), Request: req, Prompt: fileref.Parse(req.PromptText, nil)}
}

// logBuffer is a logger that keeps what it logs.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// fakeEnv is a session on the fake CLI.
type fakeEnv struct {
	ad   *Adapter
	sess *session
	ws   string
	log  string // the fake's log file
	logs *logBuffer
}

// openFake opens a session whose claude is this test binary playing
// scenario.
func openFake(t *testing.T, scenario string, mut func(*Config)) *fakeEnv {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	fakeLog := filepath.Join(dir, "fake.log")
	cfg := Config{
		Command: os.Args[0],
		Env:     []string{envFakeScenario + "=" + scenario, envFakeLog + "=" + fakeLog},
		Logger:  logs.logger(),
	}
	if mut != nil {
		mut(&cfg)
	}
	ad := New(cfg)
	s, err := ad.Open(context.Background(), adapter.SessionConfig{SessionID: "sess-1", Workspace: protocol.Workspace{ID: "w", Name: "w", Path: ws}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return &fakeEnv{ad: ad, sess: s.(*session), ws: ws, log: fakeLog, logs: logs}
}

// processAlive reports whether pid runs (and is no zombie).
func processAlive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// waitGone waits (boundedly) for a process to be gone.
func waitGone(ctx context.Context, pid int) bool {
	for processAlive(pid) {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
	return true
}

// processesWith lists the pids whose command line contains s.
func processesWith(s string) []int {
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s) {
			continue
		}
		var pid int
		for _, c := range filepath.Base(d) {
			pid = pid*10 + int(c-'0')
		}
		if processAlive(pid) {
			out = append(out, pid)
		}
	}
	return out
}
