package fake

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/ferry-dev/ferry/internal/llm"
)

// openAIFinish maps a neutral stop reason to a finish_reason (anything else
// is sent verbatim).
func openAIFinish(s string) string {
	switch s {
	case llm.StopEndTurn:
		return "stop"
	case llm.StopToolUse:
		return "tool_calls"
	case llm.StopMaxTokens:
		return "length"
	case llm.StopRefusal:
		return "content_filter"
	}
	return s
}

// openAIUsage is u in OpenAI's fields: cached tokens are part of the
// prompt; OpenAI has no cache-creation count.
func openAIUsage(u llm.Usage) map[string]any {
	prompt := u.InputTokens + u.CacheReadTokens
	return map[string]any{
		"prompt_tokens":             prompt,
		"completion_tokens":         u.OutputTokens,
		"total_tokens":              prompt + u.OutputTokens,
		"prompt_tokens_details":     map[string]any{"cached_tokens": u.CacheReadTokens},
		"completion_tokens_details": map[string]any{"reasoning_tokens": 0},
	}
}

// answerOpenAI writes reply as a chat-completions response: a JSON
// completion, or its SSE chunks when the request asked for a stream.
func (s *Server) answerOpenAI(st *streamer, req Request, reply Reply) {
	id := s.nextID("chatcmpl-fake")
	created := time.Now().Unix()
	st.w.Header().Set("x-request-id", "req_fake")
	if !req.Stream() {
		s.openAIJSON(st, id, created, reply)
		return
	}
	includeUsage := false
	if so, ok := req.Body["stream_options"].(map[string]any); ok {
		includeUsage, _ = so["include_usage"].(bool)
	}
	st.w.Header().Set("Content-Type", "text/event-stream")
	st.w.Header().Set("Cache-Control", "no-cache")
	st.w.WriteHeader(http.StatusOK)

	chunk := func(delta map[string]any, finish any) string {
		c := map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": reply.Model,
			"system_fingerprint": "fp_fake",
			"choices":            []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		}
		if includeUsage {
			c["usage"] = nil
		}
		b, _ := json.Marshal(c)
		return "data: " + string(b) + "\n\n"
	}
	send := func(delta map[string]any) bool {
		return st.wait() && st.write(chunk(delta, nil))
	}

	if !st.write(chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		return
	}
	for _, p := range reply.Thinking {
		if !send(map[string]any{"reasoning_content": p}) {
			return
		}
	}
	for _, p := range reply.Text {
		if !send(map[string]any{"content": p}) {
			return
		}
	}
	// Each call's first delta names it; its arguments follow in pieces,
	// call after call or alternating between calls (Interleave).
	type piece struct {
		index int
		delta map[string]any
	}
	var queues [][]piece
	for i, c := range reply.ToolCalls {
		q := []piece{{i, map[string]any{"index": i, "id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": ""}}}}
		for _, p := range split(inputJSON(c.Input), c.pieces()) {
			q = append(q, piece{i, map[string]any{"index": i, "function": map[string]any{"arguments": p}}})
		}
		queues = append(queues, q)
	}
	var order []piece
	if reply.Interleave {
		for more := true; more; {
			more = false
			for i := range queues {
				if len(queues[i]) > 0 {
					order = append(order, queues[i][0])
					queues[i] = queues[i][1:]
					more = true
				}
			}
		}
	} else {
		for _, q := range queues {
			order = append(order, q...)
		}
	}
	for _, p := range order {
		if !send(map[string]any{"tool_calls": []any{p.delta}}) {
			return
		}
	}

	switch reply.Break {
	case BreakCut:
		st.cut(chunk(map[string]any{}, openAIFinish(reply.stopReason())))
		return
	case BreakBadJSON:
		st.write("data: {\"id\":\"" + id + "\",\"choices\":[{\"index\":0,\"delta\":\n\n")
		return
	case BreakError:
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": "The server had an error while processing your request.", "type": "server_error", "param": nil, "code": nil}})
		st.write("data: " + string(b) + "\n\n")
		return
	}
	if reply.Hold {
		st.hold()
		return
	}
	if !st.wait() || !st.write(chunk(map[string]any{}, openAIFinish(reply.stopReason()))) {
		return
	}
	if includeUsage {
		b, _ := json.Marshal(map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": reply.Model,
			"system_fingerprint": "fp_fake", "choices": []any{}, "usage": openAIUsage(reply.Usage),
		})
		st.write("data: " + string(b) + "\n\n")
	}
	st.write("data: [DONE]\n\n")
}

// openAIJSON writes reply as one non-streamed chat completion.
func (s *Server) openAIJSON(st *streamer, id string, created int64, reply Reply) {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if len(reply.Text) > 0 {
		msg["content"] = strings.Join(reply.Text, "")
	}
	if len(reply.Thinking) > 0 {
		msg["reasoning_content"] = strings.Join(reply.Thinking, "")
	}
	if len(reply.ToolCalls) > 0 {
		var calls []any
		for _, c := range reply.ToolCalls {
			calls = append(calls, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": inputJSON(c.Input)}})
		}
		msg["tool_calls"] = calls
	}
	body, _ := json.Marshal(map[string]any{
		"id": id, "object": "chat.completion", "created": created, "model": reply.Model,
		"system_fingerprint": "fp_fake",
		"choices":            []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": openAIFinish(reply.stopReason())}},
		"usage":              openAIUsage(reply.Usage),
	})
	writeJSONBody(st, body, reply)
}
