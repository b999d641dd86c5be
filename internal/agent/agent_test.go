package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/protocol"
	"github.com/ferry-dev/ferry/protocol/fileref"
)

func newAgent(t *testing.T, p llm.Provider, mut func(*agent.Config)) (*agent.Agent, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := agent.Config{Provider: p, Workspace: dir}
	if mut != nil {
		mut(&cfg)
	}
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a, dir
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestTextTurnStreamsAndReportsUsage(t *testing.T) {
	t.Parallel()
	p := newMem(step{text: []string{"Hello", ", world"}, usage: llm.Usage{InputTokens: 7, OutputTokens: 3}})
	a, _ := newAgent(t, p, nil)
	rec := newRecorder()
	res, err := a.Run(testCtx(t), textTurn("hi"), rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Hello, world" || res.Final != "Hello, world" || res.StopReason != agent.StopEndTurn || res.NumTurns != 1 {
		t.Fatalf("result %+v", res)
	}
	deltas := rec.of(protocol.TypeTextDelta)
	if len(deltas) != 2 || deltas[0].(*protocol.TextDelta).Delta != "Hello" {
		t.Fatalf("deltas %+v", deltas)
	}
	us := rec.of(protocol.TypeUsage)
	if len(us) != 1 || us[0].(*protocol.Usage).InputTokens != 7 || us[0].(*protocol.Usage).Model != "mem-1" {
		t.Fatalf("usage %+v", us)
	}
	req := p.requests()[0]
	if !strings.Contains(req.System, "Mode: default") || len(req.Tools) == 0 {
		t.Fatalf("system %q tools %d", req.System, len(req.Tools))
	}
	if got := req.Messages[0].Content[0].Text; got != "hi" {
		t.Fatalf("user text %q", got)
	}
}

func TestEditTaskReadsEditsAndVerifies(t *testing.T) {
	t.Parallel()
	p := newMem(
		step{tools: []llm.Block{toolCall("t1", "Read", map[string]any{"file_path": "a.txt"})}},
		step{tools: []llm.Block{toolCall("t2", "Edit", map[string]any{"file_path": "a.txt", "old_string": "world", "new_string": "ferry"})}},
		step{tools: []llm.Block{toolCall("t3", "Read", map[string]any{"file_path": "a.txt"})}},
		step{text: []string{"Done."}},
	)
	a, dir := newAgent(t, p, func(c *agent.Config) {
		c.Rules = &permission.Rules{Allow: []permission.Rule{{Tool: "Edit"}}}
	})
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello world\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	res, err := a.Run(testCtx(t), textTurn("change world to ferry"), rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	if res.Final != "Done." || res.NumTurns != 4 {
		t.Fatalf("result %+v", res)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "a.txt"))
	if string(got) != "hello ferry\n" {
		t.Fatalf("file %q", got)
	}
	fin := rec.finished()
	if len(fin) != 3 || fin[1].Status != protocol.ToolOK || fin[1].Diff == nil {
		t.Fatalf("finished %+v", fin)
	}
	reqs := p.requests()
	if r := lastToolResults(reqs[3]); len(r) != 1 || !strings.Contains(resultText(r[0]), "hello ferry") {
		t.Fatalf("verify read %+v", r)
	}
	started := rec.of(protocol.TypeToolStarted)
	if s := started[1].(*protocol.ToolStarted); s.ToolUseID != "t2" || !strings.Contains(string(s.Input), "old_string") {
		t.Fatalf("started %+v", s)
	}
}

func TestPlanModeRefusesWrites(t *testing.T) {
	t.Parallel()
	p := newMem(
		step{tools: []llm.Block{toolCall("w1", "Write", map[string]any{"file_path": "new.txt", "content": "x"})}},
		step{tools: []llm.Block{toolCall("w2", "Write", map[string]any{"file_path": "new.txt", "content": "x"})}},
		step{text: []string{"I cannot write in plan mode."}},
	)
	a, dir := newAgent(t, p, func(c *agent.Config) {
		c.Mode = protocol.ModePlan
		c.Rules = &permission.Rules{Allow: []permission.Rule{{Tool: "Write"}}}
	})
	rec := newRecorder()
	if _, err := a.Run(testCtx(t), textTurn("write it"), rec.emit); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("file written: %v", err)
	}
	for _, f := range rec.finished() {
		if f.Status != protocol.ToolDenied {
			t.Fatalf("status %s", f.Status)
		}
	}
	r := lastToolResults(p.requests()[1])
	if len(r) != 1 || !r[0].IsError || !strings.Contains(resultText(r[0]), "plan mode") {
		t.Fatalf("refusal %+v", r)
	}
	if !strings.Contains(p.requests()[0].System, "Mode: plan") {
		t.Fatal("system prompt does not name the mode")
	}
}

// planThenAllow switches a to plan mode while its first question waits
// for an answer, then allows it: the allow must no longer let it through.
func planThenAllow(ctx context.Context, t *testing.T, a *agent.Agent, rec *recorder) {
	select {
	case ir := <-rec.asks:
		if err := a.SetMode(protocol.ModePlan); err != nil {
			t.Error(err)
		}
		_ = a.Answer(ir.InteractionID, &protocol.InteractionResponse{SelectedValue: protocol.Single(protocol.AllowOnce)})
	case <-ctx.Done():
	}
}

func TestModeSwitchWhileAskingRefusesTheCall(t *testing.T) {
	t.Parallel()
	write := func(id string) step {
		return step{tools: []llm.Block{toolCall(id, "Write", map[string]any{"file_path": id + ".txt", "content": "x"})}}
	}
	p := newMem(write("one"), write("two"), step{text: []string{"ok"}})
	a, dir := newAgent(t, p, nil)
	rec := newRecorder()
	ctx := testCtx(t)
	go planThenAllow(ctx, t, a, rec)
	if _, err := a.Run(ctx, textTurn("write two files"), rec.emit); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"one.txt", "two.txt"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s written in plan mode: %v", name, err)
		}
	}
	if f := rec.finished(); len(f) != 2 || f[0].Status != protocol.ToolDenied || f[1].Status != protocol.ToolDenied {
		t.Fatalf("finished %+v", f)
	}
	r := lastToolResults(p.requests()[1])
	if len(r) != 1 || !r[0].IsError || !strings.Contains(resultText(r[0]), "plan mode") {
		t.Fatalf("refusal %+v", r)
	}
	if !strings.Contains(p.requests()[2].System, "Mode: plan") {
		t.Fatal("the next model call does not see the new mode")
	}
}

func TestAskAllowOnceAllowAlwaysDenyTimeout(t *testing.T) {
	t.Parallel()
	write := func(id, content string) step {
		return step{tools: []llm.Block{toolCall(id, "Write", map[string]any{"file_path": "f.txt", "content": content})}}
	}
	cases := []struct {
		name    string
		answers []*protocol.InteractionResponse // nil entry: timeout
		steps   []step
		asks    int
		want    string
		status  []string
	}{
		{"allow once", []*protocol.InteractionResponse{{SelectedValue: protocol.Single(protocol.AllowOnce)}},
			[]step{write("a", "one"), {text: []string{"ok"}}}, 1, "one", []string{protocol.ToolOK}},
		{"deny", []*protocol.InteractionResponse{{SelectedValue: protocol.Single(protocol.Deny)}},
			[]step{write("a", "one"), {text: []string{"ok"}}}, 1, "", []string{protocol.ToolDenied}},
		{"timeout", []*protocol.InteractionResponse{nil},
			[]step{write("a", "one"), {text: []string{"ok"}}}, 1, "", []string{protocol.ToolDenied}},
		{"allow always", []*protocol.InteractionResponse{{SelectedValue: protocol.Single(protocol.AllowAlways)}},
			[]step{write("a", "one"), {tools: []llm.Block{toolCall("r", "Read", map[string]any{"file_path": "f.txt"})}}, write("b", "two"), {text: []string{"ok"}}},
			1, "two", []string{protocol.ToolOK, protocol.ToolOK, protocol.ToolOK}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newMem(tc.steps...)
			a, dir := newAgent(t, p, nil)
			rec := newRecorder()
			ctx := testCtx(t)
			go func() {
				for _, ans := range tc.answers {
					select {
					case ir := <-rec.asks:
						if ans != nil {
							ans.InteractionID = ir.InteractionID
						}
						if err := a.Answer(ir.InteractionID, ans); err != nil {
							t.Error(err)
						}
					case <-ctx.Done():
						return
					}
				}
			}()
			if _, err := a.Run(ctx, textTurn("write"), rec.emit); err != nil {
				t.Fatal(err)
			}
			asks := rec.of(protocol.TypeInteractionRequest)
			if len(asks) != tc.asks {
				t.Fatalf("asked %d times, want %d", len(asks), tc.asks)
			}
			ir := asks[0].(*protocol.InteractionRequest)
			if ir.Kind != protocol.InteractionPermission || ir.ToolName != "Write" || ir.Diff == nil || len(ir.Options) != 3 {
				t.Fatalf("request %+v", ir)
			}
			// It advertises what a timeout does (the case "timeout": denied).
			if ir.DefaultValue != protocol.Deny {
				t.Fatalf("default_value %q, want deny: a timeout denies", ir.DefaultValue)
			}
			got, _ := os.ReadFile(filepath.Join(dir, "f.txt"))
			if string(got) != tc.want {
				t.Fatalf("file %q, want %q", got, tc.want)
			}
			var st []string
			for _, f := range rec.finished() {
				st = append(st, f.Status)
			}
			if strings.Join(st, ",") != strings.Join(tc.status, ",") {
				t.Fatalf("statuses %v, want %v", st, tc.status)
			}
		})
	}
}

func TestHeadlessDeniesWhatWouldBeAsked(t *testing.T) {
	t.Parallel()
	p := newMem(
		step{tools: []llm.Block{toolCall("w", "Write", map[string]any{"file_path": "f.txt", "content": "x"})}},
		step{text: []string{"denied"}},
	)
	a, dir := newAgent(t, p, func(c *agent.Config) { c.Headless = true })
	rec := newRecorder()
	if _, err := a.Run(testCtx(t), textTurn("write"), rec.emit); err != nil {
		t.Fatal(err)
	}
	if len(rec.of(protocol.TypeInteractionRequest)) != 0 {
		t.Fatal("a headless agent asked")
	}
	if f := rec.finished(); len(f) != 1 || f[0].Status != protocol.ToolDenied || !strings.Contains(f[0].Output, "--allow") {
		t.Fatalf("finished %+v", f)
	}
	if _, err := os.Stat(filepath.Join(dir, "f.txt")); err == nil {
		t.Fatal("written")
	}
}

func TestPerPromptRules(t *testing.T) {
	t.Parallel()
	p := newMem(
		step{tools: []llm.Block{toolCall("w", "Write", map[string]any{"file_path": "f.txt", "content": "x"})}},
		step{text: []string{"ok"}},
		step{tools: []llm.Block{toolCall("g", "Glob", map[string]any{"pattern": "*"})}},
		step{text: []string{"ok"}},
	)
	a, dir := newAgent(t, p, func(c *agent.Config) { c.Headless = true })
	rec := newRecorder()
	turn := turnOf(protocol.InputText, "write", &protocol.ConfigOverrides{AllowedTools: []string{"Write(f.txt)"}})
	if _, err := a.Run(testCtx(t), turn, rec.emit); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "f.txt")); string(got) != "x" {
		t.Fatalf("file %q", got)
	}
	turn = turnOf(protocol.InputText, "glob", &protocol.ConfigOverrides{DeniedTools: []string{"Glob"}})
	if _, err := a.Run(testCtx(t), turn, rec.emit); err != nil {
		t.Fatal(err)
	}
	if f := rec.finished(); len(f) != 2 || f[1].Status != protocol.ToolDenied {
		t.Fatalf("finished %+v", f)
	}
	if r := a.Rules(); len(r.Allow)+len(r.Deny) != 0 {
		t.Fatalf("per-prompt rules leaked into the session: %+v", r)
	}
}

func TestBadRuleFailsCleanly(t *testing.T) {
	t.Parallel()
	p := newMem()
	a, _ := newAgent(t, p, nil)
	rec := newRecorder()
	_, err := a.Run(testCtx(t), turnOf(protocol.InputText, "x", &protocol.ConfigOverrides{DeniedTools: []string{""}}), rec.emit)
	var ae *agent.Error
	if !errors.As(err, &ae) || ae.Code != agent.CodeBadRequest {
		t.Fatalf("err %v", err)
	}
	if errs := rec.of(protocol.TypeAgentError); len(errs) != 1 || errs[0].(*protocol.AgentError).Code != agent.CodeBadRequest {
		t.Fatalf("agent.error %+v", errs)
	}
	if len(p.requests()) != 0 {
		t.Fatal("the model was called")
	}
}

func TestMaxTurns(t *testing.T) {
	t.Parallel()
	loop := step{tools: []llm.Block{toolCall("g", "Glob", map[string]any{"pattern": "*"})}}
	p := newMem(loop, loop, loop, step{text: []string{"continued"}})
	a, _ := newAgent(t, p, nil)
	rec := newRecorder()
	two := 2
	res, err := a.Run(testCtx(t), turnOf(protocol.InputText, "go", &protocol.ConfigOverrides{MaxTurns: &two}), rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != agent.StopMaxTurns || res.NumTurns != 2 || len(rec.finished()) != 1 {
		t.Fatalf("result %+v, %d tool calls", res, len(rec.finished()))
	}
	// The unrun call got a result: a continuation is a valid next request.
	res, err = a.Run(testCtx(t), turnOf(protocol.InputContinuation, "continue", nil), rec.emit)
	if err != nil || res.Final != "continued" {
		t.Fatalf("continuation %+v %v", res, err)
	}
	reqs := p.requests()
	last := reqs[2]
	if r := lastToolResults(last); len(r) != 1 || !strings.Contains(resultText(r[0]), "limit of 2 turns") {
		t.Fatalf("unrun call's result %+v", r)
	}
	if um := last.Messages[len(last.Messages)-1]; !strings.Contains(um.Content[len(um.Content)-1].Text, "Continue where you left off") {
		t.Fatalf("continuation text %+v", um)
	}
}

func TestJSONSchema(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
	t.Run("valid", func(t *testing.T) {
		p := newMem(step{text: []string{"```json\n{\"n\": 3}\n```"}})
		a, _ := newAgent(t, p, nil)
		res, err := a.Run(testCtx(t), turnOf(protocol.InputText, "count", &protocol.ConfigOverrides{JSONSchema: schema}), newRecorder().emit)
		if err != nil || string(res.Structured) != `{"n":3}` {
			t.Fatalf("%+v %v", res, err)
		}
		if !strings.Contains(p.requests()[0].Messages[0].Content[0].Text, `"required":["n"]`) {
			t.Fatal("the schema was not given to the model")
		}
	})
	t.Run("retry then valid", func(t *testing.T) {
		p := newMem(step{text: []string{`{"n": "three"}`}}, step{text: []string{`{"n": 3}`}})
		a, _ := newAgent(t, p, nil)
		res, err := a.Run(testCtx(t), turnOf(protocol.InputText, "count", &protocol.ConfigOverrides{JSONSchema: schema}), newRecorder().emit)
		if err != nil || string(res.Structured) != `{"n":3}` {
			t.Fatalf("%+v %v", res, err)
		}
		retry := p.requests()[1]
		if txt := retry.Messages[len(retry.Messages)-1].Content[0].Text; !strings.Contains(txt, "not valid") {
			t.Fatalf("retry prompt %q", txt)
		}
	})
	t.Run("invalid after retry", func(t *testing.T) {
		p := newMem(step{text: []string{`{"n": "three"}`}}, step{text: []string{`no json`}})
		a, _ := newAgent(t, p, nil)
		rec := newRecorder()
		_, err := a.Run(testCtx(t), turnOf(protocol.InputText, "count", &protocol.ConfigOverrides{JSONSchema: schema}), rec.emit)
		var ae *agent.Error
		if !errors.As(err, &ae) || ae.Code != agent.CodeStructuredOutput {
			t.Fatalf("err %v", err)
		}
		if len(p.requests()) != 2 {
			t.Fatalf("%d calls", len(p.requests()))
		}
	})
	t.Run("bad schema", func(t *testing.T) {
		a, _ := newAgent(t, newMem(), nil)
		_, err := a.Run(testCtx(t), turnOf(protocol.InputText, "x", &protocol.ConfigOverrides{JSONSchema: json.RawMessage(`{"type": 12}`)}), newRecorder().emit)
		var ae *agent.Error
		if !errors.As(err, &ae) || ae.Code != agent.CodeBadRequest {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("no external refs", func(t *testing.T) {
		a, _ := newAgent(t, newMem(), nil)
		_, err := a.Run(testCtx(t), turnOf(protocol.InputText, "x", &protocol.ConfigOverrides{JSONSchema: json.RawMessage(`{"$ref": "file:///etc/passwd"}`)}), newRecorder().emit)
		var ae *agent.Error
		if !errors.As(err, &ae) || ae.Code != agent.CodeBadRequest {
			t.Fatalf("err %v", err)
		}
	})
}

func TestCancelDuringStreaming(t *testing.T) {
	t.Parallel()
	p := newMem(step{text: []string{"partial"}, block: true}, step{text: []string{"next"}})
	a, _ := newAgent(t, p, nil)
	ctx, cancel := context.WithCancel(testCtx(t))
	go func() { <-p.started; cancel() }()
	res, err := a.Run(ctx, textTurn("long"), newRecorder().emit)
	if !errors.Is(err, context.Canceled) || res.StopReason != agent.StopCancelled || res.Text != "partial" {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := a.Run(testCtx(t), textTurn("again"), newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	msgs := p.requests()[1].Messages
	roles := ""
	for _, m := range msgs {
		roles += m.Role[:1]
	}
	if roles != "uau" || !strings.Contains(msgs[1].Content[0].Text, "partial") {
		t.Fatalf("history after cancel: %s %+v", roles, msgs)
	}
}

func TestProviderErrorIsCoded(t *testing.T) {
	t.Parallel()
	p := newMem(step{err: &llm.Error{Kind: llm.KindRateLimited, Status: 429, RetryAfter: 3 * time.Second, Message: "rate limited"}})
	a, _ := newAgent(t, p, nil)
	rec := newRecorder()
	_, err := a.Run(testCtx(t), textTurn("x"), rec.emit)
	var ae *agent.Error
	if !errors.As(err, &ae) || ae.Code != agent.CodeProviderRateLimited || !ae.Retryable {
		t.Fatalf("err %v", err)
	}
	errs := rec.of(protocol.TypeAgentError)
	if len(errs) != 1 || !strings.Contains(errs[0].(*protocol.AgentError).Message, "retry after 3s") {
		t.Fatalf("agent.error %+v", errs)
	}
}

func TestSlashCommands(t *testing.T) {
	t.Parallel()
	p := newMem(step{text: []string{"answer"}})
	a, _ := newAgent(t, p, nil)
	if _, err := a.Run(testCtx(t), textTurn("q"), newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	run := func(line string) (agent.Result, *recorder) {
		t.Helper()
		rec := newRecorder()
		res, err := a.Run(testCtx(t), turnOf(protocol.InputSlashCommand, line, nil), rec.emit)
		if err != nil {
			t.Fatal(err)
		}
		return res, rec
	}
	if res, _ := run("/cost"); !strings.Contains(res.Final, "1 model calls, 10 input tokens, 5 output tokens") {
		t.Fatalf("/cost: %q", res.Final)
	}
	if res, rec := run("/mode plan"); a.Mode() != protocol.ModePlan || len(rec.of(protocol.TypeModeChanged)) != 1 {
		t.Fatalf("/mode: %q", res.Final)
	}
	if res, _ := run("/frobnicate"); !strings.Contains(res.Final, "Unknown command /frobnicate") {
		t.Fatalf("unknown: %q", res.Final)
	}
	if _, _ = run("/clear"); len(a.History()) != 0 {
		t.Fatal("/clear kept history")
	}
	if len(p.requests()) != 1 {
		t.Fatalf("slash commands called the model: %d calls", len(p.requests()))
	}
}

func TestPipedStdinAndFileList(t *testing.T) {
	t.Parallel()
	p := newMem(step{text: []string{"ok"}})
	a, _ := newAgent(t, p, nil)
	if _, err := a.Run(testCtx(t), turnOf(protocol.InputPipedStdin, "line one\nline two\n", nil), newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	txt := p.requests()[0].Messages[0].Content[0].Text
	if !strings.Contains(txt, "<stdin>\nline one\nline two\n</stdin>") {
		t.Fatalf("framing %q", txt)
	}

	p = newMem(step{text: []string{"ok"}})
	a, _ = newAgent(t, p, nil)
	refs := []protocol.FileReference{{RefID: "ref_1", Path: "src/a.go", Name: "a.go", WorkspaceRelativePath: "src/a.go"}}
	req := &protocol.PromptRequest{PromptText: "fix <@file:ref_1|src/a.go> please", FileReferences: refs}
	turn := agent.Turn{ID: "t", Request: req, Prompt: fileref.Parse(req.PromptText, refs)}
	if _, err := a.Run(testCtx(t), turn, newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	txt = p.requests()[0].Messages[0].Content[0].Text
	if want := "fix src/a.go please\n\nFiles the user referenced: src/a.go"; !strings.HasPrefix(txt, want) {
		t.Fatalf("file list %q", txt)
	}
}

func TestHugeInputTravelsCut(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 1<<20)
	p := newMem(
		step{tools: []llm.Block{toolCall("w", "Write", map[string]any{"file_path": "big.txt", "content": big})}},
		step{text: []string{"ok"}},
	)
	a, dir := newAgent(t, p, func(c *agent.Config) {
		c.Rules = &permission.Rules{Allow: []permission.Rule{{Tool: "Write"}}}
	})
	rec := newRecorder()
	if _, err := a.Run(testCtx(t), textTurn("write"), rec.emit); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "big.txt")); len(got) != len(big) {
		t.Fatalf("the tool got a cut input: %d bytes", len(got))
	}
	in := rec.of(protocol.TypeToolStarted)[0].(*protocol.ToolStarted).Input
	var fields map[string]string
	if err := json.Unmarshal(in, &fields); err != nil || len(in) > 64<<10 || fields["file_path"] != "big.txt" || !strings.Contains(fields["content"], "more bytes") {
		t.Fatalf("event input: %d bytes, %v", len(in), err)
	}
}

func TestModeSwitchWhileAskingRefusesBash(t *testing.T) {
	t.Parallel()
	p := newMem(step{tools: []llm.Block{toolCall("b", "Bash", map[string]any{"command": "touch ran.txt"})}}, step{text: []string{"ok"}})
	a, dir := newAgent(t, p, nil)
	rec := newRecorder()
	ctx := testCtx(t)
	go planThenAllow(ctx, t, a, rec)
	if _, err := a.Run(ctx, textTurn("run it"), rec.emit); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the command ran in plan mode: %v", err)
	}
	if f := rec.finished(); len(f) != 1 || f[0].Status != protocol.ToolDenied {
		t.Fatalf("finished %+v", f)
	}
	r := lastToolResults(p.requests()[1])
	if len(r) != 1 || !r[0].IsError || !strings.Contains(resultText(r[0]), "plan mode") {
		t.Fatalf("refusal %+v", r)
	}
}
