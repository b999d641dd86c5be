package master

import (
	"context"

	"github.com/ferry-dev/ferry/protocol"
)

// Session status (master.session.changed, change status).
//
// A session list must show "waiting for you" as soon as an agent asks,
// not at the UI's next refresh. The session's writer, which alone knows
// its open interactions, publishes the session's SessionInfo on
// sessionsTopic, like a rename or a delete, after a batch that opened the
// session, started or ended a turn, or opened or settled an interaction;
// every node hands it to its UIs that may see the machine (onSessionChanged).
// It is a hint for lists: a UI that misses one (a full queue, a
// reconnect) is right again at its next ui.sessions.list.

// changesStatus reports whether an event of type typ may change what a
// session list shows of the session: its state or its waiting count.
func changesStatus(typ string) bool {
	switch typ {
	case protocol.TypeSessionOpened, protocol.TypeTurnStarted, protocol.TypeTextDone,
		protocol.TypeInteractionRequest, protocol.TypeInteractionResolved,
		protocol.TypeWorktreeState, protocol.TypeWorktreeShipped:
		return true
	}
	return false
}

// publishStatus sends info to every node's UIs that may see it.
func (m *Master) publishStatus(ctx context.Context, info protocol.SessionInfo) {
	m.publishChange(ctx, "", protocol.ChangeStatus, info)
}
