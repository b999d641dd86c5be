package master

import (
	"bytes"
	"errors"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// This file is how a person manages sessions: ui.session.rename,
// ui.session.archive and ui.session.delete. Each is authorised like every
// ui.* session message (uiSession: a session on a machine the UI's token
// may not see is one that does not exist), changes the store, answers the
// sender master.session.changed and publishes the change on
// sessionsTopic, so that every UI on every master node that may see the
// session learns it at once, and every node updates (or, for a delete,
// drops) the session's live state.
//
// Rules: a rename is trimmed and at most protocol.MaxTitleRunes
// characters (empty removes the title); archiving is allowed at any time,
// and an archived session stays readable but takes no prompt (code
// archived) until it is unarchived; deleting a running session is refused
// with busy (cancel its turn first), and a delete takes the session's
// events, snapshot, interactions, artifacts with their download links, and
// uploads (store.DeleteSession).

// sessionsTopic carries session changes (changeFrame) to every node.
const sessionsTopic = "sessions"

// changeFrame is what sessionsTopic carries: the sending connection's id
// (whose UI already has the answer), the session's machine (so a node
// filters by what each UI may see without decoding), then the
// master.session.changed wire message.
func changeFrame(connID, machineID string, wire []byte) []byte {
	b := make([]byte, 0, len(connID)+len(machineID)+2+len(wire))
	b = append(append(b, connID...), '\n')
	b = append(append(b, machineID...), '\n')
	return append(b, wire...)
}

func parseChangeFrame(f []byte) (connID, machineID string, wire []byte, ok bool) {
	a, rest, ok1 := bytes.Cut(f, []byte{'\n'})
	b, wire, ok2 := bytes.Cut(rest, []byte{'\n'})
	return string(a), string(b), wire, ok1 && ok2
}

// onSessionChanged (every node) brings the node's live state of the
// session in line with a change made on any node.
func (m *Master) onSessionChanged(frame []byte) {
	_, _, wire, ok := parseChangeFrame(frame)
	if !ok {
		return
	}
	msg, err := protocol.Decode(wire)
	if err != nil {
		return
	}
	p, ok := msg.Payload.(*protocol.SessionChanged)
	if !ok {
		return
	}
	if p.Change == protocol.ChangeDeleted {
		m.forgetSession(p.Session.ID)
		return
	}
	m.mu.Lock()
	e := m.sessions[p.Session.ID]
	m.mu.Unlock()
	if e == nil {
		return
	}
	select {
	case <-e.ready:
	default:
		return // loading: it reads the store, which has the change
	}
	if s := e.s; s != nil {
		s.mu.Lock()
		s.row.Title, s.row.Archived = p.Session.Title, p.Session.Archived
		s.mu.Unlock()
	}
}

// forgetSession drops a deleted session's live state on this node.
func (m *Master) forgetSession(id string) {
	m.mu.Lock()
	e := m.sessions[id]
	delete(m.sessions, id)
	m.mu.Unlock()
	if e == nil {
		return
	}
	stop := func() {
		<-e.ready
		if e.s != nil {
			e.s.stopTimers()
		}
	}
	select {
	case <-e.ready:
		stop()
	default:
		// Still loading: wait elsewhere, a broker's deliver must not block.
		m.goBG(stop)
	}
}

// deliverChange (every UI connection) relays a change to the UI if it may
// see the session's machine; a deleted session's subscription ends.
func (c *conn) deliverChange(frame []byte) {
	from, machineID, wire, ok := parseChangeFrame(frame)
	if !ok || from == c.id || !c.sees(machineID) {
		return
	}
	if msg, err := protocol.Decode(wire); err == nil {
		if p, ok := msg.Payload.(*protocol.SessionChanged); ok && p.Change == protocol.ChangeDeleted {
			c.ui.unsubscribe(p.Session.ID)
		}
	}
	c.tryEnqueue(wire)
}

// tellChange answers the sender and tells every node and UI.
func (m *Master) tellChange(c *conn, req *protocol.Message, change string, info protocol.SessionInfo) {
	p := &protocol.SessionChanged{Change: change, Session: info}
	ans := req.Reply(protocol.TypeSessionChanged, p)
	ans.SessionID = info.ID
	c.send(ans)
	out := protocol.New(protocol.TypeSessionChanged, p)
	out.SessionID = info.ID
	wire, err := protocol.Encode(out)
	if err != nil {
		m.log.Error("encode session change", "err", err)
		return
	}
	if err := m.br.Publish(m.ctx, sessionsTopic, changeFrame(c.id, info.MachineID, wire)); err != nil {
		m.log.Error("publish session change", "session", info.ID, "err", err)
	}
}

// renameSession handles ui.session.rename.
func (m *Master) renameSession(c *conn, msg *protocol.Message) {
	fail := func(e *protocol.Error) { c.sendError(msg.MessageID, msg.SessionID, e) }
	title, e := protocol.CleanTitle(msg.Payload.(*protocol.SessionRename).Title)
	if e != nil {
		fail(e)
		return
	}
	s, e := m.uiSession(c, msg.SessionID)
	if e != nil {
		fail(e)
		return
	}
	if err := m.st.RenameSession(c.ctx, s.id, title); err != nil {
		fail(sessionError(m.wireError(err, "session")))
		return
	}
	s.mu.Lock()
	s.row.Title = title
	s.mu.Unlock()
	m.tellChange(c, msg, protocol.ChangeRenamed, s.info())
}

// archiveSession handles ui.session.archive.
func (m *Master) archiveSession(c *conn, msg *protocol.Message) {
	fail := func(e *protocol.Error) { c.sendError(msg.MessageID, msg.SessionID, e) }
	archived := msg.Payload.(*protocol.SessionArchive).Archived
	s, e := m.uiSession(c, msg.SessionID)
	if e != nil {
		fail(e)
		return
	}
	if err := m.st.ArchiveSession(c.ctx, s.id, archived); err != nil {
		fail(sessionError(m.wireError(err, "session")))
		return
	}
	s.mu.Lock()
	s.row.Archived = archived
	s.mu.Unlock()
	change := protocol.ChangeArchived
	if !archived {
		change = protocol.ChangeUnarchived
	}
	m.tellChange(c, msg, change, s.info())
}

var errDeleteRunning = &protocol.Error{Code: protocol.CodeBusy, Field: "session_id",
	Message: "the session is running a turn; cancel it, then delete the session"}

// deleteSession handles ui.session.delete.
func (m *Master) deleteSession(c *conn, msg *protocol.Message) {
	fail := func(e *protocol.Error) { c.sendError(msg.MessageID, msg.SessionID, e) }
	s, e := m.uiSession(c, msg.SessionID)
	if e != nil {
		fail(e)
		return
	}
	// The live state knows a turn that the stored row may not show yet;
	// the stored row knows one that another node runs.
	row, err := m.st.Session(c.ctx, s.id)
	if err != nil {
		fail(sessionError(m.wireError(err, "session")))
		return
	}
	info := s.info()
	if info.State == protocol.SessionRunning || row.State == protocol.SessionRunning {
		fail(errDeleteRunning)
		return
	}
	if err := m.st.DeleteSession(c.ctx, s.id); err != nil {
		fail(sessionError(m.wireError(err, "session")))
		return
	}
	m.forgetSession(s.id)
	c.ui.unsubscribe(s.id)
	m.tellChange(c, msg, protocol.ChangeDeleted, info)
}

// promptArchived refuses a prompt to an archived session (the stored row
// decides: another node may have archived it a moment ago).
func (m *Master) promptArchived(c *conn, id string) *protocol.Error {
	row, err := m.st.Session(c.ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return sessionError(&protocol.Error{Code: protocol.CodeNotFound})
	case err != nil:
		return m.wireError(err, "session")
	case row.Archived:
		return &protocol.Error{Code: protocol.CodeArchived, Field: "session_id",
			Message: "the session is archived; unarchive it to prompt it"}
	}
	return nil
}
