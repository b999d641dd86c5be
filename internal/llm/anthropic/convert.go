package anthropic

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ferry-dev/ferry/internal/llm"
)

// messageParams is the body of POST /v1/messages and, without max_tokens,
// thinking and stream, of POST /v1/messages/count_tokens. The field set
// and its omissions are the SDK's (pinned by TestWireFormat).
type messageParams struct {
	Model     string         `json:"model"`
	MaxTokens int64          `json:"max_tokens,omitempty"`
	Messages  []message      `json:"messages"`
	System    []contentBlock `json:"system,omitempty"`
	Thinking  *thinking      `json:"thinking,omitempty"`
	Tools     []tool         `json:"tools,omitempty"`
	Stream    bool           `json:"stream,omitempty"`
}

// message is one turn of the conversation.
type message struct {
	Role    string         `json:"role"`
	Content []contentBlock `json:"content"`
}

// contentBlock is any block sent: text, image, document, thinking,
// tool_use or tool_result. Only the fields of its type are set; every one
// of them is non-empty where the API requires it (convert.go sends no
// empty text, no unsigned thinking), so omitempty drops only the others.
type contentBlock struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	// Thinking is a pointer: a signed thinking block keeps its field even
	// when its text is empty.
	Thinking     *string         `json:"thinking,omitempty"`
	Signature    string          `json:"signature,omitempty"`
	Source       *source         `json:"source,omitempty"`
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	IsError      bool            `json:"is_error,omitempty"`
	Content      []contentBlock  `json:"content,omitempty"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
}

// source is an image's or document's data.
type source struct {
	Type      string `json:"type"` // base64 or text
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// cacheControl is a prompt-cache breakpoint.
type cacheControl struct {
	Type string `json:"type"`
}

// ephemeral is a fresh breakpoint (each block gets its own, so no block
// shares a pointer another could change).
func ephemeral() *cacheControl { return &cacheControl{Type: "ephemeral"} }

// thinking is extended thinking's setting.
type thinking struct {
	Type         string `json:"type"` // enabled or disabled
	BudgetTokens int64  `json:"budget_tokens,omitempty"`
}

// tool is one tool offered to the model.
type tool struct {
	Name         string         `json:"name"`
	Description  string         `json:"description,omitempty"`
	InputSchema  map[string]any `json:"input_schema"`
	CacheControl *cacheControl  `json:"cache_control,omitempty"`
}

// params converts a neutral request into the Messages API's body.
func (p *Provider) params(req llm.Request) (*messageParams, error) {
	model := p.model
	if req.Model != "" {
		model = req.Model
	}
	out := &messageParams{
		Model:     model,
		MaxTokens: int64(req.MaxTokens),
		Messages:  []message{},
	}
	if out.MaxTokens <= 0 {
		out.MaxTokens = defaultMaxTokens(model)
	}
	switch budget := thinkingBudget[req.Effort]; {
	case req.Effort == llm.EffortOff:
		out.Thinking = &thinking{Type: "disabled"}
	case budget > 0:
		out.Thinking = &thinking{Type: "enabled", BudgetTokens: budget}
		// budget_tokens must stay below max_tokens: the answer keeps its
		// own room on top of the thinking.
		out.MaxTokens += budget
	case req.Effort != "":
		return nil, badRequest("unknown thinking effort %q", req.Effort)
	}
	thinkingOn := out.Thinking != nil && out.Thinking.Type == "enabled"
	if req.System != "" {
		out.System = []contentBlock{{Type: "text", Text: req.System, CacheControl: ephemeral()}}
	}
	for i, t := range req.Tools {
		tl, err := toolParam(t)
		if err != nil {
			return nil, badRequest("tool %d (%s): %v", i, t.Name, err)
		}
		if i == len(req.Tools)-1 {
			tl.CacheControl = ephemeral()
		}
		out.Tools = append(out.Tools, tl)
	}
	var last []contentBlock // the newest message's blocks
	for i, m := range req.Messages {
		if m.Role != llm.RoleUser && m.Role != llm.RoleAssistant {
			return nil, badRequest("message %d: unknown role %q", i, m.Role)
		}
		var blocks []contentBlock
		for j, b := range m.Content {
			if b.Type == llm.BlockThinking && !thinkingOn {
				// Taken back only while thinking is on, where the API
				// needs them; otherwise left out, as before thinking
				// could be asked for.
				continue
			}
			cb, keep, err := toContentBlock(b)
			if err != nil {
				return nil, badRequest("message %d, block %d: %v", i, j, err)
			}
			if keep {
				blocks = append(blocks, cb)
			}
		}
		if len(blocks) == 0 {
			continue // the API refuses empty messages; nothing of it would be read
		}
		out.Messages = append(out.Messages, message{Role: m.Role, Content: blocks})
		last = blocks
	}
	if len(last) > 0 {
		// A breakpoint on the newest block caches the whole conversation for
		// the next call of the loop, which repeats it and adds a little.
		last[len(last)-1].CacheControl = ephemeral()
	}
	return out, nil
}

// thinkingBudget maps a thinking effort to extended thinking's
// budget_tokens: low is the documented minimum (1024), medium and high the
// budgets the extended-thinking guide works with (10k, and 32k, above
// which it advises batches).
var thinkingBudget = map[string]int64{
	llm.EffortLow:    1024,
	llm.EffortMedium: 10000,
	llm.EffortHigh:   32000,
}

// defaultMaxTokens is the answer bound when the request sets none: what
// every current model allows, less for the old ones that allow less.
func defaultMaxTokens(model string) int64 {
	switch {
	case strings.HasPrefix(model, "claude-3-5-"):
		return 8192
	case strings.HasPrefix(model, "claude-3-") && !strings.HasPrefix(model, "claude-3-7-"):
		return 4096
	}
	return 16384
}

// toolParam converts a tool spec. The schema's "type" is always object;
// properties ({} when absent: the API needs input_schema to have them),
// the string entries of required (left out when none) and every other
// keyword go as they are.
func toolParam(t llm.ToolSpec) (tool, error) {
	tl := tool{Name: t.Name, Description: t.Description}
	if t.Name == "" {
		return tl, fmt.Errorf("no name")
	}
	schema := map[string]any{}
	if len(t.InputSchema) > 0 {
		if err := json.Unmarshal(t.InputSchema, &schema); err != nil {
			return tl, fmt.Errorf("input schema is not a JSON object: %w", err)
		}
	}
	if typ, ok := schema["type"]; ok && typ != "object" {
		return tl, fmt.Errorf("input schema type is %v, want object", typ)
	}
	out := make(map[string]any, len(schema)+2)
	for k, v := range schema {
		switch k {
		case "type", "properties", "required":
		default:
			out[k] = v
		}
	}
	out["type"] = "object"
	out["properties"] = schema["properties"]
	if out["properties"] == nil {
		out["properties"] = map[string]any{}
	}
	if req, ok := schema["required"].([]any); ok {
		var names []string
		for _, r := range req {
			if s, ok := r.(string); ok {
				names = append(names, s)
			}
		}
		if len(names) > 0 {
			out["required"] = names
		}
	}
	tl.InputSchema = out
	return tl, nil
}

// toContentBlock converts one block; keep is false for blocks that are not
// sent (unsigned thinking, empty text).
func toContentBlock(b llm.Block) (contentBlock, bool, error) {
	switch b.Type {
	case llm.BlockText:
		if b.Text == "" {
			return contentBlock{}, false, nil
		}
		return contentBlock{Type: "text", Text: b.Text}, true, nil
	case llm.BlockThinking:
		if b.Signature == "" {
			// The API takes a thinking block back only signed.
			return contentBlock{}, false, nil
		}
		text := b.Text
		return contentBlock{Type: "thinking", Thinking: &text, Signature: b.Signature}, true, nil
	case llm.BlockToolUse:
		if b.ToolUseID == "" || b.ToolName == "" {
			return contentBlock{}, false, fmt.Errorf("tool_use without id or name")
		}
		input, err := objectInput(string(b.Input))
		if err != nil {
			return contentBlock{}, false, err
		}
		return contentBlock{Type: "tool_use", ID: b.ToolUseID, Name: b.ToolName, Input: input}, true, nil
	case llm.BlockToolResult:
		if b.ToolUseID == "" {
			return contentBlock{}, false, fmt.Errorf("tool_result without tool_use_id")
		}
		res := contentBlock{Type: "tool_result", ToolUseID: b.ToolUseID, IsError: b.IsError}
		for _, c := range b.Content {
			switch c.Type {
			case llm.BlockText:
				if c.Text != "" {
					res.Content = append(res.Content, contentBlock{Type: "text", Text: c.Text})
				}
			case llm.BlockImage:
				res.Content = append(res.Content, imageBlock(c))
			case llm.BlockDocument:
				doc, err := documentBlock(c)
				if err != nil {
					return contentBlock{}, false, err
				}
				res.Content = append(res.Content, doc)
			default:
				return contentBlock{}, false, fmt.Errorf("tool_result content of type %q", c.Type)
			}
		}
		return res, true, nil
	case llm.BlockImage:
		return imageBlock(b), true, nil
	case llm.BlockDocument:
		doc, err := documentBlock(b)
		if err != nil {
			return contentBlock{}, false, err
		}
		return doc, true, nil
	}
	return contentBlock{}, false, fmt.Errorf("unknown block type %q", b.Type)
}

// imageBlock is a base64 image block.
func imageBlock(b llm.Block) contentBlock {
	return contentBlock{Type: "image", Source: &source{Type: "base64", MediaType: b.MediaType, Data: b.Data}}
}

// documentBlock is a PDF (base64) or plain-text document block.
func documentBlock(b llm.Block) (contentBlock, error) {
	switch {
	case b.MediaType == "application/pdf":
		return contentBlock{Type: "document", Source: &source{Type: "base64", MediaType: b.MediaType, Data: b.Data}}, nil
	case strings.HasPrefix(b.MediaType, "text/"):
		text, err := base64.StdEncoding.DecodeString(b.Data)
		if err != nil {
			return contentBlock{}, fmt.Errorf("document data is not base64: %w", err)
		}
		// The API's plain-text source knows one media type.
		return contentBlock{Type: "document", Source: &source{Type: "text", MediaType: "text/plain", Data: string(text)}}, nil
	}
	return contentBlock{}, fmt.Errorf("documents of type %q are not supported (PDF and text only)", b.MediaType)
}

// badRequest is the error of a request that cannot be sent as built.
func badRequest(format string, args ...any) error {
	return &llm.Error{
		Kind:    llm.KindBadRequest,
		Message: "the conversation cannot be sent to Anthropic: " + fmt.Sprintf(format, args...),
		Err:     fmt.Errorf("llm anthropic: "+format, args...),
	}
}
