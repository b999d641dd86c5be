// Package agenttest reads what ferry's agent sent to the fake provider
// server (internal/llm/fake), in either wire format, so end-to-end tests of
// the agent, its adapter and `ferry run` can assert on the conversation the
// model really received.
package agenttest

import (
	"encoding/json"
	"strings"

	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// ToolResult is one tool result a request carried.
type ToolResult struct {
	ToolUseID string
	Text      string
	IsError   bool
}

// ToolResults returns the tool results of req's last message turn: the
// tool_result blocks of the last user message (Anthropic), or the tool
// messages after the last assistant message (OpenAI).
func ToolResults(req fake.Request) []ToolResult {
	msgs := req.Messages()
	var out []ToolResult
	if req.Format == fake.OpenAI {
		for i := len(msgs) - 1; i >= 0; i-- {
			role, _ := msgs[i]["role"].(string)
			if role == "assistant" {
				break
			}
			if role == "tool" {
				id, _ := msgs[i]["tool_call_id"].(string)
				// OpenAI has no error flag: the agent's error texts start
				// with "Error (code" or say what was refused.
				text := contentText(msgs[i]["content"])
				out = append([]ToolResult{{ToolUseID: id, Text: text, IsError: strings.HasPrefix(text, "Error")}}, out...)
			}
		}
		return out
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if role, _ := msgs[i]["role"].(string); role != "user" {
			continue
		}
		blocks, _ := msgs[i]["content"].([]any)
		for _, b := range blocks {
			bm, _ := b.(map[string]any)
			if t, _ := bm["type"].(string); t != "tool_result" {
				continue
			}
			id, _ := bm["tool_use_id"].(string)
			isErr, _ := bm["is_error"].(bool)
			out = append(out, ToolResult{ToolUseID: id, Text: contentText(bm["content"]), IsError: isErr})
		}
		return out
	}
	return out
}

// UserTexts returns the text of every user message of req, in order
// (tool results left out).
func UserTexts(req fake.Request) []string {
	var out []string
	for _, m := range req.Messages() {
		if role, _ := m["role"].(string); role != "user" {
			continue
		}
		if t := userText(m["content"]); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// LastUserText is the text of req's last user message.
func LastUserText(req fake.Request) string {
	texts := UserTexts(req)
	if len(texts) == 0 {
		return ""
	}
	return texts[len(texts)-1]
}

// Roles returns the roles of req's messages, in order (system messages of
// the OpenAI format left out).
func Roles(req fake.Request) []string {
	var out []string
	for _, m := range req.Messages() {
		role, _ := m["role"].(string)
		if role == "system" || role == "developer" {
			continue
		}
		out = append(out, role)
	}
	return out
}

// MessagesJSON is req's messages as JSON, for "does the model still see X"
// checks.
func MessagesJSON(req fake.Request) string {
	b, _ := json.Marshal(req.Body["messages"])
	return string(b)
}

func userText(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, b := range c {
			bm, _ := b.(map[string]any)
			if t, _ := bm["type"].(string); t == "text" {
				s, _ := bm["text"].(string)
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

func contentText(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, b := range c {
			bm, _ := b.(map[string]any)
			if s, ok := bm["text"].(string); ok {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}
