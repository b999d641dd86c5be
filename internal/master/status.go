package master

import (
	"context"
	"errors"

	"github.com/ferry-dev/ferry/protocol"
)

// Session status (master.session.status).
//
// A session list must show "waiting for you" as soon as an agent asks,
// not at the UI's next refresh. The session's writer, which alone knows
// its open interactions, publishes the session's SessionInfo on statusTopic
// after a batch that opened the session, started or ended a turn, or opened
// or settled an interaction; every node hands it to its UIs that may see the machine.
// It is a hint for lists: a UI that misses one (a full queue, a
// reconnect) is right again at its next ui.sessions.list.

// changesStatus reports whether an event of type typ may change what a
// session list shows of the session: its state or its waiting count.
func changesStatus(typ string) bool {
	switch typ {
	case protocol.TypeSessionOpened, protocol.TypeTurnStarted, protocol.TypeTextDone,
		protocol.TypeInteractionRequest, protocol.TypeInteractionResolved:
		return true
	}
	return false
}

// publishStatus sends info to every node's UIs (onSessionStatus).
func (m *Master) publishStatus(ctx context.Context, info protocol.SessionInfo) {
	b, err := protocol.Encode(protocol.New(protocol.TypeSessionStatus, &protocol.SessionStatus{Session: info}))
	if err != nil {
		m.log.Error("encode session status", "session", info.ID, "err", err)
		return
	}
	if err := m.br.Publish(ctx, statusTopic, b); err != nil && !errors.Is(err, context.Canceled) {
		m.log.Error("publish session status", "session", info.ID, "err", err)
	}
}

// onSessionStatus hands a published master.session.status to this node's
// UIs that may see the session's machine. A UI whose queue is full misses
// it (tryEnqueue): the status is a hint, never worth blocking the broker.
func (m *Master) onSessionStatus(data []byte) {
	msg, err := protocol.Decode(data)
	if err != nil {
		m.log.Error("bad session status", "err", err)
		return
	}
	st, ok := msg.Payload.(*protocol.SessionStatus)
	if !ok {
		m.log.Error("bad session status", "type", msg.Type)
		return
	}
	m.mu.Lock()
	uis := make([]*conn, 0, len(m.uis))
	for c := range m.uis {
		if c.sees(st.Session.MachineID) {
			uis = append(uis, c)
		}
	}
	m.mu.Unlock()
	for _, c := range uis {
		c.tryEnqueue(data)
	}
}
