package openai

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ferry-dev/ferry/internal/llm"
)

// The request body of POST /chat/completions, the fields ferry sends.
type (
	chatRequest struct {
		Messages            []message     `json:"messages"`
		Model               string        `json:"model"`
		MaxCompletionTokens int           `json:"max_completion_tokens,omitempty"`
		MaxTokens           int           `json:"max_tokens,omitempty"`
		ReasoningEffort     string        `json:"reasoning_effort,omitempty"`
		StreamOptions       streamOptions `json:"stream_options"`
		Tools               []tool        `json:"tools,omitempty"`
		Stream              bool          `json:"stream"`
	}
	streamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	}
	tool struct {
		Type     string       `json:"type"` // "function"
		Function functionSpec `json:"function"`
	}
	functionSpec struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	// message is any role's message: Content is a string or []part, nil
	// (left out) for an assistant message with only tool calls.
	message struct {
		Role       string     `json:"role"`
		Content    any        `json:"content,omitempty"`
		ToolCalls  []toolCall `json:"tool_calls,omitempty"`
		ToolCallID string     `json:"tool_call_id,omitempty"`
	}
	// part is a content part: text, image_url or file.
	part struct {
		Type     string    `json:"type"`
		Text     *string   `json:"text,omitempty"` // a pointer: "" is a text
		ImageURL *imageURL `json:"image_url,omitempty"`
		File     *file     `json:"file,omitempty"`
	}
	imageURL struct {
		URL string `json:"url"`
	}
	file struct {
		FileData string `json:"file_data"`
		Filename string `json:"filename"`
	}
	toolCall struct {
		ID       string       `json:"id"`
		Type     string       `json:"type"` // "function"
		Function callFunction `json:"function"`
	}
	callFunction struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
)

// imageNote stands in a tool message for the images of its result, which
// follow in a user message.
const imageNote = "[image attached below]"

// defaultParameters is the schema of a tool that declares none.
var defaultParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// params converts a neutral request into the wire's.
func (p *Provider) params(req llm.Request) (*chatRequest, error) {
	model := p.model
	if req.Model != "" {
		model = req.Model
	}
	out := &chatRequest{
		Model:         model,
		Stream:        true,
		StreamOptions: streamOptions{IncludeUsage: true},
	}
	switch req.Effort {
	case "":
	case llm.EffortLow, llm.EffortMedium, llm.EffortHigh:
		// The documented reasoning_effort values are the effort's own words.
		out.ReasoningEffort = req.Effort
	default:
		return nil, badRequest("thinking effort %q: reasoning models take low, medium or high", req.Effort)
	}
	if req.MaxTokens > 0 {
		if p.legacyMaxTokens {
			out.MaxTokens = req.MaxTokens
		} else {
			out.MaxCompletionTokens = req.MaxTokens
		}
	}
	if req.System != "" {
		out.Messages = append(out.Messages, message{Role: "system", Content: req.System})
	}
	for i, t := range req.Tools {
		if t.Name == "" {
			return nil, badRequest("tool %d has no name", i)
		}
		params := defaultParameters
		if len(t.InputSchema) > 0 {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(t.InputSchema, &obj); err != nil {
				return nil, badRequest("tool %d (%s): input schema is not a JSON object", i, t.Name)
			}
			if obj != nil { // null is no schema
				params = t.InputSchema
			}
		}
		out.Tools = append(out.Tools, tool{Type: "function", Function: functionSpec{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	for i, m := range req.Messages {
		var msgs []message
		var err error
		switch m.Role {
		case llm.RoleUser:
			msgs, err = userMessages(m)
		case llm.RoleAssistant:
			msgs, err = assistantMessage(m)
		default:
			err = fmt.Errorf("unknown role %q", m.Role)
		}
		if err != nil {
			return nil, badRequest("message %d: %v", i, err)
		}
		out.Messages = append(out.Messages, msgs...)
	}
	return out, nil
}

// userMessages converts a user message: its tool results first, as tool
// messages, then one user message with its text, images and documents and
// the images of its tool results.
func userMessages(m llm.Message) ([]message, error) {
	var out []message
	var parts, resultImages []part
	for j, b := range m.Content {
		switch b.Type {
		case llm.BlockToolResult:
			if b.ToolUseID == "" {
				return nil, fmt.Errorf("block %d: tool_result without tool_use_id", j)
			}
			var texts []string
			images := 0
			for _, c := range b.Content {
				switch c.Type {
				case llm.BlockText:
					texts = append(texts, c.Text)
				case llm.BlockImage:
					resultImages = append(resultImages, imagePart(c))
					images++
				case llm.BlockDocument:
					part, err := documentPart(c)
					if err != nil {
						return nil, fmt.Errorf("block %d: %w", j, err)
					}
					resultImages = append(resultImages, part)
					images++
				default:
					return nil, fmt.Errorf("block %d: tool_result content of type %q", j, c.Type)
				}
			}
			if images > 0 {
				texts = append(texts, imageNote)
			}
			text := strings.Join(texts, "\n")
			if text == "" {
				text = "(no output)" // some servers refuse an empty tool message
			}
			if b.IsError {
				text = "Error: " + text
			}
			out = append(out, message{Role: "tool", Content: text, ToolCallID: b.ToolUseID})
		case llm.BlockText:
			if b.Text != "" {
				parts = append(parts, textPart(b.Text))
			}
		case llm.BlockImage:
			parts = append(parts, imagePart(b))
		case llm.BlockDocument:
			part, err := documentPart(b)
			if err != nil {
				return nil, fmt.Errorf("block %d: %w", j, err)
			}
			parts = append(parts, part)
		case llm.BlockThinking:
		default:
			return nil, fmt.Errorf("block %d: %q blocks cannot be sent in a user message", j, b.Type)
		}
	}
	parts = append(parts, resultImages...)
	if len(parts) == 0 {
		return out, nil
	}
	if text, ok := onlyText(parts); ok {
		// A plain string is what every compatible server understands.
		return append(out, message{Role: "user", Content: text}), nil
	}
	return append(out, message{Role: "user", Content: parts}), nil
}

// onlyText joins parts when all are text.
func onlyText(parts []part) (string, bool) {
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if p.Text == nil {
			return "", false
		}
		texts = append(texts, *p.Text)
	}
	return strings.Join(texts, "\n\n"), true
}

// assistantMessage converts an assistant message: its text as content, its
// tool_use blocks as tool_calls.
func assistantMessage(m llm.Message) ([]message, error) {
	msg := message{Role: "assistant"}
	var texts []string
	for j, b := range m.Content {
		switch b.Type {
		case llm.BlockText:
			if b.Text != "" {
				texts = append(texts, b.Text)
			}
		case llm.BlockThinking:
		case llm.BlockToolUse:
			if b.ToolUseID == "" || b.ToolName == "" {
				return nil, fmt.Errorf("block %d: tool_use without id or name", j)
			}
			input, err := objectInput(string(b.Input))
			if err != nil {
				return nil, fmt.Errorf("block %d: %w", j, err)
			}
			msg.ToolCalls = append(msg.ToolCalls, toolCall{
				ID:       b.ToolUseID,
				Type:     "function",
				Function: callFunction{Name: b.ToolName, Arguments: string(input)},
			})
		default:
			return nil, fmt.Errorf("block %d: %q blocks cannot be sent in an assistant message", j, b.Type)
		}
	}
	if len(texts) > 0 {
		msg.Content = strings.Join(texts, "\n\n")
	}
	if len(texts) == 0 && len(msg.ToolCalls) == 0 {
		return nil, nil // nothing the API would accept or the model need
	}
	return []message{msg}, nil
}

// textPart is a text content part.
func textPart(s string) part { return part{Type: "text", Text: &s} }

// imagePart is an image as a data URL.
func imagePart(b llm.Block) part {
	return part{Type: "image_url", ImageURL: &imageURL{URL: "data:" + b.MediaType + ";base64," + b.Data}}
}

// documentPart is a PDF as a file part or a text document as text.
func documentPart(b llm.Block) (part, error) {
	switch {
	case b.MediaType == "application/pdf":
		return part{Type: "file", File: &file{FileData: "data:application/pdf;base64," + b.Data, Filename: "document.pdf"}}, nil
	case strings.HasPrefix(b.MediaType, "text/"):
		text, err := base64.StdEncoding.DecodeString(b.Data)
		if err != nil {
			return part{}, fmt.Errorf("document data is not base64: %w", err)
		}
		return textPart(string(text)), nil
	}
	return part{}, fmt.Errorf("documents of type %q are not supported (PDF and text only)", b.MediaType)
}

// objectInput checks tool input: empty is {}, anything else must be a JSON
// object.
func objectInput(s string) (json.RawMessage, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}"), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &obj); err != nil {
		return nil, fmt.Errorf("tool input is not a JSON object: %w", err)
	}
	if obj == nil {
		return nil, errors.New("tool input is null, not a JSON object")
	}
	return json.RawMessage(s), nil
}

// badRequest is the error of a request that cannot be sent as built.
func badRequest(format string, args ...any) error {
	return &llm.Error{
		Kind:    llm.KindBadRequest,
		Message: "the conversation cannot be sent: " + fmt.Sprintf(format, args...),
		Err:     fmt.Errorf("llm openai: "+format, args...),
	}
}
