package master

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
	"github.com/ferry-dev/ferry/protocol/fileref"
)

// This file is how a person manages sessions: ui.session.rename,
// ui.session.archive and ui.session.delete. Each is authorised like every
// ui.* session message (uiSession: a session on a machine the UI's token
// may not see is one that does not exist), changes the store, answers the
// sender master.session.changed and publishes the change on
// sessionsTopic (which also carries status changes, status.go), so that
// every UI on every master node that may see the session learns it at
// once, and every node updates (or, for a delete, drops) the session's
// live state.
//
// Rules: a rename is trimmed and at most protocol.MaxTitleRunes
// characters (empty removes the title); archiving is allowed at any time,
// and an archived session stays readable but takes no prompt (code
// archived) until it is unarchived; deleting a running session is refused
// with busy (cancel its turn first), and a delete takes the session's
// events, snapshot, interactions, artifacts with their download links, and
// uploads (store.DeleteSession).

// sessionsTopic carries every master.session.changed (changeFrame), the
// management changes and the status hints, to every node.
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

// onSessionChanged (every node) is the one delivery of sessionsTopic: it
// brings the node's live state of the session in line with a change made
// on any node, then relays the change to this node's UIs that may see the
// session's machine, except the one that asked (it has the answer). A UI
// whose queue is full misses it (tryEnqueue): a change is news for lists
// and views, never worth blocking the broker. A deleted session's
// subscriptions end.
func (m *Master) onSessionChanged(frame []byte) {
	from, machineID, wire, ok := parseChangeFrame(frame)
	if !ok {
		m.log.Error("bad session change frame")
		return
	}
	msg, err := protocol.Decode(wire)
	if err != nil {
		m.log.Error("bad session change", "err", err)
		return
	}
	p, ok := msg.Payload.(*protocol.SessionChanged)
	if !ok {
		m.log.Error("bad session change", "type", msg.Type)
		return
	}
	m.applyChange(p)
	m.mu.Lock()
	uis := make([]*conn, 0, len(m.uis))
	for c := range m.uis {
		if c.id != from && c.sees(machineID) {
			uis = append(uis, c)
		}
	}
	m.mu.Unlock()
	for _, c := range uis {
		if p.Change == protocol.ChangeDeleted {
			c.ui.unsubscribe(p.Session.ID)
		}
		c.tryEnqueue(wire)
	}
}

// applyChange brings the node's live state of the session in line with a
// management change. A status change comes from the session's writer,
// whose live state it is.
func (m *Master) applyChange(p *protocol.SessionChanged) {
	switch p.Change {
	case protocol.ChangeDeleted:
		m.forgetSession(p.Session.ID)
		return
	case protocol.ChangeStatus:
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
		s.row.Title, s.row.TitleSource, s.row.Archived = p.Session.Title, p.Session.TitleSource, p.Session.Archived
		if p.Session.TitleSource == store.TitlePrompt {
			s.row.Prompted = true
		}
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

// tellChange answers the sender and tells every node and UI.
func (m *Master) tellChange(c *conn, req *protocol.Message, change string, info protocol.SessionInfo) {
	ans := req.Reply(protocol.TypeSessionChanged, &protocol.SessionChanged{Change: change, Session: info})
	ans.SessionID = info.ID
	c.send(ans)
	m.publishChange(m.ctx, c.id, change, info)
}

// publishChange publishes a change on sessionsTopic for every node's UIs
// but the connection from (none, if empty), which has its answer.
func (m *Master) publishChange(ctx context.Context, from, change string, info protocol.SessionInfo) {
	out := protocol.New(protocol.TypeSessionChanged, &protocol.SessionChanged{Change: change, Session: info})
	out.SessionID = info.ID
	wire, err := protocol.Encode(out)
	if err != nil {
		m.log.Error("encode session change", "session", info.ID, "change", change, "err", err)
		return
	}
	if err := m.br.Publish(ctx, sessionsTopic, changeFrame(from, info.MachineID, wire)); err != nil && !errors.Is(err, context.Canceled) {
		m.log.Error("publish session change", "session", info.ID, "change", change, "err", err)
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
	s.row.Title, s.row.TitleSource = title, store.TitleUser
	if title == "" {
		s.row.TitleSource = ""
	}
	s.mu.Unlock()
	m.tellChange(c, msg, protocol.ChangeRenamed, s.info())
}

// prompted records a session's stored prompt: the first one marks the
// session prompted (it is no longer clutter to sweep) and titles it when it
// has no title (a slash command aside), told to every UI as a rename with
// title_source prompt. The store decides, in one statement, so a person's
// title, or a first prompt on another node, wins.
func (m *Master) prompted(s *session, p *protocol.PromptRequest) {
	s.mu.Lock()
	done := s.row.Prompted
	s.row.Prompted = true
	s.mu.Unlock()
	if done {
		return
	}
	title := ""
	if p.InputType != protocol.InputSlashCommand {
		title = protocol.TitleFromPrompt(fileref.Parse(p.PromptText, p.FileReferences).Literal())
	}
	titled, err := m.st.MarkPrompted(m.ctx, s.id, title)
	if err != nil {
		m.log.Error("mark session prompted", "session", s.id, "err", err)
		return
	}
	if titled {
		m.retitled(s, title, store.TitlePrompt)
	}
}

// agentTitled applies a title the session's agent made (agent.title),
// unless a person's title stands, and tells every UI as a rename with
// title_source agent.
func (m *Master) agentTitled(s *session, title string) {
	set, err := m.st.AgentTitleSession(m.ctx, s.id, title)
	if err != nil {
		m.log.Error("set the agent's title", "session", s.id, "err", err)
		return
	}
	if set {
		m.retitled(s, title, store.TitleAgent)
	}
}

// retitled takes a title the store just set automatically into the
// session's row and tells every UI, as a rename.
func (m *Master) retitled(s *session, title, source string) {
	s.mu.Lock()
	s.row.Title, s.row.TitleSource = title, source
	s.mu.Unlock()
	m.publishChange(m.ctx, "", protocol.ChangeRenamed, s.info())
}

// archiveSession handles ui.session.archive.
func (m *Master) archiveSession(c *conn, msg *protocol.Message) {
	fail := func(e *protocol.Error) { c.sendError(msg.MessageID, msg.SessionID, e) }
	p := msg.Payload.(*protocol.SessionArchive)
	archived := p.Archived
	s, e := m.uiSession(c, msg.SessionID)
	if e != nil {
		fail(e)
		return
	}
	if archived && s.isolated() {
		// The worktree goes first; the client's answer is waited for
		// elsewhere, the UI's other messages go on meanwhile.
		if !m.goBG(func() {
			if e := m.releaseWorktree(c.ctx, s, p.Discard, p.DeleteBranch); e != nil {
				fail(e)
				return
			}
			m.finishArchive(c, msg, s, archived)
		}) {
			fail(m.wireError(errClosing, "archive session"))
		}
		return
	}
	m.finishArchive(c, msg, s, archived)
}

// finishArchive stores an archive or unarchive and tells every UI.
func (m *Master) finishArchive(c *conn, msg *protocol.Message, s *session, archived bool) {
	fail := func(e *protocol.Error) { c.sendError(msg.MessageID, msg.SessionID, e) }
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

var errNotEmpty = &protocol.Error{Code: protocol.CodeBusy, Field: "payload.if_empty",
	Message: "the session is not empty (it was prompted or named, or another UI has it open); it was kept"}

// openElsewhere reports whether a UI connection of this node other than c
// is subscribed to the session.
func (m *Master) openElsewhere(c *conn, id string) bool {
	m.mu.Lock()
	uis := make([]*conn, 0, len(m.uis))
	for o := range m.uis {
		if o != c {
			uis = append(uis, o)
		}
	}
	m.mu.Unlock()
	for _, o := range uis {
		o.ui.mu.Lock()
		_, ok := o.ui.subs[id]
		o.ui.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

// maxSweptSessions bounds the empty sessions one sweep deletes.
const maxSweptSessions = 100

// sweepEmptySessions deletes the sessions never prompted nor named,
// created more than Config.EmptySessionAge ago, that no UI of this node
// has open, and tells every UI: a session opened and left is not kept as
// clutter. DeleteUnprompted checks again as it deletes, so a first prompt
// racing the sweep keeps its session. (A UI of another node that has such
// a session open and idle for that long sees it deleted.) For
// Config.ReopenGrace after the node starts, only sessions created since
// are swept: the UIs that had the older ones open are still reconnecting.
func (m *Master) sweepEmptySessions() {
	if m.cfg.EmptySessionAge < 0 {
		return
	}
	cutoff := time.Now().Add(-m.cfg.EmptySessionAge)
	var spareBefore time.Time // zero: spare none
	if time.Since(m.started) < m.cfg.ReopenGrace {
		if m.started.After(cutoff) {
			return // nothing created since is old enough yet
		}
		spareBefore = m.started
	}
	rows, err := m.st.UnpromptedSessions(m.ctx, cutoff, maxSweptSessions)
	if err != nil {
		m.log.Warn("listing empty sessions failed; trying again later", "err", err)
		return
	}
	for _, r := range rows {
		if r.CreatedAt.Before(spareBefore) || m.openElsewhere(nil, r.ID) {
			continue
		}
		live, _ := m.session(m.ctx, r.ID) // nil when unreadable: not isolated then
		if err := m.st.DeleteUnprompted(m.ctx, r.ID); err != nil {
			if !errors.Is(err, store.ErrExists) && !errors.Is(err, store.ErrNotFound) {
				m.log.Warn("deleting an empty session failed", "session", r.ID, "err", err)
			}
			continue
		}
		m.log.Info("deleted a session never prompted", "session", r.ID, "created", r.CreatedAt)
		m.dropEmptyWorktree(live)
		m.forgetSession(r.ID)
		m.publishChange(m.ctx, "", protocol.ChangeDeleted, sessionInfo(r))
	}
}

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
	p := msg.Payload.(*protocol.SessionDelete)
	if s.isolated() && !p.IfEmpty {
		if !m.goBG(func() {
			if e := m.releaseWorktree(c.ctx, s, p.Discard, p.DeleteBranch); e != nil {
				fail(e)
				return
			}
			m.finishDelete(c, msg, s, info)
		}) {
			fail(m.wireError(errClosing, "delete session"))
		}
		return
	}
	if p.IfEmpty {
		if m.openElsewhere(c, s.id) {
			fail(errNotEmpty)
			return
		}
		err = m.st.DeleteUnprompted(c.ctx, s.id)
		if errors.Is(err, store.ErrExists) {
			fail(errNotEmpty)
			return
		}
	} else {
		err = m.st.DeleteSession(c.ctx, s.id)
	}
	if err != nil {
		fail(sessionError(m.wireError(err, "session")))
		return
	}
	if p.IfEmpty {
		m.dropEmptyWorktree(s)
	}
	m.deleted(c, msg, s, info)
}

// finishDelete deletes an isolated session once its worktree is gone.
func (m *Master) finishDelete(c *conn, msg *protocol.Message, s *session, info protocol.SessionInfo) {
	if err := m.st.DeleteSession(c.ctx, s.id); err != nil {
		c.sendError(msg.MessageID, msg.SessionID, sessionError(m.wireError(err, "session")))
		return
	}
	info.Worktree = cloneWorktree(s.info().Worktree)
	m.deleted(c, msg, s, info)
}

// deleted forgets a deleted session and tells every UI.
func (m *Master) deleted(c *conn, msg *protocol.Message, s *session, info protocol.SessionInfo) {
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
