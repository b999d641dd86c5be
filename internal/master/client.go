package master

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/broker"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// maxReplies bounds the answers a client connection routes back: entries
// of requests never answered are forgotten oldest first.
const maxReplies = 1024

// clientSide is the state of a client connection.
type clientSide struct {
	acks ackQueue
	// storeFailed is set once one of the connection's events could not be
	// stored: none of its later events are, so the re-sent ones keep order.
	storeFailed atomic.Bool

	mu        sync.Mutex
	machineID string
	caps      json.RawMessage // as announced, repeated on the presence topic
	// promptsOnce: the client declared that it answers each prompt once
	// (protocol.Capabilities.PromptsOnce), so unanswered prompts may be
	// sent to it again (deliveries.go).
	promptsOnce bool
	since       int64 // when the machine was announced (Unix ns)
	unsub       func()
	opened      map[string]bool // sessions opened on this connection
	replies     recent          // request message_id → topic of its asker
	// prompts are the prompts sent on this connection and not answered
	// yet: prompt message_id → session_id (deliveries.go).
	prompts recent
	// reads are the downloads this connection was asked to stream and has
	// not ended: only their frames are relayed, and if the connection
	// goes, each of them is ended with client_offline.
	reads map[string]string // request_id → session_id
}

// recent maps ids to strings, keeping the newest maxReplies: entries
// never taken are forgotten oldest first.
type recent struct {
	m     map[string]string
	order []string
}

func (r *recent) put(id, v string) {
	if r.m == nil {
		r.m = map[string]string{}
	}
	if _, ok := r.m[id]; !ok {
		r.order = append(r.order, id)
	}
	r.m[id] = v
	for len(r.order) > maxReplies {
		delete(r.m, r.order[0])
		r.order = r.order[1:]
	}
}

// take returns (and forgets) id's value; "" when there is none.
func (r *recent) take(id string) string {
	v, ok := r.m[id]
	if ok {
		delete(r.m, id)
	}
	return v
}

// takeReply returns (and forgets) where the answer to request id goes.
func (cl *clientSide) takeReply(id string) string {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.replies.take(id)
}

// takePrompt returns (and forgets) the session of prompt id sent on this
// connection; "" when it was not.
func (cl *clientSide) takePrompt(id string) string {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.prompts.take(id)
}

func (m *Master) runClient(c *conn) {
	c.start()
	c.readLoop(func(data []byte) { m.handleClient(c, data, time.Now()) }, func(data []byte) { m.handleClientChunk(c, data) })
	m.clientGone(c)
	c.finish()
}

// handleClient handles one text frame read at read.
func (m *Master) handleClient(c *conn, data []byte, read time.Time) {
	msg, err := protocol.DecodeFrom(protocol.RoleClient, data)
	if err != nil {
		parent, sid := protocol.ParentOf(data)
		c.sendError(parent, sid, m.wireError(err, "decode"))
		return
	}
	if msg.Type == protocol.TypeCapabilities {
		m.announce(c, msg)
		return
	}
	c.cl.mu.Lock()
	machine := c.cl.machineID
	c.cl.mu.Unlock()
	if machine == "" {
		c.sendError(msg.MessageID, msg.SessionID, &protocol.Error{Code: protocol.CodeInvalidValue, Field: "type",
			Message: "send session.capabilities first"})
		return
	}
	switch msg.Type {
	case protocol.TypeFileCandidates, protocol.TypeError, protocol.TypeHistoryChanges, protocol.TypeModels,
		protocol.TypeWorktreeDiffAnswer, protocol.TypeWorktreeProposal, protocol.TypeWorktreeConflict, protocol.TypeWorktreeRemoved:
		m.routeReply(c, msg, data)
	case protocol.TypeArtifactMeta, protocol.TypeArtifactEnd:
		m.routeArtifact(c, machine, msg, data)
	case protocol.TypeInteractionsWaiting:
		m.resendSettled(c, machine, msg)
	default: // session.opened and agent.*: the registry allows nothing else
		m.storeFromClient(c, machine, msg, read)
	}
}

// announce handles session.capabilities: the machine is recorded, its
// connection subscribes to the machine's topic, and every node learns that
// it is online.
func (m *Master) announce(c *conn, msg *protocol.Message) {
	caps := msg.Payload.(*protocol.Capabilities)
	if caps.Machine == nil {
		c.sendError(msg.MessageID, "", &protocol.Error{Code: protocol.CodeMissingField, Field: "payload.machine",
			Message: "a client of the master must name its machine"})
		return
	}
	id := caps.Machine.ID
	c.cl.mu.Lock()
	cur := c.cl.machineID
	c.cl.mu.Unlock()
	if cur != "" && cur != id {
		c.sendError(msg.MessageID, "", &protocol.Error{Code: protocol.CodeInvalidValue, Field: "payload.machine.id",
			Message: "a connection serves one machine"})
		return
	}
	ok, err := m.mayServe(c.ctx, id, c.token)
	if err != nil {
		c.close(closeInternal, "internal error", m.wireError(err, "check machine owner"), false)
		return
	}
	if !ok {
		c.log.Warn("refused a machine that belongs to another client token", "machine", id)
		c.close(websocket.StatusPolicyViolation, "unauthorized", &protocol.Error{Code: protocol.CodeUnauthorized,
			Message: "this machine is registered with another client token"}, false)
		return
	}
	raw, err := json.Marshal(caps)
	if err != nil {
		c.close(closeInternal, "internal error", m.wireError(err, "encode capabilities"), false)
		return
	}
	if err := m.st.PutMachine(c.ctx, store.Machine{ID: id, Name: caps.Machine.Name, TokenID: c.token,
		Capabilities: raw, LastSeen: time.Now().UTC()}); err != nil {
		c.close(closeInternal, "internal error", m.wireError(err, "store machine"), false)
		return
	}
	if cur == "" {
		unsub, err := m.br.Subscribe(machineTopic(id), func(data []byte) { m.deliverControl(c, data) })
		if err != nil {
			c.close(closeInternal, "internal error", m.wireError(err, "subscribe to machine"), false)
			return
		}
		c.cl.mu.Lock()
		c.cl.machineID, c.cl.unsub, c.cl.since = id, unsub, time.Now().UnixNano()
		c.cl.mu.Unlock()
		c.log = c.log.With("machine", id)
		m.mu.Lock()
		old := m.clients[id]
		m.clients[id] = c
		m.met.MachinesOnline(len(m.clients))
		m.mu.Unlock()
		if old != nil && old != c {
			old.close(websocket.StatusPolicyViolation, "replaced by a newer connection", nil, false)
		}
	}
	c.cl.mu.Lock()
	c.cl.caps, c.cl.promptsOnce = raw, caps.PromptsOnce
	since := c.cl.since
	c.cl.mu.Unlock()
	m.publishPresence(presenceFrame{MachineID: id, ConnID: c.id, Online: true, Caps: raw, Since: since})
}

// mayServe reports whether a client holding token tokenID may act as the
// machine: a machine stays bound to the token it first registered with
// until that token is revoked, so one leaked client token cannot take over
// another machine's sessions.
func (m *Master) mayServe(ctx context.Context, machineID, tokenID string) (bool, error) {
	ms, err := m.st.Machines(ctx)
	if err != nil {
		return false, err
	}
	var owner string
	for _, mc := range ms {
		if mc.ID == machineID {
			owner = mc.TokenID
		}
	}
	if owner == "" || owner == tokenID {
		return true, nil
	}
	toks, err := m.st.ListTokens(ctx)
	if err != nil {
		return false, err
	}
	for _, t := range toks {
		if t.ID == owner {
			return false, nil
		}
	}
	return true, nil
}

// publishPresence publishes f as this node's.
func (m *Master) publishPresence(f presenceFrame) {
	f.Node = m.node
	if f.Online {
		f.RefreshMS = m.cfg.PresenceRefresh.Milliseconds()
	}
	b, err := json.Marshal(f)
	if err != nil {
		m.log.Error("encode presence", "err", err)
		return
	}
	// Canceled or closed: the master is stopping, and its repeats with it.
	if err := m.br.Publish(m.ctx, presenceTopic, b); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, broker.ErrClosed) {
		m.log.Error("publish presence", "err", err)
	}
}

// drainClient ends a client connection's intake for a drain: events it
// sends from now on are neither stored nor acknowledged (the client
// re-sends them, in order, to the node it reconnects to), and it returns
// once every event accepted before is stored and its acknowledgement
// queued, so that the connection's close flushes it.
func (c *conn) drainClient(ctx context.Context) {
	c.cl.acks.drain(ctx, c.stop)
}

// clientGone runs when a client connection ends.
func (m *Master) clientGone(c *conn) {
	c.cl.mu.Lock()
	id, unsub := c.cl.machineID, c.cl.unsub
	reads := c.cl.reads
	c.cl.reads = map[string]string{}
	c.cl.mu.Unlock()
	if id == "" {
		return
	}
	unsub()
	m.endReads(id, reads)
	m.mu.Lock()
	if m.clients[id] == c {
		delete(m.clients, id)
		m.met.MachinesOnline(len(m.clients))
	}
	m.mu.Unlock()
	m.publishPresence(presenceFrame{MachineID: id, ConnID: c.id})
}

// deliverControl is the machine topic's subscriber on the client's
// connection: it opens the session on this connection first when needed,
// remembers where the answer goes, and queues the message. It never blocks.
func (m *Master) deliverControl(c *conn, data []byte) {
	f, err := decodeControlFrame(data)
	if err != nil {
		m.log.Error("bad control frame", "err", err)
		return
	}
	m.deliverFrame(c, f)
}

// deliverFrame queues f on the client's connection c (deliverControl).
func (m *Master) deliverFrame(c *conn, f *controlFrame) {
	cl := c.cl
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if !m.presence.isCurrent(cl.machineID, c.id) {
		return // replaced: the newer connection delivers it
	}
	if f.ReplyTo != "" {
		cl.replies.put(f.MessageID, f.ReplyTo)
	}
	if f.Type == protocol.TypePromptRequest {
		cl.prompts.put(f.MessageID, f.SessionID)
	}
	if f.Stream != "" {
		// A download reads what the client recorded; it needs no open
		// session (opening one could start an agent).
		if m.trackRead(c, f) && !c.tryEnqueue(f.Msg) && f.Type == protocol.TypeArtifactRead {
			delete(cl.reads, f.Stream)
			m.endRead(cl.machineID, f.Stream, f.SessionID, &protocol.Error{Code: protocol.CodeClientOffline, Message: "the client connection is closing"})
		}
		return
	}
	if f.Type == protocol.TypeSessionOpen {
		cl.opened[f.SessionID] = true
	} else if !cl.opened[f.SessionID] {
		open := protocol.New(protocol.TypeSessionOpen, &protocol.SessionOpen{WorkspaceID: f.Workspace, Adapter: f.Adapter, Mode: f.Mode,
			PermissionTimeoutMS: f.permTimeout(), Model: f.Model, Effort: f.Effort, Isolation: f.isolation(), Title: f.Title})
		open.SessionID = f.SessionID
		b, err := protocol.Encode(open)
		if err != nil || !c.tryEnqueue(b) {
			return
		}
		cl.opened[f.SessionID] = true
	}
	c.tryEnqueue(f.Msg)
	if f.Type == protocol.TypeWorktreeRemove {
		// The client closes the session with its worktree: the next
		// message opens it again (a harmless repeat if it did not).
		delete(cl.opened, f.SessionID)
	}
}

// routeReply sends a client's direct answer (search candidates, or an
// error about a control message) to whoever asked, and nowhere else; a
// refusal of a prompt is also stored for every UI (promptRefused).
func (m *Master) routeReply(c *conn, msg *protocol.Message, data []byte) {
	if msg.ParentID == "" {
		c.log.Info("client reported an error", "payload", msg.Payload)
		return
	}
	if e, ok := msg.Payload.(*protocol.Error); ok {
		if sid := c.cl.takePrompt(msg.ParentID); sid != "" {
			// The client refused a prompt: its sender may be gone, so
			// every UI of the session is told, and that answers it.
			m.goBG(func() { m.promptRefused(sid, msg.ParentID, e) })
		}
	}
	to := c.cl.takeReply(msg.ParentID)
	if to == "" {
		c.log.Debug("answer to an unknown or forgotten request", "type", msg.Type, "parent", msg.ParentID)
		return
	}
	if err := m.br.Publish(c.ctx, to, data); err != nil {
		c.log.Error("route answer", "err", err)
	}
}

// storeFromClient queues a client's session.opened or agent.* event for its
// session's writer; the ack follows once it is stored.
func (m *Master) storeFromClient(c *conn, machine string, msg *protocol.Message, read time.Time) {
	s, err := m.session(c.ctx, msg.SessionID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		// Not acknowledged: closing makes the client re-send it later.
		c.close(closeInternal, "internal error", m.wireError(err, "load session"), false)
		return
	}
	if err != nil || s.machineID != machine {
		// It can never be stored; acknowledge it so that the client's
		// outbox does not re-send it forever, and say why.
		c.cl.acks.add(msg.MessageID).stored()
		c.sendError(msg.MessageID, msg.SessionID, &protocol.Error{Code: protocol.CodeNotFound, Field: "session_id",
			Message: "no such session on this machine"})
		return
	}
	msg.Seq, msg.Epoch = 0, ""
	data, err := protocol.Encode(msg)
	if err != nil {
		c.cl.acks.add(msg.MessageID).stored()
		c.sendError(msg.MessageID, msg.SessionID, m.wireError(err, "encode event"))
		return
	}
	entry, ok := c.cl.acks.accept(msg.MessageID)
	if !ok {
		return // the node drains: the client re-sends it to the next node
	}
	if err := s.submit(c.ctx, &pending{msg: msg, data: data, ack: entry, from: c, read: read}); err != nil {
		c.close(websocket.StatusGoingAway, "master shutting down", nil, false)
	}
}
