package protocol

import (
	"reflect"

	"github.com/ferry-dev/ferry/internal/runecut"
)

// TypePromptRefused is agent.prompt.refused: the session's client refused a
// prompt (it answered its control.prompt.request with an error: busy, an
// upload gone or expired, a file its agent cannot take), so the prompt did
// not run. The client's error goes back to the UI that sent the prompt, but
// that UI may be gone by then (a prompt is sent again after its client's
// connection or node died) and the session's other UIs never see it. So the
// master stores the refusal as one of the session's events, as it does
// agent.interaction.resolved: every UI watching the session gets it, live
// or in the replay after a reload, whichever node it is on. Its parent_id
// is the prompt's message_id. Storing it answers the prompt: it is not
// sent again.
const TypePromptRefused = "agent.prompt.refused"

// Bounds of a stored refusal's fields: a client's error is cut to them.
const (
	maxRefusalCode    = 64
	maxRefusalMessage = 4096
	maxRefusalField   = 256
)

func init() {
	registry[TypePromptRefused] = spec{reflect.TypeFor[PromptRefused](), RoleMaster, true, true,
		"the session's client refused a prompt, which did not run"}
}

// PromptRefused is agent.prompt.refused: the client's coded error about
// the prompt its parent_id names.
type PromptRefused struct {
	// Code is the client's error code, e.g. busy.
	Code string `json:"code" jsonschema:"minLength=1,maxLength=64"`
	// Message says why, for people.
	Message string `json:"message" jsonschema:"maxLength=4096"`
	// Field is the path of the prompt's field at fault, e.g. "payload.context_files[0].file_url".
	Field string `json:"field,omitempty" jsonschema:"maxLength=256"`
}

// Refusal is the agent.prompt.refused payload of the client's error e,
// each field cut to its bound.
func Refusal(e *Error) *PromptRefused {
	return &PromptRefused{
		Code:    runecut.Prefix(e.Code, maxRefusalCode),
		Message: runecut.Prefix(e.Message, maxRefusalMessage),
		Field:   runecut.Prefix(e.Field, maxRefusalField),
	}
}
