package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/tools"
)

// noopTool is the trivial tool of the benchmark: the loop's cost, not a
// tool's, is measured.
type noopTool struct{}

func (noopTool) Name() string                 { return "Noop" }
func (noopTool) Description() string          { return "does nothing" }
func (noopTool) InputSchema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (noopTool) ReadOnly() bool               { return true }
func (noopTool) Run(context.Context, *tools.Env, json.RawMessage) (*tools.Result, error) {
	return &tools.Result{Blocks: tools.Text("ok")}, nil
}

// pingPong answers a prompt with one Noop call, and the call's result
// with a short text: two model calls a prompt, no I/O.
type pingPong struct{}

func (pingPong) Name() string  { return "mem" }
func (pingPong) Model() string { return "mem-1" }
func (pingPong) CountTokens(context.Context, llm.Request) (int, error) {
	return 0, llm.ErrNoTokenCount
}

var (
	noopInput = json.RawMessage(`{"x":1}`)
	callMsg   = llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockToolUse, ToolUseID: "t1", ToolName: "Noop", Input: noopInput}}}
	doneMsg   = llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockText, Text: "done"}}}
)

func (pingPong) Stream(_ context.Context, req llm.Request, on func(llm.Event) error) (*llm.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Content[0].Type == llm.BlockToolResult {
		if err := on(llm.Event{Type: llm.EventTextDelta, Text: "done"}); err != nil {
			return nil, err
		}
		return &llm.Response{Message: doneMsg, StopReason: llm.StopEndTurn, Usage: llm.Usage{InputTokens: 1, OutputTokens: 1}}, nil
	}
	b := callMsg.Content[0]
	if err := on(llm.Event{Type: llm.EventToolUse, Block: &b}); err != nil {
		return nil, err
	}
	return &llm.Response{Message: callMsg, StopReason: llm.StopToolUse, Usage: llm.Usage{InputTokens: 1, OutputTokens: 1}}, nil
}

// BenchmarkLoopIteration measures the loop's own cost per iteration (one
// model call and its tool call), without the model: the in-memory provider
// answers at once and the tool does nothing. Each op is one prompt of two
// iterations (the call, then the final answer); µs/iteration is reported.
func BenchmarkLoopIteration(b *testing.B) {
	a, err := agent.New(agent.Config{Provider: pingPong{}, Workspace: b.TempDir(), Tools: []tools.Tool{noopTool{}}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = a.Close() }()
	emit := func(context.Context, string, any) error { return nil }
	turn := textTurn("go")
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := a.Run(ctx, turn, emit)
		if err != nil || res.NumTurns != 2 {
			b.Fatalf("%+v %v", res, err)
		}
		if err := a.Clear(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/2, "µs/iteration")
}
