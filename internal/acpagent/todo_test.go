package acpagent_test

import (
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// ferry's agent's TodoWrite reaches the editor as ACP plans: one per list
// the tool accepted (the real ferry acp binary, the fake model), none for
// a list it refused (two items in progress).
func TestTodoWriteSentAsPlan(t *testing.T) {
	m := newModel(t)
	dir := workspace(t)
	todo := func(items ...map[string]any) fake.Reply {
		return fake.Reply{ToolCalls: []fake.ToolCall{{Name: "TodoWrite", Input: map[string]any{"todos": items}}}}
	}
	m.srv.Script(
		todo(map[string]any{"content": "Read", "status": "completed"}, map[string]any{"content": "Fix", "status": "in_progress", "activeForm": "Fixing"},
			map[string]any{"content": "Test", "status": "pending"}),
		todo(map[string]any{"content": "a", "status": "in_progress"}, map[string]any{"content": "b", "status": "in_progress"}),
		say("Planned."),
	)
	e := newEditor(t, dir, t.TempDir(), m.args()...)
	e.initialize(acp.ClientCapabilities{})
	s := e.newSession(dir)
	e.mustPrompt(s.SessionId, "plan it", acp.StopReasonEndTurn)
	e.mu.Lock()
	var plans [][]acp.PlanEntry
	for _, n := range e.updates {
		if n.Update.Plan != nil {
			plans = append(plans, n.Update.Plan.Entries)
		}
	}
	e.mu.Unlock()
	if len(plans) != 1 {
		t.Fatalf("%d plans, want 1 (the refused list is not one):\n%s", len(plans), e.dump())
	}
	p := plans[0]
	if len(p) != 3 || p[0].Content != "Read" || p[0].Status != acp.PlanEntryStatusCompleted ||
		p[1].Status != acp.PlanEntryStatusInProgress || p[2].Status != acp.PlanEntryStatusPending {
		t.Fatalf("plan %+v", p)
	}
}
