package claudecode

import (
	"context"
	"testing"

	"github.com/ferry-dev/ferry/internal/vfs"
	"github.com/ferry-dev/ferry/protocol"
)

// TestSubagentCallsNameTheirTask: the tool calls of a Claude Code
// subagent (lines with parent_tool_use_id) go out with
// parent_tool_use_id = the Task call, also when a cancel ends them
// unanswered; the Task call itself and the subagent's text do not.
func TestSubagentCallsNameTheirTask(t *testing.T) {
	dir := t.TempDir()
	ws, err := vfs.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	tr := nopTurn(t, ws, dir)
	type ev struct {
		typ     string
		payload any
	}
	var evs []ev
	inner := tr.emit
	tr.emit = func(ctx context.Context, typ string, payload any) error {
		evs = append(evs, ev{typ, payload})
		return inner(ctx, typ, payload)
	}
	for _, s := range []string{
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"toolu_task","name":"Task","input":{"description":"look","prompt":"find it"}}]}}`,
		`{"type":"assistant","parent_tool_use_id":"toolu_task","message":{"id":"m2","content":[{"type":"text","text":"sub text"},{"type":"tool_use","id":"toolu_sub1","name":"Grep","input":{"pattern":"x"}},{"type":"tool_use","id":"toolu_sub2","name":"Read","input":{"file_path":"a.txt"}}]}}`,
		`{"type":"user","parent_tool_use_id":"toolu_task","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_sub1","content":"a.txt:1:x"}]}}`,
	} {
		l, err := decodeLine([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		tr.handle(l)
	}
	tr.finishOpen(protocol.ToolCancelled, "cancelled")
	got := map[string]string{}
	for _, e := range evs {
		switch p := e.payload.(type) {
		case *protocol.ToolStarted:
			got["started "+p.ToolUseID] = p.ParentToolUseID
		case *protocol.ToolFinished:
			got["finished "+p.ToolUseID] = p.ParentToolUseID
		case *protocol.TextDelta:
			t.Errorf("a subagent's text went out: %q", p.Delta)
		}
	}
	want := map[string]string{
		"started toolu_task": "", "started toolu_sub1": "toolu_task", "started toolu_sub2": "toolu_task",
		"finished toolu_sub1": "toolu_task", "finished toolu_sub2": "toolu_task", "finished toolu_task": "",
	}
	for k, w := range want {
		if v, ok := got[k]; !ok || v != w {
			t.Errorf("%s: parent %q (sent %v), want %q", k, v, ok, w)
		}
	}
}
