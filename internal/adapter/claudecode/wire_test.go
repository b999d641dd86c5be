package claudecode

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/ferry-dev/ferry/internal/vfs"
	"github.com/ferry-dev/ferry/protocol"
)

func TestDecodeLine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		ok   bool
		kind string
	}{
		{`{"type":"system","subtype":"init","session_id":"s","model":"m"}`, true, "system"},
		{`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t","name":"Read","input":{"file_path":"a"}}]}}`, true, "chat"},
		{`{"type":"user","message":{"role":"user","content":"plain text"}}`, true, "chat"},
		{`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"a"},{"type":"image"}]}]},"tool_use_result":"Error: x"}`, true, "chat"},
		{`{"type":"result","subtype":"success","result":"done","stop_reason":null,"api_error_status":null,"total_cost_usd":0.1}`, true, "result"},
		{`{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"x"}}}`, true, "event"},
		{`{"type":"control_request","request_id":"r","request":{"subtype":"can_use_tool","tool_name":"Edit","input":{},"blocked_path":null}}`, true, "request"},
		{`{"type":"control_response","response":{"subtype":"success","request_id":"r"}}`, true, "reply"},
		{`{"type":"control_cancel_request","request_id":"r"}`, true, "cancel"},
		{`{"type":"keep_alive"}`, true, ""},
		{`{"type":"brand_new","x":[1]}`, true, ""},
		{``, false, ""},
		{`null`, false, ""},
		{`"str"`, false, ""},
		{`{"type":3}`, false, ""},
		{`{"no":"type"}`, false, ""},
		{`{"type":"assistant","message":[]}`, false, ""},
		{`{"type":"result","total_cost_usd":"a lot"}`, false, ""},
		{`{"type":"system"`, false, ""},
	}
	for _, c := range cases {
		l, err := decodeLine([]byte(c.in))
		if (err == nil) != c.ok {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if err != nil {
			continue
		}
		var kind string
		switch {
		case l.System != nil:
			kind = "system"
		case l.Chat != nil:
			kind = "chat"
		case l.Result != nil:
			kind = "result"
		case l.Event != nil:
			kind = "event"
		case l.Request != nil:
			kind = "request"
		case l.Reply != nil:
			kind = "reply"
		case l.Cancel != nil:
			kind = "cancel"
		}
		if kind != c.kind {
			t.Errorf("%s: decoded as %q", c.in, kind)
		}
	}
	l, _ := decodeLine([]byte(cases[3].in))
	if got := string(l.Chat.Message.Content[0].Content.text); got != "a[image]" || l.Chat.ToolUseResult == nil || l.Chat.ToolUseResult.FilePath != "" {
		t.Errorf("tool result %q %+v", got, l.Chat.ToolUseResult)
	}
}

// nopTurn is a turn on workspace ws whose events are only validated, for
// the fuzzer.
func nopTurn(t testing.TB, ws *vfs.Local, wsPath string) *turn {
	s := &session{log: slog.New(slog.DiscardHandler), ws: wsPath, fs: ws, mode: protocol.ModeDefault, pending: map[string]*ask{}, byRequest: map[string]*ask{}, denied: map[string]bool{},
		a: New(Config{Logger: slog.New(slog.DiscardHandler)})}
	emit := func(_ context.Context, typ string, payload any) error {
		m := protocol.New(typ, payload)
		m.SessionID = "s"
		data, err := protocol.Encode(m)
		if err == nil {
			_, err = protocol.DecodeFrom(protocol.RoleClient, data)
		}
		if err != nil {
			t.Errorf("invalid %s: %v", typ, err)
		}
		return nil
	}
	tr := newTurn(s, "turn-1", context.Background(), emit, true)
	tr.p = &proc{out: make(chan []byte, 1024), stopOut: make(chan struct{}), exited: make(chan struct{}), pending: map[string]chan *controlResponseLine{}, log: s.log}
	return tr
}

// FuzzDecodeLine feeds arbitrary lines to the decoder and what it decodes
// to a turn: nothing may panic, and every event the turn emits must be a
// valid protocol message.
func FuzzDecodeLine(f *testing.F) {
	for _, s := range []string{
		`{"type":"system","subtype":"init","session_id":"s","model":"m"}`,
		`{"type":"system","subtype":"compact_boundary","compact_metadata":{"trigger":"auto","pre_tokens":100,"post_tokens":10}}`,
		`{"type":"system","subtype":"status","compact_result":"failed","compact_error":"Not enough messages to compact."}`,
		`{"type":"assistant","message":{"id":"m1","model":"x","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"hi"},{"type":"tool_use","id":"toolu_1","name":"Edit","input":{"file_path":"a.txt","old_string":"a","new_string":"b"}}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]},"tool_use_result":{"filePath":"/ws/a.txt","structuredPatch":[{"oldStart":1,"oldLines":1,"newStart":1,"newLines":1,"lines":["-a","+b"," c","\\ No newline"]}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_2","content":"x","is_error":true}]},"tool_use_result":{"type":"create","filePath":"/ws/new.txt","content":"new\n"}}`,
		`{"type":"stream_event","event":{"type":"message_start","message":{"id":"m2","model":"x"}}}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"thinking_delta","thinking":"t"}}}`,
		`{"type":"stream_event","parent_tool_use_id":"toolu_9","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"sub"}}}`,
		`{"type":"result","subtype":"success","result":"done","session_id":"s","total_cost_usd":0.5,"usage":{"input_tokens":1,"output_tokens":2},"structured_output":{"a":1}}`,
		`{"type":"result","subtype":"error_during_execution","is_error":true,"api_error_status":529}`,
		`{"type":"result","subtype":"error_max_turns","is_error":true}`,
		`{"type":"control_request","request_id":"r1","request":{"subtype":"hook_callback","callback_id":"x","input":{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}}}`,
		`{"type":"control_request","request_id":"r2","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"rm -rf /"},"tool_use_id":"t"}}`,
		`{"type":"control_request","request_id":"r3","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","input":{"questions":[{"question":"Q?","options":[{"label":"A"},{"label":"A"}]}]}}}`,
		`{"type":"control_request","request_id":"r4","request":{"subtype":"mcp_message"}}`,
		`{"type":"control_request","request_id":"r5","request":{"subtype":"can_use_tool","tool_name":"Write","input":{"file_path":"n.txt","content":"x"},"permission_suggestions":[{"type":"setMode","mode":"acceptEdits"}]}}`,
		`{"type":"control_response","response":{"subtype":"error","request_id":"r","error":"no"}}`,
		`{"type":"control_cancel_request","request_id":"r2"}`,
		`{"type":"assistant","message":{"content":"just text"}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_3","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_4","content":[{"type":"image","source":{"type":"base64","media_type":"image/svg+xml","data":"PHN2Zz4="}},{"type":"image","source":{"type":"url","url":"https://x"}},{"type":"image","source":"str"}]}]}}`,
		"{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"\xff\xfe\"}]}}",
		`not json`, `{}`, `[]`, `{"type":null}`,
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	ws, err := vfs.NewLocal(dir)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = ws.Close() })
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := decodeLine(b)
		if err != nil {
			return
		}
		tr := nopTurn(t, ws, dir)
		if tr.handle(l) {
			_ = tr.finish()
		}
		tr.finishOpen(protocol.ToolCancelled, "x")
		// Whatever the turn answered the CLI must be one JSON line each.
		for {
			select {
			case out := <-tr.p.out:
				if !json.Valid(bytes.TrimSpace(out)) || bytes.Count(out, []byte("\n")) != 1 {
					t.Errorf("bad control line %q", out)
				}
				continue
			default:
			}
			break
		}
		close(tr.p.exited) // releases whatever waits for an answer
		tr.s.wg.Wait()
	})
}
