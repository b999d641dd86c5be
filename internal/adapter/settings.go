package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/ferry-dev/ferry/protocol"
)

// The settings a prompt, a compaction or a mode switch can carry, by the
// names protocol.AdapterCapability.Settings lists them under. An adapter
// honours every setting it declares and refuses the others (CheckPrompt,
// CheckCompact, CheckModeConfig) with code unsupported naming the field:
// no adapter silently ignores one.
const (
	// SettingOutputFormat is config_overrides.output_format: how the
	// requester renders the turn (text, json, stream-json). The events of a
	// turn carry everything each format needs (the deltas, and the text,
	// stop reason and result of agent.text.done), so it is honoured by
	// ferry for every adapter: ferry run prints the format, the UI streams.
	SettingOutputFormat = protocol.SettingOutputFormat
	// SettingJSONSchema is config_overrides.json_schema: a structured
	// answer, checked against the schema, as the turn's result.
	SettingJSONSchema = protocol.SettingJSONSchema
	// SettingMaxTurns is config_overrides.max_turns: a bound on the
	// prompt's model round trips.
	SettingMaxTurns = protocol.SettingMaxTurns
	// SettingAllowedTools is config_overrides.allowed_tools: permission
	// rules allowed without asking, for this prompt.
	SettingAllowedTools = protocol.SettingAllowedTools
	// SettingDeniedTools is config_overrides.denied_tools: permission rules
	// always refused, for this prompt.
	SettingDeniedTools = protocol.SettingDeniedTools
	// SettingContextFiles is the prompt's context_files: attached files
	// handed to the agent.
	SettingContextFiles = protocol.SettingContextFiles
	// SettingTargetTokenRatio is control.session.compact's
	// target_token_ratio.
	SettingTargetTokenRatio = "target_token_ratio"
	// SettingModeConfig is control.mode.switch's config object.
	SettingModeConfig = "mode_config"
)

// PromptSettings are the settings a control.prompt.request can carry, in
// the order CheckPrompt checks them.
var PromptSettings = []string{
	SettingOutputFormat, SettingJSONSchema, SettingMaxTurns,
	SettingAllowedTools, SettingDeniedTools, SettingContextFiles,
}

// AllSettings are every setting an adapter can declare, prompt settings
// first.
var AllSettings = append(slices.Clone(PromptSettings), SettingTargetTokenRatio, SettingModeConfig)

// FieldOf is the wire field of a setting, as an unsupported error names it.
func FieldOf(setting string) string {
	switch setting {
	case SettingTargetTokenRatio:
		return "payload.target_token_ratio"
	case SettingModeConfig:
		return "payload.config"
	}
	return protocol.SettingField(setting)
}

// SettingsOf lists the prompt settings req sets, in PromptSettings order
// (protocol.PromptRequest.Settings).
func SettingsOf(req *protocol.PromptRequest) []string { return req.Settings() }

// emptyConfig reports whether a mode config asks for nothing: absent,
// null, or {}.
func emptyConfig(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return true
	}
	var b bytes.Buffer
	return json.Compact(&b, raw) == nil && b.String() == "{}"
}

// InputTypeOf is req's input type, text when unset.
func InputTypeOf(req *protocol.PromptRequest) string {
	if req == nil || req.InputType == "" {
		return protocol.InputText
	}
	return req.InputType
}

// CheckPrompt is the agent.error that refuses req for an adapter with
// capability caps: code unsupported, its message naming the first setting
// (or the input type) the adapter does not declare, with why[setting] as
// the reason where given. Nil when the adapter honours all req asks.
func CheckPrompt(caps protocol.AdapterCapability, req *protocol.PromptRequest, why map[string]string) *protocol.AgentError {
	if it := InputTypeOf(req); !slices.Contains(caps.InputTypes, it) {
		return &protocol.AgentError{Code: protocol.CodeUnsupported,
			Message: fmt.Sprintf("payload.input_type: %s takes no %s input (it takes %s)", caps.Name, it, strings.Join(caps.InputTypes, ", "))}
	}
	for _, s := range SettingsOf(req) {
		if slices.Contains(caps.Settings, s) {
			continue
		}
		reason := why[s]
		if reason == "" {
			reason = caps.Name + " cannot honour it"
		}
		return &protocol.AgentError{Code: protocol.CodeUnsupported, Message: FieldOf(s) + ": " + reason + "; send the prompt without it"}
	}
	return nil
}

// RefusePrompt checks turn's request (CheckPrompt) and, when the adapter
// cannot honour it, reports the agent.error of the turn: refused is then
// true, and Run returns res and err as they are, having done nothing else.
func RefusePrompt(ctx context.Context, caps protocol.AdapterCapability, turn Turn, emit Emit, why map[string]string) (res Result, refused bool, err error) {
	return refuse(ctx, turn, emit, CheckPrompt(caps, turn.Request, why))
}

// CheckSlash is the agent.error that refuses a slash_command prompt
// carrying a prompt setting its slash commands do not take: one outside
// honoured (output_format always is: ferry renders it), named with why.
// Nil for a prompt of another input type, or one that sets nothing else.
// An adapter whose slash commands run on another path than its prompts
// (its own commands, the agent's command line) checks it besides
// CheckPrompt, so that no setting is dropped on that path.
func CheckSlash(req *protocol.PromptRequest, honoured []string, why string) *protocol.AgentError {
	if InputTypeOf(req) != protocol.InputSlashCommand {
		return nil
	}
	if s := req.SettingOutside(honoured...); s != "" {
		return &protocol.AgentError{Code: protocol.CodeUnsupported, Message: FieldOf(s) + ": " + why + "; send the command without it, or the request as a text prompt"}
	}
	return nil
}

// RefuseSlash is RefusePrompt for CheckSlash.
func RefuseSlash(ctx context.Context, turn Turn, emit Emit, honoured []string, why string) (res Result, refused bool, err error) {
	return refuse(ctx, turn, emit, CheckSlash(turn.Request, honoured, why))
}

// refuse reports ae (nil: nothing to refuse) as the turn's agent.error.
func refuse(ctx context.Context, turn Turn, emit Emit, ae *protocol.AgentError) (Result, bool, error) {
	if ae == nil {
		return Result{}, false, nil
	}
	ae.TurnID = turn.ID
	if err := emit(ctx, protocol.TypeAgentError, ae); err != nil {
		return Result{StopReason: protocol.StopError}, true, fmt.Errorf("adapter: report the refused prompt: %w", err)
	}
	return Result{StopReason: protocol.StopError}, true, nil
}

// CheckCompact is the *protocol.Error (code unsupported) that refuses a
// compaction whose target_token_ratio the adapter does not declare, or nil.
func CheckCompact(caps protocol.AdapterCapability, req *protocol.SessionCompact, why string) error {
	if req == nil || req.TargetTokenRatio == nil || slices.Contains(caps.Settings, SettingTargetTokenRatio) {
		return nil
	}
	if why == "" {
		why = caps.Name + " cannot aim compaction at a ratio"
	}
	return &protocol.Error{Code: protocol.CodeUnsupported, Field: FieldOf(SettingTargetTokenRatio), Message: why + "; compact without it"}
}

// CheckModeConfig is the *protocol.Error (code unsupported) that refuses a
// control.mode.switch config the adapter does not declare (an absent, null
// or empty object asks nothing), or nil.
func CheckModeConfig(caps protocol.AdapterCapability, config []byte) error {
	if emptyConfig(config) || slices.Contains(caps.Settings, SettingModeConfig) {
		return nil
	}
	return &protocol.Error{Code: protocol.CodeUnsupported, Field: FieldOf(SettingModeConfig),
		Message: caps.Name + " takes no mode settings; switch with the mode alone"}
}
