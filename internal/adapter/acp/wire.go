package acp

import (
	"encoding/json"
)

// What ferry reads from an agent, decoded leniently: only the fields ferry
// uses, unknown fields and variants ignored. acp-go-sdk's generated types
// are strict unions (an auth method, content block or update of a kind the
// SDK does not know fails the whole message), so a newer agent would break
// them; ferry uses the SDK's types for what it sends instead.

// initializeResult is the answer to initialize.
type initializeResult struct {
	ProtocolVersion   int            `json:"protocolVersion"`
	AgentCapabilities agentCaps      `json:"agentCapabilities"`
	AgentInfo         *agentInfo     `json:"agentInfo"`
	AuthMethods       []authMethod   `json:"authMethods"`
	Meta              map[string]any `json:"_meta"`
}

type agentCaps struct {
	LoadSession        bool `json:"loadSession"`
	PromptCapabilities struct {
		Image           bool `json:"image"`
		Audio           bool `json:"audio"`
		EmbeddedContext bool `json:"embeddedContext"`
	} `json:"promptCapabilities"`
}

type agentInfo struct {
	Name    string `json:"name"`
	Title   string `json:"title"`
	Version string `json:"version"`
}

type authMethod struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// newSessionResult is the answer to session/new.
type newSessionResult struct {
	SessionID     string         `json:"sessionId"`
	Modes         *modeState     `json:"modes"`
	ConfigOptions []configOption `json:"configOptions"`
}

// configOption is one of a session's config options (ACP's
// configOptions, SessionConfigOption) as far as ferry reads them: the
// mode selector, a select option of category mode.
type configOption struct {
	ID           string          `json:"id"`
	Category     string          `json:"category"`
	Type         string          `json:"type"`
	CurrentValue json.RawMessage `json:"currentValue"`
	Options      []configValue   `json:"options"`
}

// configValue is a select option's value, or a group of values.
type configValue struct {
	Value   string        `json:"value"`
	Name    string        `json:"name"`
	Options []configValue `json:"options"`
}

// modeOption finds the mode selector among opts: its id and its values as
// modes, the current one current (nil when there is none).
func modeOption(opts []configOption) (id string, modes *modeState) {
	for _, o := range opts {
		var cur string
		if o.Category != "mode" || o.Type != "select" || o.ID == "" || json.Unmarshal(o.CurrentValue, &cur) != nil {
			continue
		}
		ms := &modeState{CurrentModeID: cur}
		for _, v := range o.Options {
			for _, v := range append([]configValue{v}, v.Options...) {
				if v.Value != "" {
					ms.AvailableModes = append(ms.AvailableModes, agentMode{ID: v.Value, Name: v.Name})
				}
			}
		}
		return o.ID, ms
	}
	return "", nil
}

type modeState struct {
	CurrentModeID  string      `json:"currentModeId"`
	AvailableModes []agentMode `json:"availableModes"`
}

type agentMode struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// promptResult is the answer to session/prompt.
type promptResult struct {
	StopReason string       `json:"stopReason"`
	Usage      *promptUsage `json:"usage"`
}

// promptUsage is ACP's (unstable) per-turn token usage.
type promptUsage struct {
	InputTokens       int64 `json:"inputTokens"`
	OutputTokens      int64 `json:"outputTokens"`
	CachedReadTokens  int64 `json:"cachedReadTokens"`
	CachedWriteTokens int64 `json:"cachedWriteTokens"`
}

// sessionNotification is the params of session/update.
type sessionNotification struct {
	SessionID string         `json:"sessionId"`
	Update    *sessionUpdate `json:"update"`
}

// sessionUpdate is every session/update variant ferry maps, flattened: the
// discriminator says which fields are set.
type sessionUpdate struct {
	SessionUpdate string `json:"sessionUpdate"`

	// agent_message_chunk, agent_thought_chunk, user_message_chunk: one
	// content block. tool_call, tool_call_update: a list of tool content.
	Content json.RawMessage `json:"content"`

	// tool_call, tool_call_update
	ToolCallID string          `json:"toolCallId"`
	Title      *string         `json:"title"`
	Kind       *string         `json:"kind"`
	Status     *string         `json:"status"`
	RawInput   json.RawMessage `json:"rawInput"`
	RawOutput  json.RawMessage `json:"rawOutput"`
	Locations  []location      `json:"locations"`

	// plan
	Entries []planEntry `json:"entries"`
	// available_commands_update
	AvailableCommands []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Input       *struct {
			Hint string `json:"hint"`
		} `json:"input"`
	} `json:"availableCommands"`
	// current_mode_update
	CurrentModeID string `json:"currentModeId"`
	// config_option_update: every option with its current value
	ConfigOptions []configOption `json:"configOptions"`
	// usage_update (unstable): context tokens in use
	Used *int64 `json:"used"`
}

// location is a file a tool call acts on.
type location struct {
	Path string `json:"path"`
}

type planEntry struct {
	Content  string `json:"content"`
	Status   string `json:"status"`
	Priority string `json:"priority,omitempty"`
}

// contentBlock is an ACP ContentBlock (text, resource_link, resource, …).
type contentBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
	URI  string `json:"uri"`
	Name string `json:"name"`
	// Data (base64) and MimeType of an image block.
	Data     string `json:"data"`
	MimeType string `json:"mimeType"`
	Resource *struct {
		URI  string `json:"uri"`
		Text string `json:"text"`
	} `json:"resource"`
}

// toolContent is an ACP ToolCallContent (content, diff, terminal).
type toolContent struct {
	Type       string        `json:"type"`
	Content    *contentBlock `json:"content"`
	Path       string        `json:"path"`
	OldText    *string       `json:"oldText"`
	NewText    string        `json:"newText"`
	TerminalID string        `json:"terminalId"`
}

// permissionRequest is the params of session/request_permission.
type permissionRequest struct {
	SessionID string        `json:"sessionId"`
	ToolCall  sessionUpdate `json:"toolCall"`
	Options   []permOption  `json:"options"`
}

type permOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

// readTextFileParams is the params of fs/read_text_file.
type readTextFileParams struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Line      *int   `json:"line"`
	Limit     *int   `json:"limit"`
}

// writeTextFileParams is the params of fs/write_text_file.
type writeTextFileParams struct {
	SessionID string          `json:"sessionId"`
	Path      string          `json:"path"`
	Content   *string         `json:"content"`
	Meta      json.RawMessage `json:"_meta"`
}

// metaToolCallID is the tool call id the request's _meta names (its
// toolCallId), "" for none.
func (p *writeTextFileParams) metaToolCallID() string {
	var m struct {
		ToolCallID string `json:"toolCallId"`
	}
	if len(p.Meta) == 0 || json.Unmarshal(p.Meta, &m) != nil {
		return ""
	}
	return m.ToolCallID
}
