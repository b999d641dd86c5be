package protocol

import (
	"encoding/json"
	"fmt"
)

// Input types of control.prompt.request (§6.1.1).
const (
	InputText         = "text"
	InputSlashCommand = "slash_command"
	InputContinuation = "continuation"
	InputPipedStdin   = "piped_stdin"
)

// Modes of control.mode.switch (§6.3.2).
const (
	ModeDefault = "default"
	ModePlan    = "plan"
	ModeReview  = "review"
)

// Search scopes of control.file.search (§16.1.1).
const (
	ScopeWorkspace = "workspace"
	ScopeProject   = "project"
	ScopeGlobal    = "global"
)

// Limits of control.file.search.
const (
	DefaultMaxResults = 20
	MaxResultsCap     = 50
)

// PromptRequest is control.prompt.request (§6.1.1): one user prompt for the
// session's agent. prompt_text may carry <@file:…> tokens (§16.2), each
// described by an entry of FileReferences.
type PromptRequest struct {
	// PromptText is the prompt; typed text is escaped and picked files are <@file:ref_id|display_path> tokens (§16.2).
	PromptText string `json:"prompt_text" jsonschema:"minLength=1"`
	// InputType says how the text is meant.
	InputType string `json:"input_type,omitempty" jsonschema:"enum=text,enum=slash_command,enum=continuation,enum=piped_stdin,default=text"`
	// ContextFiles are attached files, independent of inline tokens.
	ContextFiles []ContextFile `json:"context_files,omitempty" jsonschema:"maxItems=100"`
	// FileReferences describe the tokens in PromptText, one entry per ref_id.
	FileReferences []FileReference `json:"file_references,omitempty" jsonschema:"maxItems=1000"`
	// ConfigOverrides apply to this prompt only.
	ConfigOverrides *ConfigOverrides `json:"config_overrides,omitempty"`
}

// ContextFile is a file attached to a prompt, independent of inline tokens.
// It is checked like a file reference (validateContextFiles): the URLs of
// one prompt's context files total at most MaxContextFilesBytes.
type ContextFile struct {
	// FileURL is where the client fetches the file: https with a host and
	// no credentials, a data: URL, or ferry-upload:upl_<id> (a file the
	// browser uploaded to the master; the master adds a grant bound to the
	// prompt before relaying it).
	FileURL string `json:"file_url" jsonschema:"minLength=1,maxLength=8192"`
	// FileName to show: a bare name, without a path or any control, format (Cf: bidirectional, zero-width, …) or otherwise invisible character.
	FileName string `json:"file_name" jsonschema:"minLength=1,maxLength=1024"`
	// MimeType is an IANA media type.
	MimeType string `json:"mime_type,omitempty" jsonschema:"maxLength=256"`
	// Intent says why the file is attached: reference (read it, do not change it), edit_target (the file to change) or context (background); absent says nothing. The agent's prompt states it (docs/adapters.md, Attachments).
	Intent string `json:"intent,omitempty" jsonschema:"enum=reference,enum=edit_target,enum=context"`
}

// Intents of a context_files entry (§6.1.1).
const (
	IntentReference  = "reference"
	IntentEditTarget = "edit_target"
	IntentContext    = "context"
)

// ConfigOverrides adjusts one prompt's run.
type ConfigOverrides struct {
	// OutputFormat of the final answer.
	OutputFormat string `json:"output_format,omitempty" jsonschema:"enum=text,enum=json,enum=stream-json"`
	// JSONSchema makes the final answer structured and validated against it.
	JSONSchema json.RawMessage `json:"json_schema,omitempty" jsonschema:"type=object"`
	// MaxTurns bounds the model round trips of this prompt.
	MaxTurns *int `json:"max_turns,omitempty" jsonschema:"minimum=1,maximum=10000"`
	// AllowedTools are permission rules allowed without asking, e.g. "Bash(git diff:*)".
	AllowedTools []string `json:"allowed_tools,omitempty" jsonschema:"maxItems=256"`
	// DeniedTools are permission rules always refused.
	DeniedTools []string `json:"denied_tools,omitempty" jsonschema:"maxItems=256"`
}

func (p *PromptRequest) validate() *Error {
	if e := validateContextFiles(p.ContextFiles, "payload.context_files"); e != nil {
		return e
	}
	return validateRefIDs(p.FileReferences, "payload.file_references")
}

func validateRefIDs(refs []FileReference, field string) *Error {
	seen := make(map[string]int, len(refs))
	for i, r := range refs {
		if j, dup := seen[r.RefID]; dup {
			return errorf(CodeInvalidValue, fmt.Sprintf("%s[%d].ref_id", field, i), "ref_id %q is already used by %s[%d]", r.RefID, field, j)
		}
		seen[r.RefID] = i
	}
	return nil
}

// PromptCancel is control.prompt.cancel (§6.1.2). The client stops the turn
// and sends exactly one agent.text.done with is_cancelled true.
type PromptCancel struct {
	// TargetTurnID is the turn to stop; other turns are not touched.
	TargetTurnID string `json:"target_turn_id" jsonschema:"minLength=1,maxLength=128"`
	// Reason is why, for the transcript.
	Reason string `json:"reason,omitempty" jsonschema:"enum=user_cancelled,enum=timeout,enum=quota_exceeded"`
}

// InteractionResponse is control.interaction.response (§6.2.1).
type InteractionResponse struct {
	// InteractionID names the agent.interaction.request answered.
	InteractionID string `json:"interaction_id" jsonschema:"minLength=1,maxLength=128"`
	// SelectedValue is one option value, or a list for multi_select.
	SelectedValue SelectedValue `json:"selected_value"`
	// TextInput is the free text of a text_input interaction.
	TextInput string `json:"text_input,omitempty" jsonschema:"maxLength=65536"`
	// Note is the user's short word to the agent with a denial ("use git mv instead"), only with selected_value deny and only where the adapter declares deny_note.
	Note string `json:"note,omitempty" jsonschema:"maxLength=2000"`
}

func (r *InteractionResponse) validate() *Error {
	if r.Note == "" {
		return nil
	}
	if len(r.SelectedValue.Values) != 1 || r.SelectedValue.Values[0] != Deny {
		return errorf(CodeInvalidValue, "payload.note", "a note goes with a denial only (selected_value deny)")
	}
	return nil
}

// InteractionTimeout is control.interaction.timeout (§6.2.2): nobody answered
// in time. It carries the answer the timeout applied (see
// InteractionRequest.TimeoutAnswer); without one the agent treats it as a
// denial.
type InteractionTimeout struct {
	// InteractionID names the interaction.
	InteractionID string `json:"interaction_id" jsonschema:"minLength=1,maxLength=128"`
	// SelectedValue is the answer the timeout applied: the request's default_value, or deny for a permission.
	SelectedValue *SelectedValue `json:"selected_value,omitempty"`
	// TextInput is the free text the timeout applied (a text_input's default_value).
	TextInput string `json:"text_input,omitempty" jsonschema:"maxLength=65536"`
}

// SessionCompact is control.session.compact (§6.3.1).
type SessionCompact struct {
	// Instruction says what the summary must keep.
	Instruction string `json:"instruction,omitempty" jsonschema:"maxLength=65536"`
	// TargetTokenRatio is the wanted size after compaction over the size before.
	TargetTokenRatio *float64 `json:"target_token_ratio,omitempty" jsonschema:"minimum=0,maximum=1"`
}

// ModeSwitch is control.mode.switch (§6.3.2). The new mode applies from the
// next tool call on.
type ModeSwitch struct {
	// Mode is default (read, write, execute), plan (read and search only) or review (read-only, producing a review).
	Mode string `json:"mode" jsonschema:"enum=default,enum=plan,enum=review"`
	// Config holds mode-specific settings.
	Config json.RawMessage `json:"config,omitempty" jsonschema:"type=object"`
}

// FileSearch is control.file.search (§16.1.1), sent per keystroke after @.
// An empty query asks for the most recently modified files.
type FileSearch struct {
	// QueryID identifies this search, a UUID v4 (§16.1.1); answers echo it and a UI drops answers to older ones.
	QueryID string `json:"query_id" jsonschema:"minLength=1,pattern=^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$,format=uuid"`
	// Query is the fuzzy query; empty lists the most recently modified files.
	Query string `json:"query" jsonschema:"maxLength=1024"`
	// Scope is workspace (the session's root), project (its repository root) or global (every workspace of the client).
	Scope string `json:"scope,omitempty" jsonschema:"enum=workspace,enum=project,enum=global,default=workspace"`
	// MaxResults is the number of candidates wanted; values over 50 are lowered to 50.
	MaxResults *int `json:"max_results,omitempty" jsonschema:"minimum=1,default=20"`
	// Filters narrow the candidates.
	Filters *SearchFilters `json:"filters,omitempty"`
}

// SearchFilters narrows a file search.
type SearchFilters struct {
	// Extensions like ".ts"; a missing leading dot is tolerated.
	Extensions []string `json:"extensions,omitempty" jsonschema:"maxItems=64"`
	// ExcludePatterns are doublestar globs matched against the relative path.
	ExcludePatterns []string `json:"exclude_patterns,omitempty" jsonschema:"maxItems=64"`
}

// FileSearchCancel is control.file.search.cancel (§16.1.3).
type FileSearchCancel struct {
	// QueryID is the search to stop, a UUID v4.
	QueryID string `json:"query_id" jsonschema:"minLength=1,pattern=^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$,format=uuid"`
}
