package adaptertest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/protocol"
)

func TestRecorderKeepsEventsInOrder(t *testing.T) {
	t.Parallel()
	r := NewRecorder()
	ctx := context.Background()
	_ = r.Emit(ctx, protocol.TypeTextDelta, &protocol.TextDelta{TurnID: "t", Delta: "a"})
	_ = r.Emit(ctx, protocol.TypeTextDelta, &protocol.TextDelta{TurnID: "t", Delta: "hm", Channel: "thinking"})
	_ = r.Emit(ctx, protocol.TypeTextDelta, &protocol.TextDelta{TurnID: "t", Delta: "b", Channel: "text"})
	_ = r.Emit(ctx, protocol.TypeToolFinished, &protocol.ToolFinished{TurnID: "t", ToolUseID: "u", ToolName: "Read", Status: protocol.ToolOK})
	_ = r.Emit(ctx, protocol.TypeAgentError, &protocol.AgentError{TurnID: "t", Code: protocol.AgentCodeInternal, Message: "m"})
	want := []string{protocol.TypeTextDelta, protocol.TypeTextDelta, protocol.TypeTextDelta, protocol.TypeToolFinished, protocol.TypeAgentError}
	if got := r.Types(); !slices.Equal(got, want) {
		t.Errorf("Types = %v, want %v", got, want)
	}
	if r.Text("") != "ab" || r.Text("text") != "ab" || r.Text("thinking") != "hm" {
		t.Errorf("Text = %q, %q, %q", r.Text(""), r.Text("text"), r.Text("thinking"))
	}
	if r.Count(protocol.TypeTextDelta) != 3 || len(r.Finished()) != 1 || len(r.Errors()) != 1 || len(r.OfType(protocol.TypeAgentError)) != 1 {
		t.Errorf("Count %d, Finished %v, Errors %v", r.Count(protocol.TypeTextDelta), r.Finished(), r.Errors())
	}
}

func TestRecorderSignalsAsksAndTypes(t *testing.T) {
	t.Parallel()
	r := NewRecorder()
	var seen []string
	r.OnEvent = func(e Event) { seen = append(seen, e.Type) }
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ir := &protocol.InteractionRequest{InteractionID: "i"}
	_ = r.Emit(ctx, protocol.TypeInteractionRequest, ir)
	_ = r.Emit(ctx, protocol.TypeToolUpdated, &protocol.ToolUpdated{})
	if got := r.NextAsk(t, ctx); got != ir {
		t.Errorf("NextAsk = %v", got)
	}
	if !r.WaitFor(ctx, protocol.TypeToolUpdated) {
		t.Error("WaitFor missed agent.tool.updated")
	}
	short, stop := context.WithTimeout(ctx, 10*time.Millisecond)
	defer stop()
	if r.WaitFor(short, protocol.TypeToolUpdated) {
		t.Error("WaitFor saw an event twice")
	}
	if len(seen) != 2 {
		t.Errorf("OnEvent saw %v", seen)
	}
}

func TestZeroRecorderRecords(t *testing.T) {
	t.Parallel()
	var r Recorder
	_ = r.Emit(context.Background(), protocol.TypeInteractionRequest, &protocol.InteractionRequest{})
	if len(r.Events()) != 1 {
		t.Errorf("Events = %v", r.Events())
	}
}

func TestCheckEvent(t *testing.T) {
	t.Parallel()
	if err := CheckEvent(protocol.TypeTextDelta, &protocol.TextDelta{TurnID: "t", Delta: "x"}); err != nil {
		t.Errorf("valid delta: %v", err)
	}
	if err := CheckEvent(protocol.TypeTextDone, &protocol.TextDone{TurnID: "t"}); err == nil {
		t.Error("agent.text.done passed: the client sends it, not the adapter")
	}
	if err := CheckEvent(protocol.TypeTextDelta, &protocol.TextDelta{Delta: "x"}); err == nil {
		t.Error("a delta without turn_id passed")
	}
}

func TestLogBuffer(t *testing.T) {
	t.Parallel()
	var l LogBuffer
	l.Logger().Debug("hello", "k", "v")
	if s := l.String(); !strings.Contains(s, "hello") || !strings.Contains(s, "k=v") {
		t.Errorf("log = %q", s)
	}
}

func TestSegmentTurn(t *testing.T) {
	t.Parallel()
	tn := SegmentTurn(t, "turn-1", TextSegment("look at "), FileSegment("src/a.go", "@src/a.go"))
	if tn.ID != "turn-1" || tn.Request == nil || len(tn.Request.FileReferences) != 1 || tn.Request.FileReferences[0].Path != "src/a.go" {
		t.Fatalf("turn = %+v", tn)
	}
	if tn.Prompt.Literal() == "" {
		t.Error("the prompt did not parse")
	}
}
