package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/protocol"
)

// router is an llm.Provider that answers the main agent from main and
// each sub-agent from the script of its task prompt (sub-agents run side
// by side, so one queue would answer them in a racy order). hook, when
// set, runs before each answer.
type router struct {
	main *memProvider
	subs map[string]*memProvider
	hook func(ctx context.Context, key string, req llm.Request)
}

var _ llm.Provider = (*router)(nil)

func (r *router) Name() string  { return "mem" }
func (r *router) Model() string { return "mem-1" }
func (r *router) CountTokens(context.Context, llm.Request) (int, error) {
	return 0, llm.ErrNoTokenCount
}

// subKey is the task prompt of a sub-agent's request, "" for the main
// agent's.
func subKey(req llm.Request) string {
	if !strings.Contains(req.System, "sub-agent of ferry's coding agent") || len(req.Messages) == 0 {
		return ""
	}
	return req.Messages[0].Content[0].Text
}

func (r *router) Stream(ctx context.Context, req llm.Request, on func(llm.Event) error) (*llm.Response, error) {
	key := subKey(req)
	if r.hook != nil {
		r.hook(ctx, key, req)
	}
	p := r.main
	if key != "" {
		p = r.subs[key]
	}
	if p == nil {
		return nil, &llm.Error{Kind: llm.KindBadRequest, Message: "no script for " + key}
	}
	return p.Stream(ctx, req, on)
}

func specNames(req llm.Request) []string {
	names := make([]string, len(req.Tools))
	for i, s := range req.Tools {
		names[i] = s.Name
	}
	return names
}

func task(id, description, prompt string) llm.Block {
	return toolCall(id, agent.TaskToolName, map[string]any{"description": description, "prompt": prompt})
}

func toolResultByID(req llm.Request, id string) (llm.Block, bool) {
	for _, b := range lastToolResults(req) {
		if b.ToolUseID == id {
			return b, true
		}
	}
	return llm.Block{}, false
}

// TestTaskSubAgentsRunConcurrently: two Task calls in one message run side
// by side (both sub-agents' first model requests arrive before either is
// answered), each in a fresh context without Task, their tool events name
// their Task call, their text is not streamed, the parent gets only each
// final answer in call order, and every call's usage counts.
func TestTaskSubAgentsRunConcurrently(t *testing.T) {
	t.Parallel()
	both := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	firsts := map[string]bool{}
	overlapped := true
	r := &router{
		main: newMem(
			step{text: []string{"Let me ask two helpers."}, tools: []llm.Block{task("k1", "Read a", "TASK A: what does a.txt say?"), task("k2", "Read b", "TASK B: what does b.txt say?")}},
			step{text: []string{"a says alpha, b says beta."}},
		),
		subs: map[string]*memProvider{
			"TASK A: what does a.txt say?": newMem(
				step{text: []string{"sub A thinking"}, tools: []llm.Block{toolCall("a1", "Read", map[string]any{"file_path": "a.txt"})}},
				step{text: []string{"a.txt says alpha"}},
			),
			"TASK B: what does b.txt say?": newMem(
				step{tools: []llm.Block{toolCall("b1", "Read", map[string]any{"file_path": "b.txt"})}},
				step{text: []string{"b.txt says beta"}},
			),
		},
	}
	r.hook = func(ctx context.Context, key string, req llm.Request) {
		if key == "" || len(req.Messages) != 1 {
			return
		}
		mu.Lock()
		firsts[key] = true
		if len(firsts) == 2 {
			once.Do(func() { close(both) })
		}
		mu.Unlock()
		select {
		case <-both:
		case <-time.After(5 * time.Second):
			mu.Lock()
			overlapped = false // the other sub-agent never started meanwhile
			mu.Unlock()
		case <-ctx.Done():
		}
	}
	a, dir := newAgent(t, r, nil)
	for name, text := range map[string]string{"a.txt": "alpha\n", "b.txt": "beta\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rec := newRecorder()
	res, err := a.Run(testCtx(t), textTurn("what do a and b say?"), rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	if !overlapped {
		t.Fatal("the two sub-agents did not run at the same time: one's first model request waited for the other to finish")
	}
	if res.Final != "a says alpha, b says beta." || res.NumTurns != 2 {
		t.Fatalf("result %+v", res)
	}
	mainReqs := r.main.requests()
	if !slices.Contains(specNames(mainReqs[0]), agent.TaskToolName) {
		t.Fatalf("Task not offered: %v", specNames(mainReqs[0]))
	}
	results := lastToolResults(mainReqs[1])
	if len(results) != 2 || results[0].ToolUseID != "k1" || results[1].ToolUseID != "k2" {
		t.Fatalf("results not in call order: %+v", results)
	}
	if got := resultText(results[0]); got != "a.txt says alpha" || results[0].IsError {
		t.Fatalf("k1 result %q", got)
	}
	if got := resultText(results[1]); got != "b.txt says beta" {
		t.Fatalf("k2 result %q", got)
	}
	for key, p := range r.subs {
		reqs := p.requests()
		first := reqs[0]
		if len(first.Messages) != 1 || first.Messages[0].Content[0].Text != key {
			t.Fatalf("sub-agent's context is not fresh: %+v", first.Messages)
		}
		if names := specNames(first); slices.Contains(names, agent.TaskToolName) || slices.Contains(names, "Write") || !slices.Contains(names, "Read") {
			t.Fatalf("sub-agent offered %v", names)
		}
		if !strings.Contains(first.System, "read-only") {
			t.Fatalf("sub-agent's system prompt %q", first.System)
		}
	}
	parents := map[string]string{}
	for _, e := range rec.of(protocol.TypeToolStarted) {
		s := e.(*protocol.ToolStarted)
		parents[s.ToolUseID] = s.ParentToolUseID
	}
	if parents["a1"] != "k1" || parents["b1"] != "k2" || parents["k1"] != "" || parents["k2"] != "" {
		t.Fatalf("parent_tool_use_id of the started events %v", parents)
	}
	for _, f := range rec.finished() {
		if want := map[string]string{"a1": "k1", "b1": "k2"}[f.ToolUseID]; f.ParentToolUseID != want || f.Status != protocol.ToolOK {
			t.Fatalf("finished %s: parent %q status %s", f.ToolUseID, f.ParentToolUseID, f.Status)
		}
	}
	for _, d := range rec.of(protocol.TypeTextDelta) {
		if strings.Contains(d.(*protocol.TextDelta).Delta, "sub A") {
			t.Fatal("a sub-agent's text was streamed as the turn's")
		}
	}
	// 2 main calls + 2×2 sub-agent calls, 10 in and 5 out each.
	u, _, _ := a.Usage()
	if u.InputTokens != 60 || u.OutputTokens != 30 || res.Usage.InputTokens != 60 {
		t.Fatalf("session usage %+v, prompt usage %+v: want the sub-agents' calls counted", u, res.Usage)
	}
	us := rec.of(protocol.TypeUsage)
	if last := us[len(us)-1].(*protocol.Usage); len(us) != 6 || last.InputTokens != 60 {
		t.Fatalf("%d usage events, last %+v", len(us), us[len(us)-1])
	}
	// The main history holds only the Task calls and answers.
	for _, m := range a.History() {
		for _, b := range m.Content {
			if b.ToolUseID == "a1" || b.ToolUseID == "b1" {
				t.Fatal("a sub-agent's call is in the main agent's history")
			}
		}
	}
}

// TestTaskSubAgentIsReadOnly: a sub-agent's Write is refused in default
// mode without an allow rule, and in plan mode even with one; with an
// allow rule in default mode it is offered and runs.
func TestTaskSubAgentIsReadOnly(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		mode    string
		allow   []permission.Rule
		offered bool
		written bool
		refusal string
	}{
		{"default without allow rule", protocol.ModeDefault, nil, false, false, "sub-agent is read-only"},
		{"plan with allow rule", protocol.ModePlan, []permission.Rule{{Tool: "Write"}}, false, false, "plan mode"},
		{"review with allow rule", protocol.ModeReview, []permission.Rule{{Tool: "Write"}}, false, false, "review mode"},
		{"default with allow rule", protocol.ModeDefault, []permission.Rule{{Tool: "Write"}}, true, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const prompt = "write out.txt"
			r := &router{
				main: newMem(step{tools: []llm.Block{task("k", "Write a file", prompt)}}, step{text: []string{"ok"}}),
				subs: map[string]*memProvider{prompt: newMem(
					step{tools: []llm.Block{
						toolCall("w", "Write", map[string]any{"file_path": "out.txt", "content": "x"}),
						toolCall("sh", "Bash", map[string]any{"command": "touch bash.txt"}),
					}},
					step{text: []string{"done"}},
				)},
			}
			a, dir := newAgent(t, r, func(c *agent.Config) {
				c.Mode = tc.mode
				c.Rules = &permission.Rules{Allow: tc.allow}
			})
			rec := newRecorder()
			if _, err := a.Run(testCtx(t), textTurn("go"), rec.emit); err != nil {
				t.Fatal(err)
			}
			sub := r.subs[prompt].requests()
			if got := slices.Contains(specNames(sub[0]), "Write"); got != tc.offered {
				t.Fatalf("Write offered %v, want %v (%v)", got, tc.offered, specNames(sub[0]))
			}
			_, err := os.Stat(filepath.Join(dir, "out.txt"))
			if written := err == nil; written != tc.written {
				t.Fatalf("written %v, want %v", written, tc.written)
			}
			if _, err := os.Stat(filepath.Join(dir, "bash.txt")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a sub-agent's Bash touched a file: %v", err)
			}
			w, _ := toolResultByID(sub[1], "w")
			if tc.refusal != "" && (!w.IsError || !strings.Contains(resultText(w), tc.refusal)) {
				t.Fatalf("Write result %q, want a refusal naming %q", resultText(w), tc.refusal)
			}
			if sh, _ := toolResultByID(sub[1], "sh"); !sh.IsError || !strings.Contains(resultText(sh), "Refused") {
				t.Fatalf("Bash result %q, want refused", resultText(sh))
			}
			if len(rec.of(protocol.TypeInteractionRequest)) != 0 {
				t.Fatal("a read-only sub-agent asked the user")
			}
		})
	}
}

// TestTaskSubAgentAsksThroughTheSession: a call of a sub-agent that the
// rules ask about reaches the user as the session's interaction request,
// naming the sub-agent's call, and the session's Answer lets it run.
func TestTaskSubAgentAsksThroughTheSession(t *testing.T) {
	t.Parallel()
	const prompt = "read secret.txt"
	r := &router{
		main: newMem(step{tools: []llm.Block{task("k", "Read the secret", prompt)}}, step{text: []string{"ok"}}),
		subs: map[string]*memProvider{prompt: newMem(
			step{tools: []llm.Block{toolCall("rs", "Read", map[string]any{"file_path": "secret.txt"})}},
			step{text: []string{"the secret is 42"}},
		)},
	}
	a, dir := newAgent(t, r, func(c *agent.Config) {
		c.Rules = &permission.Rules{Ask: []permission.Rule{{Tool: "Read", Pattern: "secret.txt"}}}
	})
	if err := os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("42\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	ctx := testCtx(t)
	asked := make(chan *protocol.InteractionRequest, 1)
	go func() {
		select {
		case ir := <-rec.asks:
			asked <- ir
			_ = a.Answer(ir.InteractionID, &protocol.InteractionResponse{SelectedValue: protocol.Single(protocol.AllowOnce)})
		case <-ctx.Done():
		}
	}()
	if _, err := a.Run(ctx, textTurn("go"), rec.emit); err != nil {
		t.Fatal(err)
	}
	ir := <-asked
	if ir.ToolUseID != "rs" || ir.ToolName != "Read" {
		t.Fatalf("interaction %+v: want the sub-agent's call", ir)
	}
	res, _ := toolResultByID(r.main.requests()[1], "k")
	if resultText(res) != "the secret is 42" {
		t.Fatalf("Task result %q", resultText(res))
	}
}

// TestTaskCancelStopsAllSubAgents: a cancel while two sub-agents wait on
// the model stops both at once; every call gets a result and the session
// takes its next prompt.
func TestTaskCancelStopsAllSubAgents(t *testing.T) {
	t.Parallel()
	subA, subB := newMem(step{block: true}), newMem(step{block: true})
	r := &router{
		main: newMem(step{tools: []llm.Block{task("k1", "one", "SLOW A"), task("k2", "two", "SLOW B")}}, step{text: []string{"after"}}),
		subs: map[string]*memProvider{"SLOW A": subA, "SLOW B": subB},
	}
	a, _ := newAgent(t, r, nil)
	rec := newRecorder()
	ctx, cancel := context.WithCancel(testCtx(t))
	go func() {
		<-subA.started
		<-subB.started
		cancel()
	}()
	start := time.Now()
	res, err := a.Run(ctx, textTurn("go"), rec.emit)
	if !errors.Is(err, context.Canceled) || res.StopReason != agent.StopCancelled {
		t.Fatalf("err %v, stop %s", err, res.StopReason)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("cancel took %v", d)
	}
	fin := rec.finished()
	if len(fin) != 2 {
		t.Fatalf("finished %+v", fin)
	}
	for _, f := range fin {
		if f.Status != protocol.ToolCancelled {
			t.Fatalf("Task %s ended %s, want cancelled", f.ToolUseID, f.Status)
		}
	}
	if _, err := a.Run(testCtx(t), textTurn("again"), rec.emit); err != nil {
		t.Fatalf("next prompt: %v", err)
	}
	if r := lastToolResults(r.main.requests()[1]); len(r) != 2 || !r[0].IsError || !r[1].IsError {
		t.Fatalf("cancelled calls' results %+v", r)
	}
}

// TestTaskNoNestingBoundedTurnsBadInput: a sub-agent's Task call is
// refused (Task is not offered to it either), a sub-agent stops at its
// turn limit, and a Task call without a prompt is refused naming the
// field.
func TestTaskNoNestingBoundedTurnsBadInput(t *testing.T) {
	t.Parallel()
	read := func(id string) step {
		return step{tools: []llm.Block{toolCall(id, "Glob", map[string]any{"pattern": "*"})}}
	}
	r := &router{
		main: newMem(
			step{tools: []llm.Block{task("k1", "nest", "NEST"), toolCall("k2", agent.TaskToolName, map[string]any{"description": "x"})}},
			step{tools: []llm.Block{task("k3", "loop", "LOOP")}},
			step{text: []string{"ok"}},
		),
		subs: map[string]*memProvider{
			"NEST": newMem(step{tools: []llm.Block{task("n", "inner", "INNER")}}, step{text: []string{"could not nest"}}),
			"LOOP": newMem(read("g1"), read("g2"), read("g3")),
		},
	}
	a, _ := newAgent(t, r, func(c *agent.Config) { c.TaskMaxTurns = 2 })
	rec := newRecorder()
	if _, err := a.Run(testCtx(t), textTurn("go"), rec.emit); err != nil {
		t.Fatal(err)
	}
	nest := r.subs["NEST"].requests()
	if slices.Contains(specNames(nest[0]), agent.TaskToolName) {
		t.Fatal("Task offered to a sub-agent")
	}
	if n, _ := toolResultByID(nest[1], "n"); !n.IsError || !strings.Contains(resultText(n), "cannot start sub-agents") {
		t.Fatalf("nested Task result %q", resultText(n))
	}
	main := r.main.requests()
	if k2, _ := toolResultByID(main[1], "k2"); !k2.IsError || !strings.Contains(resultText(k2), "prompt") {
		t.Fatalf("Task without prompt: %q", resultText(k2))
	}
	if len(r.subs["LOOP"].requests()) != 2 {
		t.Fatalf("the sub-agent made %d model calls, want its limit 2", len(r.subs["LOOP"].requests()))
	}
	if k3, _ := toolResultByID(main[2], "k3"); !strings.Contains(resultText(k3), "limit of 2 turns") {
		t.Fatalf("bounded sub-agent's result %q", resultText(k3))
	}
}

// TestTaskSubAgentArtifacts: a file a sub-agent hands to the user (its
// rules allow the Write) comes as an agent.artifact naming the
// sub-agent's call, and belongs to the prompt's result and to the
// message of the Task call.
func TestTaskSubAgentArtifacts(t *testing.T) {
	t.Parallel()
	const prompt = "write report.md"
	r := &router{
		main: newMem(step{tools: []llm.Block{task("k", "Write the report", prompt)}}, step{text: []string{"ok"}}),
		subs: map[string]*memProvider{prompt: newMem(
			step{tools: []llm.Block{toolCall("w", "Write", map[string]any{"file_path": "report.md", "content": "# Report\n"})}},
			step{text: []string{"wrote report.md"}},
		)},
	}
	a, _ := newAgent(t, r, func(c *agent.Config) {
		c.Artifacts = true
		c.Rules = &permission.Rules{Allow: []permission.Rule{{Tool: "Write"}}}
	})
	rec := newRecorder()
	res, err := a.Run(testCtx(t), textTurn("go"), rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Artifacts) != 1 || res.Artifacts[0].Path() != "report.md" || res.Artifacts[0].ToolUseID() != "w" {
		t.Fatalf("result artifacts %+v", res.Artifacts)
	}
	evs := rec.of(protocol.TypeArtifact)
	if len(evs) != 1 || evs[0].(*protocol.Artifact).ToolUseID != "w" {
		t.Fatalf("artifact events %+v", evs)
	}
	var onTask int
	for _, m := range a.History() {
		if m.Role == llm.RoleAssistant && slices.ContainsFunc(m.Content, func(b llm.Block) bool { return b.ToolUseID == "k" }) {
			onTask = len(m.Artifacts)
		}
	}
	if onTask != 1 {
		t.Fatalf("%d artifacts on the Task call's message, want 1", onTask)
	}
}

// TestTaskAskedRunsOneAtATime: Task calls the rules ask about are asked
// and run one by one (an answer may change the rules the next call
// reads), and still run when allowed.
func TestTaskAskedRunsOneAtATime(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	running, most := 0, 0
	r := &router{
		main: newMem(step{tools: []llm.Block{task("k1", "one", "ONE"), task("k2", "two", "TWO")}}, step{text: []string{"ok"}}),
		subs: map[string]*memProvider{"ONE": newMem(step{text: []string{"1"}}), "TWO": newMem(step{text: []string{"2"}})},
	}
	r.hook = func(context.Context, string, llm.Request) {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		time.Sleep(50 * time.Millisecond)
		mu.Lock()
		running--
		mu.Unlock()
	}
	a, _ := newAgent(t, r, func(c *agent.Config) {
		c.Rules = &permission.Rules{Ask: []permission.Rule{{Tool: agent.TaskToolName}}}
	})
	rec := newRecorder()
	ctx := testCtx(t)
	go func() {
		for {
			select {
			case ir := <-rec.asks:
				_ = a.Answer(ir.InteractionID, &protocol.InteractionResponse{SelectedValue: protocol.Single(protocol.AllowOnce)})
			case <-ctx.Done():
				return
			}
		}
	}()
	if _, err := a.Run(ctx, textTurn("go"), rec.emit); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.of(protocol.TypeInteractionRequest)); n != 2 {
		t.Fatalf("asked %d times, want 2", n)
	}
	rs := lastToolResults(r.main.requests()[1])
	if len(rs) != 2 || resultText(rs[0]) != "1" || resultText(rs[1]) != "2" {
		t.Fatalf("results %+v", rs)
	}
	if most != 1 {
		t.Fatalf("%d model calls at once, want the asked Task calls one at a time", most)
	}
}
