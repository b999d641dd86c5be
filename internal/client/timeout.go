package client

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/protocol"
)

// Permission timeouts. Every agent.interaction.request an adapter emits
// without a timeout_ms of its own gets the session's permission timeout
// (its own value from control.session.settings, else the client's
// Config.PermissionTimeout), and a permission that offers deny and
// advertises no default_value gets deny, what its timeout applies (the
// decoder refuses any other default for a permission: a timeout never
// grants). Both here in one place, so every adapter's questions time out
// alike and say so. The master counts the time and settles the
// interaction with the default (protocol TimeoutAnswer); its
// control.interaction.timeout carries the answer it recorded, which goes
// to the adapter as it came.

// settingsLocked is the session's settings in force; s.mu is held.
func (s *session) settingsLocked() protocol.Settings {
	st := protocol.Settings{PermissionTimeoutMS: int(s.c.cfg.PermissionTimeout / time.Millisecond), Model: s.model, Effort: s.effort}
	if s.permTimeout != nil {
		st.PermissionTimeoutMS, st.PermissionTimeoutSet = *s.permTimeout, true
	}
	return st
}

// withTimeout returns payload with the session's permission timeout filled
// in when it is an interaction request that has none, and deny as the
// default of a permission that offers it and has none.
func (s *session) withTimeout(payload any) any {
	req, ok := payload.(*protocol.InteractionRequest)
	if !ok {
		return payload
	}
	cp := *req
	if cp.Kind == protocol.InteractionPermission && cp.DefaultValue == "" &&
		slices.ContainsFunc(cp.Options, func(o protocol.Option) bool { return o.Value == protocol.Deny }) {
		cp.DefaultValue = protocol.Deny
	}
	if cp.TimeoutMS == 0 {
		s.mu.Lock()
		cp.TimeoutMS = s.settingsLocked().PermissionTimeoutMS
		s.mu.Unlock()
	}
	return &cp
}

// setPermTimeout records the session's own permission timeout (nil: the
// client's default).
func (s *session) setPermTimeout(ms *int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ms == nil {
		s.permTimeout = nil
		return
	}
	v := *ms
	s.permTimeout = &v
}

// changeSettings handles control.session.settings: the new values apply
// to the questions asked and the turns run from now on; session.settings
// says what is in force. A model or effort the adapter refuses is answered
// with its coded error, and nothing changes.
func (s *session) changeSettings(m *protocol.Message, p *protocol.SessionSettings) {
	if err := s.setModel(p.Model, p.Effort); err != nil {
		s.failWith(m, "set model", err)
		return
	}
	s.setPermTimeout(p.PermissionTimeoutMS)
	s.mu.Lock()
	st := s.settingsLocked()
	s.mu.Unlock()
	if err := s.c.emit(s.c.stop, m.Reply(protocol.TypeSettings, &st)); err != nil {
		s.c.log.Error("session.settings", "session", s.id, "err", err)
	}
}

// timedOut hands the master's timeout to the adapter: the answer the
// master recorded, or nil (a denial) when it recorded none. A timeout for
// an interaction that is no longer open needs nothing: it is settled.
func (s *session) timedOut(p *protocol.InteractionTimeout) {
	var ans *protocol.InteractionResponse
	if p.SelectedValue != nil || p.TextInput != "" {
		ans = &protocol.InteractionResponse{InteractionID: p.InteractionID, TextInput: p.TextInput}
		if p.SelectedValue != nil {
			ans.SelectedValue = *p.SelectedValue
		} else {
			ans.SelectedValue = protocol.Multiple()
		}
	}
	err := s.sess.Answer(p.InteractionID, ans)
	if ans != nil && err != nil && !errors.Is(err, adapter.ErrUnknownInteraction) {
		// The adapter refused the recorded answer (not one of its
		// options after all): it must still stop waiting, denied.
		s.c.log.Warn("the adapter refused a timeout's answer; denying", "session", s.id, "interaction", p.InteractionID, "err", err)
		err = s.sess.Answer(p.InteractionID, nil)
	}
	if err != nil && !errors.Is(err, adapter.ErrUnknownInteraction) {
		s.c.log.Error("interaction timeout", "session", s.id, "err", err)
		return
	}
	s.settled(p.InteractionID)
}

// checkPermissionTimeout refuses a Config.PermissionTimeout that
// timeout_ms cannot carry.
func checkPermissionTimeout(d time.Duration) error {
	switch {
	case d < 0:
		return fmt.Errorf("client: PermissionTimeout %v is negative", d)
	case d > 0 && d < time.Millisecond:
		return fmt.Errorf("client: PermissionTimeout %v is under a millisecond", d)
	case d > protocol.MaxPermissionTimeoutMS*time.Millisecond:
		return fmt.Errorf("client: PermissionTimeout %v is over %v", d, protocol.MaxPermissionTimeoutMS*time.Millisecond)
	}
	return nil
}
