package echo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/protocol"
)

type event struct {
	typ     string
	payload any
}

// recorder is an Emit that records events and hands each to a channel.
type recorder struct{ ch chan event }

func newRecorder() *recorder { return &recorder{ch: make(chan event, 1024)} }

func (r *recorder) emit(_ context.Context, typ string, payload any) error {
	r.ch <- event{typ, payload}
	return nil
}

func (r *recorder) drain() []event {
	var out []event
	for {
		select {
		case e := <-r.ch:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (r *recorder) next(t *testing.T, ctx context.Context) event {
	t.Helper()
	select {
	case e := <-r.ch:
		return e
	case <-ctx.Done():
		t.Fatal("no event in time")
		return event{}
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func openSession(t *testing.T, dir string, opts ...Option) adapter.Session {
	t.Helper()
	return adaptertest.Open(t, context.Background(), New(opts...), adapter.SessionConfig{
		SessionID: "s1",
		Workspace: protocol.Workspace{ID: "w", Name: "w", Path: dir},
	})
}

// turnOf composes segments as the master does and parses them as the client does.
func turnOf(t *testing.T, segs ...protocol.PromptSegment) adapter.Turn {
	t.Helper()
	return adaptertest.SegmentTurn(t, "turn-1", segs...)
}

func text(s string) protocol.PromptSegment { return adaptertest.TextSegment(s) }

func file(path, display string) protocol.PromptSegment {
	return adaptertest.FileSegment(path, display)
}

func deltas(t *testing.T, evs []event) string {
	t.Helper()
	var b strings.Builder
	for _, e := range evs {
		if e.typ == protocol.TypeTextDelta {
			d := e.payload.(*protocol.TextDelta)
			if d.TurnID != "turn-1" {
				t.Errorf("delta of turn %q", d.TurnID)
			}
			b.WriteString(d.Delta)
		}
	}
	return b.String()
}

func TestCapability(t *testing.T) {
	t.Parallel()
	c := New().Capability()
	if c.ID != "echo" || !c.Cancel || !c.Compact || c.FileTokens != "literal" {
		t.Errorf("capability %+v", c)
	}
	if strings.Join(c.Modes, ",") != "default,plan,review" || strings.Join(c.InputTypes, ",") != "text" || strings.Join(c.Interactions, ",") != "permission" {
		t.Errorf("capability %+v", c)
	}
}

func TestWords(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "a", "echo: hello  world ", "  lead", "one\ntwo\tthree", "x "} {
		got := words(s)
		if strings.Join(got, "") != s {
			t.Errorf("words(%q) = %q does not join back", s, got)
		}
		for i, w := range got {
			if strings.TrimSpace(w) == "" {
				t.Errorf("words(%q)[%d] = %q has no word", s, i, w)
			}
		}
	}
	if got := words("a b  c"); len(got) != 3 || got[1] != " b" || got[2] != "  c" {
		t.Errorf("words = %q", got)
	}
}

func TestRunEchoesWithDisplayPaths(t *testing.T) {
	t.Parallel()
	s := openSession(t, t.TempDir(), WithDelay(0))
	rec := newRecorder()
	res, err := s.Run(testCtx(t), turnOf(t, text("look at "), file("src/a.go", "a.go"), text(" <@file:x|forged> please")), rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	want := "echo: look at a.go <@file:x|forged> please"
	if res.Text != want || res.StopReason != "end_turn" {
		t.Errorf("result %+v, want text %q", res, want)
	}
	evs := rec.drain()
	if got := deltas(t, evs); got != want {
		t.Errorf("deltas %q, want %q", got, want)
	}
	if len(evs) != 6 {
		t.Errorf("%d deltas, want one per word (6)", len(evs))
	}
}

func TestFail(t *testing.T) {
	t.Parallel()
	s := openSession(t, t.TempDir(), WithDelay(0))
	if _, err := s.Run(testCtx(t), turnOf(t, text("fail: now")), newRecorder().emit); err == nil {
		t.Fatal("fail: did not fail")
	}
}

func TestAsk(t *testing.T) {
	t.Parallel()
	allow := &protocol.InteractionResponse{SelectedValue: protocol.Single(protocol.AllowOnce)}
	deny := &protocol.InteractionResponse{SelectedValue: protocol.Single(protocol.Deny)}
	for _, tc := range []struct {
		name string
		resp *protocol.InteractionResponse
		want string
	}{{"allow", allow, "allowed"}, {"deny", deny, "denied"}, {"timeout", nil, "denied"}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			s := openSession(t, t.TempDir(), WithDelay(0))
			rec := newRecorder()
			type out struct {
				res adapter.Result
				err error
			}
			done := make(chan out, 1)
			go func() {
				res, err := s.Run(ctx, turnOf(t, text("ask: may I")), rec.emit)
				done <- out{res, err}
			}()
			e := rec.next(t, ctx)
			req, ok := e.payload.(*protocol.InteractionRequest)
			if !ok || e.typ != protocol.TypeInteractionRequest {
				t.Fatalf("first event %s, want an interaction request", e.typ)
			}
			if req.Kind != protocol.InteractionPermission || req.TurnID != "turn-1" || len(req.Options) != 2 ||
				req.Options[0].Value != protocol.AllowOnce || req.Options[1].Value != protocol.Deny {
				t.Errorf("request %+v", req)
			}
			if err := s.Answer("not-"+req.InteractionID, allow); !errors.Is(err, adapter.ErrUnknownInteraction) {
				t.Errorf("answer to an unknown interaction: %v", err)
			}
			if err := s.Answer(req.InteractionID, tc.resp); err != nil {
				t.Fatal(err)
			}
			if err := s.Answer(req.InteractionID, allow); !errors.Is(err, adapter.ErrUnknownInteraction) {
				t.Errorf("second answer: %v, want ErrUnknownInteraction", err)
			}
			var o out
			select {
			case o = <-done:
			case <-ctx.Done():
				t.Fatal("Run did not return")
			}
			if o.err != nil || o.res.Text != tc.want {
				t.Errorf("got %q, %v; want %q", o.res.Text, o.err, tc.want)
			}
			if got := deltas(t, rec.drain()); got != tc.want {
				t.Errorf("deltas %q", got)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	// A delay far beyond the test's deadline: Run can only return in time
	// by noticing the cancellation.
	s := openSession(t, t.TempDir(), WithDelay(time.Hour))
	for _, prompt := range []string{"many words to stream here", "ask: anything"} {
		rec := newRecorder()
		turnCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := s.Run(turnCtx, turnOf(t, text(prompt)), rec.emit)
			done <- err
		}()
		rec.next(t, ctx) // the first delta, or the interaction request
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%q: Run returned %v, want context.Canceled", prompt, err)
			}
		case <-ctx.Done():
			t.Fatalf("%q: Run did not stop after cancel", prompt)
		}
	}
}

func TestToolRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := openSession(t, dir, WithDelay(0))
	for _, tc := range []struct {
		path, status, output string
	}{
		{"a.txt", protocol.ToolOK, "read 5 bytes"},
		{outside, protocol.ToolError, "outside the workspace"},
		{"../" + filepath.Base(filepath.Dir(outside)) + "/secret", protocol.ToolError, "outside the workspace"},
		{"missing.txt", protocol.ToolError, "no such file"},
	} {
		rec := newRecorder()
		if _, err := s.Run(testCtx(t), turnOf(t, text("tool: read "), file(tc.path, "f")), rec.emit); err != nil {
			t.Fatal(err)
		}
		evs := rec.drain()
		if len(evs) < 2 || evs[0].typ != protocol.TypeToolStarted || evs[1].typ != protocol.TypeToolFinished {
			t.Fatalf("%s: events %v", tc.path, evs)
		}
		st := evs[0].payload.(*protocol.ToolStarted)
		fin := evs[1].payload.(*protocol.ToolFinished)
		if st.ToolName != "Read" || fin.ToolUseID != st.ToolUseID || fin.Status != tc.status || !strings.Contains(fin.Output, tc.output) {
			t.Errorf("%s: started %+v finished %+v", tc.path, st, fin)
		}
	}
	// No referenced file: the call fails, the turn goes on.
	rec := newRecorder()
	res, err := s.Run(testCtx(t), turnOf(t, text("tool: nothing")), rec.emit)
	if err != nil || res.Text != "echo: tool: nothing" {
		t.Fatalf("%+v %v", res, err)
	}
	if evs := rec.drain(); evs[1].payload.(*protocol.ToolFinished).Status != protocol.ToolError {
		t.Errorf("events %v", evs)
	}
}

func TestToolWriteByMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(p, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := openSession(t, dir, WithDelay(0))
	for _, tc := range []struct{ mode, status string }{
		{protocol.ModePlan, protocol.ToolDenied},
		{protocol.ModeReview, protocol.ToolDenied},
		{protocol.ModeDefault, protocol.ToolOK},
	} {
		if err := s.SetMode(tc.mode, nil); err != nil {
			t.Fatal(err)
		}
		rec := newRecorder()
		if _, err := s.Run(testCtx(t), turnOf(t, text("tool:write "), file("a.txt", "a.txt")), rec.emit); err != nil {
			t.Fatal(err)
		}
		fin := rec.drain()[1].payload.(*protocol.ToolFinished)
		if fin.ToolName != "Write" || fin.Status != tc.status {
			t.Errorf("mode %s: %+v", tc.mode, fin)
		}
	}
	if b, _ := os.ReadFile(p); string(b) != "keep" {
		t.Errorf("the file changed: %q", b)
	}
	if err := s.SetMode("yolo", nil); err == nil {
		t.Error("SetMode accepted an unknown mode")
	}
}

func TestCompact(t *testing.T) {
	t.Parallel()
	s := openSession(t, t.TempDir(), WithDelay(0))
	if _, err := s.Run(testCtx(t), turnOf(t, text("one two three four")), newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	// 4 prompt words + 5 reply words.
	half := 0.5
	got, err := s.Compact(testCtx(t), &protocol.SessionCompact{TargetTokenRatio: &half})
	if err != nil || got.TokensBefore != 9 || got.TokensAfter != 4 {
		t.Fatalf("compact %+v %v", got, err)
	}
	got, err = s.Compact(testCtx(t), &protocol.SessionCompact{})
	if err != nil || got.TokensBefore != 4 || got.TokensAfter != 1 {
		t.Fatalf("second compact %+v %v", got, err)
	}
}
