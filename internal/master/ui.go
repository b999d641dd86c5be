package master

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
	"github.com/ferry-dev/ferry/protocol/fileref"
)

// openTimeout bounds how long ui.session.start waits for the client's
// session.opened.
const openTimeout = 30 * time.Second

// replayPage is how many events a replay reads from the store at once.
const replayPage = 512

// testHookSubscribe, when set (by tests only), runs while a subscription
// holds live events back, after the store was read and before the replay.
var testHookSubscribe func(sessionID string)

// uiSide is the state of a UI connection: its session subscriptions.
type uiSide struct {
	mu        sync.Mutex
	subs      map[string]*uiSub
	unsubConn func()
	links     []time.Time // when its recent login links were issued (loginlink.go)
}

// uiSub is one UI's subscription to one session's topic. While the missed
// events are replayed from the store, live events are held back in buf;
// afterwards every event whose seq was already sent is skipped, so the UI
// sees each seq once and in order.
type uiSub struct {
	c         *conn
	s         *session
	unsub     func()
	mu        sync.Mutex
	replaying bool
	ended     bool     // unsubscribed: a fill in flight sends nothing more
	buf       [][]byte // held-back session topic messages
	held      int      // events in buf
	overflow  bool
	skip      uint64 // highest seq sent
}

// deliver takes one session topic message (a batch of events, see
// frameBuilder) and queues its new events for the UI in one go.
func (sub *uiSub) deliver(frame []byte) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.replaying {
		sub.hold(frame)
		return
	}
	sub.send(frame)
}

// hold keeps frame back while a replay or a fill runs; past a queue's
// worth of events the UI is dropped when it goes live (overflow). sub.mu
// is held.
func (sub *uiSub) hold(frame []byte) {
	n := frameEvents(frame)
	if sub.held+n > sub.c.m.cfg.QueueSize {
		sub.overflow = true
		return
	}
	sub.buf = append(sub.buf, frame)
	sub.held += n
}

// send queues frame's events after skip, in order. It reports whether it
// queued them all: false when the connection is down, or when a gap began
// a fill from the store (sub.replaying), which holds frame back. sub.mu is
// held.
func (sub *uiSub) send(frame []byte) bool {
	var out [][]byte
	gap := uint64(0)
	eachEvent(frame, func(seq uint64, wire []byte) bool {
		if seq <= sub.skip {
			return true
		}
		if seq != sub.skip+1 {
			gap = seq
			return false
		}
		sub.skip = seq
		out = append(out, wire)
		return true
	})
	if len(out) > 0 && !sub.c.tryEnqueueAll(out) {
		return false
	}
	if gap != 0 {
		sub.fill(frame, gap)
		return false
	}
	return true
}

// fill is what a gap in seq starts: the events between are in the store
// (an event's seq is taken once those before it were stored) but reached
// this node late or not at all. Another node published them a moment
// after the next one, or while its broker connection was down. They are
// read from the store and sent, with frame and what follows held back
// meanwhile, as when a subscription replays; a repeat of them later on the
// broker is skipped. Dropping the UI instead made it reconnect whenever
// two nodes stored a session's events at once (an answer and the agent's
// next step). sub.mu is held.
func (sub *uiSub) fill(frame []byte, gap uint64) {
	after := sub.skip
	sub.c.log.Info("events missed on the broker; sending them from the store", "after_seq", after, "seq", gap)
	sub.replaying = true
	sub.hold(frame)
	m, c, s := sub.c.m, sub.c, sub.s
	if !m.goBG(func() {
		if m.replay(c, s, after, gap-1, nil) {
			sub.goLive(gap - 1)
		}
	}) {
		// The node is shutting down: the UI resumes on another.
		c.close(websocket.StatusServiceRestart, DrainReason, nil, false)
	}
}

// goLive ends the replay: held-back events after skip follow, then live ones.
func (sub *uiSub) goLive(skip uint64) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.ended {
		return
	}
	sub.replaying, sub.skip = false, skip
	buf := sub.buf
	sub.buf, sub.held = nil, 0
	if sub.overflow {
		sub.c.drop()
		return
	}
	for i, f := range buf {
		if !sub.send(f) {
			if sub.replaying {
				// Another gap: its fill holds the rest back too, after f.
				for _, g := range buf[i+1:] {
					sub.hold(g)
				}
			}
			return
		}
	}
}

func (u *uiSide) unsubscribe(sessionID string) {
	u.mu.Lock()
	sub := u.subs[sessionID]
	delete(u.subs, sessionID)
	u.mu.Unlock()
	if sub != nil {
		sub.unsub()
		sub.mu.Lock()
		sub.ended, sub.buf = true, nil
		sub.mu.Unlock()
	}
}

func (m *Master) runUI(c *conn) {
	unsub, err := m.br.Subscribe(connTopic(c.id), func(b []byte) { c.tryEnqueue(b) })
	if err != nil {
		c.close(closeInternal, "internal error", m.wireError(err, "subscribe to connection topic"), false)
		c.start()
		c.finish()
		return
	}
	c.ui.unsubConn = unsub
	c.start()
	c.readLoop(func(data []byte) { m.handleUI(c, data) }, nil)
	m.notify.forget(c)
	unsub()
	c.ui.mu.Lock()
	subs := c.ui.subs
	c.ui.subs = map[string]*uiSub{}
	c.ui.mu.Unlock()
	for _, s := range subs {
		s.unsub()
	}
	c.finish()
}

func (m *Master) handleUI(c *conn, data []byte) {
	msg, err := protocol.DecodeFrom(protocol.RoleUI, data)
	if err != nil {
		parent, sid := protocol.ParentOf(data)
		c.sendError(parent, sid, m.wireError(err, "decode"))
		return
	}
	switch msg.Type {
	case protocol.TypeMachinesList:
		m.listMachines(c, msg)
	case protocol.TypeSessionsList:
		m.listSessions(c, msg)
	case protocol.TypeSessionStart:
		// It waits for the client; the UI's other messages go on meanwhile.
		if !m.goBG(func() { m.startSession(c, msg) }) {
			c.sendError(msg.MessageID, "", m.wireError(errClosing, "start session"))
		}
	case protocol.TypeSessionSubscribe:
		m.subscribe(c, msg)
	case protocol.TypeSessionUnsubscribe:
		c.ui.unsubscribe(msg.SessionID)
	case protocol.TypeUIPrompt:
		m.prompt(c, msg)
	case protocol.TypeArtifactsList:
		m.listArtifacts(c, msg)
	case protocol.TypeSessionRename:
		m.renameSession(c, msg)
	case protocol.TypeSessionArchive:
		m.archiveSession(c, msg)
	case protocol.TypeSessionDelete:
		m.deleteSession(c, msg)
	case protocol.TypeUIFocus:
		m.setFocus(c, msg)
	case protocol.TypeLoginLinkCreate:
		m.createLoginLink(c, msg)
	case protocol.TypeError:
		c.log.Info("UI reported an error", "parent", msg.ParentID, "payload", msg.Payload)
	default: // the control.* types a UI may send
		m.forward(c, msg)
	}
}

func (m *Master) listMachines(c *conn, msg *protocol.Message) {
	rows, err := m.st.Machines(c.ctx)
	if err != nil {
		c.sendError(msg.MessageID, msg.SessionID, m.wireError(err, "list machines"))
		return
	}
	out := make([]protocol.Machine, 0, len(rows))
	for _, r := range rows {
		if !c.sees(r.ID) {
			continue
		}
		caps, online := m.presence.online(r.ID)
		if !online {
			caps = storedCaps(r)
		}
		v := machineView(r.ID, caps, online)
		if (caps == nil || caps.Machine == nil) && r.Name != "" {
			v.Name = r.Name
		}
		out = append(out, v)
	}
	slices.SortStableFunc(out, func(a, b protocol.Machine) int {
		if a.Online != b.Online {
			if a.Online {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
	})
	c.send(msg.Reply(protocol.TypeMachines, &protocol.Machines{Machines: out}))
}

func (m *Master) listSessions(c *conn, msg *protocol.Message) {
	p := msg.Payload.(*protocol.SessionsList)
	limit := 100
	if p.Limit != nil {
		limit = *p.Limit
	}
	rows, err := m.visibleSessions(c, store.SessionFilter{MachineID: p.MachineID, Archived: p.Archived, Query: p.Query, Limit: limit})
	if err != nil {
		c.sendError(msg.MessageID, msg.SessionID, m.wireError(err, "list sessions"))
		return
	}
	out := make([]protocol.SessionInfo, len(rows))
	for i, r := range rows {
		out[i] = sessionInfo(r)
		out[i].Worktree, out[i].Usage = storedExtras(r.Snapshot)
		turns := storedTurns(r.Snapshot)
		out[i].Preview = preview(turns)
		if p.Query != "" {
			out[i].Match = matchOf(r.Title, turns, p.Query)
		}
		if r.State != protocol.SessionRunning {
			continue // interactions open only within a turn
		}
		// The store, not this node's memory, knows the interactions
		// another node's writer opened.
		open, err := m.st.OpenInteractions(c.ctx, r.ID)
		if err != nil {
			c.sendError(msg.MessageID, msg.SessionID, m.wireError(err, "list sessions"))
			return
		}
		out[i].Waiting = len(open)
	}
	c.send(msg.Reply(protocol.TypeSessions, &protocol.Sessions{Sessions: out}))
}

// visibleSessions lists the sessions f selects that c may see, most
// recently updated first, at most f.Limit: those of f.MachineID when it is
// not empty, else those of every machine c may see. A machine c may not
// see lists nothing, as one that does not exist.
func (m *Master) visibleSessions(c *conn, f store.SessionFilter) ([]store.Session, error) {
	machineID, limit := f.MachineID, f.Limit
	switch {
	case machineID != "" && !c.sees(machineID):
		return nil, nil
	case machineID != "" || c.scope == nil:
		return m.st.FindSessions(c.ctx, f)
	}
	// A scope names a few machines: the newest limit of each, merged, are
	// the newest limit of all of them, in the store's order.
	var all []store.Session
	for id := range c.scope {
		f.MachineID = id
		rows, err := m.st.FindSessions(c.ctx, f)
		if err != nil {
			return nil, err
		}
		all = append(all, rows...)
	}
	slices.SortFunc(all, func(a, b store.Session) int {
		return cmp.Or(b.UpdatedAt.Compare(a.UpdatedAt), cmp.Compare(b.ID, a.ID))
	})
	if limit > 0 && len(all) > limit {
		all = all[:limit]
	}
	return all, nil
}

// setFocus handles ui.focus: the session must be one the UI may see (a
// focus on any other is refused and leaves the last one in place).
func (m *Master) setFocus(c *conn, msg *protocol.Message) {
	f := *msg.Payload.(*protocol.UIFocus)
	if f.SessionID != "" {
		if _, e := m.uiSession(c, f.SessionID); e != nil {
			if e.Field == "session_id" {
				e.Field = "payload.session_id"
			}
			c.sendError(msg.MessageID, "", e)
			return
		}
	}
	m.notify.setFocus(c, f)
}

// uiSession returns the session id for a UI's message; a session on a
// machine the UI may not see is answered exactly as one that does not
// exist, so that its existence does not leak.
func (m *Master) uiSession(c *conn, id string) (*session, *protocol.Error) {
	s, err := m.session(c.ctx, id)
	if err != nil {
		return nil, sessionError(m.wireError(err, "session"))
	}
	if !c.sees(s.machineID) {
		return nil, sessionError(&protocol.Error{Code: protocol.CodeNotFound})
	}
	return s, nil
}

// awaitOnline waits (up to the offline grace) for the machine's client.
func (m *Master) awaitOnline(ctx context.Context, machineID string) (*protocol.Capabilities, bool) {
	type result struct {
		caps   *protocol.Capabilities
		online bool
	}
	ch := make(chan result, 1)
	m.whenOnline(machineID, func(caps *protocol.Capabilities, online bool) { ch <- result{caps, online} })
	select {
	case r := <-ch:
		return r.caps, r.online
	case <-ctx.Done():
		return nil, false
	}
}

var errClientOffline = &protocol.Error{Code: protocol.CodeClientOffline,
	Message: "the machine's client is not connected; nothing was delivered"}

// startSession handles ui.session.start: create the session, have the
// client open it, answer master.session once it did.
func (m *Master) startSession(c *conn, msg *protocol.Message) {
	p := msg.Payload.(*protocol.SessionStart)
	fail := func(e *protocol.Error) { c.sendError(msg.MessageID, "", e) }
	ms, err := m.st.Machines(c.ctx)
	if err != nil {
		fail(m.wireError(err, "list machines"))
		return
	}
	// A machine the UI may not see is one that does not exist.
	if !c.sees(p.MachineID) || !slices.ContainsFunc(ms, func(mc store.Machine) bool { return mc.ID == p.MachineID }) {
		fail(&protocol.Error{Code: protocol.CodeNotFound, Field: "payload.machine_id", Message: "no such machine"})
		return
	}
	caps, online := m.awaitOnline(c.ctx, p.MachineID)
	if !online {
		fail(errClientOffline)
		return
	}
	mode := cmp.Or(p.Mode, protocol.ModeDefault)
	ai := slices.IndexFunc(caps.Adapters, func(a protocol.AdapterCapability) bool { return a.ID == p.Adapter })
	if ai < 0 {
		fail(&protocol.Error{Code: protocol.CodeNotFound, Field: "payload.adapter", Message: "the machine has no such adapter"})
		return
	}
	wi := slices.IndexFunc(caps.Workspaces, func(w protocol.Workspace) bool { return w.ID == p.WorkspaceID })
	if wi < 0 {
		fail(&protocol.Error{Code: protocol.CodeNotFound, Field: "payload.workspace_id", Message: "the machine has no such workspace"})
		return
	}
	if p.Isolation != nil && !caps.Workspaces[wi].Git {
		// Refused before a session exists: nothing is left behind.
		fail(&protocol.Error{Code: protocol.CodeNotGitRepository, Field: "payload.isolation",
			Message: "the workspace " + caps.Workspaces[wi].Name + " is not in a git repository: an isolated session needs one (git init, then commit)"})
		return
	}
	if a := caps.Adapters[ai]; len(a.Modes) > 0 && !slices.Contains(a.Modes, mode) {
		fail(&protocol.Error{Code: protocol.CodeUnsupported, Field: "payload.mode", Message: "the adapter has no such mode"})
		return
	}
	if why := caps.Adapters[ai].Unavailable; why != "" {
		// The machine said it cannot start it, and what would: no
		// session is created only to fail.
		fail(&protocol.Error{Code: protocol.CodeUnsupported, Field: "payload.adapter", Message: caps.Adapters[ai].Name + " cannot start on this machine: " + why})
		return
	}
	title, _ := protocol.CleanTitle(p.Title) // checked at decoding; trimmed as a rename is
	now := time.Now().UTC()
	row := store.Session{
		ID: protocol.NewID(), MachineID: p.MachineID, WorkspaceID: p.WorkspaceID, Adapter: p.Adapter,
		Title: title, Mode: mode, State: protocol.SessionIdle, Epoch: newEpoch(), CreatedAt: now, UpdatedAt: now,
	}
	if title != "" {
		row.TitleSource = store.TitleUser
	}
	open := protocol.New(protocol.TypeSessionOpen, &protocol.SessionOpen{WorkspaceID: p.WorkspaceID, Adapter: p.Adapter, Mode: mode,
		Isolation: p.Isolation, Title: title})
	open.SessionID = row.ID
	if e := caps.Check(open, p.Adapter); e != nil {
		fail(e)
		return
	}
	first := newSession(m, row)
	first.isolation = p.Isolation // kept in the snapshot: every re-open asks for the worktree
	if row.Snapshot, err = json.Marshal(first.snapshotLocked()); err != nil {
		fail(m.wireError(err, "encode snapshot"))
		return
	}
	if err := m.st.CreateSession(c.ctx, row); err != nil {
		fail(m.wireError(err, "create session"))
		return
	}
	s, err := m.session(c.ctx, row.ID)
	if err != nil {
		fail(m.wireError(err, "load session"))
		return
	}
	replies, unsub, err := m.askClient(s, open)
	if err != nil {
		fail(m.wireError(err, "subscribe to reply"))
		return
	}
	defer unsub()
	timer := time.NewTimer(openTimeout)
	defer timer.Stop()
	select {
	case b := <-replies:
		r, err := protocol.Decode(b)
		if err != nil {
			fail(m.wireError(err, "decode the client's answer"))
			return
		}
		if e, ok := r.Payload.(*protocol.Error); ok {
			if p.Isolation != nil {
				// The client made no worktree (a coded refusal: not a
				// repository, a taken name, …): no session is left either.
				m.dropFailedSession(s)
			}
			fail(e) // the client's own coded error, about our open
			return
		}
		info := s.info()
		// The node holding the client stored session.opened: this node's
		// copy may not have seen it yet.
		info.LastSeq = max(info.LastSeq, r.Seq)
		ans := msg.Reply(protocol.TypeSessionAnswer, &protocol.SessionAnswer{Session: info})
		ans.SessionID = s.id
		c.send(ans)
	case <-timer.C:
		fail(&protocol.Error{Code: protocol.CodeClientOffline, Message: "the client did not open the session in time"})
	case <-c.ctx.Done():
	}
}

// subscribe handles ui.session.subscribe: see the package doc.
func (m *Master) subscribe(c *conn, msg *protocol.Message) {
	p := msg.Payload.(*protocol.SessionSubscribe)
	fail := func(e *protocol.Error) { c.sendError(msg.MessageID, msg.SessionID, e) }
	s, e := m.uiSession(c, msg.SessionID)
	if e != nil {
		fail(e)
		return
	}
	c.ui.unsubscribe(s.id) // a repeated subscribe starts over
	// Live first, held back, so that nothing stored after the reads below
	// can be missed.
	sub := &uiSub{c: c, s: s, replaying: true}
	unsub, err := m.br.Subscribe(sessionTopic(s.id), sub.deliver)
	if err != nil {
		fail(m.wireError(err, "subscribe to session"))
		return
	}
	sub.unsub = unsub
	c.ui.mu.Lock()
	c.ui.subs[s.id] = sub
	c.ui.mu.Unlock()

	row, err := m.st.Session(c.ctx, s.id)
	if err != nil {
		c.ui.unsubscribe(s.id)
		fail(m.wireError(err, "session"))
		return
	}
	last := row.LastSeq
	reason := ""
	var first []store.Event
	switch {
	case p.AfterSeq > 0 && p.Epoch != s.epoch:
		reason = "epoch"
	case p.AfterSeq > last:
		reason = "epoch" // the UI holds seqs this history never had
	case p.AfterSeq < last:
		first, err = m.st.Events(c.ctx, s.id, p.AfterSeq, replayPage)
		if err != nil {
			c.ui.unsubscribe(s.id)
			fail(m.wireError(err, "read events"))
			return
		}
		if len(first) == 0 || first[0].Seq != p.AfterSeq+1 {
			reason = "retention"
		}
	}
	if testHookSubscribe != nil {
		testHookSubscribe(s.id)
	}
	var skip uint64
	if reason == "" {
		if p.AfterSeq > 0 {
			m.met.UIResumed()
		}
		ans := msg.Reply(protocol.TypeSubscribed, &protocol.Subscribed{Recovered: true, Epoch: s.epoch, FromSeq: p.AfterSeq + 1, LastSeq: last})
		c.send(ans)
		if !m.replay(c, s, p.AfterSeq, last, first) {
			return
		}
		skip = last
	} else {
		s.catchUp(c.ctx, last)
		snap, at := s.snapshot()
		ans := msg.Reply(protocol.TypeSubscribed, &protocol.Subscribed{Recovered: false, Reason: reason, Epoch: s.epoch,
			FromSeq: at + 1, LastSeq: at, Snapshot: &snap})
		c.send(fitSnapshot(ans, &snap))
		skip = at
	}
	for _, r := range s.openRequests() {
		if c.enqueue(c.ctx, r) != nil {
			return
		}
	}
	sub.goLive(skip)
}

// replay sends the events (after, last] in order. Retained events are
// contiguous, so a hole means a Trim overtook the replay: the connection is
// closed rather than a partial replay sent, and the UI subscribes again.
func (m *Master) replay(c *conn, s *session, after, last uint64, page []store.Event) bool {
	next := after
	for next < last {
		if page == nil {
			var err error
			if page, err = m.st.Events(c.ctx, s.id, next, replayPage); err != nil {
				c.close(closeInternal, "internal error", m.wireError(err, "read events"), false)
				return false
			}
		}
		if len(page) == 0 {
			c.close(closeInternal, "replay overtaken by retention", &protocol.Error{Code: protocol.CodeInternal,
				Message: "the replay was overtaken by retention; subscribe again"}, false)
			return false
		}
		for _, ev := range page {
			if ev.Seq > last {
				return true
			}
			if ev.Seq != next+1 {
				c.close(closeInternal, "replay overtaken by retention", &protocol.Error{Code: protocol.CodeInternal,
					Message: "the replay was overtaken by retention; subscribe again"}, false)
				return false
			}
			if c.enqueue(c.ctx, appendWithSeq(make([]byte, 0, len(ev.Data)+64), ev.Data, ev.Seq, s.epochFld)) != nil {
				return false
			}
			next = ev.Seq
		}
		page = nil
	}
	return true
}

// fitSnapshot drops the oldest turns of a snapshot until the answer fits in
// one message.
func fitSnapshot(ans *protocol.Message, snap *protocol.SessionSnapshot) *protocol.Message {
	for len(snap.Turns) > 0 {
		b, err := json.Marshal(ans)
		if err == nil && len(b) <= protocol.MaxMessageBytes {
			break
		}
		snap.Turns = snap.Turns[(len(snap.Turns)+1)/2:]
	}
	return ans
}

// sessionError names the field of a session lookup's not_found.
func sessionError(e *protocol.Error) *protocol.Error {
	if e.Code == protocol.CodeNotFound {
		return &protocol.Error{Code: protocol.CodeNotFound, Field: "session_id", Message: "no such session"}
	}
	return e
}

// prompt handles ui.prompt: compose control.prompt.request, store and relay
// it as a session event, then send it to the client.
func (m *Master) prompt(c *conn, msg *protocol.Message) {
	s, e := m.uiSession(c, msg.SessionID)
	if e != nil {
		c.sendError(msg.MessageID, msg.SessionID, e)
		return
	}
	if e := m.promptArchived(c, s.id); e != nil {
		c.sendError(msg.MessageID, msg.SessionID, e)
		return
	}
	if e := s.worktreeGone(); e != nil {
		c.sendError(msg.MessageID, msg.SessionID, e)
		return
	}
	m.whenOnline(s.machineID, func(caps *protocol.Capabilities, online bool) {
		fail := func(e *protocol.Error) { c.sendError(msg.MessageID, s.id, e) }
		if !online {
			fail(errClientOffline)
			return
		}
		files, err := m.uploads.Grant(c.ctx, c.token, s.id, msg.MessageID, msg.Payload.(*protocol.UIPrompt).ContextFiles)
		if err != nil {
			fail(m.wireError(err, "upload"))
			return
		}
		// The session's log (which every UI of the session reads) keeps
		// the prompt without its grants; only the client gets them.
		out, data, e := composePrompt(msg, withoutGrants(files), caps)
		if e != nil {
			fail(e)
			return
		}
		out.SessionID = s.id
		if e := m.checkSession(c.ctx, s, caps, out); e != nil {
			fail(e)
			return
		}
		sent := *out
		granted := *out.Payload.(*protocol.PromptRequest)
		granted.ContextFiles = files
		sent.Payload = &granted
		err = s.submit(c.ctx, &pending{msg: out, data: data, deliver: caps.PromptsOnce, done: func(_ uint64, dup bool, err error) {
			switch {
			case err != nil:
				fail(m.wireError(err, "store prompt"))
			case !dup: // a retried ui.prompt (same message_id) is not sent twice
				m.toClient(s, &sent, connTopic(c.id))
				m.prompted(s, out.Payload.(*protocol.PromptRequest))
			}
		}})
		if err != nil {
			fail(m.wireError(err, "queue prompt"))
		}
	})
}

// withoutGrants is files with the grant of every ferry-upload URL left
// out (files itself unchanged).
func withoutGrants(files []protocol.ContextFile) []protocol.ContextFile {
	out := slices.Clone(files)
	for i, f := range out {
		if id, grant, ok := protocol.ParseUploadURL(f.FileURL); ok && grant != "" {
			out[i].FileURL = protocol.UploadURL(id, "")
		}
	}
	return out
}

// composePrompt builds the control.prompt.request for a ui.prompt (same
// message_id, so a retried ui.prompt is deduplicated like any event) with
// files as its context_files: the prompt's own, with every upload it names
// checked and granted to it (upload.Service.Grant). A client without the
// file-reference block gets each picked file as its display path in plain
// text and no file_references.
func composePrompt(msg *protocol.Message, files []protocol.ContextFile, caps *protocol.Capabilities) (*protocol.Message, []byte, *protocol.Error) {
	p := msg.Payload.(*protocol.UIPrompt)
	text, refs, err := fileref.Compose(p.Segments)
	if err != nil {
		var fe *fileref.FieldError
		if errors.As(err, &fe) {
			return nil, nil, &protocol.Error{Code: protocol.CodeInvalidValue, Field: "payload." + fe.Field, Message: fe.Err.Error()}
		}
		return nil, nil, &protocol.Error{Code: protocol.CodeInvalidValue, Field: "payload.segments", Message: "the segments cannot be composed"}
	}
	if refs != nil && caps.FileReferences == nil {
		text, refs = fileref.Escape(fileref.Parse(text, refs).Literal()), nil
	}
	if text == "" {
		return nil, nil, &protocol.Error{Code: protocol.CodeInvalidValue, Field: "payload.segments", Message: "the prompt is empty"}
	}
	out := &protocol.Message{Type: protocol.TypePromptRequest, MessageID: msg.MessageID, SessionID: msg.SessionID,
		Payload: &protocol.PromptRequest{PromptText: text, InputType: p.InputType, ContextFiles: files,
			FileReferences: refs, ConfigOverrides: p.ConfigOverrides}}
	data, err := protocol.Encode(out)
	if err != nil {
		var pe *protocol.Error
		if errors.As(err, &pe) {
			return nil, nil, pe
		}
		return nil, nil, &protocol.Error{Code: protocol.CodeInvalidValue, Field: "payload", Message: "the prompt cannot be encoded"}
	}
	// What the master composes must pass the client's strict decoder.
	if _, err := protocol.Decode(data); err != nil {
		var pe *protocol.Error
		if errors.As(err, &pe) {
			return nil, nil, &protocol.Error{Code: pe.Code, Field: "payload.segments", Message: "the composed prompt is invalid: " + pe.Message}
		}
	}
	return out, data, nil
}

// forward handles the control.* messages a UI may send: checked against
// the client's capabilities, then sent to it with the same message_id. The
// first answer to an interaction settles it; later ones are refused.
func (m *Master) forward(c *conn, msg *protocol.Message) {
	s, e := m.uiSession(c, msg.SessionID)
	if e == nil {
		e = s.worktreeGone()
	}
	if e != nil {
		c.sendError(msg.MessageID, msg.SessionID, e)
		return
	}
	m.forwardTo(c.ctx, s, msg, connTopic(c.id), func(e *protocol.Error) { c.sendError(msg.MessageID, s.id, e) }, nil)
}

// forwardTo sends a control message a user sent (from a UI, or a
// notification's action: POST /v1/push/answer) to the session's client,
// with the client's answer going to replyTo ("" for none). Exactly one of
// fail and sent (nil: nothing) runs: fail with the coded refusal, sent
// once the message went to the client.
func (m *Master) forwardTo(ctx context.Context, s *session, msg *protocol.Message, replyTo string, fail func(*protocol.Error), sent func()) {
	m.whenOnline(s.machineID, func(caps *protocol.Capabilities, online bool) {
		if !online {
			fail(errClientOffline)
			return
		}
		if e := m.checkSession(ctx, s, caps, msg); e != nil {
			fail(e)
			return
		}
		resp, _ := msg.Payload.(*protocol.InteractionResponse)
		if resp != nil {
			answer, err := json.Marshal(resp)
			if err != nil {
				fail(m.wireError(err, "encode answer"))
				return
			}
			won, err := m.st.SettleInteraction(ctx, s.id, resp.InteractionID, "answered", answer)
			switch {
			case errors.Is(err, store.ErrNotFound):
				fail(&protocol.Error{Code: protocol.CodeNotFound, Field: "payload.interaction_id", Message: "no such interaction"})
				return
			case err != nil:
				fail(m.wireError(err, "settle interaction"))
				return
			case !won:
				fail(&protocol.Error{Code: protocol.CodeInteractionSettled, Field: "payload.interaction_id",
					Message: "the interaction was already settled; the first answer won"})
				return
			}
		}
		m.toClient(s, msg, replyTo)
		if resp != nil {
			if err := s.submitResolved(resp.InteractionID, "answered", resp); err != nil {
				m.log.Error("queue resolved interaction", "session", s.id, "err", err)
			}
		}
		if sent != nil {
			sent()
		}
	})
}

// checkSession checks a control message for session s against its
// client's capabilities, with what the session's agent really offers
// (agent.capabilities) in place of its adapter's declaration. A refusal is
// checked once more after folding in the events other nodes stored: with
// several nodes, the one holding the client keeps the session's latest
// agent.capabilities, and this node may not have seen it yet.
func (m *Master) checkSession(ctx context.Context, s *session, caps *protocol.Capabilities, msg *protocol.Message) *protocol.Error {
	e := caps.ForSession(s.capabilities()).Check(msg, s.adapter())
	if e == nil {
		return nil
	}
	row, err := m.st.Session(ctx, s.id)
	if err != nil {
		return e
	}
	s.catchUp(ctx, row.LastSeq)
	return caps.ForSession(s.capabilities()).Check(msg, s.adapter())
}

func (s *session) adapter() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.row.Adapter
}

// toClient publishes a control message to the session's machine, with the
// topic its answer goes to ("" for none).
func (m *Master) toClient(s *session, msg *protocol.Message, replyTo string) {
	f, err := controlFrameOf(s, msg, replyTo)
	if err != nil {
		m.log.Error("encode control message", "type", msg.Type, "err", err)
		return
	}
	if err := m.br.Publish(m.ctx, machineTopic(s.machineID), f.encode()); err != nil {
		m.log.Error("publish control message", "type", msg.Type, "err", err)
	}
}

// controlFrameOf is the frame that carries msg to the session's client.
func controlFrameOf(s *session, msg *protocol.Message, replyTo string) (*controlFrame, error) {
	msg.Seq, msg.Epoch = 0, ""
	b, err := protocol.Encode(msg)
	if err != nil {
		return nil, err
	}
	ws, adapter, mode, permTimeout, model, effort := s.openFields()
	iso, title := s.reopenIsolation()
	return &controlFrame{ReplyTo: replyTo, SessionID: s.id, Type: msg.Type, MessageID: msg.MessageID,
		Workspace: ws, Adapter: adapter, Mode: mode, PermTimeout: permTimeout, Model: model, Effort: effort,
		Isolation: iso, Title: title, Msg: b}, nil
}
