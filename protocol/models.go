package protocol

import (
	"fmt"
	"reflect"
)

// Models: the UI asks a session's client which models the session's agent
// can run (control.models.list); the client answers session.models, or an
// error coded as the provider failed. A model and a thinking effort are
// then chosen per session in control.session.settings (Settings.Model,
// Settings.Effort), kept by the master and re-sent in control.session.open.
//
// The list is a message of its own, not part of session.capabilities: it
// comes from the provider's API (network, keys, a bounded cache) and may
// fail or change while the client runs, whereas capabilities are sent once
// at connect and must not wait on a provider.
const (
	TypeModelsList = "control.models.list"
	TypeModels     = "session.models"
)

// Thinking efforts: off turns thinking off; low, medium and high map to
// each provider's documented values (docs/agent.md).
const (
	EffortOff    = "off"
	EffortLow    = "low"
	EffortMedium = "medium"
	EffortHigh   = "high"
)

// Efforts are every effort, in increasing order.
var Efforts = []string{EffortOff, EffortLow, EffortMedium, EffortHigh}

// MaxDenyNote bounds the note a denial carries (InteractionResponse.Note).
const MaxDenyNote = 2000

func init() {
	registry[TypeModelsList] = spec{reflect.TypeFor[ModelsList](), RoleMaster | RoleUI, true, false, "list the models the session's agent can run"}
	registry[TypeModels] = spec{reflect.TypeFor[Models](), RoleClient, true, true, "the models the session's agent can run, with their thinking efforts"}
}

// ModelsList is control.models.list.
type ModelsList struct {
	// Refresh asks the provider again instead of the client's cached list.
	Refresh bool `json:"refresh,omitempty"`
}

// Models is session.models, the answer to control.models.list.
type Models struct {
	// Provider names the provider the list comes from (anthropic, openai).
	Provider string `json:"provider" jsonschema:"minLength=1,maxLength=64"`
	// Default is the model a session runs when it picks none.
	Default string `json:"default" jsonschema:"minLength=1,maxLength=256"`
	// Models are the provider's models, as it lists them.
	Models []ModelInfo `json:"models" jsonschema:"maxItems=1000"`
}

// ModelInfo is one model a session may pick.
type ModelInfo struct {
	// ID is the model's id, as control.session.settings names it.
	ID string `json:"id" jsonschema:"minLength=1,maxLength=256"`
	// Name is shown to people (the id when the provider gives none).
	Name string `json:"name,omitempty" jsonschema:"maxLength=256"`
	// Efforts are the thinking efforts the model takes (empty: none; the model does not think, or not on request).
	Efforts []string `json:"efforts,omitempty" jsonschema:"maxItems=4"`
}

func (m *Models) validate() *Error {
	for i, mi := range m.Models {
		for j, e := range mi.Efforts {
			if !validEffort(e) {
				return errorf(CodeInvalidValue, fmt.Sprintf("payload.models[%d].efforts[%d]", i, j), "must be one of off, low, medium, high")
			}
		}
	}
	return nil
}

func validEffort(e string) bool {
	for _, v := range Efforts {
		if e == v {
			return true
		}
	}
	return false
}
