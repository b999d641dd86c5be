package protocol

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
)

// Interaction kinds of agent.interaction.request.
const (
	InteractionPermission   = "permission"
	InteractionSingleSelect = "single_select"
	InteractionMultiSelect  = "multi_select"
	InteractionTextInput    = "text_input"
)

// Tool call outcomes of agent.tool.finished.
const (
	ToolOK        = "ok"
	ToolError     = "error"
	ToolDenied    = "denied"
	ToolCancelled = "cancelled"
)

// Stop reasons of agent.text.done (TextDone.StopReason).
const (
	StopEndTurn   = "end_turn"
	StopCancelled = "cancelled"
	StopMaxTurns  = "max_turns"
	StopError     = "error"
	StopRefusal   = "refusal"
)

// Codes of agent.error (AgentError.Code) that ferry's agent, adapters and
// client send. They are stable: UIs and scripts match on them.
const (
	// AgentCodeBadRequest: the prompt itself is unusable (a bad permission
	// rule in config_overrides, an invalid json_schema, an unknown mode).
	AgentCodeBadRequest = "bad_request"
	// AgentCodeBusy: a turn or a compaction is already running.
	AgentCodeBusy = "busy"
	// AgentCodeInternal: the agent failed for a reason of its own (logged).
	AgentCodeInternal = "internal"
	// AgentCodeStructuredOutput: the final answer did not validate against
	// the prompt's json_schema, even after one retry.
	AgentCodeStructuredOutput = "structured_output_invalid"

	// The model provider's failures.
	AgentCodeProviderRateLimited = "provider_rate_limited"
	AgentCodeProviderOverloaded  = "provider_overloaded"
	AgentCodeProviderServer      = "provider_server_error"
	AgentCodeProviderUnavailable = "provider_unavailable"
	AgentCodeProviderAuth        = "provider_auth"
	AgentCodeProviderBadRequest  = "provider_bad_request"
	AgentCodeProviderStream      = "provider_stream"
	AgentCodeProviderNetwork     = "provider_network"

	// AgentCodeBudgetExceeded: an external agent stopped at its spending
	// limit.
	AgentCodeBudgetExceeded = "budget_exceeded"
	// AgentCodeStructuredOutputFailed: an external agent could not produce
	// an answer that fits the prompt's json_schema.
	AgentCodeStructuredOutputFailed = "structured_output_failed"

	// AgentCodeAgentError: an external agent reported a failure of its own.
	AgentCodeAgentError = "agent_error"
	// AgentCodeAgentExited: an external agent's process ended; the
	// session's later turns fail the same way.
	AgentCodeAgentExited = "agent_exited"
	// AgentCodeAgentCrashed: an external agent's process ended during a
	// turn; the next prompt starts it again.
	AgentCodeAgentCrashed = "agent_crashed"
	// AgentCodeAgentUnavailable: an external agent could not be started.
	AgentCodeAgentUnavailable = "agent_unavailable"
	// AgentCodeAuthRequired: an external agent wants the user to log in.
	AgentCodeAuthRequired = "agent_auth_required"
	// AgentCodeMCPServerFailed: an MCP server of the session (the user's
	// mcp.json, the workspace's approved .mcp.json, or lent by the editor
	// in ferry acp) could not be connected, or went away, or its
	// configuration is wrong or not approved; the turn goes on without
	// its tools. Sent once per server and failure.
	AgentCodeMCPServerFailed = "mcp_server_failed"
	// AgentCodeSessionNotResumed: the agent could not resume the session's
	// earlier conversation and goes on in a new one.
	AgentCodeSessionNotResumed = "session_not_resumed"
	// AgentCodeAgentFailed: the client saw the agent fail without a code.
	AgentCodeAgentFailed = "agent_failed"
	// AgentCodeCompactionFailed: the agent could not compact the session.
	AgentCodeCompactionFailed = "compaction_failed"
	// AgentCodeRestarted: the client restarted and the turn it ran is lost.
	AgentCodeRestarted = "restarted"

	// A script adapter's process failed.
	AgentCodeScriptExitStatus  = "script_exit_status"
	AgentCodeScriptKilled      = "script_killed"
	AgentCodeScriptStartFailed = "script_start_failed"
)

// TurnStarted is agent.turn.started: the client accepted a prompt and opened
// a turn. parent_id is the control.prompt.request's message_id.
type TurnStarted struct {
	// TurnID names the turn in every later event and in control.prompt.cancel.
	TurnID string `json:"turn_id" jsonschema:"minLength=1,maxLength=128"`
	// InputType of the prompt that opened the turn.
	InputType string `json:"input_type" jsonschema:"enum=text,enum=slash_command,enum=continuation,enum=piped_stdin"`
	// Mode in force when the turn started.
	Mode string `json:"mode" jsonschema:"enum=default,enum=plan,enum=review"`
	// Adapter running the turn.
	Adapter string `json:"adapter,omitempty" jsonschema:"maxLength=128"`
}

// TextDelta is agent.text.delta: the next piece of the agent's streamed text.
type TextDelta struct {
	// TurnID names the turn (from agent.turn.started).
	TurnID string `json:"turn_id" jsonschema:"minLength=1,maxLength=128"`
	// Delta is the next piece of text, to append.
	Delta string `json:"delta"`
	// Channel is text (the answer) or thinking (reasoning shown apart).
	Channel string `json:"channel,omitempty" jsonschema:"enum=text,enum=thinking,default=text"`
}

// TextDone is agent.text.done: the end of a turn. Every turn ends with
// exactly one, cancelled or not.
type TextDone struct {
	// TurnID names the turn (from agent.turn.started).
	TurnID string `json:"turn_id" jsonschema:"minLength=1,maxLength=128"`
	// IsCancelled is true when control.prompt.cancel ended the turn.
	IsCancelled bool `json:"is_cancelled"`
	// Text is the turn's whole final text, so a late viewer needs no deltas.
	Text string `json:"text,omitempty"`
	// StopReason says why the turn ended.
	StopReason string `json:"stop_reason,omitempty" jsonschema:"enum=end_turn,enum=cancelled,enum=max_turns,enum=error,enum=refusal"`
	// Result is the structured answer when the prompt asked for json_schema.
	Result json.RawMessage `json:"result,omitempty"`
}

// ToolStarted is agent.tool.started: the agent called a tool.
type ToolStarted struct {
	// TurnID names the turn (from agent.turn.started).
	TurnID string `json:"turn_id" jsonschema:"minLength=1,maxLength=128"`
	// ToolUseID names the call in later events.
	ToolUseID string `json:"tool_use_id" jsonschema:"minLength=1,maxLength=256"`
	// ToolName is the tool called, e.g. "Edit".
	ToolName string `json:"tool_name" jsonschema:"minLength=1,maxLength=256"`
	// Input is the tool's arguments as the agent gave them.
	Input json.RawMessage `json:"input,omitempty" jsonschema:"type=object"`
	// ParentToolUseID is set on the tool calls of a sub-agent (ferry's Task tool, a Claude Code sub-agent): the tool_use_id of the Task call it works for, so a UI can fold them under it.
	ParentToolUseID string `json:"parent_tool_use_id,omitempty" jsonschema:"maxLength=256"`
}

// ToolUpdated is agent.tool.updated: progress of a running tool (streamed
// Bash output, a status line).
type ToolUpdated struct {
	// TurnID names the turn (from agent.turn.started).
	TurnID string `json:"turn_id" jsonschema:"minLength=1,maxLength=128"`
	// ToolUseID names the tool call.
	ToolUseID string `json:"tool_use_id" jsonschema:"minLength=1,maxLength=256"`
	// OutputDelta is output to append.
	OutputDelta string `json:"output_delta,omitempty"`
	// Status is a short progress line.
	Status string `json:"status,omitempty" jsonschema:"maxLength=1024"`
	// ParentToolUseID is set on the tool calls of a sub-agent (ferry's Task tool, a Claude Code sub-agent): the tool_use_id of the Task call it works for, so a UI can fold them under it.
	ParentToolUseID string `json:"parent_tool_use_id,omitempty" jsonschema:"maxLength=256"`
}

// ToolFinished is agent.tool.finished: a tool call's result.
type ToolFinished struct {
	// TurnID names the turn (from agent.turn.started).
	TurnID string `json:"turn_id" jsonschema:"minLength=1,maxLength=128"`
	// ToolUseID names the tool call.
	ToolUseID string `json:"tool_use_id" jsonschema:"minLength=1,maxLength=256"`
	// ToolName is the tool called.
	ToolName string `json:"tool_name" jsonschema:"minLength=1,maxLength=256"`
	// Status is the outcome.
	Status string `json:"status" jsonschema:"enum=ok,enum=error,enum=denied,enum=cancelled"`
	// Output is the result text given back to the agent.
	Output string `json:"output,omitempty"`
	// ErrorCode is the file tools' numeric code (2, 3, 9, …) when Status is error.
	ErrorCode int `json:"error_code,omitempty" jsonschema:"minimum=0"`
	// Diff is the change a Write or Edit made.
	Diff *FileDiff `json:"diff,omitempty"`
	// Images are what the tool answered as images (a Read of a PNG), for the UI to show inline; the output still says what each was. At most 4, each at most 1 MiB of base64; one too large is left out.
	Images []ToolImage `json:"images,omitempty" jsonschema:"maxItems=4"`
	// ParentToolUseID is set on the tool calls of a sub-agent (ferry's Task tool, a Claude Code sub-agent): the tool_use_id of the Task call it works for, so a UI can fold them under it.
	ParentToolUseID string `json:"parent_tool_use_id,omitempty" jsonschema:"maxLength=256"`
}

// Limits of agent.tool.finished's images.
const (
	// MaxToolImages is how many images one tool answer carries.
	MaxToolImages = 4
	// MaxToolImageBytes caps one image's base64 data.
	MaxToolImageBytes = 1 << 20
	// MaxToolImagesBytes caps the base64 of one answer's images together,
	// so the message stays under MaxMessageBytes with its output and diff.
	MaxToolImagesBytes = 3 << 20
)

// ToolImage is one image a tool answered with.
type ToolImage struct {
	// MediaType is the image's type: image/png, image/jpeg, image/gif or image/webp.
	MediaType string `json:"media_type" jsonschema:"enum=image/png,enum=image/jpeg,enum=image/gif,enum=image/webp"`
	// Data is the image, base64 (standard alphabet, padded), at most 1 MiB of it.
	Data string `json:"data" jsonschema:"minLength=1,maxLength=1048576"`
}

// AppendToolImage appends the image (mediaType, data in standard base64)
// to imgs when an agent.tool.finished may carry it: a media type the UI
// shows, valid base64, at most MaxToolImageBytes, within MaxToolImages and
// MaxToolImagesBytes together. It reports whether it did: adapters leave
// out an image that does not fit, and the tool's output text still names
// it.
func AppendToolImage(imgs []ToolImage, mediaType, data string) ([]ToolImage, bool) {
	img := ToolImage{MediaType: mediaType, Data: data}
	if len(imgs) >= MaxToolImages || img.validate("") != nil {
		return imgs, false
	}
	total := len(data)
	for _, i := range imgs {
		total += len(i.Data)
	}
	if total > MaxToolImagesBytes {
		return imgs, false
	}
	return append(imgs, img), true
}

func (i *ToolImage) validate(field string) *Error {
	switch i.MediaType {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
	default:
		return errorf(CodeInvalidValue, field+".media_type", "%q is no image type the UI shows (image/png, image/jpeg, image/gif, image/webp)", i.MediaType)
	}
	if i.Data == "" {
		return errorf(CodeMissingField, field+".data", "the image has no data")
	}
	if len(i.Data) > MaxToolImageBytes {
		return errorf(CodeInvalidValue, field+".data", "the image is %d bytes of base64, over the %d-byte limit", len(i.Data), MaxToolImageBytes)
	}
	if _, err := base64.StdEncoding.DecodeString(i.Data); err != nil {
		return errorf(CodeInvalidValue, field+".data", "the image is not standard base64")
	}
	return nil
}

// FileDiff is the structured change a Write or Edit made (or, inside a
// permission request, proposes), in unified-diff hunks.
type FileDiff struct {
	// Path of the file, relative to the workspace.
	Path string `json:"path" jsonschema:"minLength=1,maxLength=4096"`
	// IsNewFile is true when the file did not exist before.
	IsNewFile bool `json:"is_new_file,omitempty"`
	// Hunks of the change, in file order.
	Hunks []DiffHunk `json:"hunks" jsonschema:"maxItems=10000"`
	// Truncated is set when hunks were cut to keep the message small.
	Truncated bool `json:"truncated,omitempty"`
}

// DiffHunk is one hunk: line numbers are 1-based, as in unified diffs.
type DiffHunk struct {
	// OldStart is the first line in the old file (1-based).
	OldStart int `json:"old_start" jsonschema:"minimum=0"`
	// OldLines counts context and deleted lines.
	OldLines int `json:"old_lines" jsonschema:"minimum=0"`
	// NewStart is the first line in the new file (1-based).
	NewStart int `json:"new_start" jsonschema:"minimum=0"`
	// NewLines counts context and added lines.
	NewLines int `json:"new_lines" jsonschema:"minimum=0"`
	// Lines of the hunk.
	Lines []DiffLine `json:"lines"`
}

// DiffLine is one line of a hunk, without its line terminator.
type DiffLine struct {
	// Op is context, add or delete.
	Op string `json:"op" jsonschema:"enum=context,enum=add,enum=delete"`
	// Text of the line without its terminator.
	Text string `json:"text"`
}

func (d *FileDiff) validate(field string) *Error {
	for i, h := range d.Hunks {
		var old, added int
		for _, l := range h.Lines {
			switch l.Op {
			case "context":
				old++
				added++
			case "delete":
				old++
			case "add":
				added++
			}
		}
		if old != h.OldLines || added != h.NewLines {
			return errorf(CodeInvalidValue, fmt.Sprintf("%s.hunks[%d]", field, i), "lines give %d old and %d new, header says %d and %d", old, added, h.OldLines, h.NewLines)
		}
	}
	return nil
}

func (t *ToolFinished) validate() *Error {
	if t.Diff != nil {
		if e := t.Diff.validate("payload.diff"); e != nil {
			return e
		}
	}
	if len(t.Images) > MaxToolImages {
		return errorf(CodeInvalidValue, "payload.images", "has %d images, at most %d allowed", len(t.Images), MaxToolImages)
	}
	for i := range t.Images {
		if e := t.Images[i].validate(fmt.Sprintf("payload.images[%d]", i)); e != nil {
			return e
		}
	}
	return nil
}

// InteractionRequest is agent.interaction.request: the agent needs an answer
// from the user. The first control.interaction.response wins; after
// TimeoutMS without one the master sends control.interaction.timeout.
type InteractionRequest struct {
	// InteractionID names the question in the answer.
	InteractionID string `json:"interaction_id" jsonschema:"minLength=1,maxLength=128"`
	// TurnID names the turn (from agent.turn.started).
	TurnID string `json:"turn_id" jsonschema:"minLength=1,maxLength=128"`
	// Kind is permission, single_select, multi_select or text_input.
	Kind string `json:"kind" jsonschema:"enum=permission,enum=single_select,enum=multi_select,enum=text_input"`
	// Title is the question, short.
	Title string `json:"title" jsonschema:"minLength=1,maxLength=1024"`
	// Message explains it, Markdown.
	Message string `json:"message,omitempty" jsonschema:"maxLength=65536"`
	// Options to choose from (all kinds but text_input).
	Options []Option `json:"options,omitempty" jsonschema:"maxItems=64"`
	// DefaultValue is what a timeout answers (TimeoutAnswer), and so the option a UI pre-selects (or the text it pre-fills): a permission's can only be deny (a timeout never grants), a single_select's one of its options, a multi_select's a comma-separated list of them. Absent: a timeout answers nothing, which the agent takes as a denial.
	DefaultValue string `json:"default_value,omitempty" jsonschema:"maxLength=65536"`
	// TimeoutMS is how long the agent waits; 0 means no timeout. The client fills in its session's permission timeout when the adapter set none.
	TimeoutMS int `json:"timeout_ms,omitempty" jsonschema:"minimum=0"`
	// ExpiresAt is when the timeout settles it, RFC 3339; set by the master when it records the request.
	ExpiresAt string `json:"expires_at,omitempty" jsonschema:"format=date-time"`
	// ToolUseID of the call asking permission.
	ToolUseID string `json:"tool_use_id,omitempty" jsonschema:"maxLength=256"`
	// ToolName of the call asking permission.
	ToolName string `json:"tool_name,omitempty" jsonschema:"maxLength=256"`
	// ToolInput of the call asking permission.
	ToolInput json.RawMessage `json:"tool_input,omitempty" jsonschema:"type=object"`
	// Diff is the change an Edit or Write asks to make.
	Diff *FileDiff `json:"diff,omitempty"`
}

// Option is one choice of an interaction.
type Option struct {
	// Value is what selected_value carries back.
	Value string `json:"value" jsonschema:"minLength=1,maxLength=256"`
	// Label is shown to people.
	Label string `json:"label" jsonschema:"minLength=1,maxLength=1024"`
	// Description explains the choice.
	Description string `json:"description,omitempty" jsonschema:"maxLength=4096"`
}

// Permission answers, the option values of a permission interaction.
const (
	AllowOnce   = "allow_once"
	AllowAlways = "allow_always"
	Deny        = "deny"
)

func (r *InteractionRequest) validate() *Error {
	if r.Kind != InteractionTextInput && len(r.Options) == 0 {
		return errorf(CodeMissingField, "payload.options", "a %s interaction needs options", r.Kind)
	}
	seen := map[string]bool{}
	for i, o := range r.Options {
		if seen[o.Value] {
			return errorf(CodeInvalidValue, fmt.Sprintf("payload.options[%d].value", i), "option value %q is repeated", o.Value)
		}
		seen[o.Value] = true
	}
	if _, why := r.defaultAnswer(); why != "" { // what it advertises is what a timeout does
		return errorf(CodeInvalidValue, "payload.default_value", "%s", why)
	}
	if r.Diff != nil {
		return r.Diff.validate("payload.diff")
	}
	return nil
}

// InteractionResolved is agent.interaction.resolved, sent by the master to
// every UI when an interaction is settled, so the other UIs close its prompt.
type InteractionResolved struct {
	// InteractionID names the interaction.
	InteractionID string `json:"interaction_id" jsonschema:"minLength=1,maxLength=128"`
	// Outcome is answered, timeout or cancelled (the turn ended first).
	Outcome string `json:"outcome" jsonschema:"enum=answered,enum=timeout,enum=cancelled"`
	// SelectedValue is the winning answer.
	SelectedValue *SelectedValue `json:"selected_value,omitempty"`
	// TextInput is the winning free text.
	TextInput string `json:"text_input,omitempty"`
	// Note is the winning denial's note to the agent.
	Note string `json:"note,omitempty" jsonschema:"maxLength=2000"`
}

// Usage is agent.usage: tokens and cost of the model calls so far in a turn.
type Usage struct {
	// TurnID names the turn (from agent.turn.started).
	TurnID string `json:"turn_id" jsonschema:"minLength=1,maxLength=128"`
	// Model used.
	Model string `json:"model,omitempty" jsonschema:"maxLength=256"`
	// InputTokens sent to the model.
	InputTokens int64 `json:"input_tokens" jsonschema:"minimum=0"`
	// OutputTokens the model produced.
	OutputTokens int64 `json:"output_tokens" jsonschema:"minimum=0"`
	// CacheReadTokens served from the prompt cache.
	CacheReadTokens int64 `json:"cache_read_tokens,omitempty" jsonschema:"minimum=0"`
	// CacheCreationTokens written to the prompt cache.
	CacheCreationTokens int64 `json:"cache_creation_tokens,omitempty" jsonschema:"minimum=0"`
	// CostUSD is the estimated cost in US dollars.
	CostUSD float64 `json:"cost_usd,omitempty" jsonschema:"minimum=0"`
}

// AgentError is agent.error: something failed in the agent or its provider.
// Code is stable and Message is safe to show; internals stay in the log.
type AgentError struct {
	// TurnID of the failed turn, when there is one.
	TurnID string `json:"turn_id,omitempty" jsonschema:"maxLength=128"`
	// Code is stable, e.g. provider_rate_limited.
	Code string `json:"code" jsonschema:"minLength=1,maxLength=64"`
	// Message is safe to show to the user.
	Message string `json:"message" jsonschema:"maxLength=4096"`
	// Retryable is true when trying again may work.
	Retryable bool `json:"retryable,omitempty"`
}

// ModeChanged is agent.mode.changed: the mode a control.mode.switch asked for
// is in force (from the next tool call on).
type ModeChanged struct {
	// Mode now in force.
	Mode string `json:"mode" jsonschema:"enum=default,enum=plan,enum=review"`
}

// CompactionDone is agent.compaction.done: the history was summarised.
type CompactionDone struct {
	// TokensBefore is the history size before.
	TokensBefore int64 `json:"tokens_before" jsonschema:"minimum=0"`
	// TokensAfter is the history size after.
	TokensAfter int64 `json:"tokens_after" jsonschema:"minimum=0"`
	// AchievedRatio is tokens_after over tokens_before, as measured after the compaction (absent when the history was empty); a compaction asked for a target_token_ratio lands at most 10 % above it.
	AchievedRatio *float64 `json:"achieved_ratio,omitempty" jsonschema:"minimum=0"`
}

// FillRatio sets AchievedRatio from the token counts when the adapter left
// it unset and there was a history to compact; it is rounded to four
// decimals, as are the ratios adapters report.
func (c *CompactionDone) FillRatio() {
	if c == nil || c.AchievedRatio != nil || c.TokensBefore <= 0 {
		return
	}
	r := roundRatio(float64(c.TokensAfter) / float64(c.TokensBefore))
	c.AchievedRatio = &r
}

// roundRatio rounds a ratio to four decimals (a hundredth of a percent).
func roundRatio(r float64) float64 { return math.Round(r*10000) / 10000 }
