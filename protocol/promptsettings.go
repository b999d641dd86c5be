package protocol

import (
	"bytes"
	"slices"
)

// The settings a control.prompt.request can carry, by the names
// AdapterCapability.Settings lists them under (package adapter says what
// each means to an adapter). Every adapter honours a setting a prompt
// carries or refuses the prompt with code unsupported naming SettingField:
// none is dropped, whatever the prompt's input type.
const (
	SettingOutputFormat = "output_format"
	SettingJSONSchema   = "json_schema"
	SettingMaxTurns     = "max_turns"
	SettingAllowedTools = "allowed_tools"
	SettingDeniedTools  = "denied_tools"
	SettingContextFiles = "context_files"
)

// Settings lists the prompt settings p sets, in the order above. An empty
// value (an empty list, a null schema) sets nothing; {} is a schema (any
// JSON answer). A nil p sets nothing.
func (p *PromptRequest) Settings() []string {
	if p == nil {
		return nil
	}
	var set []string
	if o := p.ConfigOverrides; o != nil {
		if o.OutputFormat != "" {
			set = append(set, SettingOutputFormat)
		}
		if js := bytes.TrimSpace(o.JSONSchema); len(js) > 0 && string(js) != "null" {
			set = append(set, SettingJSONSchema)
		}
		if o.MaxTurns != nil {
			set = append(set, SettingMaxTurns)
		}
		if len(o.AllowedTools) > 0 {
			set = append(set, SettingAllowedTools)
		}
		if len(o.DeniedTools) > 0 {
			set = append(set, SettingDeniedTools)
		}
	}
	if len(p.ContextFiles) > 0 {
		set = append(set, SettingContextFiles)
	}
	return set
}

// SettingField is the wire field of a prompt setting, as an unsupported
// error names it: payload.context_files, else
// payload.config_overrides.<setting>.
func SettingField(setting string) string {
	if setting == SettingContextFiles {
		return "payload.context_files"
	}
	return "payload.config_overrides." + setting
}

// SettingOutside is the first prompt setting p sets that is not among
// honoured, or "". output_format always counts as honoured: it is the
// requester's rendering of the turn, done by ferry whatever the agent.
func (p *PromptRequest) SettingOutside(honoured ...string) string {
	for _, s := range p.Settings() {
		if s != SettingOutputFormat && !slices.Contains(honoured, s) {
			return s
		}
	}
	return ""
}
