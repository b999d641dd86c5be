package protocol

import (
	"fmt"
	"slices"
	"strings"
)

// MaxPermissionTimeoutMS is the longest permission timeout a session may
// set: a week. 0 (wait forever) is the way to wait longer.
const MaxPermissionTimeoutMS = 7 * 24 * 3600 * 1000

// SessionSettings is control.session.settings: set a session's settings,
// all of them: an absent field goes back to its default. The client
// answers session.settings with what is in force, and the master keeps
// the session's own values, so that a client that restarts gets them again
// in control.session.open. A setting the client refuses (an unknown model,
// an effort the model does not take) is answered with a coded error naming
// the field, and nothing changes.
type SessionSettings struct {
	// PermissionTimeoutMS is how long an agent's question waits for an answer before it times out; 0 waits forever; absent goes back to the client's default (--permission-timeout).
	PermissionTimeoutMS *int `json:"permission_timeout_ms,omitempty" jsonschema:"minimum=0,maximum=604800000"`
	// Model is the model the agent runs from its next turn on (one of session.models); absent: the agent's configured default.
	Model string `json:"model,omitempty" jsonschema:"maxLength=256"`
	// Effort is the thinking effort from the next turn on, one the model takes (session.models); absent: the provider's default (no thinking requested).
	Effort string `json:"effort,omitempty" jsonschema:"enum=off,enum=low,enum=medium,enum=high"`
}

// Settings are a session's settings in force: session.settings (the
// client's answer to control.session.settings), session.opened and
// SessionInfo carry them.
type Settings struct {
	// PermissionTimeoutMS is how long an agent's question waits for an answer before it times out; 0 waits forever.
	PermissionTimeoutMS int `json:"permission_timeout_ms" jsonschema:"minimum=0,maximum=604800000"`
	// PermissionTimeoutSet is true when the session has its own value, false when it is the client's default.
	PermissionTimeoutSet bool `json:"permission_timeout_set,omitempty"`
	// Model is the session's own model; absent: the agent's default.
	Model string `json:"model,omitempty" jsonschema:"maxLength=256"`
	// Effort is the session's own thinking effort; absent: the provider's default.
	Effort string `json:"effort,omitempty" jsonschema:"enum=off,enum=low,enum=medium,enum=high"`
}

// TimeoutAnswer is the answer a timeout applies to the request: exactly
// what its default_value advertises, or nil for none ("no answer", which
// every adapter takes as a denial). The master records it and sends it in
// control.interaction.timeout; the client hands it to the adapter as it
// came; the UI says before the deadline which it will be.
//
// The decoder refuses a default_value a timeout could not apply, so what a
// request advertises is what happens: a permission's can only be deny (a
// timeout never grants: an agent left alone must not write or run what
// nobody approved), a single_select's one of its options, a
// multi_select's a comma-separated list of its options, a text_input's any
// text.
func (r *InteractionRequest) TimeoutAnswer() *InteractionResponse {
	ans, _ := r.defaultAnswer()
	return ans
}

// defaultAnswer is the answer default_value advertises, or nil with why it
// cannot be one ("" when there is no default at all).
func (r *InteractionRequest) defaultAnswer() (*InteractionResponse, string) {
	if r.DefaultValue == "" {
		return nil, ""
	}
	has := func(v string) bool {
		return slices.ContainsFunc(r.Options, func(o Option) bool { return o.Value == v })
	}
	notOption := func(v string) string {
		return fmt.Sprintf("%q is not one of the options; default_value is what a timeout answers", truncate(v))
	}
	ans := &InteractionResponse{InteractionID: r.InteractionID}
	switch r.Kind {
	case InteractionPermission:
		if r.DefaultValue != Deny {
			return nil, "a permission's default_value is what a timeout answers, and a timeout never grants: deny, or none"
		}
		if !has(Deny) {
			return nil, notOption(Deny)
		}
		ans.SelectedValue = Single(Deny)
	case InteractionSingleSelect:
		if !has(r.DefaultValue) {
			return nil, notOption(r.DefaultValue)
		}
		ans.SelectedValue = Single(r.DefaultValue)
	case InteractionMultiSelect:
		var vals []string
		for v := range strings.SplitSeq(r.DefaultValue, ",") {
			if v = strings.TrimSpace(v); v == "" {
				continue
			}
			if !has(v) {
				return nil, notOption(v)
			}
			vals = append(vals, v)
		}
		if len(vals) == 0 {
			return nil, "names no option: a comma-separated list of option values, or none"
		}
		ans.SelectedValue = Multiple(vals...)
	case InteractionTextInput:
		ans.SelectedValue, ans.TextInput = Multiple(), r.DefaultValue
	default:
		return nil, "" // the kind itself is refused
	}
	return ans, ""
}
