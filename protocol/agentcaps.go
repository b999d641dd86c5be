package protocol

import (
	"fmt"
	"reflect"
	"slices"
)

// TypeAgentCapabilities is agent.capabilities: what this session's agent
// really offers, sent by the client once the agent has said (an ACP agent
// after initialize and session/new: its prompt capabilities, its modes, its
// commands) and again whenever that changes. It replaces, for this session
// only, the adapter's declaration in session.capabilities, which is what
// the adapter can promise before any agent runs: the master checks the
// session's control messages against it, keeps the latest in the session's
// snapshot, and the UI offers only what it declares (attachments, compact,
// modes). Adapters whose sessions all offer the adapter's declaration never
// send it.
const TypeAgentCapabilities = "agent.capabilities"

func init() {
	registry[TypeAgentCapabilities] = spec{reflect.TypeFor[AgentCapabilities](), RoleClient, true, false, "what this session's agent really offers, once it is known"}
}

// AgentCapabilities is agent.capabilities: what one session's agent really
// offers, in place of its adapter's declaration in session.capabilities
// for that session (the master checks its control messages against it, the
// UI offers only what it declares).
type AgentCapabilities struct {
	// Adapter is the session's capability: the adapter's, narrowed or widened to what its agent offers; its id is the session's adapter.
	Adapter AdapterCapability `json:"adapter"`
}

func (a *AgentCapabilities) validate() *Error {
	return a.Adapter.validate("payload.adapter")
}

// How an agent's text is meant to be read (AdapterCapability.TextFormat).
const (
	TextMarkdown = "markdown"
	TextPlain    = "plain"
)

// Kinds of attached files (AdapterCapability.Attachments).
const (
	AttachText  = "text"
	AttachImage = "image"
	AttachPDF   = "pdf"
)

// validate checks one adapter's capability, wherever it travels
// (session.capabilities, agent.capabilities): its name (CheckName) and
// its enumerations; field is its path.
func (a *AdapterCapability) validate(field string) *Error {
	if e := CheckName(field+".name", a.Name); e != nil {
		return e
	}
	for j, m := range a.Modes {
		if m != ModeDefault && m != ModePlan && m != ModeReview {
			return errorf(CodeInvalidValue, fmt.Sprintf("%s.modes[%d]", field, j), "must be one of default, plan, review")
		}
	}
	if a.TextFormat != "" && a.TextFormat != TextMarkdown && a.TextFormat != TextPlain {
		return errorf(CodeInvalidValue, field+".text_format", "must be markdown or plain")
	}
	for j, k := range a.Attachments {
		if k != AttachText && k != AttachImage && k != AttachPDF {
			return errorf(CodeInvalidValue, fmt.Sprintf("%s.attachments[%d]", field, j), "must be one of text, image, pdf")
		}
	}
	return nil
}

// ForSession is c with the session's own capability (agent.capabilities;
// nil: none yet) in place of its adapter's declaration, for Check. c is
// not changed.
func (c *Capabilities) ForSession(sc *AdapterCapability) *Capabilities {
	if sc == nil {
		return c
	}
	i := slices.IndexFunc(c.Adapters, func(a AdapterCapability) bool { return a.ID == sc.ID })
	if i < 0 {
		return c
	}
	out := *c
	out.Adapters = slices.Clone(c.Adapters)
	out.Adapters[i] = *sc
	return &out
}
