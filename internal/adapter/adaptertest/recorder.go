package adaptertest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/protocol"
	"github.com/ferry-dev/ferry/protocol/fileref"
)

// The helpers below are what the adapters' own tests share: one event
// recorder, one log buffer and a few turn and process helpers, so a fix
// to one of them reaches every adapter's tests.

// Recorder is a turn's adapter.Emit for tests: it keeps every event in
// order, hands interaction requests to Asks and signals each event's type
// to WaitFor. It is safe for concurrent use. The zero Recorder records,
// but hands out no Asks and signals nothing to WaitFor: NewRecorder does.
type Recorder struct {
	// Asks receives every interaction request as it is emitted. Emit
	// blocks when AskBuffer of them are not taken.
	Asks chan *protocol.InteractionRequest
	// OnEvent, when set before the turn starts, sees each event as it is
	// emitted (from the emitting goroutine).
	OnEvent func(Event)

	mu     sync.Mutex
	events []Event
	seen   chan string
}

// AskBuffer is how many interaction requests a Recorder holds untaken.
const AskBuffer = 16

// seenBuffer is how many event types WaitFor can fall behind by; more are
// dropped rather than block the adapter.
const seenBuffer = 4096

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{Asks: make(chan *protocol.InteractionRequest, AskBuffer), seen: make(chan string, seenBuffer)}
}

// Emit records the event; it is an adapter.Emit and always returns nil.
func (r *Recorder) Emit(_ context.Context, typ string, payload any) error {
	e := Event{Type: typ, Payload: payload}
	r.mu.Lock()
	r.events = append(r.events, e)
	f := r.OnEvent
	r.mu.Unlock()
	if f != nil {
		f(e)
	}
	if ir, ok := payload.(*protocol.InteractionRequest); ok && r.Asks != nil {
		r.Asks <- ir
	}
	select {
	case r.seen <- typ:
	default:
	}
	return nil
}

// Events returns the events so far, in order.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Types returns the types of the events so far, in order.
func (r *Recorder) Types() []string {
	var out []string
	for _, e := range r.Events() {
		out = append(out, e.Type)
	}
	return out
}

// OfType returns the payloads of the events of type typ.
func (r *Recorder) OfType(typ string) []any {
	var out []any
	for _, e := range r.Events() {
		if e.Type == typ {
			out = append(out, e.Payload)
		}
	}
	return out
}

// Count is how many events of type typ came.
func (r *Recorder) Count(typ string) int { return len(r.OfType(typ)) }

// Text joins the text deltas of channel; "" is the text channel, as it is
// on the wire.
func (r *Recorder) Text(channel string) string {
	var b strings.Builder
	for _, e := range r.Events() {
		if d, ok := e.Payload.(*protocol.TextDelta); ok && channelOf(d.Channel) == channelOf(channel) {
			b.WriteString(d.Delta)
		}
	}
	return b.String()
}

func channelOf(c string) string {
	if c == "" {
		return "text"
	}
	return c
}

// Errors returns the agent.error payloads.
func (r *Recorder) Errors() []*protocol.AgentError {
	return payloads[*protocol.AgentError](r.Events())
}

// Finished returns the agent.tool.finished payloads.
func (r *Recorder) Finished() []*protocol.ToolFinished {
	return payloads[*protocol.ToolFinished](r.Events())
}

func payloads[T any](evs []Event) []T {
	var out []T
	for _, e := range evs {
		if p, ok := e.Payload.(T); ok {
			out = append(out, p)
		}
	}
	return out
}

// WaitFor waits for an event of type typ emitted since the last WaitFor
// took one; it reports false when ctx ends first.
func (r *Recorder) WaitFor(ctx context.Context, typ string) bool {
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

// NextAsk waits for the next interaction request; it fails the test when
// ctx ends first.
func (r *Recorder) NextAsk(t testing.TB, ctx context.Context) *protocol.InteractionRequest {
	t.Helper()
	select {
	case ir := <-r.Asks:
		return ir
	case <-ctx.Done():
		t.Fatal("no interaction request came")
		return nil
	}
}

// CheckEvent checks an event an adapter emits the way the client will
// send it: an agent.* type other than those the client itself sends
// (agent.turn.started, agent.text.done), that encodes and then decodes
// strictly as a client's message.
func CheckEvent(typ string, payload any) error {
	if !strings.HasPrefix(typ, "agent.") || typ == protocol.TypeTextDone || typ == protocol.TypeTurnStarted {
		return fmt.Errorf("the adapter emitted %s", typ)
	}
	m := protocol.New(typ, payload)
	m.SessionID = "s1"
	data, err := protocol.Encode(m)
	if err == nil {
		_, err = protocol.DecodeFrom(protocol.RoleClient, data)
	}
	if err != nil {
		return fmt.Errorf("invalid %s event: %w", typ, err)
	}
	return nil
}

// LogBuffer keeps what a logger writes, for a failed test to print. It is
// safe for concurrent use.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String returns what was written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Logger returns a debug-level text logger that writes to l.
func (l *LogBuffer) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// TextTurn is a turn of plain text (escaped, no file references).
func TextTurn(text string) adapter.Turn {
	return turnOf(Request(text, protocol.InputText))
}

// Binary returns the path in environment variable env, or skips the test
// saying how to install it: the tests of real agents need their binaries.
func Binary(t testing.TB, env, install string) string {
	t.Helper()
	bin := os.Getenv(env)
	if bin == "" {
		t.Skip("set " + env + " to " + install)
	}
	return bin
}

// ProcessAlive reports whether pid runs and is no zombie (from /proc).
func ProcessAlive(pid int) bool {
	_, state, ok := stat(pid)
	return ok && state != "Z"
}

// Open opens a session of a with cfg, failing the test on an error; the
// session is closed at the test's cleanup.
func Open(t testing.TB, ctx context.Context, a adapter.Adapter, cfg adapter.SessionConfig) adapter.Session {
	t.Helper()
	s, err := a.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// SegmentTurn is turn id of segments, composed as the master composes a
// prompt and parsed as the client parses it.
func SegmentTurn(t testing.TB, id string, segs ...protocol.PromptSegment) adapter.Turn {
	t.Helper()
	text, refs, err := fileref.Compose(segs)
	if err != nil {
		t.Fatal(err)
	}
	req := &protocol.PromptRequest{PromptText: text, FileReferences: refs, InputType: protocol.InputText}
	return adapter.Turn{ID: id, Request: req, Prompt: fileref.Parse(text, refs)}
}

// TextSegment is a prompt segment of plain text.
func TextSegment(s string) protocol.PromptSegment {
	return protocol.PromptSegment{Kind: protocol.SegmentText, Text: s}
}

// FileSegment is a prompt segment picking the file at path, shown as
// display.
func FileSegment(path, display string) protocol.PromptSegment {
	return protocol.PromptSegment{Kind: protocol.SegmentFile, File: &protocol.PickedFile{Path: path, DisplayPath: display}}
}
