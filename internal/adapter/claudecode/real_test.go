package claudecode

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/internal/exectest"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/protocol"
	"github.com/ferry-dev/ferry/protocol/fileref"
)

// These tests run the real Claude Code CLI (FERRY_TEST_CLAUDE) against the
// fake Anthropic server of internal/llm/fake, whose scripted tool calls make
// the CLI run its real tools on a temporary workspace.

func claudeBin(t *testing.T) string {
	t.Helper()
	return adaptertest.Binary(t, "FERRY_TEST_CLAUDE", "a claude binary: npm install @anthropic-ai/claude-code@2.1.332")
}

// script answers the CLI's model requests in order; requests without tools
// (side calls) get a fixed answer, except title requests, which the fake
// answers itself. A request that resends a
// conversation an HTTP error answered (the CLI retrying) gets the same
// error, as it would from a real provider, and takes no step: CLIs differ
// in how they retry. 2.1.197 gives up on a 400 at once; 2.1.332 sends it
// again up to five times, dropping one beta after another
// (thinking-token-count, thinking-display-updates, advanced-tool-use, which
// also rewrites its system message), before it reports the error.
type script struct {
	t      *testing.T
	mu     sync.Mutex
	steps  []func(fake.Request) fake.Reply
	reqs   []fake.Request
	failed string     // the conversation of the last request a Fail answered
	fail   fake.Reply // that reply
}

func (s *script) add(steps ...func(fake.Request) fake.Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps = append(s.steps, steps...)
}

func (s *script) route(r fake.Request) (fake.Reply, bool) {
	if r.IsTitle() {
		return fake.Reply{}, false // the fake's own title answers (fake.Reply.Title)
	}
	if len(r.ToolNames()) == 0 {
		return fake.Reply{Text: []string{"side"}}, true
	}
	msgs := conversation(r)
	s.mu.Lock()
	s.reqs = append(s.reqs, r)
	if s.failed != "" && s.failed == msgs {
		reply := s.fail
		s.mu.Unlock()
		return reply, true
	}
	s.failed = ""
	var step func(fake.Request) fake.Reply
	if len(s.steps) > 0 {
		step, s.steps = s.steps[0], s.steps[1:]
	}
	s.mu.Unlock()
	if step == nil {
		s.t.Errorf("an unscripted model request (%d so far)", len(s.requests()))
		return fake.Reply{Text: []string{"unscripted"}}, true
	}
	reply := step(r)
	if reply.Fail != nil {
		s.mu.Lock()
		s.failed, s.fail = msgs, reply
		s.mu.Unlock()
	}
	return reply, true
}

// conversation is the request's user and assistant messages, as JSON: what
// a retry of the request resends unchanged, whatever the CLI changes in its
// system messages, betas and tools to get past the failure.
func conversation(r fake.Request) string {
	var turns []map[string]any
	for _, m := range r.Messages() {
		if m["role"] != "system" {
			turns = append(turns, m)
		}
	}
	b, _ := json.Marshal(turns)
	return string(b)
}

func (s *script) requests() []fake.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]fake.Request(nil), s.reqs...)
}

func say(parts ...string) func(fake.Request) fake.Reply {
	return func(fake.Request) fake.Reply {
		return fake.Reply{Text: parts, Usage: llm.Usage{InputTokens: 100, OutputTokens: 10}}
	}
}

func call(id, name string, input map[string]any, text ...string) func(fake.Request) fake.Reply {
	return func(fake.Request) fake.Reply {
		return fake.Reply{Text: text, ToolCalls: []fake.ToolCall{{ID: id, Name: name, Input: input}}, Usage: llm.Usage{InputTokens: 100, OutputTokens: 10}}
	}
}

// toolResult returns the tool_result block for id in the request's last
// message, as JSON text ("" when there is none).
func toolResult(r fake.Request, id string) string {
	msgs := r.Messages()
	if len(msgs) == 0 {
		return ""
	}
	blocks, _ := msgs[len(msgs)-1]["content"].([]any)
	for _, b := range blocks {
		if bm, _ := b.(map[string]any); bm["type"] == "tool_result" && bm["tool_use_id"] == id {
			raw, _ := json.Marshal(bm)
			return string(raw)
		}
	}
	return ""
}

type realEnv struct {
	srv    *fake.Server
	script *script
	ws     string
	home   string
	state  string
	logs   *adaptertest.LogBuffer
	bin    string
}

func newRealEnv(t *testing.T) *realEnv {
	bin := claudeBin(t)
	e := &realEnv{srv: fake.New(t), script: &script{t: t}, ws: t.TempDir(), home: t.TempDir(), state: t.TempDir(), logs: &adaptertest.LogBuffer{}, bin: bin}
	e.srv.Route(e.script.route)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("adapter log:\n%s", e.logs.String())
		}
	})
	return e
}

func (e *realEnv) adapter() *Adapter {
	return New(Config{
		Command: e.bin,
		Env: []string{"ANTHROPIC_BASE_URL=" + e.srv.URL(), "ANTHROPIC_API_KEY=sk-ant-fake",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "HOME=" + e.home},
		StateDir: e.state,
		Logger:   e.logs.Logger(),
	})
}

func (e *realEnv) open(t *testing.T, ad *Adapter, mode string) *session {
	t.Helper()
	return e.openWith(t, ad, adapter.SessionConfig{Mode: mode})
}

// openWith opens a session of cfg (its id and workspace filled in).
func (e *realEnv) openWith(t *testing.T, ad *Adapter, cfg adapter.SessionConfig) *session {
	t.Helper()
	cfg.SessionID = "ferry-session-1"
	cfg.Workspace = protocol.Workspace{ID: "w", Name: "w", Path: e.ws}
	s, err := ad.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s.(*session)
}

func (e *realEnv) file(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(e.ws, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// runAsync runs a turn in the background.
type running struct {
	done chan struct{}
	res  adapter.Result
	err  error
}

func runAsync(ctx context.Context, s *session, turn adapter.Turn, emit adapter.Emit) *running {
	r := &running{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.res, r.err = s.Run(ctx, turn, emit)
	}()
	return r
}

func (r *running) wait(t *testing.T, ctx context.Context) (adapter.Result, error) {
	t.Helper()
	select {
	case <-r.done:
		return r.res, r.err
	case <-ctx.Done():
		t.Fatal("the turn did not end")
		return adapter.Result{}, nil
	}
}

// (1) A picked file reaches the CLI as a mention, which reads it; the
// scripted Edit is asked about, allowed through ferry, and changes the
// file on disk.
func TestRealPickedFileIsReadAndEdited(t *testing.T) {
	t.Parallel()
	e := newRealEnv(t)
	path := e.file(t, "notes.txt", "the secret word is pelican\n")
	e.script.add(
		func(r fake.Request) fake.Reply {
			return fake.Reply{Thinking: []string{"Let me ", "look."}, Text: []string{"Editing ", "now."},
				ToolCalls: []fake.ToolCall{{ID: "toolu_edit1", Name: "Edit", Input: map[string]any{"file_path": path, "old_string": "pelican", "new_string": "heron"}}},
				Usage:     llm.Usage{InputTokens: 1000, OutputTokens: 20}}
		},
		say(" Done."),
	)
	s := e.open(t, e.adapter(), protocol.ModeDefault)
	text, refs, err := fileref.Compose([]protocol.PromptSegment{
		{Kind: protocol.SegmentText, Text: "Replace the word in "},
		{Kind: protocol.SegmentFile, File: &protocol.PickedFile{Path: "notes.txt"}},
		{Kind: protocol.SegmentText, Text: " with heron."},
	})
	if err != nil {
		t.Fatal(err)
	}
	req := &protocol.PromptRequest{PromptText: text, InputType: protocol.InputText, FileReferences: refs}
	turn := adapter.Turn{ID: protocol.NewID(), Request: req, Prompt: fileref.Parse(text, refs)}

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	rec := newRecorder(t)
	run := runAsync(ctx, s, turn, rec.emit)
	ir := rec.nextAsk(ctx)
	if ir.Kind != protocol.InteractionPermission || ir.ToolName != "Edit" || ir.ToolUseID != "toolu_edit1" || !strings.Contains(ir.Title, "notes.txt") {
		t.Errorf("interaction %+v", ir)
	}
	if ir.Diff == nil || ir.Diff.Path != "notes.txt" || len(ir.Diff.Hunks) != 1 {
		t.Errorf("proposed diff %+v", ir.Diff)
	}
	if err := s.Answer(ir.InteractionID, &protocol.InteractionResponse{InteractionID: ir.InteractionID, SelectedValue: protocol.Single(protocol.AllowOnce)}); err != nil {
		t.Fatal(err)
	}
	res, err := run.wait(t, ctx)
	if err != nil || res.StopReason != "end_turn" || res.Text != "Editing now. Done." {
		t.Fatalf("%+v, %v", res, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "the secret word is heron\n" {
		t.Errorf("file %q", b)
	}
	// The mention reached the CLI, and the CLI read the file for the model.
	reqs := e.script.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	first, _ := json.Marshal(reqs[0].Messages())
	if !strings.Contains(string(first), "@notes.txt") || !strings.Contains(string(first), "the secret word is pelican") {
		t.Errorf("the first model request lacks the mention or the file: %.2000s", first)
	}
	if !strings.Contains(toolResult(reqs[1], "toolu_edit1"), "updated") {
		t.Errorf("tool result %s", toolResult(reqs[1], "toolu_edit1"))
	}
	// The events.
	if got := rec.Text("thinking"); got != "Let me look." {
		t.Errorf("thinking %q", got)
	}
	started := rec.OfType(protocol.TypeToolStarted)
	if len(started) != 1 || started[0].(*protocol.ToolStarted).ToolName != "Edit" {
		t.Errorf("started %+v", started)
	}
	fin := rec.Finished()
	if len(fin) != 1 || fin[0].Status != protocol.ToolOK || fin[0].Diff == nil || fin[0].Diff.Path != "notes.txt" {
		t.Fatalf("finished %+v", fin)
	}
	if h := fin[0].Diff.Hunks; len(h) != 1 || !slices.Contains(h[0].Lines, protocol.DiffLine{Op: "add", Text: "the secret word is heron"}) {
		t.Errorf("diff %+v", h)
	}
	usage := rec.OfType(protocol.TypeUsage)
	if len(usage) != 1 {
		t.Fatalf("usage %+v", usage)
	}
	if u := usage[0].(*protocol.Usage); u.CostUSD <= 0 || u.InputTokens <= 0 || u.Model == "" {
		t.Errorf("usage %+v", u)
	}
	// Order: the tool started before its permission request, which came
	// before its result.
	var order []string
	for _, ev := range rec.Events() {
		if ev.Type != protocol.TypeTextDelta {
			order = append(order, ev.Type)
		}
	}
	want := []string{protocol.TypeToolStarted, protocol.TypeInteractionRequest, protocol.TypeToolFinished, protocol.TypeUsage}
	if !slices.Equal(order, want) {
		t.Errorf("events %v, want %v", order, want)
	}
}

// (2) Permission requests answered through ferry: allowed, denied, and a
// question the agent asks the user.
func TestRealPermissionAllowDenyAndQuestions(t *testing.T) {
	t.Parallel()
	e := newRealEnv(t)
	e.script.add(
		call("toolu_b1", "Bash", map[string]any{"command": "touch allowed.txt", "description": "create a file"}),
		say("made it"),
		call("toolu_b2", "Bash", map[string]any{"command": "touch denied.txt", "description": "create another"}),
		say("was refused"),
		call("toolu_q1", "AskUserQuestion", map[string]any{"questions": []any{
			map[string]any{"question": "Which color?", "header": "Color", "multiSelect": false,
				"options": []any{map[string]any{"label": "Red", "description": "warm"}, map[string]any{"label": "Blue", "description": "cool"}}},
			map[string]any{"question": "Which sizes?", "header": "Sizes", "multiSelect": true,
				"options": []any{map[string]any{"label": "S", "description": "small"}, map[string]any{"label": "M", "description": "medium"}, map[string]any{"label": "L", "description": "large"}}},
		}}),
		say("thanks"),
	)
	s := e.open(t, e.adapter(), protocol.ModeDefault)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	for _, c := range []struct {
		file, answer, status string
		exists               bool
	}{
		{"allowed.txt", protocol.AllowOnce, protocol.ToolOK, true},
		{"denied.txt", protocol.Deny, protocol.ToolDenied, false},
	} {
		rec := newRecorder(t)
		run := runAsync(ctx, s, adaptertest.TextTurn("make "+c.file), rec.emit)
		ir := rec.nextAsk(ctx)
		if ir.Kind != protocol.InteractionPermission || ir.ToolName != "Bash" || !strings.Contains(ir.Title, "touch "+c.file) {
			t.Errorf("interaction %+v", ir)
		}
		if err := s.Answer(ir.InteractionID, &protocol.InteractionResponse{SelectedValue: protocol.Single(c.answer)}); err != nil {
			t.Fatal(err)
		}
		if res, err := run.wait(t, ctx); err != nil || res.StopReason != "end_turn" {
			t.Fatalf("%+v, %v", res, err)
		}
		if _, err := os.Stat(filepath.Join(e.ws, c.file)); (err == nil) != c.exists {
			t.Errorf("%s exists: %v", c.file, err == nil)
		}
		if fin := rec.Finished(); len(fin) != 1 || fin[0].Status != c.status {
			t.Errorf("%s: finished %+v", c.file, fin)
		}
	}
	reqs := e.script.requests()
	if tr := toolResult(reqs[3], "toolu_b2"); !strings.Contains(tr, `"is_error":true`) {
		t.Errorf("the denial did not reach the model: %s", tr)
	}

	// AskUserQuestion: one interaction per question, answers back as the
	// tool's input.
	rec := newRecorder(t)
	run := runAsync(ctx, s, adaptertest.TextTurn("ask me"), rec.emit)
	q1 := rec.nextAsk(ctx)
	if q1.Kind != protocol.InteractionSingleSelect || q1.Title != "Which color?" || len(q1.Options) != 2 || q1.Options[1].Value != "Blue" {
		t.Fatalf("question 1 %+v", q1)
	}
	if err := s.Answer(q1.InteractionID, &protocol.InteractionResponse{SelectedValue: protocol.Single("Blue")}); err != nil {
		t.Fatal(err)
	}
	q2 := rec.nextAsk(ctx)
	if q2.Kind != protocol.InteractionMultiSelect || q2.Title != "Which sizes?" || len(q2.Options) != 3 {
		t.Fatalf("question 2 %+v", q2)
	}
	if err := s.Answer(q2.InteractionID, &protocol.InteractionResponse{SelectedValue: protocol.Multiple("S", "L")}); err != nil {
		t.Fatal(err)
	}
	if res, err := run.wait(t, ctx); err != nil || res.Text != "thanks" {
		t.Fatalf("%+v, %v", res, err)
	}
	reqs = e.script.requests()
	tr := toolResult(reqs[len(reqs)-1], "toolu_q1")
	if !strings.Contains(tr, `\"Which color?\"=\"Blue\"`) || !strings.Contains(tr, `\"Which sizes?\"=\"S, L\"`) {
		t.Errorf("answers did not reach the model: %s", tr)
	}
}

// (3) Cancel mid-turn: during a long Bash command and during a held model
// stream. Run returns promptly, the command does not outlive the cancel,
// and the session takes the next turn.
func TestRealCancelMidTurn(t *testing.T) {
	t.Parallel()
	t.Run("bash", func(t *testing.T) {
		e := newRealEnv(t)
		// The long command is a script that sleeps: Claude Code 2.1.332
		// refuses a command that starts with a foreground sleep of 25 s
		// or more ("Blocked: standalone sleep …", use Monitor instead).
		const marker = "sleep 37.25"
		exectest.WriteScript(t, filepath.Join(e.ws, "wait.sh"), "#!/bin/sh\n"+marker+"\n")
		e.script.add(call("toolu_s1", "Bash", map[string]any{"command": "./wait.sh", "description": "wait"}), say("after the cancel"))
		s := e.open(t, e.adapter(), protocol.ModeDefault)
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		turn := adaptertest.TextTurn("wait a while")
		// Allowed up front, so no permission request stands in the way.
		turn.Request.ConfigOverrides = &protocol.ConfigOverrides{AllowedTools: []string{"Bash(./wait.sh)"}}
		rec := newRecorder(t)
		turnCtx, stop := context.WithCancel(ctx)
		run := runAsync(turnCtx, s, turn, rec.emit)
		for len(processesWith(marker)) == 0 {
			select {
			case <-run.done:
				t.Fatalf("the turn ended before its command ran: %+v %v", run.res, run.err)
			case <-ctx.Done():
				t.Fatal("the command never started")
			case <-time.After(20 * time.Millisecond):
			}
		}
		if len(rec.OfType(protocol.TypeInteractionRequest)) != 0 {
			t.Error("allowed_tools did not reach the CLI: it asked")
		}
		stop()
		res, err := run.wait(t, ctx)
		if err == nil || res.StopReason != "cancelled" {
			t.Fatalf("%+v, %v", res, err)
		}
		if fin := rec.Finished(); len(fin) != 1 || fin[0].Status != protocol.ToolCancelled {
			t.Errorf("finished %+v", fin)
		}
		for _, pid := range processesWith(marker) {
			if !waitGone(ctx, pid) {
				t.Errorf("%q (pid %d) outlived the cancel", marker, pid)
			}
		}
		// The next turn works (a new process: the flags differ).
		rec2 := newRecorder(t)
		res, err = s.Run(ctx, adaptertest.TextTurn("go on"), rec2.emit)
		if err != nil || res.Text != "after the cancel" {
			t.Fatalf("%+v, %v", res, err)
		}
		reqs := e.script.requests()
		last, _ := json.Marshal(reqs[len(reqs)-1].Messages())
		if !strings.Contains(string(last), "wait a while") {
			t.Error("the conversation was not resumed after the cancel")
		}
	})
	t.Run("stream", func(t *testing.T) {
		e := newRealEnv(t)
		e.script.add(
			func(fake.Request) fake.Reply { return fake.Reply{Text: []string{"thinking it over"}, Hold: true} },
			say("second answer"),
		)
		s := e.open(t, e.adapter(), protocol.ModeDefault)
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		rec := newRecorder(t)
		turnCtx, stop := context.WithCancel(ctx)
		run := runAsync(turnCtx, s, adaptertest.TextTurn("take your time"), rec.emit)
		if !rec.WaitFor(ctx, protocol.TypeTextDelta) {
			t.Fatal("no text came")
		}
		s.mu.Lock()
		p := s.proc
		s.mu.Unlock()
		stop()
		res, err := run.wait(t, ctx)
		if err == nil || res.StopReason != "cancelled" || res.Text != "thinking it over" {
			t.Fatalf("%+v, %v", res, err)
		}
		res, err = s.Run(ctx, adaptertest.TextTurn("and now?"), newRecorder(t).emit)
		if err != nil || res.Text != "second answer" {
			t.Fatalf("%+v, %v", res, err)
		}
		s.mu.Lock()
		same := s.proc == p
		s.mu.Unlock()
		if !same {
			t.Error("the interrupt did not keep the process")
		}
		pid := p.cmd.Process.Pid
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if adaptertest.ProcessAlive(pid) {
			t.Errorf("claude (pid %d) outlived Close", pid)
		}
	})
}

// (4) Plan mode: ferry refuses the Edit itself, before anyone is asked,
// and the file stays as it was; back in default mode the Edit is asked.
func TestRealPlanModeRefusesEdit(t *testing.T) {
	t.Parallel()
	e := newRealEnv(t)
	path := e.file(t, "plan.txt", "keep me\n")
	edit := map[string]any{"file_path": path, "old_string": "keep", "new_string": "changed"}
	e.script.add(
		// Claude Code edits only files it has read.
		call("toolu_r1", "Read", map[string]any{"file_path": path}),
		call("toolu_p1", "Edit", edit),
		say("I would change it."),
		call("toolu_p2", "Edit", edit),
		say("changed"),
	)
	s := e.open(t, e.adapter(), protocol.ModePlan)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	rec := newRecorder(t)
	res, err := s.Run(ctx, adaptertest.TextTurn("change plan.txt"), rec.emit)
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("%+v, %v", res, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "keep me\n" {
		t.Errorf("plan mode changed the file: %q", b)
	}
	if n := len(rec.OfType(protocol.TypeInteractionRequest)); n != 0 {
		t.Errorf("%d interactions in plan mode", n)
	}
	fin := rec.Finished()
	if len(fin) != 2 || fin[0].Status != protocol.ToolOK || fin[1].Status != protocol.ToolDenied || !strings.Contains(fin[1].Output, "plan mode") {
		for _, f := range fin {
			t.Errorf("finished %+v", *f)
		}
	}
	reqs := e.script.requests()
	if tr := toolResult(reqs[2], "toolu_p1"); !strings.Contains(tr, "Refused by ferry") {
		t.Errorf("tool result %s", tr)
	}
	// Switched to default mid-session, the same call is asked about.
	if err := s.SetMode(protocol.ModeDefault, nil); err != nil {
		t.Fatal(err)
	}
	rec = newRecorder(t)
	run := runAsync(ctx, s, adaptertest.TextTurn("now do it"), rec.emit)
	ir := rec.nextAsk(ctx)
	if err := s.Answer(ir.InteractionID, &protocol.InteractionResponse{SelectedValue: protocol.Single(protocol.AllowOnce)}); err != nil {
		t.Fatal(err)
	}
	if res, err := run.wait(t, ctx); err != nil || res.Text != "changed" {
		t.Fatalf("%+v, %v", res, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "changed me\n" {
		t.Errorf("file %q", b)
	}
}

// (5) A new Adapter on the same state directory resumes the conversation.
func TestRealResumeAcrossAdapters(t *testing.T) {
	t.Parallel()
	e := newRealEnv(t)
	e.script.add(say("noted"), say("it was walrus"))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	s1 := e.open(t, e.adapter(), protocol.ModeDefault)
	if res, err := s1.Run(ctx, adaptertest.TextTurn("remember the code word walrus"), newRecorder(t).emit); err != nil || res.Text != "noted" {
		t.Fatalf("%+v, %v", res, err)
	}
	claudeID := s1.claudeID
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(e.state, "sessions", "ferry-session-1.json"))
	if err != nil || claudeID == "" || !strings.Contains(string(b), claudeID) {
		t.Fatalf("state %s (%v), id %q", b, err, claudeID)
	}
	// A restarted ferry: a new adapter, the same state directory.
	s2 := e.open(t, e.adapter(), protocol.ModeDefault)
	if res, err := s2.Run(ctx, adaptertest.TextTurn("what was the code word?"), newRecorder(t).emit); err != nil || res.Text != "it was walrus" {
		t.Fatalf("%+v, %v", res, err)
	}
	reqs := e.script.requests()
	last, _ := json.Marshal(reqs[len(reqs)-1].Messages())
	if !strings.Contains(string(last), "walrus") || !strings.Contains(string(last), "noted") {
		t.Errorf("the second adapter did not resume the conversation: %.3000s", last)
	}
	if s2.claudeID != claudeID {
		t.Errorf("claude session %q, want %q", s2.claudeID, claudeID)
	}
}

// Compaction sends /compact with the instruction and reports Claude
// Code's token counts.
func TestRealCompact(t *testing.T) {
	t.Parallel()
	e := newRealEnv(t)
	e.script.add(say("one"), say("two"), say("three"),
		// A summary the way the model writes one: Claude Code 2.1.332
		// asks again when the <summary> tags are missing.
		say("<analysis>Three messages.</analysis>\n<summary>The user said one, two, three.</summary>"))
	s := e.open(t, e.adapter(), protocol.ModeDefault)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if _, err := s.Compact(ctx, &protocol.SessionCompact{}); err == nil {
		t.Error("a session with no conversation compacted")
	}
	for _, p := range []string{"first message", "second message", "third message"} {
		if _, err := s.Run(ctx, adaptertest.TextTurn(p), newRecorder(t).emit); err != nil {
			t.Fatal(err)
		}
	}
	done, err := s.Compact(ctx, &protocol.SessionCompact{Instruction: "keep the numbers"})
	if err != nil || done.TokensBefore <= 0 {
		t.Fatalf("%+v, %v", done, err)
	}
	reqs := e.script.requests()
	last, _ := json.Marshal(reqs[len(reqs)-1].Messages())
	if !strings.Contains(string(last), "keep the numbers") {
		t.Errorf("the instruction did not reach the summary request: %.2000s", last)
	}
}

// Per-prompt overrides: json_schema yields the structured answer, and
// max_turns stops the turn.
func TestRealSchemaAndMaxTurns(t *testing.T) {
	t.Parallel()
	e := newRealEnv(t)
	e.script.add(
		call("toolu_so", "StructuredOutput", map[string]any{"word": "heron"}, "Answering."),
		call("toolu_ls", "Bash", map[string]any{"command": "ls", "description": "list"}),
		say("no tools for me"),
	)
	s := e.open(t, e.adapter(), protocol.ModeDefault)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	turn := adaptertest.TextTurn("give me the word")
	turn.Request.ConfigOverrides = &protocol.ConfigOverrides{JSONSchema: json.RawMessage(`{"type":"object","properties":{"word":{"type":"string"}},"required":["word"]}`)}
	res, err := s.Run(ctx, turn, newRecorder(t).emit)
	if err != nil || res.StopReason != "end_turn" || string(res.Structured) != `{"word":"heron"}` {
		t.Fatalf("%+v (%s), %v", res, res.Structured, err)
	}
	one := 1
	turn = adaptertest.TextTurn("list the files")
	turn.Request.ConfigOverrides = &protocol.ConfigOverrides{MaxTurns: &one, AllowedTools: []string{"Bash(ls)"}}
	res, err = s.Run(ctx, turn, newRecorder(t).emit)
	if err != nil || res.StopReason != "max_turns" {
		t.Fatalf("%+v, %v", res, err)
	}
	// denied_tools take the tools away from the model.
	turn = adaptertest.TextTurn("anything")
	turn.Request.ConfigOverrides = &protocol.ConfigOverrides{DeniedTools: []string{"Bash", "Write"}}
	if res, err = s.Run(ctx, turn, newRecorder(t).emit); err != nil || res.Text != "no tools for me" {
		t.Fatalf("%+v, %v", res, err)
	}
	reqs := e.script.requests()
	if names := reqs[len(reqs)-1].ToolNames(); slices.Contains(names, "Bash") || slices.Contains(names, "Write") || !slices.Contains(names, "Read") {
		t.Errorf("tools offered with Bash and Write denied: %v", names)
	}
}

// A provider error ends the turn with a coded agent.error; the provider's
// own words stay in the log, and the next turn works.
func TestRealProviderError(t *testing.T) {
	t.Parallel()
	e := newRealEnv(t)
	e.script.add(
		func(fake.Request) fake.Reply {
			return fake.Reply{Fail: &fake.Failure{Status: 400, Message: "internal detail 7f3a"}}
		},
		say("fine now"),
	)
	s := e.open(t, e.adapter(), protocol.ModeDefault)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	rec := newRecorder(t)
	res, err := s.Run(ctx, adaptertest.TextTurn("hello"), rec.emit)
	if err != nil || res.StopReason != "error" {
		t.Fatalf("%+v, %v", res, err)
	}
	errs := rec.Errors()
	if len(errs) != 1 || errs[0].Code != "agent_error" {
		t.Fatalf("errors %+v", errs)
	}
	for _, ev := range rec.Events() {
		if b, _ := json.Marshal(ev.Payload); strings.Contains(string(b), "7f3a") {
			t.Errorf("the provider's error reached an event: %s %s", ev.Type, b)
		}
	}
	if strings.Contains(res.Text, "7f3a") {
		t.Errorf("the provider's error reached the result: %q", res.Text)
	}
	if !strings.Contains(e.logs.String(), "7f3a") {
		t.Error("the provider's error is not in the log")
	}
	if res, err := s.Run(ctx, adaptertest.TextTurn("again"), newRecorder(t).emit); err != nil || res.Text != "fine now" {
		t.Fatalf("%+v, %v", res, err)
	}
}
