package master

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/ferry-dev/ferry/protocol"
)

// Interaction timeouts.
//
// An agent.interaction.request with timeout_ms is stamped with expires_at
// (the master's clock, when it records the request) before it is stored,
// so every UI can count down to the same deadline. When the deadline
// passes, the master settles the interaction as "timeout" with the answer
// the request's TimeoutAnswer gives (exactly the default_value it
// advertised, which for a permission can only be deny), records that answer, tells the UIs (agent.interaction.resolved
// with the selected value) and sends control.interaction.timeout carrying
// the same answer to the client, which hands it to the adapter.
//
// A deadline that passes while the session's client is offline settles
// nothing yet: the interaction stays open (due) and is settled when the
// client is back, so the one settlement is delivered to a client that can
// act on it. The store is the truth: an interaction is settled once (the
// first of an answer, a timeout or the turn's end wins), and an open one
// survives a restart of the master. Sessions load lazily, so when a client
// comes online every node loads that machine's running sessions (and, for
// those it had loaded, the interactions other nodes opened since): that
// re-arms their timers from created_at, and those past their deadline
// settle at once.

// maxResumeSessions bounds the sessions listed when a client comes online.
const maxResumeSessions = 1000

// stampDeadline sets expires_at on an agent.interaction.request with a
// timeout, re-encoding p's data.
func stampDeadline(p *pending, now time.Time) {
	req, ok := p.msg.Payload.(*protocol.InteractionRequest)
	if !ok || req.TimeoutMS <= 0 {
		return
	}
	req.ExpiresAt = now.Add(time.Duration(req.TimeoutMS) * time.Millisecond).UTC().Format(time.RFC3339Nano)
	if data, err := protocol.Encode(p.msg); err == nil {
		p.data = data
	}
}

// expire runs when an interaction's deadline passed: it settles it now if
// the client is online, else marks it due for when the client is back.
func (s *session) expire(id string) {
	if _, online := s.m.presence.online(s.machineID); !online {
		s.markDue(id)
		// The client may have come back between the check and the mark,
		// after resumeTimeouts looked: look again.
		if _, online := s.m.presence.online(s.machineID); !online {
			s.m.log.Info("interaction timed out while its client is offline; it is settled when the client is back",
				"session", s.id, "interaction", id)
			return
		}
	}
	s.settleTimeout(id)
}

func (s *session) markDue(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.open {
		if o.id == id {
			o.due = true
		}
	}
}

// settleDue settles every interaction whose deadline passed while the
// client was offline.
func (s *session) settleDue() {
	s.mu.Lock()
	var due []string
	for _, o := range s.open {
		if o.due {
			due = append(due, o.id)
		}
	}
	s.mu.Unlock()
	for _, id := range due {
		s.settleTimeout(id)
	}
}

// settleTimeout settles an open interaction as timed out, once: the answer
// is recorded, the UIs see it resolved, and the client gets it.
func (s *session) settleTimeout(id string) {
	s.mu.Lock()
	var request []byte
	for _, o := range s.open {
		if o.id == id {
			request = o.request
		}
	}
	s.mu.Unlock()
	if request == nil {
		return // settled meanwhile
	}
	var answer *protocol.InteractionResponse
	if msg, err := protocol.Decode(request); err == nil {
		if req, ok := msg.Payload.(*protocol.InteractionRequest); ok {
			answer = req.TimeoutAnswer()
		}
	}
	var recorded json.RawMessage
	if answer != nil {
		b, err := json.Marshal(answer)
		if err != nil {
			s.m.log.Error("encode timeout answer", "session", s.id, "interaction", id, "err", err)
			answer = nil
		} else {
			recorded = b
		}
	}
	won, err := s.m.st.SettleInteraction(s.m.ctx, s.id, id, "timeout", recorded)
	if err != nil {
		s.m.log.Error("time out interaction", "session", s.id, "interaction", id, "err", err)
		return
	}
	if !won {
		return // answered, cancelled or timed out by another node first
	}
	to := &protocol.InteractionTimeout{InteractionID: id}
	if answer != nil {
		sv := answer.SelectedValue
		to.SelectedValue, to.TextInput = &sv, answer.TextInput
	}
	msg := protocol.New(protocol.TypeInteractionTimeout, to)
	msg.SessionID = s.id
	s.m.toClient(s, msg, "")
	if err := s.submitResolved(id, "timeout", answer); err != nil {
		s.m.log.Error("queue resolved interaction", "session", s.id, "err", err)
	}
}

// resumeTimeouts runs when a machine's client comes online: the running
// sessions of that machine are loaded (arming their timers, so a deadline
// that passed while the master was down settles now) and whatever fell
// due while the client was away is settled and delivered.
func (m *Master) resumeTimeouts(machineID string) {
	rows, err := m.st.ListSessions(m.ctx, machineID, maxResumeSessions)
	if err != nil {
		m.log.Error("list sessions to resume timeouts", "machine", machineID, "err", err)
		return
	}
	for _, r := range rows {
		if r.State != protocol.SessionRunning {
			continue
		}
		s, err := m.session(m.ctx, r.ID)
		if err != nil {
			m.log.Error("load session to resume timeouts", "session", r.ID, "err", err)
			continue
		}
		// Another node may have stored interactions while it held the
		// client: fold them in, so this node times them out (and cancels
		// them at the turn's end) now that the client may be here.
		s.catchUp(m.ctx, r.LastSeq)
		s.settleDue()
	}
}

// permTimeout is the frame's PermTimeout for control.session.open.
func (f *controlFrame) permTimeout() *int {
	if f.PermTimeout == "" {
		return nil
	}
	ms, err := strconv.Atoi(f.PermTimeout)
	if err != nil {
		return nil
	}
	return &ms
}
