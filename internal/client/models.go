package client

import (
	"context"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/protocol"
)

// Models. control.models.list is answered from the session's adapter
// (adapter.ModelLister), off the session's worker so a slow provider
// delays no prompt; a session's model and effort go to its adapter session
// (adapter.ModelSetter) in control.session.settings and, after a restart,
// in control.session.open.

// modelsTimeout bounds one model list or model check.
const modelsTimeout = 30 * time.Second

// listModels answers control.models.list with session.models or a coded
// error. One list per session runs at a time.
func (s *session) listModels(m *protocol.Message, p *protocol.ModelsList) {
	lister, ok := s.ad.(adapter.ModelLister)
	if !ok {
		s.fail(m, protocol.CodeUnsupported, "type", "the session's agent offers no model choice")
		return
	}
	if !s.listing.CompareAndSwap(false, true) {
		s.fail(m, protocol.CodeBusy, "", "the session's model list is already being fetched")
		return
	}
	s.c.wg.Add(1)
	go func() {
		defer s.c.wg.Done()
		defer s.listing.Store(false)
		ctx, cancel := context.WithTimeout(s.c.stop, modelsTimeout)
		defer cancel()
		ms, err := lister.Models(ctx, p.Refresh)
		if err != nil {
			s.failWith(m, "list models", err)
			return
		}
		ans := m.Reply(protocol.TypeModels, ms)
		s.c.sendDirect(ans)
	}()
}

// setModel gives the adapter session a new model and effort when they
// change; an error (coded by the adapter) leaves everything as it was.
func (s *session) setModel(model, effort string) error {
	s.mu.Lock()
	same := model == s.model && effort == s.effort
	s.mu.Unlock()
	if same {
		return nil
	}
	setter, ok := s.sess.(adapter.ModelSetter)
	if !ok {
		field := "payload.model"
		if model == "" {
			field = "payload.effort"
		}
		return &protocol.Error{Code: protocol.CodeUnsupported, Field: field, Message: "the session's agent offers no model choice"}
	}
	ctx, cancel := context.WithTimeout(s.c.stop, modelsTimeout)
	defer cancel()
	if err := setter.SetModel(ctx, model, effort); err != nil {
		return err //nolint:wrapcheck // a coded *protocol.Error, answered as it is
	}
	s.mu.Lock()
	s.model, s.effort = model, effort
	s.mu.Unlock()
	return nil
}

// restoreModel applies the model and effort the master kept for a session
// the client opens again. One the adapter no longer takes (the provider
// dropped the model) is logged and the default runs: session.opened then
// says so, and the master keeps what is in force.
func (s *session) restoreModel(model, effort string) {
	if model == "" && effort == "" {
		return
	}
	if err := s.setModel(model, effort); err != nil {
		s.c.log.Warn("the session's model cannot be restored; using the default", "session", s.id, "model", model, "effort", effort, "err", err)
	}
}
