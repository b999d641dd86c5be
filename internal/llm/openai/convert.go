package openai

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/ferry-dev/ferry/internal/llm"
)

// imageNote stands in a tool message for the images of its result, which
// follow in a user message.
const imageNote = "[image attached below]"

// params converts a neutral request into the SDK's.
func (p *Provider) params(req llm.Request) (sdk.ChatCompletionNewParams, error) {
	model := p.model
	if req.Model != "" {
		model = req.Model
	}
	out := sdk.ChatCompletionNewParams{
		Model:         model,
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)},
	}
	switch req.Effort {
	case "":
	case llm.EffortLow, llm.EffortMedium, llm.EffortHigh:
		// The documented reasoning_effort values are the effort's own words.
		out.ReasoningEffort = shared.ReasoningEffort(req.Effort)
	default:
		return out, badRequest("thinking effort %q: reasoning models take low, medium or high", req.Effort)
	}
	if req.MaxTokens > 0 {
		if p.legacyMaxTokens {
			out.MaxTokens = sdk.Int(int64(req.MaxTokens))
		} else {
			out.MaxCompletionTokens = sdk.Int(int64(req.MaxTokens))
		}
	}
	if req.System != "" {
		out.Messages = append(out.Messages, sdk.SystemMessage(req.System))
	}
	for i, t := range req.Tools {
		if t.Name == "" {
			return out, badRequest("tool %d has no name", i)
		}
		params := shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
		if len(t.InputSchema) > 0 {
			params = shared.FunctionParameters{}
			if err := json.Unmarshal(t.InputSchema, &params); err != nil {
				return out, badRequest("tool %d (%s): input schema is not a JSON object", i, t.Name)
			}
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: params}
		if t.Description != "" {
			fn.Description = sdk.String(t.Description)
		}
		out.Tools = append(out.Tools, sdk.ChatCompletionFunctionTool(fn))
	}
	for i, m := range req.Messages {
		var msgs []sdk.ChatCompletionMessageParamUnion
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
			return out, badRequest("message %d: %v", i, err)
		}
		out.Messages = append(out.Messages, msgs...)
	}
	return out, nil
}

// userMessages converts a user message: its tool results first, as tool
// messages, then one user message with its text, images and documents and
// the images of its tool results.
func userMessages(m llm.Message) ([]sdk.ChatCompletionMessageParamUnion, error) {
	var out []sdk.ChatCompletionMessageParamUnion
	var parts []sdk.ChatCompletionContentPartUnionParam
	var resultImages []sdk.ChatCompletionContentPartUnionParam
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
			out = append(out, sdk.ToolMessage(text, b.ToolUseID))
		case llm.BlockText:
			if b.Text != "" {
				parts = append(parts, sdk.TextContentPart(b.Text))
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
		return append(out, sdk.UserMessage(text)), nil
	}
	return append(out, sdk.UserMessage(parts)), nil
}

// onlyText joins parts when all are text.
func onlyText(parts []sdk.ChatCompletionContentPartUnionParam) (string, bool) {
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if p.OfText == nil {
			return "", false
		}
		texts = append(texts, p.OfText.Text)
	}
	return strings.Join(texts, "\n\n"), true
}

// assistantMessage converts an assistant message: its text as content, its
// tool_use blocks as tool_calls.
func assistantMessage(m llm.Message) ([]sdk.ChatCompletionMessageParamUnion, error) {
	var msg sdk.ChatCompletionAssistantMessageParam
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
			msg.ToolCalls = append(msg.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID: b.ToolUseID,
					Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      b.ToolName,
						Arguments: string(input),
					},
				},
			})
		default:
			return nil, fmt.Errorf("block %d: %q blocks cannot be sent in an assistant message", j, b.Type)
		}
	}
	if len(texts) > 0 {
		msg.Content.OfString = sdk.String(strings.Join(texts, "\n\n"))
	}
	if len(texts) == 0 && len(msg.ToolCalls) == 0 {
		return nil, nil // nothing the API would accept or the model need
	}
	return []sdk.ChatCompletionMessageParamUnion{{OfAssistant: &msg}}, nil
}

// imagePart is an image as a data URL.
func imagePart(b llm.Block) sdk.ChatCompletionContentPartUnionParam {
	return sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{
		URL: "data:" + b.MediaType + ";base64," + b.Data,
	})
}

// documentPart is a PDF as a file part or a text document as text.
func documentPart(b llm.Block) (sdk.ChatCompletionContentPartUnionParam, error) {
	switch {
	case b.MediaType == "application/pdf":
		return sdk.FileContentPart(sdk.ChatCompletionContentPartFileFileParam{
			FileData: sdk.String("data:application/pdf;base64," + b.Data),
			Filename: sdk.String("document.pdf"),
		}), nil
	case strings.HasPrefix(b.MediaType, "text/"):
		text, err := base64.StdEncoding.DecodeString(b.Data)
		if err != nil {
			return sdk.ChatCompletionContentPartUnionParam{}, fmt.Errorf("document data is not base64: %w", err)
		}
		return sdk.TextContentPart(string(text)), nil
	}
	return sdk.ChatCompletionContentPartUnionParam{}, fmt.Errorf("documents of type %q are not supported (PDF and text only)", b.MediaType)
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
