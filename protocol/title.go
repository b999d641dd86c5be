package protocol

import (
	"reflect"
	"unicode/utf8"
)

// TypeAgentTitle is agent.title: a title the session's agent made for the
// session (Claude Code's session_title_changed, an ACP agent's
// session_info_update), sent by the client. The master applies it unless
// a person titled the session (rename, or a title given at start) and
// tells every UI with master.session.changed (renamed, title_source
// agent). It is stored as a session event but is not activity: it does
// not move the session's updated_at.
const TypeAgentTitle = "agent.title"

func init() {
	registry[TypeAgentTitle] = spec{reflect.TypeFor[AgentTitle](), RoleClient, true, false, "a title the session's agent made; a person's title wins"}
}

// AgentTitle is agent.title.
type AgentTitle struct {
	// Title is one line of at most 60 characters, none of them control, format (Cf: bidirectional, zero-width, …) or otherwise invisible, not blank (AgentTitleText makes one from what an agent said).
	Title string `json:"title" jsonschema:"minLength=1,maxLength=1024"`
}

func (p *AgentTitle) validate() *Error {
	t, e := CleanTitle(p.Title)
	switch {
	case e != nil:
		return e
	case t == "" || t != p.Title:
		return errorf(CodeInvalidValue, "payload.title", "the title is blank or has spaces around it")
	case utf8.RuneCountInString(t) > MaxAutoTitleRunes:
		return errorf(CodeInvalidValue, "payload.title", "the title has %d characters; at most %d", utf8.RuneCountInString(t), MaxAutoTitleRunes)
	case OneLine(t, MaxAutoTitleRunes) != t:
		return errorf(CodeInvalidValue, "payload.title", "the title is not one line with single spaces")
	}
	return nil
}

// AgentTitleText is what an agent said its session's title is, as
// agent.title carries it: one line, hidden characters and runs of
// whitespace one space, cut at a word boundary to MaxAutoTitleRunes; ""
// when nothing is left.
func AgentTitleText(s string) string {
	return OneLine(s, MaxAutoTitleRunes)
}
