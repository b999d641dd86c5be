package master

import (
	"context"
	"errors"
	"maps"
	"time"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// Prompts are delivered at least once and run once.
//
// A control message reaches the client at most once by itself: the node
// holding the client's connection may die with a prompt in its socket or
// before it relays it, a prompt published into a broker gap is lost, and a
// client's connection may die with it unread. So a prompt to a client that
// declared protocol.Capabilities.PromptsOnce is stored undelivered
// (store.Event.Deliver, in the prompt's own append) until the client
// answers it: with its agent.turn.started, whose parent_id is the prompt
// (store.Event.Answers, in that event's own append), or with an error (a
// refusal, routed back through the connection that carried the prompt,
// which the master stores as agent.prompt.refused: promptRefused). Until
// then the node holding the client's connection sends it again:
//
//   - all of them when the connection becomes the machine's connection of
//     record on this node (onPresence). Its subscription to the machine's
//     topic came first, so a prompt stored before the scan is found by
//     it and one stored after is published to the subscription: none
//     falls between;
//   - at every sweep (sweepRevoked), those stored more than a sweep ago:
//     a prompt lost while the client stayed connected (a broker gap, or
//     the node that stored it died before publishing it).
//
// The client answers each prompt once by its message_id, across its own
// restarts, and drops a copy of one it answered (or refuses it again as
// the first time), so a copy sent when none was needed runs nothing. A
// client that does not declare PromptsOnce gets each prompt once, as
// before: a copy could run it twice.

// maxRedeliver bounds the prompts one scan lists.
const maxRedeliver = 1000

// answered is the prompt an event answers: a turn's start, or the stored
// refusal (promptRefused), names its prompt as its parent.
func answered(msg *protocol.Message) string {
	if (msg.Type == protocol.TypeTurnStarted || msg.Type == protocol.TypePromptRefused) && msg.ParentID != msg.MessageID {
		return msg.ParentID
	}
	return ""
}

// redeliverOnline runs when machine's client came online on connection
// connID: if that connection is this node's, its client is sent every
// prompt it has not answered.
func (m *Master) redeliverOnline(machine, connID string) {
	m.mu.Lock()
	c := m.clients[machine]
	m.mu.Unlock()
	if c == nil || c.id != connID {
		return
	}
	m.goBG(func() { m.redeliver(c, machine, time.Time{}) })
}

// redeliver sends connection c the prompts of machine stored by before
// (now when zero) that its client has not answered, oldest first.
func (m *Master) redeliver(c *conn, machine string, before time.Time) {
	ds, err := m.st.Undelivered(m.ctx, machine, before, maxRedeliver)
	if err != nil {
		m.log.Error("list the prompts a client has not answered", "machine", machine, "err", err)
		return
	}
	for _, d := range ds {
		m.resend(c, d)
	}
}

// redeliverStale sends again the prompts stored by before that the clients
// of this node's connections have not answered. It asks the store machine
// by machine: one scan of the whole cluster's oldest prompts would fill
// with those of machines that are offline (a prompt waits for its client
// as long as it takes) and never reach the ones this node can deliver.
func (m *Master) redeliverStale(before time.Time) {
	m.mu.Lock()
	online := make(map[string]*conn, len(m.clients))
	maps.Copy(online, m.clients)
	m.mu.Unlock()
	for machine, c := range online {
		m.redeliver(c, machine, before)
	}
}

// resend sends the undelivered prompt d on c, its uploads granted again.
func (m *Master) resend(c *conn, d store.Delivery) {
	c.cl.mu.Lock()
	once := c.cl.promptsOnce
	c.cl.mu.Unlock()
	if !once {
		return
	}
	evs, err := m.st.Events(m.ctx, d.SessionID, d.Seq-1, 1)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) { // else deleted, and its deliveries with it
			m.log.Error("read a prompt to send it again", "session", d.SessionID, "prompt", d.MessageID, "err", err)
		}
		return
	}
	if len(evs) == 0 || evs[0].MessageID != d.MessageID {
		m.log.Warn("a prompt its client never answered is past the retention; it is not sent again", "session", d.SessionID, "prompt", d.MessageID)
		m.delivered(d.SessionID, d.MessageID)
		return
	}
	msg, err := protocol.Decode(evs[0].Data)
	var p *protocol.PromptRequest
	if err == nil {
		p, _ = msg.Payload.(*protocol.PromptRequest)
	}
	if p == nil {
		m.log.Error("an undelivered event is not a prompt; dropped", "session", d.SessionID, "message", d.MessageID, "err", err)
		m.delivered(d.SessionID, d.MessageID)
		return
	}
	s, err := m.session(m.ctx, d.SessionID)
	if err != nil {
		m.log.Error("load a session to send its prompt again", "session", d.SessionID, "err", err)
		return
	}
	files, err := m.uploads.Regrant(m.ctx, s.id, msg.MessageID, p.ContextFiles)
	var pe *protocol.Error
	switch {
	case err == nil:
		granted := *p
		granted.ContextFiles = files
		msg.Payload = &granted
	case errors.As(err, &pe):
		// An upload gone or expired: sent as stored, the client refuses
		// it for want of the file, and that answers it.
		m.log.Info("a prompt sent again names an upload that cannot be granted", "session", s.id, "prompt", msg.MessageID, "field", pe.Field)
	default:
		m.log.Error("grant the uploads of a prompt sent again; trying again later", "session", s.id, "err", err)
		return
	}
	f, err := controlFrameOf(s, msg, "")
	if err != nil {
		m.log.Error("encode a prompt sent again", "session", s.id, "err", err)
		return
	}
	c.log.Info("sending again a prompt the client has not answered", "session", s.id, "prompt", msg.MessageID, "stored", d.CreatedAt)
	m.deliverFrame(c, f)
}

// delivered takes a prompt off the undelivered list.
func (m *Master) delivered(sessionID, messageID string) {
	if err := m.st.Delivered(m.ctx, sessionID, messageID); err != nil {
		m.log.Error("record a prompt answered", "session", sessionID, "prompt", messageID, "err", err)
	}
}

// promptRefused stores the client's refusal e of prompt promptID as the
// session's agent.prompt.refused event. The error itself goes only to the
// UI that sent the prompt (routeReply), which may be gone: a copy is sent
// again after a connection or a node died, with no UI to answer. Stored,
// the refusal reaches every UI of the session, live or in the replay after
// a reload, on any node, and its append answers the prompt (answered). If
// it cannot be stored the prompt stays unanswered: to a client that
// declared prompts_once it is sent again, and refused again.
func (m *Master) promptRefused(sessionID, promptID string, e *protocol.Error) {
	s, err := m.session(m.ctx, sessionID)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) && !errors.Is(err, context.Canceled) { // else deleted, or the node stops
			m.log.Error("load a session to store a prompt's refusal", "session", sessionID, "prompt", promptID, "err", err)
		}
		return
	}
	ev := protocol.New(protocol.TypePromptRefused, protocol.Refusal(e))
	ev.SessionID, ev.ParentID = sessionID, promptID
	err = s.submitMaster(m.ctx, ev, func(_ uint64, _ bool, err error) {
		if err != nil {
			m.log.Error("store a prompt's refusal", "session", sessionID, "prompt", promptID, "err", err)
		}
	})
	if err != nil && !errors.Is(err, errClosing) && !errors.Is(err, context.Canceled) {
		m.log.Error("queue a prompt's refusal", "session", sessionID, "prompt", promptID, "err", err)
	}
}
