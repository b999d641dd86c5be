package fake

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// validate rejects what the real API would reject, as the real API does
// (status and message shape); nil when req is acceptable.
func validate(req Request) *Failure {
	bad := func(format string, args ...any) *Failure {
		return &Failure{Status: http.StatusBadRequest, Message: fmt.Sprintf(format, args...)}
	}
	if req.Format == Anthropic {
		if req.Header.Get("anthropic-version") == "" {
			return bad("anthropic-version: header is required")
		}
		if req.Header.Get("x-api-key") == "" && req.Header.Get("Authorization") == "" {
			return &Failure{Status: http.StatusUnauthorized, Message: "x-api-key header is required"}
		}
	}
	if req.Body == nil {
		return bad("the request body is not a JSON object")
	}
	if req.Model() == "" {
		return bad("model: Field required")
	}
	if req.Format == OpenAI {
		return validateOpenAI(req, bad)
	}
	return validateAnthropic(req, bad)
}

func validateAnthropic(req Request, bad func(string, ...any) *Failure) *Failure {
	if !req.CountTokens() {
		if n, ok := req.Body["max_tokens"].(float64); !ok || n < 1 {
			return bad("max_tokens: Field required")
		}
	}
	if f := validateAnthropicTools(req.Body["tools"], bad); f != nil {
		return f
	}
	msgs := req.Messages()
	if len(msgs) == 0 {
		return bad("messages: at least one message is required")
	}
	if role, _ := msgs[0]["role"].(string); role != "user" {
		return bad("messages: first message must use the \"user\" role")
	}
	var open map[string]bool // tool_use ids of the previous assistant message
	for i, m := range msgs {
		role, _ := m["role"].(string)
		if role == "system" {
			// Newer API versions take system messages inside the
			// conversation (Claude Code sends them); they do not break
			// the pairing of tool calls and results.
			if _, f := anthropicBlocks(m["content"], i, bad); f != nil {
				return f
			}
			continue
		}
		if role != "user" && role != "assistant" {
			return bad("messages.%d.role: Input should be 'user', 'assistant' or 'system'", i)
		}
		blocks, f := anthropicBlocks(m["content"], i, bad)
		if f != nil {
			return f
		}
		answered := map[string]bool{}
		uses := map[string]bool{}
		for j, b := range blocks {
			typ, _ := b["type"].(string)
			switch typ {
			case "text":
				if s, _ := b["text"].(string); s == "" {
					return bad("messages.%d.content.%d: text content blocks must be non-empty", i, j)
				}
			case "tool_use":
				if role != "assistant" {
					return bad("messages.%d.content.%d: tool_use blocks are only allowed in assistant messages", i, j)
				}
				id, _ := b["id"].(string)
				if id == "" {
					return bad("messages.%d.content.%d.id: Field required", i, j)
				}
				if _, ok := b["input"].(map[string]any); !ok {
					return bad("messages.%d.content.%d.input: Input should be a valid dictionary", i, j)
				}
				uses[id] = true
			case "tool_result":
				id, _ := b["tool_use_id"].(string)
				if role != "user" || !open[id] {
					return bad("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, id)
				}
				answered[id] = true
			}
		}
		for id := range open {
			if !answered[id] {
				return bad("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i, id)
			}
		}
		open = uses
	}
	return nil
}

// anthropicBlocks returns a message's content as blocks (a string is one
// text block).
func anthropicBlocks(content any, i int, bad func(string, ...any) *Failure) ([]map[string]any, *Failure) {
	switch c := content.(type) {
	case string:
		if c == "" {
			return nil, bad("messages.%d: user messages must have non-empty content", i)
		}
		return []map[string]any{{"type": "text", "text": c}}, nil
	case []any:
		if len(c) == 0 {
			return nil, bad("messages.%d: all messages must have non-empty content", i)
		}
		out := make([]map[string]any, 0, len(c))
		for j, b := range c {
			bm, ok := b.(map[string]any)
			if !ok {
				return nil, bad("messages.%d.content.%d: Input should be an object", i, j)
			}
			out = append(out, bm)
		}
		return out, nil
	}
	return nil, bad("messages.%d.content: Field required", i)
}

func validateAnthropicTools(v any, bad func(string, ...any) *Failure) *Failure {
	if v == nil {
		return nil
	}
	tools, ok := v.([]any)
	if !ok {
		return bad("tools: Input should be a valid list")
	}
	for i, t := range tools {
		tm, _ := t.(map[string]any)
		if name, _ := tm["name"].(string); name == "" {
			return bad("tools.%d.name: Field required", i)
		}
		if typ, ok := tm["type"].(string); ok && typ != "custom" {
			continue // a server tool (web_search_…, bash_…): no input_schema
		}
		schema, _ := tm["input_schema"].(map[string]any)
		if typ, _ := schema["type"].(string); typ != "object" {
			return bad("tools.%d.input_schema.type: Input should be 'object'", i)
		}
	}
	return nil
}

func validateOpenAI(req Request, bad func(string, ...any) *Failure) *Failure {
	msgs := req.Messages()
	if len(msgs) == 0 {
		return bad("[] is too short - 'messages'")
	}
	if tools, ok := req.Body["tools"].([]any); ok {
		for i, t := range tools {
			tm, _ := t.(map[string]any)
			fn, _ := tm["function"].(map[string]any)
			if typ, _ := tm["type"].(string); typ != "function" || fn == nil {
				return bad("tools[%d]: only function tools are supported here", i)
			}
			if name, _ := fn["name"].(string); name == "" {
				return bad("Missing required parameter: 'tools[%d].function.name'.", i)
			}
		}
	}
	var open map[string]bool // tool calls of the last assistant message still unanswered
	for i, m := range msgs {
		role, _ := m["role"].(string)
		if role != "tool" && len(open) > 0 {
			return bad("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. (message %d)", i)
		}
		switch role {
		case "system", "developer", "user":
			if m["content"] == nil {
				return bad("Missing required parameter: 'messages[%d].content'.", i)
			}
		case "assistant":
			calls, _ := m["tool_calls"].([]any)
			if m["content"] == nil && len(calls) == 0 {
				return bad("Missing required parameter: 'messages[%d].content'.", i)
			}
			open = map[string]bool{}
			for j, c := range calls {
				cm, _ := c.(map[string]any)
				id, _ := cm["id"].(string)
				fn, _ := cm["function"].(map[string]any)
				args, ok := fn["arguments"].(string)
				if id == "" || !ok {
					return bad("Missing required parameter: 'messages[%d].tool_calls[%d]'.", i, j)
				}
				if !json.Valid([]byte(args)) {
					return bad("messages[%d].tool_calls[%d].function.arguments is not valid JSON", i, j)
				}
				open[id] = true
			}
		case "tool":
			id, _ := m["tool_call_id"].(string)
			if !open[id] {
				return bad("Invalid parameter: messages with role 'tool' must be a response to a preceding message with 'tool_calls'. (message %d)", i)
			}
			delete(open, id)
			if m["content"] == nil {
				return bad("Missing required parameter: 'messages[%d].content'.", i)
			}
		default:
			return bad("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'. (messages[%d].role)", role, i)
		}
	}
	return nil
}
