package agent_test

import (
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/protocol"
)

// A denial's note reaches the model in the denied call's tool result, for
// a change approved by the tool (Write) and for a call approved before it
// runs (Bash).
func TestDenyNoteReachesTheModel(t *testing.T) {
	t.Parallel()
	for _, call := range []llm.Block{
		toolCall("w", "Write", map[string]any{"file_path": "f.txt", "content": "x"}),
		toolCall("b", "Bash", map[string]any{"command": "mv a b"}),
	} {
		t.Run(call.ToolName, func(t *testing.T) {
			p := newMem(step{tools: []llm.Block{call}}, step{text: []string{"ok"}})
			a, _ := newAgent(t, p, nil)
			rec := newRecorder()
			ctx := testCtx(t)
			go func() {
				select {
				case ir := <-rec.asks:
					if err := a.Answer(ir.InteractionID, &protocol.InteractionResponse{InteractionID: ir.InteractionID,
						SelectedValue: protocol.Single(protocol.Deny), Note: "use git mv instead"}); err != nil {
						t.Error(err)
					}
				case <-ctx.Done():
				}
			}()
			if _, err := a.Run(ctx, textTurn("go"), rec.emit); err != nil {
				t.Fatal(err)
			}
			r := lastToolResults(p.requests()[1])
			if len(r) != 1 || !strings.Contains(resultText(r[0]), `said: "use git mv instead"`) {
				t.Fatalf("tool result %+v does not carry the note", r)
			}
			if f := rec.finished(); len(f) != 1 || f[0].Status != protocol.ToolDenied {
				t.Fatalf("finished %+v", f)
			}
		})
	}
}

// SetModel applies from the next turn: the model call and the usage name
// the picked model, with its effort.
func TestSetModelAppliesToTheNextTurn(t *testing.T) {
	t.Parallel()
	p := newMem(step{text: []string{"a"}}, step{text: []string{"b"}})
	a, _ := newAgent(t, p, nil)
	rec := newRecorder()
	if _, err := a.Run(testCtx(t), textTurn("one"), rec.emit); err != nil {
		t.Fatal(err)
	}
	a.SetModel("picked", llm.EffortHigh)
	if _, err := a.Run(testCtx(t), textTurn("two"), rec.emit); err != nil {
		t.Fatal(err)
	}
	reqs := p.requests()
	if reqs[0].Model != "mem-1" || reqs[0].Effort != "" {
		t.Fatalf("first turn asked model %q effort %q, want the provider's mem-1", reqs[0].Model, reqs[0].Effort)
	}
	if reqs[1].Model != "picked" || reqs[1].Effort != llm.EffortHigh {
		t.Fatalf("second turn asked model %q effort %q, want picked high", reqs[1].Model, reqs[1].Effort)
	}
	us := rec.of(protocol.TypeUsage)
	if got := us[len(us)-1].(*protocol.Usage).Model; got != "picked" {
		t.Fatalf("usage names model %q, want picked", got)
	}
}
