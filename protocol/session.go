package protocol

import (
	"fmt"
	"slices"
)

// FileCandidates is session.file.candidates (§16.1.2), the answer to one
// control.file.search; parent_id is that request's message_id.
type FileCandidates struct {
	// QueryID echoes the search's query_id, a UUID v4.
	QueryID string `json:"query_id" jsonschema:"minLength=1,pattern=^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$,format=uuid"`
	// Candidates are ranked best first.
	Candidates []Candidate `json:"candidates" jsonschema:"maxItems=50"`
	// TotalCount is how many files matched after filters, before max_results.
	TotalCount *int `json:"total_count,omitempty" jsonschema:"minimum=0"`
	// Truncated is true when max_results cut the list.
	Truncated bool `json:"truncated"`
}

// Candidate is one file offered by the @ popup.
type Candidate struct {
	// Path is relative to the workspace (§16.1.2): the session's ("../lib/x.go" for a file of the enclosing project outside it), or the one WorkspaceID names; never absolute. It resolves back to this file when it returns in file_references with the same workspace_id.
	Path string `json:"path" jsonschema:"minLength=1,maxLength=4096"`
	// WorkspaceID names the workspace (session.capabilities workspaces[].id) Path is relative to; set on every candidate of a scope global search, absent otherwise (the session's workspace).
	WorkspaceID string `json:"workspace_id,omitempty" jsonschema:"maxLength=128"`
	// Name is the file name.
	Name string `json:"name" jsonschema:"minLength=1,maxLength=1024"`
	// Directory is the folder of Path ("" at the root).
	Directory string `json:"directory" jsonschema:"maxLength=4096"`
	// Extension with its dot.
	Extension string `json:"extension,omitempty" jsonschema:"maxLength=256"`
	// MimeType is an IANA media type.
	MimeType string `json:"mime_type,omitempty" jsonschema:"maxLength=256"`
	// SizeBytes is the file size.
	SizeBytes *int64 `json:"size_bytes,omitempty" jsonschema:"minimum=0"`
	// ModifiedAt is the last modification time, RFC 3339.
	ModifiedAt string `json:"modified_at,omitempty" jsonschema:"format=date-time"`
	// MatchScore is in [0, 1], higher is better.
	MatchScore *float64 `json:"match_score,omitempty" jsonschema:"minimum=0,maximum=1"`
	// MatchRanges index Path in the unit declared by the client's capabilities
	// (UTF-16 code units), end exclusive, sorted, touching ranges merged.
	MatchRanges []MatchRange `json:"match_ranges,omitempty" jsonschema:"maxItems=4096"`
}

// MatchRange is a half-open [Start, End) span of a candidate's path.
type MatchRange struct {
	// Start is the first matched unit.
	Start int `json:"start" jsonschema:"minimum=0"`
	// End is one past the last matched unit.
	End int `json:"end" jsonschema:"minimum=0"`
}

func (c *FileCandidates) validate() *Error {
	for i, cand := range c.Candidates {
		prev := -1
		for j, r := range cand.MatchRanges {
			field := fmt.Sprintf("payload.candidates[%d].match_ranges[%d]", i, j)
			if r.End <= r.Start {
				return errorf(CodeInvalidValue, field, "end %d must be greater than start %d", r.End, r.Start)
			}
			if r.Start < prev {
				return errorf(CodeInvalidValue, field, "ranges must be sorted and not overlap")
			}
			prev = r.End
		}
	}
	return nil
}

// Position encodings a client may declare for match_ranges.
const (
	PositionUTF16 = "utf-16"
	PositionUTF8  = "utf-8"
	PositionUTF32 = "utf-32"
)

// TokenSyntaxVersion is the version of the <@file:ref_id|display_path> token
// grammar (§16.2) that this package's fileref implements.
const TokenSyntaxVersion = 1

// Capabilities is session.capabilities (§12.2.1, defined by ferry): what a
// client can do, sent once after it connects and again whenever it changes.
// The master uses it to hide features the client lacks (see Check).
type Capabilities struct {
	// ProtocolVersion is the highest protocol version the client speaks.
	ProtocolVersion int `json:"protocol_version" jsonschema:"minimum=1"`
	// Client names the client software.
	Client ClientInfo `json:"client"`
	// Machine the client runs on.
	Machine *MachineInfo `json:"machine,omitempty"`
	// Workspaces the client serves.
	Workspaces []Workspace `json:"workspaces,omitempty" jsonschema:"maxItems=1024"`
	// Adapters are the agents the client can run.
	Adapters []AdapterCapability `json:"adapters" jsonschema:"maxItems=64"`
	// Messages are the control.* types the client handles.
	Messages []string `json:"messages" jsonschema:"maxItems=256"`
	// FileReferences is the file-reference block; absent means no search and no tokens.
	FileReferences *FileRefCapabilities `json:"file_references,omitempty"`
	// PromptsOnce is true when the client answers each control.prompt.request once by its message_id, across its own restarts (a copy of a prompt it answered is dropped, or refused again as the first time); only then does the master send a prompt the client has not answered again.
	PromptsOnce bool `json:"prompts_once,omitempty"`
}

// ClientInfo names the client software.
type ClientInfo struct {
	// Name of the client software.
	Name string `json:"name" jsonschema:"minLength=1,maxLength=128"`
	// Version of the client software.
	Version string `json:"version" jsonschema:"minLength=1,maxLength=128"`
	// OS is GOOS of the client machine.
	OS string `json:"os,omitempty" jsonschema:"maxLength=64"`
	// Arch is GOARCH of the client machine.
	Arch string `json:"arch,omitempty" jsonschema:"maxLength=64"`
}

// AdapterCapability is what one agent adapter supports.
type AdapterCapability struct {
	// ID selects the adapter, e.g. "builtin", "claude-code", "acp:gemini".
	ID string `json:"id" jsonschema:"minLength=1,maxLength=128"`
	// Name is shown to people; no control, format (Cf) or otherwise invisible character (CheckName).
	Name string `json:"name" jsonschema:"minLength=1,maxLength=256"`
	// Modes the adapter enforces.
	Modes []string `json:"modes" jsonschema:"maxItems=16"`
	// InputTypes the adapter takes.
	InputTypes []string `json:"input_types" jsonschema:"maxItems=16"`
	// Tools the agent may call.
	Tools []string `json:"tools,omitempty" jsonschema:"maxItems=256"`
	// Interactions lists the agent.interaction.request kinds it may send.
	Interactions []string `json:"interactions,omitempty" jsonschema:"maxItems=16"`
	// Cancel is true when a running turn can be cancelled.
	Cancel bool `json:"cancel"`
	// Compact is true when the history can be compacted.
	Compact bool `json:"compact"`
	// RewindConversation is true when control.history.rewind also rewinds
	// the agent's conversation (ferry's own agent); otherwise only the
	// files are rewound.
	RewindConversation bool `json:"rewind_conversation,omitempty"`
	// FileTokens says how this adapter hands picked files to its agent.
	FileTokens string `json:"file_tokens" jsonschema:"enum=file_list,enum=mention,enum=label,enum=inline,enum=arguments,enum=literal"`
	// Settings the adapter honours: config_overrides keys, context_files, target_token_ratio (of compaction), mode_config (the config of control.mode.switch); any other is refused with unsupported.
	Settings []string `json:"settings,omitempty" jsonschema:"maxItems=32"`
	// Unavailable, when set, says why a session of this adapter cannot start on this client now and how to make it start (e.g. which key to set, for the command the user ran); the UI offers the adapter disabled with this text.
	Unavailable string `json:"unavailable,omitempty" jsonschema:"maxLength=1024"`
	// DenyNote is true when a denial's note (control.interaction.response note) reaches the agent.
	DenyNote bool `json:"deny_note,omitempty"`
	// Models is true when the client answers control.models.list for this adapter and takes a model and effort in control.session.settings.
	Models bool `json:"models,omitempty"`
	// Attachments are the kinds of attached files (context_files) the agent takes: text, image, pdf; absent with the context_files setting: all three.
	Attachments []string `json:"attachments,omitempty" jsonschema:"maxItems=8"`
	// TextFormat is how the agent's text (agent.text.delta, agent.text.done) is meant to be read: markdown (absent: a model's answer, rendered as Markdown) or plain (a command's output: shown as it is, line by line, in a fixed-width font; a script agent's).
	TextFormat string `json:"text_format,omitempty" jsonschema:"enum=markdown,enum=plain"`
}

// FileRefCapabilities is the §16.5 file-reference block.
type FileRefCapabilities struct {
	// Search is true when the client answers control.file.search.
	Search bool `json:"search"`
	// SearchScopes the client searches.
	SearchScopes []string `json:"search_scopes" jsonschema:"maxItems=3"`
	// MaxResultsCap is the most candidates one answer holds.
	MaxResultsCap int `json:"max_results_cap" jsonschema:"minimum=1,maximum=50"`
	// PositionEncoding is the unit of match_ranges.
	PositionEncoding string `json:"position_encoding" jsonschema:"enum=utf-16,enum=utf-8,enum=utf-32"`
	// TokenSyntaxVersion of the <@file:…> grammar the client parses.
	TokenSyntaxVersion int `json:"token_syntax_version" jsonschema:"minimum=1"`
}

func (c *Capabilities) validate() *Error {
	if c.Machine != nil {
		if e := CheckName("payload.machine.name", c.Machine.Name); e != nil {
			return e
		}
	}
	for i, w := range c.Workspaces {
		if e := CheckName(fmt.Sprintf("payload.workspaces[%d].name", i), w.Name); e != nil {
			return e
		}
	}
	for i, m := range c.Messages {
		if _, ok := registry[m]; !ok {
			return errorf(CodeInvalidValue, fmt.Sprintf("payload.messages[%d]", i), "%q is not a message type of protocol version %d", m, Version)
		}
	}
	if f := c.FileReferences; f != nil {
		for i, s := range f.SearchScopes {
			if s != ScopeWorkspace && s != ScopeProject && s != ScopeGlobal {
				return errorf(CodeInvalidValue, fmt.Sprintf("payload.file_references.search_scopes[%d]", i), "must be one of workspace, project, global")
			}
		}
	}
	for i := range c.Adapters {
		if e := c.Adapters[i].validate(fmt.Sprintf("payload.adapters[%d]", i)); e != nil {
			return e
		}
	}
	return nil
}

// Check reports whether a client with these capabilities can take m, as an
// *Error with CodeUnsupported naming what is missing, or nil. The master
// calls it before relaying any control.* message, and the UI hides what fails
// it (no @ popup without file search, no mode it does not list).
//
// A prompt that carries file references to a client without the
// file-reference block is not refused here: the master downgrades each token
// to its display path as literal text (fileref), as §16.3 asks.
func (c *Capabilities) Check(m *Message, adapterID string) *Error {
	if !c.handles(m.Type) {
		return errorf(CodeUnsupported, "type", "the client does not handle %s", m.Type)
	}
	switch p := m.Payload.(type) {
	case *FileSearch:
		f := c.FileReferences
		if f == nil || !f.Search {
			return errorf(CodeUnsupported, "type", "the client has no file search")
		}
		if !slices.Contains(f.SearchScopes, p.Scope) {
			return errorf(CodeUnsupported, "payload.scope", "the client does not search scope %q", p.Scope)
		}
	case *ModeSwitch:
		if a := c.adapter(adapterID); a != nil && !slices.Contains(a.Modes, p.Mode) {
			return errorf(CodeUnsupported, "payload.mode", "agent %s has no %s mode", a.ID, p.Mode)
		}
	case *PromptRequest:
		if a := c.adapter(adapterID); a != nil && !slices.Contains(a.InputTypes, p.InputType) {
			return errorf(CodeUnsupported, "payload.input_type", "agent %s takes no %s input", a.ID, p.InputType)
		}
	case *PromptCancel:
		if a := c.adapter(adapterID); a != nil && !a.Cancel {
			return errorf(CodeUnsupported, "type", "agent %s cannot be cancelled", a.ID)
		}
	case *SessionCompact:
		if a := c.adapter(adapterID); a != nil && !a.Compact {
			return errorf(CodeUnsupported, "type", "agent %s cannot compact", a.ID)
		}
	case *InteractionResponse:
		if a := c.adapter(adapterID); a != nil && p.Note != "" && !a.DenyNote {
			return errorf(CodeUnsupported, "payload.note", "agent %s cannot carry a note with a denial; deny without one", a.ID)
		}
	case *ModelsList:
		if a := c.adapter(adapterID); a != nil && !a.Models {
			return errorf(CodeUnsupported, "type", "agent %s offers no model choice", a.ID)
		}
	case *SessionSettings:
		if a := c.adapter(adapterID); a != nil && !a.Models {
			if p.Model != "" {
				return errorf(CodeUnsupported, "payload.model", "agent %s offers no model choice", a.ID)
			}
			if p.Effort != "" {
				return errorf(CodeUnsupported, "payload.effort", "agent %s offers no thinking effort", a.ID)
			}
		}
	}
	return nil
}

func (c *Capabilities) handles(msgType string) bool { return slices.Contains(c.Messages, msgType) }

func (c *Capabilities) adapter(id string) *AdapterCapability {
	for i := range c.Adapters {
		if c.Adapters[i].ID == id {
			return &c.Adapters[i]
		}
	}
	return nil
}
