package claudecode

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/protocol"
)

// These tests run the adapter against the fake CLI (fakecli_test.go): real
// child processes and pipes, scripted stream lines.

func TestEchoTurnsShareOneProcess(t *testing.T) {
	t.Parallel()
	env := openFake(t, "echo", nil)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for i, prompt := range []string{"first", "second"} {
		rec := newRecorder(t)
		res, err := env.sess.Run(ctx, adaptertest.TextTurn(prompt), rec.emit)
		if err != nil || res.StopReason != "end_turn" || res.Text != "echo: "+prompt {
			t.Fatalf("turn %d: %+v, %v", i, res, err)
		}
		// Streamed as deltas, not repeated from the whole message.
		if got := rec.Text("text"); got != "echo: "+prompt {
			t.Errorf("turn %d: deltas %q", i, got)
		}
		usage := rec.OfType(protocol.TypeUsage)
		if len(usage) != 1 {
			t.Fatalf("turn %d: %d usage events", i, len(usage))
		}
		// The CLI reports a cumulative cost; each turn gets its own part.
		if u := usage[0].(*protocol.Usage); u.CostUSD != 0.25*float64(i+1)-0.25*float64(i) && u.CostUSD != 0.25*float64(i+1) {
			t.Errorf("turn %d: cost %v", i, u.CostUSD)
		} else if u.Model != "fake-model" || u.InputTokens != 10 || u.OutputTokens != 5 {
			t.Errorf("turn %d: usage %+v", i, u)
		}
	}
	if starts := fakeStarts(t, env.log); len(starts) != 1 {
		t.Fatalf("the CLI was started %d times, want once", len(starts))
	} else {
		args := strings.Join(starts[0], " ")
		for _, want := range []string{"-p", "--input-format stream-json", "--output-format stream-json", "--verbose",
			"--include-partial-messages", "--permission-prompt-tool stdio", "--permission-mode default"} {
			if !strings.Contains(args, want) {
				t.Errorf("args %q lack %q", args, want)
			}
		}
	}
	// The initialize request registers ferry's PreToolUse hook.
	var sawInit bool
	for _, e := range readFakeLog(t, env.log) {
		if strings.Contains(string(e.Got), `"subtype":"initialize"`) && strings.Contains(string(e.Got), `"PreToolUse"`) {
			sawInit = true
		}
	}
	if !sawInit {
		t.Error("no initialize request with the PreToolUse hook")
	}
}

func TestHugeLine(t *testing.T) {
	// Not parallel: streaming 64 MiB through a pipe is CPU-bound, and next
	// to other tests it can miss its time bound on a loaded machine.
	env := openFake(t, "huge", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*testTimeout)
	defer cancel()
	var total, pieces int
	maxPiece := 0
	okUTF8 := true
	emit := func(ctx context.Context, typ string, payload any) error {
		// Validating 64 MiB of events through the protocol would dominate
		// the test; the sizes and encodings are what matter here.
		if d, ok := payload.(*protocol.TextDelta); ok {
			total += len(d.Delta)
			pieces++
			maxPiece = max(maxPiece, len(d.Delta))
			okUTF8 = okUTF8 && utf8.ValidString(d.Delta)
		}
		return nil
	}
	res, err := env.sess.Run(ctx, adaptertest.TextTurn("big"), emit)
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("%+v, %v", res.StopReason, err)
	}
	if total != hugeText || !okUTF8 {
		t.Errorf("got %d bytes of text (valid UTF-8: %v), want %d", total, okUTF8, hugeText)
	}
	if maxPiece > maxDelta || pieces < hugeText/maxDelta {
		t.Errorf("%d pieces, the largest %d bytes", pieces, maxPiece)
	}
	if len(res.Text) > maxResultText+4 {
		t.Errorf("result text %d bytes", len(res.Text))
	}
}

func TestLineOverLimitIsSkipped(t *testing.T) {
	t.Parallel()
	env := openFake(t, "big", nil)
	env.ad.maxLine = 1 << 20 // the big line is over it
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	rec := newRecorder(t)
	res, err := env.sess.Run(ctx, adaptertest.TextTurn("big"), rec.emit)
	if err != nil || res.StopReason != "end_turn" || rec.Text("text") != "" {
		t.Fatalf("%+v, %v", res.StopReason, err)
	}
	if !strings.Contains(env.logs.String(), "over the size limit") {
		t.Error("the skipped line was not logged")
	}
}

func TestMalformedLinesAreSkipped(t *testing.T) {
	t.Parallel()
	env := openFake(t, "malformed", nil)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	rec := newRecorder(t)
	res, err := env.sess.Run(ctx, adaptertest.TextTurn("x"), rec.emit)
	if err != nil || res.StopReason != "end_turn" || res.Text != "ok" {
		t.Fatalf("%+v, %v", res, err)
	}
	if n := strings.Count(env.logs.String(), "malformed Claude Code stream line"); n != 6 {
		t.Errorf("%d malformed lines logged, want 6\n%s", n, env.logs.String())
	}
}

func TestCrashMidTurn(t *testing.T) {
	t.Parallel()
	env := openFake(t, "crash-once", nil)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	rec := newRecorder(t)
	res, err := env.sess.Run(ctx, adaptertest.TextTurn("x"), rec.emit)
	if err != nil || res.StopReason != "error" || res.Text != "partial" {
		t.Fatalf("%+v, %v", res, err)
	}
	errs := rec.Errors()
	if len(errs) != 1 || errs[0].Code != "agent_crashed" || strings.Contains(errs[0].Message, "fake") {
		t.Fatalf("errors %+v", errs)
	}
	if fin := rec.Finished(); len(fin) != 1 || fin[0].ToolUseID != "toolu_1" || fin[0].Status != protocol.ToolError {
		t.Errorf("open tool not finished: %+v", fin)
	}
	if !strings.Contains(env.logs.String(), "crashing on purpose") {
		t.Error("stderr was not logged")
	}
	// The next turn starts the CLI again, resuming the conversation.
	rec2 := newRecorder(t)
	res, err = env.sess.Run(ctx, adaptertest.TextTurn("again"), rec2.emit)
	if err != nil || res.Text != "back again" {
		t.Fatalf("%+v, %v", res, err)
	}
	starts := fakeStarts(t, env.log)
	if len(starts) != 2 || !slices.Contains(starts[1], "--resume="+fakeSessionID) {
		t.Errorf("starts %q", starts)
	}
}

func TestCancelKillsAHungCLI(t *testing.T) {
	oldWait, oldGrace := cancelWait, cancelGrace
	cancelGrace = 500 * time.Millisecond
	t.Cleanup(func() { cancelWait, cancelGrace = oldWait, oldGrace })
	env := openFake(t, "hang", nil)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	rec := newRecorder(t)
	turnCtx, stop := context.WithCancel(ctx)
	type out struct {
		res adapter.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := env.sess.Run(turnCtx, adaptertest.TextTurn("x"), rec.emit)
		done <- out{res, err}
	}()
	if !rec.WaitFor(ctx, protocol.TypeToolStarted) {
		t.Fatal("the turn did not start its tool")
	}
	env.sess.mu.Lock()
	p := env.sess.proc
	env.sess.mu.Unlock()
	stop()
	var o out
	select {
	case o = <-done:
	case <-ctx.Done():
		t.Fatal("Run did not return after cancel")
	}
	if o.res.StopReason != "cancelled" || o.err == nil {
		t.Fatalf("%+v, %v", o.res, o.err)
	}
	// Run returned before the process was killed: it does not wait for
	// the grace period.
	if !p.alive() {
		t.Error("the process was already gone when Run returned")
	}
	fin := rec.Finished()
	if len(fin) != 1 || fin[0].Status != protocol.ToolCancelled {
		t.Errorf("finished %+v", fin)
	}
	grand := 0
	for _, e := range readFakeLog(t, env.log) {
		if strings.HasPrefix(e.Note, "grandchild ") {
			grand = atoi(strings.TrimPrefix(e.Note, "grandchild "))
		}
	}
	if grand == 0 {
		t.Fatal("the fake started no grandchild")
	}
	// The hung CLI is killed after the grace, with its grandchild in a
	// session of its own.
	select {
	case <-p.exited:
	case <-ctx.Done():
		t.Fatal("the hung CLI was not killed")
	}
	if !waitGone(ctx, grand) {
		t.Errorf("grandchild %d outlived the kill", grand)
	}
	// The session is usable: the next turn waits for the settling and
	// starts a new process.
	rec2 := newRecorder(t)
	tctx, tcancel := context.WithTimeout(ctx, 5*time.Second)
	defer tcancel()
	go func() {
		// The hang scenario never ends a turn: cancel this one too, once
		// it got going, to see the new process serve it.
		rec2.WaitFor(tctx, protocol.TypeTextDelta)
		tcancel()
	}()
	res, _ := env.sess.Run(tctx, adaptertest.TextTurn("y"), rec2.emit)
	if rec2.Text("text") != "working" || res.StopReason != "cancelled" {
		t.Errorf("second turn: %q %+v\n%s", rec2.Text("text"), res, env.logs.String())
	}
	if n := len(fakeStarts(t, env.log)); n != 2 {
		t.Errorf("%d starts", n)
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func TestFlagsRestartTheProcess(t *testing.T) {
	t.Parallel()
	env := openFake(t, "echo", nil)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	turn := adaptertest.TextTurn("one")
	three := 3
	turn.Request.ConfigOverrides = &protocol.ConfigOverrides{
		MaxTurns: &three, AllowedTools: []string{"Read", "Bash(git diff:*)"}, DeniedTools: []string{"WebFetch"},
		JSONSchema: json.RawMessage(`{ "type": "object" }`),
	}
	for i, tr := range []adapter.Turn{turn, turn, adaptertest.TextTurn("plain")} {
		tr.ID = protocol.NewID()
		if _, err := env.sess.Run(ctx, tr, newRecorder(t).emit); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	starts := fakeStarts(t, env.log)
	if len(starts) != 2 {
		t.Fatalf("starts %q", starts)
	}
	first := strings.Join(starts[0], " ")
	for _, want := range []string{"--max-turns 3", "--allowedTools=Read,Bash(git diff:*)", "--disallowedTools=WebFetch", `--json-schema={"type":"object"}`} {
		if !strings.Contains(first, want) {
			t.Errorf("%q lacks %q", first, want)
		}
	}
	second := strings.Join(starts[1], " ")
	if strings.Contains(second, "--max-turns") || !strings.Contains(second, "--resume="+fakeSessionID) {
		t.Errorf("second start %q", second)
	}
}

func TestStateResumesAcrossAdapters(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := openFake(t, "echo", func(c *Config) { c.StateDir = state })
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if _, err := env.sess.Run(ctx, adaptertest.TextTurn("one"), newRecorder(t).emit); err != nil {
		t.Fatal(err)
	}
	if err := env.sess.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(state, "sessions", "sess-1.json"))
	if err != nil || !strings.Contains(string(b), fakeSessionID) {
		t.Fatalf("state %s, %v", b, err)
	}
	// A new adapter (a restarted ferry) on the same state directory.
	ad := New(Config{Command: os.Args[0], Env: env.ad.cfg.Env, StateDir: state, Logger: env.logs.Logger()})
	s, err := ad.Open(ctx, adapter.SessionConfig{SessionID: "sess-1", Workspace: protocol.Workspace{ID: "w", Name: "w", Path: env.ws}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Run(ctx, adaptertest.TextTurn("two"), newRecorder(t).emit); err != nil {
		t.Fatal(err)
	}
	starts := fakeStarts(t, env.log)
	if len(starts) != 2 || !slices.Contains(starts[1], "--resume="+fakeSessionID) {
		t.Errorf("starts %q", starts)
	}
	// Another workspace does not resume it.
	other := t.TempDir()
	s2, err := ad.Open(ctx, adapter.SessionConfig{SessionID: "sess-1", Workspace: protocol.Workspace{ID: "w2", Name: "w2", Path: other}})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.(*session).claudeID != "" {
		t.Error("a record of another workspace was resumed")
	}
}

func TestResumeOfAGoneConversation(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := openFake(t, "noresume", func(c *Config) { c.StateDir = state })
	// As if an earlier ferry had recorded a conversation the CLI no longer has.
	if err := env.ad.store.save(record{FerrySessionID: "sess-1", ClaudeSessionID: "gone-id", Workspace: env.ws}); err != nil {
		t.Fatal(err)
	}
	env.sess.claudeID = "gone-id"
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	rec := newRecorder(t)
	res, err := env.sess.Run(ctx, adaptertest.TextTurn("hello"), rec.emit)
	if err != nil || res.Text != "echo: hello" {
		t.Fatalf("%+v, %v", res, err)
	}
	if errs := rec.Errors(); len(errs) != 1 || errs[0].Code != "session_not_resumed" {
		t.Errorf("errors %+v", errs)
	}
	starts := fakeStarts(t, env.log)
	if len(starts) != 2 || !slices.Contains(starts[0], "--resume=gone-id") || slices.ContainsFunc(starts[1], func(a string) bool { return strings.HasPrefix(a, "--resume") }) {
		t.Errorf("starts %q", starts)
	}
	// The new conversation's id replaced the gone one.
	if r, ok, _ := env.ad.store.load("sess-1"); !ok || r.ClaudeSessionID != fakeSessionID {
		t.Errorf("record %+v %v", r, ok)
	}
}

func TestPermissionAnswers(t *testing.T) {
	t.Parallel()
	env := openFake(t, "ask", nil)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cases := []struct {
		name   string
		answer *protocol.InteractionResponse
		want   string
		status string
	}{
		{"allow once", &protocol.InteractionResponse{SelectedValue: protocol.Single(protocol.AllowOnce)}, "allow", protocol.ToolOK},
		{"allow always", &protocol.InteractionResponse{SelectedValue: protocol.Single(protocol.AllowAlways)}, `allow+always:`, protocol.ToolOK},
		{"deny", &protocol.InteractionResponse{SelectedValue: protocol.Single(protocol.Deny)}, "deny", protocol.ToolDenied},
		{"timeout", nil, "deny", protocol.ToolDenied},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := newRecorder(t)
			type out struct {
				res adapter.Result
				err error
			}
			done := make(chan out, 1)
			go func() {
				res, err := env.sess.Run(ctx, adaptertest.TextTurn("target"), rec.emit)
				done <- out{res, err}
			}()
			ir := rec.nextAsk(ctx)
			if ir.Kind != protocol.InteractionPermission || ir.ToolName != "Bash" || !strings.Contains(ir.Title, "make target") {
				t.Errorf("interaction %+v", ir)
			}
			// It advertises what a timeout does (the case "timeout": deny).
			if ir.DefaultValue != protocol.Deny {
				t.Errorf("default_value %q, want deny: a timeout denies", ir.DefaultValue)
			}
			if !slices.ContainsFunc(ir.Options, func(o protocol.Option) bool {
				return o.Value == protocol.AllowAlways && strings.Contains(o.Description, "Bash(make:*)")
			}) {
				t.Errorf("options %+v", ir.Options)
			}
			// The interaction follows its tool's start.
			evs := rec.Events()
			if evs[len(evs)-2].Type != protocol.TypeToolStarted {
				t.Errorf("events %v", evs)
			}
			if err := env.sess.Answer(ir.InteractionID, c.answer); err != nil {
				t.Fatal(err)
			}
			if err := env.sess.Answer(ir.InteractionID, c.answer); !errors.Is(err, adapter.ErrUnknownInteraction) {
				t.Errorf("a second answer: %v", err)
			}
			o := <-done
			if o.err != nil || !strings.HasPrefix(o.res.Text, c.want) {
				t.Fatalf("%+v, %v", o.res, o.err)
			}
			if c.name == "allow always" && !strings.Contains(o.res.Text, `"destination":"session"`) {
				t.Errorf("allow always kept the suggestion's destination: %s", o.res.Text)
			}
			if fin := rec.Finished(); len(fin) != 1 || fin[0].Status != c.status {
				t.Errorf("finished %+v", fin)
			}
		})
	}
	// In plan mode the hook refuses the call before anyone is asked.
	if err := env.sess.SetMode(protocol.ModePlan, nil); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder(t)
	res, err := env.sess.Run(ctx, adaptertest.TextTurn("target"), rec.emit)
	if err != nil || res.Text != "hook-deny" || len(rec.OfType(protocol.TypeInteractionRequest)) != 0 {
		t.Fatalf("%+v, %v", res, err)
	}
	if fin := rec.Finished(); len(fin) != 1 || fin[0].Status != protocol.ToolDenied {
		t.Errorf("finished %+v", fin)
	}
	var sawMode bool
	for _, e := range readFakeLog(t, env.log) {
		sawMode = sawMode || strings.Contains(string(e.Got), `"set_permission_mode"`) && strings.Contains(string(e.Got), `"plan"`)
	}
	if !sawMode {
		t.Error("no set_permission_mode request")
	}
	if err := env.sess.SetMode("yolo", nil); err == nil {
		t.Error("an unknown mode was accepted")
	}
}

func TestOpenWithoutCLI(t *testing.T) {
	t.Parallel()
	ad := New(Config{Command: filepath.Join(t.TempDir(), "no-claude")})
	_, err := ad.Open(context.Background(), adapter.SessionConfig{SessionID: "s", Workspace: protocol.Workspace{ID: "w", Name: "w", Path: t.TempDir()}})
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Code != protocol.CodeUnsupported || strings.Contains(pe.Message, "no-claude") {
		t.Fatalf("%v", err)
	}
}

// Without the CLI the capability says the agent cannot start and how to
// make it, for the command the user ran; with it, nothing.
func TestUnavailableWithoutCLI(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"ferry up", "ferry connect"} {
		c := New(Config{Command: filepath.Join(t.TempDir(), "no-claude"), HostCommand: cmd}).Capability()
		if !strings.Contains(c.Unavailable, "npm install") || !strings.HasSuffix(c.Unavailable, "restart "+cmd) || strings.Contains(c.Unavailable, "no-claude") {
			t.Fatalf("%s: unavailable %q", cmd, c.Unavailable)
		}
		if !c.DenyNote {
			t.Fatal("Claude Code carries a denial's message: deny_note")
		}
	}
	if c := New(Config{Command: "sh"}).Capability(); c.Unavailable != "" {
		t.Fatalf("an installed command is unavailable: %q", c.Unavailable)
	}
}

func TestCapability(t *testing.T) {
	t.Parallel()
	c := New(Config{}).Capability()
	if c.ID != ID || c.FileTokens != "mention" || !c.Cancel || !c.Compact || !slices.Contains(c.Modes, protocol.ModeReview) {
		t.Errorf("%+v", c)
	}
}

func TestCloseStopsTheProcess(t *testing.T) {
	t.Parallel()
	env := openFake(t, "echo", nil)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if _, err := env.sess.Run(ctx, adaptertest.TextTurn("x"), newRecorder(t).emit); err != nil {
		t.Fatal(err)
	}
	env.sess.mu.Lock()
	p := env.sess.proc
	env.sess.mu.Unlock()
	if err := env.sess.Close(); err != nil {
		t.Fatal(err)
	}
	if p.alive() {
		t.Error("the process outlived Close")
	}
	if _, err := env.sess.Run(ctx, adaptertest.TextTurn("y"), newRecorder(t).emit); err == nil {
		t.Error("Run after Close worked")
	}
}

// TestNoGoroutineLeaks runs turns of every kind, closes the session, and
// checks that every goroutine the session started has ended.
func TestNoGoroutineLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		env := openFake(t, "ask", nil)
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		// One answered permission.
		rec := newRecorder(t)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = env.sess.Run(ctx, adaptertest.TextTurn("a"), rec.emit)
		}()
		ir := rec.nextAsk(ctx)
		_ = env.sess.Answer(ir.InteractionID, &protocol.InteractionResponse{SelectedValue: protocol.Single(protocol.AllowOnce)})
		<-done
		// One cancelled while it waits for an answer.
		rec = newRecorder(t)
		tctx, stop := context.WithCancel(ctx)
		done = make(chan struct{})
		go func() {
			defer close(done)
			_, _ = env.sess.Run(tctx, adaptertest.TextTurn("b"), rec.emit)
		}()
		rec.nextAsk(ctx)
		stop()
		<-done
		if err := env.sess.Close(); err != nil {
			t.Error(err)
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines before, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

// TestPermissionModeCheckedAfterAnswer: the user switches to plan mode
// while the prompt is open, then allows; the mode is checked again and the
// CLI is told deny.
func TestPermissionModeCheckedAfterAnswer(t *testing.T) {
	t.Parallel()
	env := openFake(t, "ask", nil)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	rec := newRecorder(t)
	type out struct {
		res adapter.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := env.sess.Run(ctx, adaptertest.TextTurn("target"), rec.emit)
		done <- out{res, err}
	}()
	ir := rec.nextAsk(ctx)
	if err := env.sess.SetMode(protocol.ModePlan, nil); err != nil {
		t.Fatal(err)
	}
	if err := env.sess.Answer(ir.InteractionID, &protocol.InteractionResponse{SelectedValue: protocol.Single(protocol.AllowOnce)}); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.err != nil || o.res.Text != "deny" {
		t.Fatalf("%+v, %v; want deny after the switch to plan mode", o.res, o.err)
	}
	if fin := rec.Finished(); len(fin) != 1 || fin[0].Status != protocol.ToolDenied {
		t.Errorf("finished %+v", fin)
	}
}

// A rule no command line can carry refuses the prompt, naming it, before
// the CLI starts: dropping it would ignore a denied tool.
func TestRuleWithLineBreakRefused(t *testing.T) {
	t.Parallel()
	env := openFake(t, "echo", nil)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	turn := adaptertest.TextTurn("go")
	turn.Request.ConfigOverrides = &protocol.ConfigOverrides{DeniedTools: []string{"Read", "Bash(rm:*)\nWrite"}}
	rec := newRecorder(t)
	res, err := env.sess.Run(ctx, turn, rec.emit)
	if err != nil || res.StopReason != "error" {
		t.Fatalf("%+v, %v", res, err)
	}
	if errs := rec.Errors(); len(errs) != 1 || errs[0].Code != "bad_request" || !strings.Contains(errs[0].Message, "config_overrides.denied_tools[1]") {
		t.Fatalf("errors %+v", errs)
	}
	if _, err := os.Stat(env.log); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the CLI was started (its log: %v)", err)
	}
}
