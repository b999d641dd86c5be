package protocol

import "reflect"

// TypeInteractionsWaiting is session.interactions.waiting. A control
// message to a client is sent at most once: an answer (or a timeout) sent
// while the client's connection was dying is lost with it, and the agent
// would wait for ever. So a client that (re)connects lists, per session,
// the interactions its agent still waits on; the master sends again the
// settlement of each one it has settled (control.interaction.response or
// control.interaction.timeout, with the answer it recorded) and ignores
// the open ones (their answer or timeout is still to come).
const TypeInteractionsWaiting = "session.interactions.waiting"

// MaxInteractionsWaiting bounds one session.interactions.waiting.
const MaxInteractionsWaiting = 100

func init() {
	registry[TypeInteractionsWaiting] = spec{reflect.TypeFor[InteractionsWaiting](), RoleClient, true, false,
		"the interactions a reconnected client's agent still waits on"}
}

// InteractionsWaiting is session.interactions.waiting.
type InteractionsWaiting struct {
	// InteractionIDs are the session's interactions the agent waits on.
	InteractionIDs []string `json:"interaction_ids" jsonschema:"minItems=1,maxItems=100"`
}

func (p *InteractionsWaiting) validate() *Error {
	if len(p.InteractionIDs) == 0 {
		return errorf(CodeMissingField, "payload.interaction_ids", "list at least one interaction")
	}
	if len(p.InteractionIDs) > MaxInteractionsWaiting {
		return errorf(CodeInvalidValue, "payload.interaction_ids", "at most %d interactions", MaxInteractionsWaiting)
	}
	for i, id := range p.InteractionIDs {
		if id == "" || len(id) > 256 {
			return errorf(CodeInvalidValue, "payload.interaction_ids", "interaction %d: an id is 1 to 256 bytes", i)
		}
	}
	return nil
}
