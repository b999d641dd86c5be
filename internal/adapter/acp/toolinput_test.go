package acp

import (
	"encoding/json"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter/acp/acppeer"
	"github.com/ferry-dev/ferry/protocol"
)

// An agent may announce a call before its input is known (opencode: a
// tool_call with status pending and rawInput {}) and send the input in a
// tool_call_update. agent.tool.started waits for it, so the event carries
// the call's real input, and still comes first: before the call's title,
// its interaction and its end, also for a call whose input never comes.
func TestToolStartedWaitsForAnnouncedInput(t *testing.T) {
	t.Parallel()
	empty := map[string]any{}
	p := newPeer(t, acppeer.Script{Turns: [][]step{{
		// The input comes in an update (opencode's read).
		{Update: map[string]any{"sessionUpdate": "tool_call", "toolCallId": "call_read", "title": "read", "kind": "read", "status": "pending", "locations": []any{}, "rawInput": empty}},
		{Update: map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "call_read", "status": "in_progress", "kind": "read", "title": "read",
			"locations": []any{map[string]any{"path": "notes.txt"}}, "rawInput": map[string]any{"filePath": "notes.txt"}}},
		{Update: map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "call_read", "status": "completed", "title": "notes.txt",
			"content": []any{map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": "pelican"}}}}},
		// No input ever: the call starts when it ends.
		{Update: map[string]any{"sessionUpdate": "tool_call", "toolCallId": "call_none", "title": "think", "kind": "think", "status": "pending", "rawInput": empty}},
		{Update: map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "call_none", "status": "completed"}},
		// Still announced when its permission is asked.
		{Update: map[string]any{"sessionUpdate": "tool_call", "toolCallId": "call_ask", "title": "bash", "kind": "execute", "status": "pending", "rawInput": empty}},
		{Request: &acppeer.Request{Method: "session/request_permission", Params: map[string]any{
			"sessionId": acppeer.SessionID,
			"toolCall":  map[string]any{"toolCallId": "call_ask", "title": "make", "kind": "execute", "rawInput": map[string]any{"command": "make"}},
			"options":   []any{map[string]any{"optionId": "once", "kind": "allow_once", "name": "Allow once"}, map[string]any{"optionId": "reject", "kind": "reject_once", "name": "Reject"}},
		}}},
		// Announced and then left open: the turn's end still starts it.
		{Update: map[string]any{"sessionUpdate": "tool_call", "toolCallId": "call_open", "title": "glob", "kind": "search", "status": "pending"}},
		{Respond: map[string]any{"stopReason": "end_turn"}},
	}}})
	s := p.open(t, "")
	rec := newRecorder()
	go func() {
		for ir := range rec.Asks {
			_ = s.Answer(ir.InteractionID, &protocol.InteractionResponse{InteractionID: ir.InteractionID, SelectedValue: protocol.Single(protocol.Deny)})
		}
	}()
	res, err := s.Run(t.Context(), turn("go"), rec.emit)
	if err != nil || res.StopReason != protocol.StopEndTurn {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	started := map[string]*protocol.ToolStarted{}
	for _, e := range rec.Events() {
		var id string
		switch p := e.Payload.(type) {
		case *protocol.ToolStarted:
			if started[p.ToolUseID] != nil {
				t.Errorf("%s started twice", p.ToolUseID)
			}
			started[p.ToolUseID] = p
			continue
		case *protocol.ToolUpdated:
			id = p.ToolUseID
		case *protocol.ToolFinished:
			id = p.ToolUseID
		case *protocol.InteractionRequest:
			id = p.ToolUseID
		default:
			continue
		}
		if started[id] == nil {
			t.Errorf("%s for %s before its agent.tool.started (events %v)", e.Type, id, rec.Types())
		}
	}
	if st := started["call_read"]; st == nil || st.ToolName != "Read" || string(st.Input) != `{"filePath":"notes.txt"}` {
		t.Errorf("call_read started = %+v, want the input of its update", st)
	}
	for _, id := range []string{"call_none", "call_ask", "call_open"} {
		st := started[id]
		if st == nil {
			t.Errorf("%s never started (events %v)", id, rec.Types())
			continue
		}
		if in := string(st.Input); in != "" && in != "null" {
			var m map[string]any
			if json.Unmarshal(st.Input, &m) != nil || len(m) == 0 {
				t.Errorf("%s started with input %s", id, in)
			}
		}
	}
	if n := len(rec.OfType(protocol.TypeToolFinished)); n != 4 {
		t.Errorf("%d agent.tool.finished, want 4 (events %v)", n, rec.Types())
	}
}
