package anthropic

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/ferry-dev/ferry/internal/llm"
)

// params converts a neutral request into the SDK's.
func (p *Provider) params(req llm.Request) (sdk.MessageNewParams, error) {
	model := p.model
	if req.Model != "" {
		model = req.Model
	}
	out := sdk.MessageNewParams{
		Model:     model,
		MaxTokens: int64(req.MaxTokens),
	}
	if out.MaxTokens <= 0 {
		out.MaxTokens = defaultMaxTokens(model)
	}
	switch budget := thinkingBudget[req.Effort]; {
	case req.Effort == llm.EffortOff:
		out.Thinking = sdk.ThinkingConfigParamUnion{OfDisabled: &sdk.ThinkingConfigDisabledParam{}}
	case budget > 0:
		out.Thinking = sdk.ThinkingConfigParamOfEnabled(budget)
		// budget_tokens must stay below max_tokens: the answer keeps its
		// own room on top of the thinking.
		out.MaxTokens += budget
	case req.Effort != "":
		return out, badRequest("unknown thinking effort %q", req.Effort)
	}
	if req.System != "" {
		out.System = []sdk.TextBlockParam{{Text: req.System, CacheControl: sdk.NewCacheControlEphemeralParam()}}
	}
	for i, t := range req.Tools {
		tool, err := toolParam(t)
		if err != nil {
			return out, badRequest("tool %d (%s): %v", i, t.Name, err)
		}
		if i == len(req.Tools)-1 {
			tool.CacheControl = sdk.NewCacheControlEphemeralParam()
		}
		out.Tools = append(out.Tools, sdk.ToolUnionParam{OfTool: &tool})
	}
	var last []sdk.ContentBlockParamUnion // the newest message's blocks
	for i, m := range req.Messages {
		if m.Role != llm.RoleUser && m.Role != llm.RoleAssistant {
			return out, badRequest("message %d: unknown role %q", i, m.Role)
		}
		var blocks []sdk.ContentBlockParamUnion
		for j, b := range m.Content {
			if b.Type == llm.BlockThinking && out.Thinking.OfEnabled == nil {
				// Taken back only while thinking is on, where the API
				// needs them; otherwise left out, as before thinking
				// could be asked for.
				continue
			}
			cb, keep, err := contentBlock(b)
			if err != nil {
				return out, badRequest("message %d, block %d: %v", i, j, err)
			}
			if keep {
				blocks = append(blocks, cb)
			}
		}
		if len(blocks) == 0 {
			continue // the API refuses empty messages; nothing of it would be read
		}
		if m.Role == llm.RoleUser {
			out.Messages = append(out.Messages, sdk.NewUserMessage(blocks...))
		} else {
			out.Messages = append(out.Messages, sdk.NewAssistantMessage(blocks...))
		}
		last = blocks
	}
	if len(last) > 0 {
		// A breakpoint on the newest block caches the whole conversation for
		// the next call of the loop, which repeats it and adds a little.
		setCacheControl(&last[len(last)-1])
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

// toolParam converts a tool spec; the schema's properties and required
// list go to their fields, every other keyword but "type" rides along.
func toolParam(t llm.ToolSpec) (sdk.ToolParam, error) {
	tool := sdk.ToolParam{Name: t.Name}
	if t.Name == "" {
		return tool, fmt.Errorf("no name")
	}
	if t.Description != "" {
		tool.Description = sdk.String(t.Description)
	}
	schema := map[string]any{}
	if len(t.InputSchema) > 0 {
		if err := json.Unmarshal(t.InputSchema, &schema); err != nil {
			return tool, fmt.Errorf("input schema is not a JSON object: %w", err)
		}
	}
	if typ, ok := schema["type"]; ok && typ != "object" {
		return tool, fmt.Errorf("input schema type is %v, want object", typ)
	}
	tool.InputSchema.Properties = schema["properties"]
	if tool.InputSchema.Properties == nil {
		// Without a field set the SDK leaves input_schema out, which the
		// API refuses.
		tool.InputSchema.Properties = map[string]any{}
	}
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				tool.InputSchema.Required = append(tool.InputSchema.Required, s)
			}
		}
	}
	extra := map[string]any{}
	for k, v := range schema {
		switch k {
		case "type", "properties", "required":
		default:
			extra[k] = v
		}
	}
	if len(extra) > 0 {
		tool.InputSchema.ExtraFields = extra
	}
	return tool, nil
}

// contentBlock converts one block; keep is false for blocks that are not
// sent (thinking, empty text).
func contentBlock(b llm.Block) (sdk.ContentBlockParamUnion, bool, error) {
	switch b.Type {
	case llm.BlockText:
		if b.Text == "" {
			return sdk.ContentBlockParamUnion{}, false, nil
		}
		return sdk.NewTextBlock(b.Text), true, nil
	case llm.BlockThinking:
		if b.Signature == "" {
			// The API takes a thinking block back only signed.
			return sdk.ContentBlockParamUnion{}, false, nil
		}
		return sdk.NewThinkingBlock(b.Signature, b.Text), true, nil
	case llm.BlockToolUse:
		if b.ToolUseID == "" || b.ToolName == "" {
			return sdk.ContentBlockParamUnion{}, false, fmt.Errorf("tool_use without id or name")
		}
		input, err := objectInput(string(b.Input))
		if err != nil {
			return sdk.ContentBlockParamUnion{}, false, err
		}
		return sdk.NewToolUseBlock(b.ToolUseID, input, b.ToolName), true, nil
	case llm.BlockToolResult:
		if b.ToolUseID == "" {
			return sdk.ContentBlockParamUnion{}, false, fmt.Errorf("tool_result without tool_use_id")
		}
		res := sdk.ToolResultBlockParam{ToolUseID: b.ToolUseID}
		if b.IsError {
			res.IsError = sdk.Bool(true)
		}
		for _, c := range b.Content {
			switch c.Type {
			case llm.BlockText:
				if c.Text != "" {
					res.Content = append(res.Content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: c.Text}})
				}
			case llm.BlockImage:
				img := imageParam(c)
				res.Content = append(res.Content, sdk.ToolResultBlockParamContentUnion{OfImage: &img})
			case llm.BlockDocument:
				doc, err := documentParam(c)
				if err != nil {
					return sdk.ContentBlockParamUnion{}, false, err
				}
				res.Content = append(res.Content, sdk.ToolResultBlockParamContentUnion{OfDocument: &doc})
			default:
				return sdk.ContentBlockParamUnion{}, false, fmt.Errorf("tool_result content of type %q", c.Type)
			}
		}
		return sdk.ContentBlockParamUnion{OfToolResult: &res}, true, nil
	case llm.BlockImage:
		img := imageParam(b)
		return sdk.ContentBlockParamUnion{OfImage: &img}, true, nil
	case llm.BlockDocument:
		doc, err := documentParam(b)
		if err != nil {
			return sdk.ContentBlockParamUnion{}, false, err
		}
		return sdk.ContentBlockParamUnion{OfDocument: &doc}, true, nil
	}
	return sdk.ContentBlockParamUnion{}, false, fmt.Errorf("unknown block type %q", b.Type)
}

// imageParam is a base64 image block.
func imageParam(b llm.Block) sdk.ImageBlockParam {
	return sdk.ImageBlockParam{Source: sdk.ImageBlockParamSourceUnion{
		OfBase64: &sdk.Base64ImageSourceParam{Data: b.Data, MediaType: sdk.Base64ImageSourceMediaType(b.MediaType)},
	}}
}

// documentParam is a PDF (base64) or plain-text document block.
func documentParam(b llm.Block) (sdk.DocumentBlockParam, error) {
	switch {
	case b.MediaType == "application/pdf":
		return sdk.DocumentBlockParam{Source: sdk.DocumentBlockParamSourceUnion{
			OfBase64: &sdk.Base64PDFSourceParam{Data: b.Data},
		}}, nil
	case strings.HasPrefix(b.MediaType, "text/"):
		text, err := base64.StdEncoding.DecodeString(b.Data)
		if err != nil {
			return sdk.DocumentBlockParam{}, fmt.Errorf("document data is not base64: %w", err)
		}
		return sdk.DocumentBlockParam{Source: sdk.DocumentBlockParamSourceUnion{
			OfText: &sdk.PlainTextSourceParam{Data: string(text)},
		}}, nil
	}
	return sdk.DocumentBlockParam{}, fmt.Errorf("documents of type %q are not supported (PDF and text only)", b.MediaType)
}

// setCacheControl puts a cache breakpoint on b where its kind allows one.
func setCacheControl(b *sdk.ContentBlockParamUnion) {
	cc := sdk.NewCacheControlEphemeralParam()
	switch {
	case b.OfText != nil:
		b.OfText.CacheControl = cc
	case b.OfToolResult != nil:
		b.OfToolResult.CacheControl = cc
	case b.OfToolUse != nil:
		b.OfToolUse.CacheControl = cc
	case b.OfImage != nil:
		b.OfImage.CacheControl = cc
	case b.OfDocument != nil:
		b.OfDocument.CacheControl = cc
	}
}

// badRequest is the error of a request that cannot be sent as built.
func badRequest(format string, args ...any) error {
	return &llm.Error{
		Kind:    llm.KindBadRequest,
		Message: "the conversation cannot be sent to Anthropic: " + fmt.Sprintf(format, args...),
		Err:     fmt.Errorf("llm anthropic: "+format, args...),
	}
}
