package claudecode

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/attachment"
	"github.com/ferry-dev/ferry/internal/lines"
	"github.com/ferry-dev/ferry/protocol"
)

// This file is the stream-json wire of `claude -p --input-format stream-json
// --output-format stream-json`: one JSON object per line in both
// directions. Reading is two-stage: the line's "type" first, then the shape
// that type has, so a field this package does not know, or one whose shape
// a newer CLI changed, costs one line at most, never the stream.

// Message types the CLI writes.
const (
	typeSystem          = "system"
	typeAssistant       = "assistant"
	typeUser            = "user"
	typeResult          = "result"
	typeStreamEvent     = "stream_event"
	typeControlRequest  = "control_request"
	typeControlResponse = "control_response"
	typeControlCancel   = "control_cancel_request"
	typeKeepAlive       = "keep_alive"
)

// defaultMaxLine bounds one stream line. Claude Code puts whole files into
// single lines (a Read result, an Edit's original file), so the bound is
// far above any file an agent edits: a 64 MiB line must parse. Longer
// lines are skipped without being held (lines.Reader splits the stream).
const defaultMaxLine = lines.DefaultMax

// line is one decoded stream line: Type says which of the pointers is set
// (none for types this package ignores).
type line struct {
	Type    string
	System  *systemLine
	Chat    *chatLine // assistant and user
	Result  *resultLine
	Event   *streamLine
	Request *controlRequestLine
	Reply   *controlResponseLine
	Cancel  *controlCancelLine
}

// errNotObject is the decode error of a line that is no JSON object.
var errNotObject = errors.New("claudecode: the line is not a JSON object")

// decodeLine decodes one stream line. It never panics; an error means the
// line is malformed (the caller logs it and goes on).
func decodeLine(b []byte) (*line, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return nil, errNotObject
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("claudecode: decode line: %w", err)
	}
	l := &line{Type: head.Type}
	var v any
	switch head.Type {
	case typeSystem:
		l.System = &systemLine{}
		v = l.System
	case typeAssistant, typeUser:
		l.Chat = &chatLine{}
		v = l.Chat
	case typeResult:
		l.Result = &resultLine{}
		v = l.Result
	case typeStreamEvent:
		l.Event = &streamLine{}
		v = l.Event
	case typeControlRequest:
		l.Request = &controlRequestLine{}
		v = l.Request
	case typeControlResponse:
		l.Reply = &controlResponseLine{}
		v = l.Reply
	case typeControlCancel:
		l.Cancel = &controlCancelLine{}
		v = l.Cancel
	case "":
		return nil, errors.New("claudecode: the line has no type")
	default:
		return l, nil // a type this package does not use (keep_alive, …)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return nil, fmt.Errorf("claudecode: decode %s line: %w", head.Type, err)
	}
	return l, nil
}

// systemLine is a "system" line: init (session id, model), status
// (compaction progress), compact_boundary, and others this package ignores.
type systemLine struct {
	Subtype         string           `json:"subtype"`
	SessionID       string           `json:"session_id"`
	Model           string           `json:"model"`
	PermissionMode  string           `json:"permissionMode"`
	CompactResult   string           `json:"compact_result"`
	CompactError    string           `json:"compact_error"`
	CompactMetadata *compactMetadata `json:"compact_metadata"`
	// SlashCommands (init) are the CLI's slash commands, without slash.
	SlashCommands []string `json:"slash_commands"`
	// Title (session_title_changed) is the session's title: one the
	// model made from the conversation, or one set in Claude Code.
	Title string `json:"title"`
}

type compactMetadata struct {
	Trigger    string `json:"trigger"`
	PreTokens  int64  `json:"pre_tokens"`
	PostTokens int64  `json:"post_tokens"`
}

// chatLine is an "assistant" or "user" line: one message of the
// conversation. Claude Code writes an assistant message one content block
// per line, all with the message's id.
type chatLine struct {
	SessionID       string         `json:"session_id"`
	ParentToolUseID *string        `json:"parent_tool_use_id"`
	Message         chatMessage    `json:"message"`
	ToolUseResult   *toolUseResult `json:"tool_use_result"`
	// Error marks an assistant message Claude Code made up to report a
	// failure ("API Error: …"): its text is the provider's error.
	Error json.RawMessage `json:"error"`
}

// isError reports whether the line reports a failure rather than speaks.
func (c *chatLine) isError() bool {
	e := bytes.TrimSpace(c.Error)
	return len(e) > 0 && !bytes.Equal(e, []byte("null")) && !bytes.Equal(e, []byte(`""`)) && !bytes.Equal(e, []byte("false"))
}

type chatMessage struct {
	ID      string      `json:"id"`
	Model   string      `json:"model"`
	Role    string      `json:"role"`
	Content flexContent `json:"content"`
}

// contentBlock is one block of a message: text, thinking, tool_use,
// tool_result (others are ignored).
type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   resultContent   `json:"content"`
	IsError   bool            `json:"is_error"`
}

// resultContent is a tool_result's content: its text (flexText), and the
// images among its blocks (a Read of a PNG) that an agent.tool.finished
// can carry (protocol.AppendToolImage: one too large is left out; the
// text still shows "[image]" where it was).
type resultContent struct {
	text   flexText
	images []protocol.ToolImage
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *resultContent) UnmarshalJSON(b []byte) error {
	*c = resultContent{}
	if err := c.text.UnmarshalJSON(b); err != nil {
		return err
	}
	if b = bytes.TrimSpace(b); len(b) == 0 || b[0] != '[' {
		return nil
	}
	var blocks []json.RawMessage
	if err := json.Unmarshal(b, &blocks); err != nil {
		return nil //nolint:nilerr // flexText read the same list: only images are optional
	}
	for _, raw := range blocks {
		// Block by block: one of a shape this package does not know
		// costs its own image, not the others.
		var bl struct {
			Type   string   `json:"type"`
			Source inSource `json:"source"`
		}
		if json.Unmarshal(raw, &bl) == nil && bl.Type == "image" && bl.Source.Type == "base64" {
			c.images, _ = protocol.AppendToolImage(c.images, bl.Source.MediaType, bl.Source.Data)
		}
	}
	return nil
}

// flexContent is a message's content: a string (one text block) or a list
// of blocks.
type flexContent []contentBlock

// UnmarshalJSON implements json.Unmarshaler.
func (c *flexContent) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || bytes.Equal(b, []byte("null")):
		*c = nil
		return nil
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("claudecode: message content: %w", err)
		}
		*c = flexContent{{Type: "text", Text: s}}
		return nil
	}
	var blocks []contentBlock
	if err := json.Unmarshal(b, &blocks); err != nil {
		return fmt.Errorf("claudecode: message content: %w", err)
	}
	*c = blocks
	return nil
}

// flexText is a tool result's content as text: a string, or the text of a
// list of blocks (other blocks, such as images, as "[type]").
type flexText string

// UnmarshalJSON implements json.Unmarshaler.
func (t *flexText) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || bytes.Equal(b, []byte("null")):
		*t = ""
		return nil
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("claudecode: text: %w", err)
		}
		*t = flexText(s)
		return nil
	case b[0] == '[':
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(b, &blocks); err != nil {
			return fmt.Errorf("claudecode: text blocks: %w", err)
		}
		var sb strings.Builder
		for _, bl := range blocks {
			if bl.Type == "text" {
				sb.WriteString(bl.Text)
			} else {
				sb.WriteString("[" + bl.Type + "]")
			}
		}
		*t = flexText(sb.String())
		return nil
	}
	*t = flexText(b) // a number or an object: shown as it is
	return nil
}

// toolUseResult is the structured result Claude Code attaches to a
// tool_result line: for Edit and Write the file's path and the patch. It is
// a string for some tools (and for refusals); only what ferry shows is
// decoded, the rest (the whole original file) is skipped.
type toolUseResult struct {
	FilePath        string      `json:"filePath"`
	Type            string      `json:"type"`
	Content         string      `json:"content"` // a created file's content (Write)
	StructuredPatch []patchHunk `json:"structuredPatch"`
	// OriginalFile is the content Edit or Write replaced (null for a new
	// file, or when it was too large to include).
	OriginalFile *string `json:"originalFile"`
}

// UnmarshalJSON implements json.Unmarshaler: an object is decoded, any
// other value leaves the result empty.
func (r *toolUseResult) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		*r = toolUseResult{}
		return nil
	}
	type plain toolUseResult
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		// A shape this package does not know: no patch, not a bad line.
		*r = toolUseResult{}
		return nil //nolint:nilerr // the structured result is optional
	}
	*r = toolUseResult(p)
	return nil
}

// patchHunk is one hunk of a structuredPatch: lines start with " ", "-" or
// "+".
type patchHunk struct {
	OldStart int      `json:"oldStart"`
	OldLines int      `json:"oldLines"`
	NewStart int      `json:"newStart"`
	NewLines int      `json:"newLines"`
	Lines    []string `json:"lines"`
}

// resultLine ends a turn.
type resultLine struct {
	Subtype          string          `json:"subtype"`
	IsError          bool            `json:"is_error"`
	Result           flexText        `json:"result"`
	StopReason       string          `json:"stop_reason"`
	SessionID        string          `json:"session_id"`
	TotalCostUSD     float64         `json:"total_cost_usd"`
	Usage            usageBlock      `json:"usage"`
	StructuredOutput json.RawMessage `json:"structured_output"`
	APIErrorStatus   json.RawMessage `json:"api_error_status"`
	TerminalReason   string          `json:"terminal_reason"`
}

// Result subtypes.
const (
	resultSuccess  = "success"
	resultMaxTurns = "error_max_turns"
)

type usageBlock struct {
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	CacheReadTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationTokens int64 `json:"cache_creation_input_tokens"`
}

// streamLine is a "stream_event" line (--include-partial-messages): one
// raw Messages API event.
type streamLine struct {
	ParentToolUseID *string `json:"parent_tool_use_id"`
	Event           struct {
		Type    string `json:"type"`
		Message *struct {
			ID    string `json:"id"`
			Model string `json:"model"`
		} `json:"message"`
		Delta *struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			Thinking string `json:"thinking"`
		} `json:"delta"`
	} `json:"event"`
}

// controlRequestLine is a request of the CLI to ferry: can_use_tool,
// hook_callback, or one ferry does not serve.
type controlRequestLine struct {
	RequestID string         `json:"request_id"`
	Request   controlRequest `json:"request"`
}

// controlRequest is the body of a control request of the CLI; which fields
// are set depends on Subtype.
type controlRequest struct {
	Subtype               string            `json:"subtype"`
	ToolName              string            `json:"tool_name"`
	Input                 json.RawMessage   `json:"input"`
	ToolUseID             string            `json:"tool_use_id"`
	PermissionSuggestions []json.RawMessage `json:"permission_suggestions"`
	BlockedPath           *string           `json:"blocked_path"`
	Description           string            `json:"description"`
	AgentID               string            `json:"agent_id"`
	CallbackID            string            `json:"callback_id"`
}

// hookInput is a hook_callback's input for PreToolUse.
type hookInput struct {
	HookEventName string          `json:"hook_event_name"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
	ToolUseID     string          `json:"tool_use_id"`
	// Cwd is the CLI's working directory, where a Bash command runs.
	Cwd string `json:"cwd"`
}

// controlResponseLine answers a request ferry sent.
type controlResponseLine struct {
	Response struct {
		Subtype   string          `json:"subtype"`
		RequestID string          `json:"request_id"`
		Response  json.RawMessage `json:"response"`
		Error     string          `json:"error"`
	} `json:"response"`
}

// controlCancelLine withdraws a request the CLI sent (the turn was
// interrupted, the permission is no longer needed).
type controlCancelLine struct {
	RequestID string `json:"request_id"`
}

// Lines ferry writes.

// userLine is a prompt.
type userLine struct {
	Type            string      `json:"type"`
	Message         userMessage `json:"message"`
	ParentToolUseID *string     `json:"parent_tool_use_id"`
	SessionID       string      `json:"session_id"`
}

type userMessage struct {
	Role string `json:"role"`
	// Content is the prompt's text, or its content blocks when files are
	// attached ([]inBlock).
	Content any `json:"content"`
}

func newUserLine(text string) userLine {
	return userLine{Type: typeUser, Message: userMessage{Role: "user", Content: text}}
}

// inBlock is one content block of a prompt with attachments, in the
// Anthropic Messages format that Claude Code passes to the model as it is.
type inBlock struct {
	Type   string    `json:"type"`
	Text   string    `json:"text,omitempty"`
	Source *inSource `json:"source,omitempty"`
	Title  string    `json:"title,omitempty"`
}

// inSource is an image's or a document's base64 source.
type inSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// newPromptLine is a prompt's user line: its text alone, or, with files
// attached, a text block, the line saying what the files are for
// (agent.AttachedIntents, when any says), then each file as Claude Code's
// model takes it: an image block or a PDF document block (titled with the
// file name), each after a line naming it (agent.AttachedMedia), a text
// file as a text block naming the file and holding its content
// (agent.AttachedText), as ferry's own agent writes them.
func newPromptLine(text string, files []attachment.File) userLine {
	if len(files) == 0 {
		return newUserLine(text)
	}
	blocks := make([]inBlock, 0, 2+2*len(files))
	blocks = append(blocks, inBlock{Type: "text", Text: text})
	if intents := agent.AttachedIntents(files); intents != "" {
		blocks = append(blocks, inBlock{Type: "text", Text: intents})
	}
	for _, f := range files {
		src := &inSource{Type: "base64", MediaType: f.MediaType, Data: base64.StdEncoding.EncodeToString(f.Data)}
		switch {
		case f.IsImage():
			blocks = append(blocks, inBlock{Type: "text", Text: agent.AttachedMedia(f)}, inBlock{Type: "image", Source: src})
		case f.IsPDF():
			blocks = append(blocks, inBlock{Type: "text", Text: agent.AttachedMedia(f)}, inBlock{Type: "document", Source: src, Title: f.Name})
		default:
			blocks = append(blocks, inBlock{Type: "text", Text: agent.AttachedText(f)})
		}
	}
	return userLine{Type: typeUser, Message: userMessage{Role: "user", Content: blocks}}
}

// outRequest is a control request ferry sends (initialize, interrupt,
// set_permission_mode).
type outRequest struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
	Request   any    `json:"request"`
}

// outResponse answers a control request of the CLI.
type outResponse struct {
	Type     string          `json:"type"`
	Response outResponseBody `json:"response"`
}

type outResponseBody struct {
	Subtype   string `json:"subtype"`
	RequestID string `json:"request_id"`
	Response  any    `json:"response,omitempty"`
	Error     string `json:"error,omitempty"`
}

func successResponse(requestID string, body any) outResponse {
	return outResponse{Type: typeControlResponse, Response: outResponseBody{Subtype: "success", RequestID: requestID, Response: body}}
}

func errorResponse(requestID, msg string) outResponse {
	return outResponse{Type: typeControlResponse, Response: outResponseBody{Subtype: "error", RequestID: requestID, Error: msg}}
}

// permissionResult is can_use_tool's answer.
type permissionResult struct {
	Behavior           string            `json:"behavior"`
	UpdatedInput       json.RawMessage   `json:"updatedInput,omitempty"`
	UpdatedPermissions []json.RawMessage `json:"updatedPermissions,omitempty"`
	Message            string            `json:"message,omitempty"`
}

func allow(input json.RawMessage, perms []json.RawMessage) permissionResult {
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	return permissionResult{Behavior: "allow", UpdatedInput: input, UpdatedPermissions: perms}
}

func deny(msg string) permissionResult {
	return permissionResult{Behavior: "deny", Message: msg}
}

// hookDeny is a PreToolUse hook's refusal; hookPass lets the call go on to
// Claude Code's own permission flow.
type hookDecision struct {
	HookSpecificOutput *hookSpecific `json:"hookSpecificOutput,omitempty"`
}

type hookSpecific struct {
	HookEventName            string `json:"hookEventName"`
	PermissionDecision       string `json:"permissionDecision"`
	PermissionDecisionReason string `json:"permissionDecisionReason"`
}

func hookDeny(reason string) hookDecision {
	return hookDecision{HookSpecificOutput: &hookSpecific{HookEventName: "PreToolUse", PermissionDecision: "deny", PermissionDecisionReason: reason}}
}

var hookPass = hookDecision{}
