package fake

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/ferry-dev/ferry/internal/llm"
)

// anthropicUsage is reply's usage in Anthropic's fields.
func anthropicUsage(u llm.Usage, output int64) map[string]any {
	return map[string]any{
		"input_tokens":                u.InputTokens,
		"cache_creation_input_tokens": u.CacheCreationTokens,
		"cache_read_input_tokens":     u.CacheReadTokens,
		"output_tokens":               output,
	}
}

// sse formats one Anthropic server-sent event.
func sse(event string, data any) string {
	b, _ := json.Marshal(data)
	return "event: " + event + "\ndata: " + string(b) + "\n\n"
}

// answerAnthropic writes reply as a Messages API response: a JSON message,
// or its SSE stream when the request asked for one.
func (s *Server) answerAnthropic(st *streamer, req Request, reply Reply) {
	msgID := s.nextID("msg_fake")
	w := st.w
	w.Header().Set("request-id", "req_fake")
	if !req.Stream() {
		s.anthropicJSON(st, msgID, reply)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)

	start := sse("message_start", map[string]any{
		"type": "message_start",
		"message": map[string]any{
			"id": msgID, "type": "message", "role": "assistant", "model": reply.Model,
			"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
			"usage": anthropicUsage(reply.Usage, 1),
		},
	})
	if !st.write(start) || !st.write(sse("ping", map[string]any{"type": "ping"})) {
		return
	}
	index := 0
	block := func(content map[string]any, deltas []map[string]any) bool {
		if !st.write(sse("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": content})) {
			return false
		}
		for _, d := range deltas {
			if !st.wait() || !st.write(sse("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": d})) {
				return false
			}
		}
		ok := st.write(sse("content_block_stop", map[string]any{"type": "content_block_stop", "index": index}))
		index++
		return ok
	}
	if len(reply.Thinking) > 0 {
		var deltas []map[string]any
		for _, p := range reply.Thinking {
			deltas = append(deltas, map[string]any{"type": "thinking_delta", "thinking": p})
		}
		deltas = append(deltas, map[string]any{"type": "signature_delta", "signature": ThinkingSignature})
		if !block(map[string]any{"type": "thinking", "thinking": "", "signature": ""}, deltas) {
			return
		}
	}
	if len(reply.Text) > 0 {
		var deltas []map[string]any
		for _, p := range reply.Text {
			deltas = append(deltas, map[string]any{"type": "text_delta", "text": p})
		}
		if !block(map[string]any{"type": "text", "text": ""}, deltas) {
			return
		}
	}
	for _, c := range reply.ToolCalls {
		var deltas []map[string]any
		for _, p := range split(inputJSON(c.Input), c.pieces()) {
			deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": p})
		}
		if !block(map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}, deltas) {
			return
		}
	}

	switch reply.Break {
	case BreakCut:
		st.cut(sse("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn"}}))
		return
	case BreakBadJSON:
		st.write("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":\n\n")
		return
	case BreakError:
		st.write(sse("error", map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": "Overloaded"}}))
		return
	}
	if reply.Hold {
		st.hold()
		return
	}
	if !st.wait() {
		return
	}
	st.write(sse("message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": reply.stopReason(), "stop_sequence": nil},
		"usage": anthropicUsage(reply.Usage, reply.Usage.OutputTokens),
	}))
	st.write(sse("message_stop", map[string]any{"type": "message_stop"}))
}

// anthropicJSON writes reply as one non-streamed message.
func (s *Server) anthropicJSON(st *streamer, msgID string, reply Reply) {
	content := []any{}
	if len(reply.Thinking) > 0 {
		content = append(content, map[string]any{"type": "thinking", "thinking": strings.Join(reply.Thinking, ""), "signature": ThinkingSignature})
	}
	if len(reply.Text) > 0 {
		content = append(content, map[string]any{"type": "text", "text": strings.Join(reply.Text, "")})
	}
	for _, c := range reply.ToolCalls {
		content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": json.RawMessage(inputJSON(c.Input))})
	}
	body, _ := json.Marshal(map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": reply.Model,
		"content": content, "stop_reason": reply.stopReason(), "stop_sequence": nil,
		"usage": anthropicUsage(reply.Usage, reply.Usage.OutputTokens),
	})
	writeJSONBody(st, body, reply)
}

// writeJSONBody sends a non-streamed body, honouring Delay, Hold and Break.
func writeJSONBody(st *streamer, body []byte, reply Reply) {
	if !st.wait() {
		return
	}
	st.w.Header().Set("Content-Type", "application/json")
	if reply.Hold {
		st.w.WriteHeader(http.StatusOK)
		st.write("")
		st.hold()
		return
	}
	switch reply.Break {
	case BreakCut:
		st.w.WriteHeader(http.StatusOK)
		st.cut(string(body))
		return
	case BreakBadJSON, BreakError:
		st.w.WriteHeader(http.StatusOK)
		st.write(string(body[:len(body)/2]))
		return
	}
	st.w.WriteHeader(http.StatusOK)
	st.write(string(body))
}

// ThinkingSignature is the signature of every thinking block the fake
// sends.
const ThinkingSignature = "c2lnbmF0dXJlLWZha2U="
