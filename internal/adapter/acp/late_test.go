package acp

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter/acp/acppeer"
	"github.com/ferry-dev/ferry/protocol"
)

// A cancelled prompt that the agent answers only after Run returned
// (opencode takes longer than cancelWait): nothing of that turn is
// emitted once Run has returned (not the text, the call's end or the
// usage the agent still sends), the call it left open is finished
// cancelled before Run returns, and the next prompt gets only its own
// events.
func TestNothingEmittedAfterACancelledRunReturned(t *testing.T) {
	t.Parallel()
	p := newPeer(t, acppeer.Script{Turns: [][]step{
		{
			{Update: map[string]any{"sessionUpdate": "tool_call", "toolCallId": "call_open", "title": "make", "kind": "execute", "status": "in_progress", "rawInput": map[string]any{"command": "make"}}},
			{Text: "working"},
			{WaitCancel: true},
			{Text: "late"},
			{Update: map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "call_open", "status": "failed"}},
			{Respond: map[string]any{"stopReason": "cancelled", "usage": map[string]any{"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}}},
		},
		{{Text: "next"}},
	}})
	p.a.cancelWait = 0 // Run returns before the agent can have answered
	s := p.open(t, "")
	rec := newRecorder()
	var (
		mu       sync.Mutex
		returned bool
		late     []string
	)
	emit := func(ctx context.Context, typ string, payload any) error {
		mu.Lock()
		defer mu.Unlock()
		if returned {
			late = append(late, typ)
			return errors.New("the turn's Run has returned")
		}
		return rec.Emit(ctx, typ, payload)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		wctx, stop := context.WithTimeout(ctx, 30*time.Second)
		defer stop()
		rec.WaitFor(wctx, protocol.TypeTextDelta)
		cancel()
	}()
	res, err := s.Run(ctx, turn("go"), emit)
	mu.Lock()
	returned = true
	mu.Unlock()
	if res.StopReason != protocol.StopCancelled || !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	var finished *protocol.ToolFinished
	for _, f := range rec.Finished() {
		if f.ToolUseID == "call_open" {
			finished = f
		}
	}
	if finished == nil || finished.Status != protocol.ToolCancelled {
		t.Errorf("the open call finished as %+v before Run returned (events %v)", finished, rec.Types())
	}
	rec2, res, err := run(t, s, turn("again"))
	if err != nil || res.Text != "next" || len(rec2.Events()) != 1 {
		t.Fatalf("the next prompt: %+v, %v, events %v", res, err, rec2.Types())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(late) > 0 {
		t.Errorf("%d events after Run returned: %v", len(late), late)
	}
}
