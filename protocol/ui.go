package protocol

import "fmt"

// UIPrompt is ui.prompt: what the user composed, as segments. The UI never
// builds prompt_text; the master composes it (escaping typed text, one token
// per picked file), so a token can only come from the @ popup.
type UIPrompt struct {
	// Segments in order: typed text and picked files.
	Segments []PromptSegment `json:"segments" jsonschema:"minItems=1,maxItems=10000"`
	// InputType says how the text is meant.
	InputType string `json:"input_type,omitempty" jsonschema:"enum=text,enum=slash_command,enum=continuation,enum=piped_stdin,default=text"`
	// ContextFiles are attached files.
	ContextFiles []ContextFile `json:"context_files,omitempty" jsonschema:"maxItems=100"`
	// ConfigOverrides apply to this prompt only.
	ConfigOverrides *ConfigOverrides `json:"config_overrides,omitempty"`
}

func (p *UIPrompt) validate() *Error {
	if e := validateContextFiles(p.ContextFiles, "payload.context_files"); e != nil {
		return e
	}
	for i, s := range p.Segments {
		field := fmt.Sprintf("payload.segments[%d]", i)
		switch s.Kind {
		case SegmentText:
			if s.File != nil {
				return errorf(CodeInvalidValue, field+".file", "a text segment has no file")
			}
		case SegmentFile:
			if s.File == nil {
				return errorf(CodeMissingField, field+".file", "a file segment needs its file")
			}
			if s.Text != "" {
				return errorf(CodeInvalidValue, field+".text", "a file segment has no text")
			}
		}
	}
	return nil
}
