package builtin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/internal/adapter/builtin"
	"github.com/ferry-dev/ferry/internal/agent/agenttest"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/llm/provider"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/protocol"
	"github.com/ferry-dev/ferry/protocol/fileref"
)

// These tests drive the adapter's sessions with the real providers against
// the fake provider server, as the client does: Run with an Emit, Answer,
// SetMode, Compact, cancel through the turn's context.

var formats = []fake.Format{fake.Anthropic, fake.OpenAI}

func forEachFormat(t *testing.T, fn func(t *testing.T, f fake.Format, srv *fake.Server)) {
	for _, f := range formats {
		t.Run(string(f), func(t *testing.T) { fn(t, f, fake.New(t)) })
	}
}

// open opens a session on a fresh workspace against srv.
func open(t *testing.T, srv *fake.Server, f fake.Format, mut func(*builtin.Config)) (*builtin.Session, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := builtin.Config{
		Getenv:   func(string) string { return "" },
		Provider: provider.Config{Provider: string(f), Model: "test-model", BaseURL: srv.BaseURL(f), APIKey: "test-key"},
	}
	if mut != nil {
		mut(&cfg)
	}
	s, err := builtin.New(cfg).Open(context.Background(), adapter.SessionConfig{SessionID: protocol.NewID(), Workspace: protocol.Workspace{ID: "w", Name: "w", Path: dir}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s.(*builtin.Session), dir
}

// recorder is the Emit of a turn: adaptertest's recorder.
type recorder struct{ *adaptertest.Recorder }

func newRecorder() *recorder { return &recorder{adaptertest.NewRecorder()} }

func (r *recorder) emit(ctx context.Context, typ string, payload any) error {
	return r.Emit(ctx, typ, payload)
}

// waitFor waits for an event of type typ, boundedly.
func (r *recorder) waitFor(t *testing.T, ctx context.Context, typ string) {
	t.Helper()
	if !r.WaitFor(ctx, typ) {
		t.Fatalf("no %s event", typ)
	}
}

func turn(text string) adapter.Turn {
	req := &protocol.PromptRequest{PromptText: fileref.Escape(text), InputType: protocol.InputText}
	return adapter.Turn{ID: protocol.NewID(), Request: req, Prompt: fileref.Parse(req.PromptText, nil)}
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func write(path, content string) fake.Reply {
	return fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Write", Input: map[string]any{"file_path": path, "content": content}}}}
}

func TestCapability(t *testing.T) {
	t.Parallel()
	c := builtin.New(builtin.Config{}).Capability()
	if c.ID != "builtin" || c.FileTokens != "file_list" || !c.Cancel || !c.Compact || len(c.InputTypes) != 4 || len(c.Modes) != 3 ||
		strings.Join(c.Tools, ",") != "Read,Write,Edit,MultiEdit,NotebookEdit,Glob,Grep,Bash,WebFetch,TodoWrite,Task" {
		t.Fatalf("%+v", c)
	}
}

func TestOpenWithoutProvider(t *testing.T) {
	t.Parallel()
	_, err := builtin.New(builtin.Config{Getenv: func(string) string { return "" }}).Open(context.Background(),
		adapter.SessionConfig{SessionID: "s", Workspace: protocol.Workspace{ID: "w", Name: "w", Path: t.TempDir()}})
	// A coded error the client passes to the UI as is, saying what to set.
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Code != protocol.CodeUnsupported || !strings.Contains(pe.Message, "ANTHROPIC_API_KEY") {
		t.Fatalf("err %v", err)
	}
}

func TestPermissionInteractions(t *testing.T) {
	t.Parallel()
	type answer struct {
		value string // "" is a timeout
	}
	cases := []struct {
		name    string
		answers []answer
		script  []fake.Reply
		asks    int
		content string
		status  string
	}{
		{"allow once", []answer{{protocol.AllowOnce}}, []fake.Reply{write("f.txt", "one"), {Text: []string{"ok"}}}, 1, "one", "ok"},
		{"deny", []answer{{protocol.Deny}}, []fake.Reply{write("f.txt", "one"), {Text: []string{"ok"}}}, 1, "", "denied"},
		{"timeout", []answer{{""}}, []fake.Reply{write("f.txt", "one"), {Text: []string{"ok"}}}, 1, "", "denied"},
		{"allow always", []answer{{protocol.AllowAlways}}, []fake.Reply{
			write("f.txt", "one"),
			{ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "f.txt"}}}},
			write("f.txt", "two"), // not asked again
			{Text: []string{"ok"}},
		}, 1, "two", "ok,ok,ok"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server) {
				s, dir := open(t, srv, f, nil)
				srv.Script(tc.script...)
				rec := newRecorder()
				ctx := testCtx(t)
				go func() {
					for _, a := range tc.answers {
						select {
						case ir := <-rec.Asks:
							var resp *protocol.InteractionResponse
							if a.value != "" {
								resp = &protocol.InteractionResponse{InteractionID: ir.InteractionID, SelectedValue: protocol.Single(a.value)}
							}
							if err := s.Answer(ir.InteractionID, resp); err != nil {
								t.Error(err)
							}
						case <-ctx.Done():
							return
						}
					}
				}()
				res, err := s.Run(ctx, turn("write f.txt"), rec.emit)
				if err != nil || res.StopReason != "end_turn" {
					t.Fatalf("%+v %v", res, err)
				}
				if n := rec.Count(protocol.TypeInteractionRequest); n != tc.asks {
					t.Fatalf("asked %d times", n)
				}
				got, _ := os.ReadFile(filepath.Join(dir, "f.txt"))
				if string(got) != tc.content {
					t.Fatalf("file %q", got)
				}
				var st []string
				for _, fin := range rec.Finished() {
					st = append(st, fin.Status)
				}
				if strings.Join(st, ",") != tc.status {
					t.Fatalf("statuses %v", st)
				}
				if tc.status == "denied" {
					r := agenttest.ToolResults(srv.ModelRequests()[1])
					if len(r) != 1 || !strings.Contains(r[0].Text, "denied") {
						t.Fatalf("the model was not told: %+v", r)
					}
				}
				if err := s.Answer("no-such-id", nil); !errors.Is(err, adapter.ErrUnknownInteraction) {
					t.Fatalf("answer to nothing: %v", err)
				}
			})
		})
	}
}

func TestPermissionRequestCarriesDiff(t *testing.T) {
	t.Parallel()
	srv := fake.New(t)
	s, dir := open(t, srv, fake.Anthropic, nil)
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\ntwo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv.Script(
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "a.txt"}}}},
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": "a.txt", "old_string": "two", "new_string": "2"}}}},
		fake.Reply{Text: []string{"ok"}},
	)
	rec := newRecorder()
	ctx := testCtx(t)
	go func() {
		select {
		case ir := <-rec.Asks:
			_ = s.Answer(ir.InteractionID, &protocol.InteractionResponse{InteractionID: ir.InteractionID, SelectedValue: protocol.Single(protocol.AllowOnce)})
		case <-ctx.Done():
		}
	}()
	if _, err := s.Run(ctx, turn("edit"), rec.emit); err != nil {
		t.Fatal(err)
	}
	var ir *protocol.InteractionRequest
	for _, e := range rec.Events() {
		if p, ok := e.Payload.(*protocol.InteractionRequest); ok {
			ir = p
		}
	}
	if ir == nil || ir.Diff == nil || ir.Diff.Path != "a.txt" || ir.ToolName != "Edit" || !strings.Contains(string(ir.ToolInput), "old_string") {
		t.Fatalf("request %+v", ir)
	}
	var ops []string
	for _, h := range ir.Diff.Hunks {
		for _, l := range h.Lines {
			ops = append(ops, l.Op+":"+l.Text)
		}
	}
	if !strings.Contains(strings.Join(ops, " "), "delete:two add:2") {
		t.Fatalf("diff %v", ops)
	}
}

func TestCancelDuringStreaming(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server) {
		s, _ := open(t, srv, f, nil)
		srv.Script(fake.Reply{Text: []string{"thinking about it"}, Hold: true}, fake.Reply{Text: []string{"fresh answer"}})
		rec := newRecorder()
		ctx, cancel := context.WithCancel(testCtx(t))
		errc := make(chan error, 1)
		go func() {
			_, err := s.Run(ctx, turn("long answer"), rec.emit)
			errc <- err
		}()
		rec.waitFor(t, testCtx(t), protocol.TypeTextDelta)
		cancel()
		select {
		case err := <-errc:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err %v", err)
			}
		case <-time.After(10 * time.Second): // a bound, not a timing assertion
			t.Fatal("Run did not return after cancel")
		}
		// The next turn is valid for the provider (the fake rejects
		// malformed histories) and sees what was cut.
		res, err := s.Run(testCtx(t), turn("again"), newRecorder().emit)
		if err != nil || res.Text != "fresh answer" {
			t.Fatalf("%+v %v", res, err)
		}
		msgs := agenttest.MessagesJSON(srv.ModelRequests()[1])
		if !strings.Contains(msgs, "thinking about it") || !strings.Contains(msgs, "cancelled by the user") {
			t.Fatalf("history %s", msgs)
		}
	})
}

// alive reports whether pid is a live process (a zombie is dead).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc: trust kill
	}
	// The state follows the command name in parentheses.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

func TestCancelDuringLongBash(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server) {
		s, dir := open(t, srv, f, func(c *builtin.Config) {
			c.Rules = permission.Rules{Allow: []permission.Rule{{Tool: "Bash"}}}
		})
		srv.Script(
			fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Bash", Input: map[string]any{"command": "sleep 30 & echo $! > sleep.pid; echo started; wait"}}}},
			fake.Reply{Text: []string{"after cancel"}},
		)
		rec := newRecorder()
		ctx, cancel := context.WithCancel(testCtx(t))
		errc := make(chan error, 1)
		go func() {
			_, err := s.Run(ctx, turn("sleep"), rec.emit)
			errc <- err
		}()
		// The command's output streams as agent.tool.updated; "started"
		// comes after the pid file is written.
		wctx := testCtx(t)
		rec.waitFor(t, wctx, protocol.TypeToolUpdated)
		b, err := os.ReadFile(filepath.Join(dir, "sleep.pid"))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		if !alive(pid) {
			t.Fatalf("sleep %d is not running", pid)
		}
		cancel()
		select {
		case err := <-errc:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after cancel")
		}
		for alive(pid) {
			select {
			case <-wctx.Done():
				t.Fatalf("sleep %d survived the cancel", pid)
			case <-time.After(10 * time.Millisecond):
			}
		}
		if fin := rec.Finished(); len(fin) != 1 || fin[0].Status != protocol.ToolCancelled {
			t.Fatalf("finished %+v", fin)
		}
		// The cancelled call got a result: the next turn is valid.
		res, err := s.Run(testCtx(t), turn("go on"), newRecorder().emit)
		if err != nil || res.Text != "after cancel" {
			t.Fatalf("%+v %v", res, err)
		}
		r := agenttest.ToolResults(srv.ModelRequests()[1])
		if len(r) != 1 || !strings.Contains(r[0].Text, "Cancelled by the user") {
			t.Fatalf("results %+v", r)
		}
	})
}

func TestCompaction(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server) {
		s, _ := open(t, srv, f, nil)
		text := func(marker string, n int) string {
			return marker + " " + strings.Repeat("lorem ipsum dolor sit amet ", n)
		}
		for i, tc := range []struct {
			marker string
			n      int
		}{{"FIRST-TURN", 200}, {"SECOND-TURN", 200}, {"THIRD-TURN", 20}} {
			srv.Script(fake.Reply{Text: []string{text(tc.marker+"-ANSWER", tc.n)}})
			if _, err := s.Run(testCtx(t), turn(text(tc.marker, tc.n)), newRecorder().emit); err != nil {
				t.Fatalf("turn %d: %v", i, err)
			}
		}
		// The summary is as long as the agent asks for: the size after
		// then shows whether the agent aims at the ratio.
		asked := regexp.MustCompile(`at most about (\d+) words`)
		srv.Route(func(r fake.Request) (fake.Reply, bool) {
			m := asked.FindStringSubmatch(agenttest.LastUserText(r))
			if m == nil {
				return fake.Reply{}, false
			}
			n, _ := strconv.Atoi(m[1])
			return fake.Reply{Text: []string{"SUMMARY:" + strings.Repeat(" word", n)}}, true
		})
		ratio := 0.4
		done, err := s.Compact(testCtx(t), &protocol.SessionCompact{Instruction: "keep the markers", TargetTokenRatio: &ratio})
		if err != nil {
			t.Fatal(err)
		}
		target := ratio * float64(done.TokensBefore)
		if done.TokensBefore < 2000 || float64(done.TokensAfter) > 1.1*target || float64(done.TokensAfter) < 0.5*target {
			t.Fatalf("before %d after %d: not about the ratio %.1f", done.TokensBefore, done.TokensAfter, ratio)
		}
		summaryReq := srv.ModelRequests()[3]
		if last := agenttest.LastUserText(summaryReq); !strings.Contains(last, "keep the markers") {
			t.Fatalf("the instruction was not passed: %q", last)
		}
		srv.Route(nil)
		srv.Script(fake.Reply{Text: []string{"still here"}})
		res, err := s.Run(testCtx(t), turn("and now?"), newRecorder().emit)
		if err != nil || res.Text != "still here" {
			t.Fatalf("%+v %v", res, err)
		}
		after := srv.ModelRequests()[4]
		msgs := agenttest.MessagesJSON(after)
		if !strings.Contains(msgs, "SUMMARY: word") || strings.Contains(msgs, "FIRST-TURN") || strings.Contains(msgs, "SECOND-TURN") ||
			!strings.Contains(msgs, "THIRD-TURN-ANSWER") || !strings.Contains(agenttest.LastUserText(after), "and now?") {
			t.Fatalf("history after compaction: %s", msgs)
		}
		if roles := strings.Join(agenttest.Roles(after), ","); roles != "user,assistant,user" {
			t.Fatalf("roles %s", roles)
		}
	})
}

func TestModeSwitch(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server) {
		s, dir := open(t, srv, f, func(c *builtin.Config) {
			c.Rules = permission.Rules{Allow: []permission.Rule{{Tool: "Write"}}}
		})
		srv.Script(write("a.txt", "a"), fake.Reply{Text: []string{"ok"}})
		if _, err := s.Run(testCtx(t), turn("write a"), newRecorder().emit); err != nil {
			t.Fatal(err)
		}
		if err := s.SetMode(protocol.ModePlan, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.SetMode("yolo", nil); err == nil {
			t.Fatal("an unknown mode was accepted")
		}
		srv.Script(write("b.txt", "b"), fake.Reply{Text: []string{"ok"}})
		rec := newRecorder()
		if _, err := s.Run(testCtx(t), turn("write b"), rec.emit); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "a.txt")); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "b.txt")); err == nil {
			t.Fatal("plan mode wrote b.txt")
		}
		if fin := rec.Finished(); len(fin) != 1 || fin[0].Status != protocol.ToolDenied {
			t.Fatalf("finished %+v", fin)
		}
		if sys := srv.ModelRequests()[2].System(); !strings.Contains(sys, "Mode: plan") {
			t.Fatalf("system %q", sys)
		}
	})
}

func TestProviderErrorEndsTurnWithOneCodedError(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server) {
		s, _ := open(t, srv, f, nil)
		srv.Script(fake.Reply{Fail: &fake.Failure{Status: 429, RetryAfter: "120"}})
		rec := newRecorder()
		res, err := s.Run(testCtx(t), turn("hi"), rec.emit)
		if err != nil || res.StopReason != "error" {
			t.Fatalf("%+v %v", res, err)
		}
		var codes []string
		for _, e := range rec.Events() {
			if ae, ok := e.Payload.(*protocol.AgentError); ok {
				codes = append(codes, ae.Code)
				if !ae.Retryable || !strings.Contains(ae.Message, "retry after") {
					t.Fatalf("agent.error %+v", ae)
				}
			}
		}
		if strings.Join(codes, ",") != "provider_rate_limited" {
			t.Fatalf("codes %v", codes)
		}
	})
}

func TestThinkingStreamsApart(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server) {
		s, _ := open(t, srv, f, nil)
		srv.Script(fake.Reply{Thinking: []string{"let me ", "think"}, Text: []string{"the answer"}})
		rec := newRecorder()
		res, err := s.Run(testCtx(t), turn("q"), rec.emit)
		if err != nil || res.Text != "the answer" {
			t.Fatalf("%+v %v", res, err)
		}
		var thinking, text string
		for _, e := range rec.Events() {
			if d, ok := e.Payload.(*protocol.TextDelta); ok {
				if d.Channel == "thinking" {
					thinking += d.Delta
				} else {
					text += d.Delta
				}
			}
		}
		if thinking != "let me think" || text != "the answer" {
			t.Fatalf("thinking %q text %q", thinking, text)
		}
	})
}
