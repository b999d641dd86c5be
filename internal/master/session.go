package master

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ferry-dev/ferry/internal/runecut"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// Bounds of the per-session state.
const (
	// maxBatch is the most events one AppendEvents stores: under load a
	// session's writer batches what queued while the last batch was stored.
	// A batch is relayed in one burst, so it is also kept to a quarter of a
	// connection's queue (see batchSize).
	maxBatch = 256
	// While events stream in faster than groupGap apart (on average), the
	// writer holds a batch of fewer than groupTarget events until its
	// first event has waited groupLinger, so that one commit stores
	// several: a commit writes the same few pages (the table's last leaf,
	// the indexes' edges, the session's row) to the WAL whether it stores
	// one event or ten, and at 5,000 events/s commits of one or two events
	// took most of the master's CPU. A slower stream (an agent's text, or
	// 1,000 events/s) and a lone event (a prompt, an answer) are stored at
	// once: they would only wait.
	groupTarget = 16
	groupLinger = time.Millisecond
	groupGap    = groupLinger / 4
	// maxQueued is how many events may wait for a session's writer before
	// the senders wait (the client's reader, so TCP pushes back on it).
	maxQueued = 4096
	// snapshotEvery stores the snapshot after this many events even when no
	// turn ended, so a restart has few events to apply. A snapshot holds up
	// to maxSnapshotTurnText of a running turn's text, so storing it costs
	// as much as hundreds of events: not too often.
	snapshotEvery = 1024
	// maxTrimEvery bounds how many events pass between two Trims (and so
	// how many one Trim deletes): a Trim holds up the session's next batch.
	// Each deleted event is a page of the message_id index (random UUIDs),
	// so a Trim of 128 held the writer 2 ms; of 32, a quarter of that, for
	// no more work in all (the p99 at 5,000 events/s fell from 12 to 10 ms,
	// BenchmarkRelayLatency5000).
	maxTrimEvery = 32
	// Snapshot limits, so a snapshot always fits in one message.
	maxSnapshotTurns     = 100
	maxSnapshotTurnText  = 256 << 10
	maxSnapshotArtifacts = 1000
	maxPendingPrompts    = 64
)

var (
	errClosing       = errors.New("master is shutting down")
	errEarlierFailed = errors.New("an earlier event of this connection could not be stored")
)

type sessionEntry struct {
	ready chan struct{}
	s     *session
	err   error
}

// session is the master's live state of one session: its row, the snapshot
// it maintains, its open interactions, and the queue of events its writer
// stores and relays. At most one writer goroutine runs per session, started
// on demand, so events are numbered and relayed in the order they queued.
type session struct {
	m         *Master
	id        string
	machineID string
	epoch     string
	epochFld  []byte

	// foldMu orders the folding of stored events into the state: the
	// writer's own events and, before them or before a snapshot is served,
	// those other nodes stored (catchUp), each once and in seq order.
	foldMu sync.Mutex

	mu sync.Mutex // guards everything below
	// applied is the last seq folded into the state; row.LastSeq may be
	// ahead of it when other nodes stored events since.
	applied   uint64
	row       store.Session
	turns     []protocol.TurnSnapshot
	artifacts []protocol.Artifact
	prompts   map[string]string // prompt request id → prompt_text, until its turn starts
	// text holds the streamed text of turns not yet done: appending to a
	// []byte keeps a long turn linear (string += would copy it each time).
	text      map[string][]byte
	open      []*openInteraction
	unsaved   int  // events applied since the last snapshot was taken
	untrimmed int  // events stored since the last Trim
	changed   bool // state or mode changed: store the row soon
	queue     []*pending
	running   bool
	roomCh    chan struct{}
	// grown wakes a lingering writer once groupTarget events queued.
	lingering bool
	grown     chan struct{}
	// lastQueued and gap (a moving average of the time between two
	// events) say how fast events arrive.
	lastQueued time.Time
	gap        time.Duration
	// The saver stores snapshots and trims beside the writer (checkpoint).
	saving    int             // events the taken but not yet stored snapshots cover
	ckNext    *checkpointWork // the saver's next work, merged while it is busy
	ckRunning bool

	// settings are in force, as the client last said (nil: not yet).
	settings *protocol.Settings
	// commands are the agent's own slash commands (agent.commands).
	commands []protocol.AgentCommand
	// instructions are the agent's instruction files (agent.instructions).
	instructions []protocol.InstructionFile
	// caps is what the session's agent really offers, as its last
	// agent.capabilities said (nil: its adapter's declaration holds).
	caps *protocol.AdapterCapability
	// isolation is what an isolated session was started with; worktree
	// its worktree as the client last reported it (worktree.go).
	isolation *protocol.Isolation
	worktree  *protocol.Worktree
	// usage sums the ended turns' last agent.usage; turnUsage holds the
	// running turns' (usage.go).
	usage     protocol.UsageTotals
	turnUsage map[string]protocol.Usage
}

type openInteraction struct {
	id      string
	request []byte // the agent.interaction.request as stored (no seq)
	timer   *time.Timer
	due     bool // timed out while the client was offline (timeout.go)
}

// pending is one event waiting for the session's writer.
type pending struct {
	msg  *protocol.Message
	data []byte // wire form without seq and epoch
	// ack and from are set for a client's event: ack is its place in the
	// connection's cumulative acknowledgement.
	ack  *ackEntry
	from *conn
	// deliver is set for a prompt its client must answer (deliveries.go).
	deliver bool
	read    time.Time // when a client's event was read off its socket (Metrics)
	queued  time.Time // when it joined the writer's queue
	// done, if set, runs after the event is stored and relayed (or failed).
	done func(seq uint64, dup bool, err error)
}

// newEpoch names a new history.
func newEpoch() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// session returns the loaded state of session id, loading it once.
func (m *Master) session(ctx context.Context, id string) (*session, error) {
	m.mu.Lock()
	e := m.sessions[id]
	if e == nil {
		e = &sessionEntry{ready: make(chan struct{})}
		m.sessions[id] = e
		m.mu.Unlock()
		e.s, e.err = m.loadSession(ctx, id)
		m.mu.Lock()
		if e.err != nil {
			delete(m.sessions, id)
		}
		m.met.SessionsLoaded(len(m.sessions))
		m.mu.Unlock()
		close(e.ready)
		return e.s, e.err
	}
	m.mu.Unlock()
	select {
	case <-e.ready:
		return e.s, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// loadSession builds the state from the store: the stored snapshot, brought
// up to date with the retained events after it, and the open interactions.
func (m *Master) loadSession(ctx context.Context, id string) (*session, error) {
	row, err := m.st.Session(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("load session: %w", err)
	}
	s := newSession(m, row)
	var from uint64
	if len(row.Snapshot) > 0 {
		var snap protocol.SessionSnapshot
		if err := json.Unmarshal(row.Snapshot, &snap); err != nil {
			m.log.Error("unreadable session snapshot; rebuilding from events", "session", id, "err", err)
		} else {
			s.turns, s.artifacts, from = snap.Turns, snap.Artifacts, snap.Session.LastSeq
			s.settings = snap.Session.Settings
			s.commands = snap.Commands
			s.instructions = snap.Instructions
			s.caps = snap.Capabilities
			s.isolation, s.worktree = snap.Isolation, snap.Session.Worktree
			if u := snap.Session.Usage; u != nil {
				s.usage = *u
			}
			for _, t := range s.turns {
				if !t.Done {
					s.text[t.TurnID] = []byte(t.Text)
				}
			}
		}
	}
	for {
		evs, err := m.st.Events(ctx, id, from, 1000)
		if err != nil {
			return nil, fmt.Errorf("load session events: %w", err)
		}
		for _, ev := range evs {
			if msg, err := protocol.Decode(ev.Data); err == nil {
				s.apply(msg, ev.Seq, ev.CreatedAt)
			}
			from = ev.Seq
		}
		if len(evs) < 1000 {
			break
		}
	}
	s.row.LastSeq = max(s.row.LastSeq, from)
	s.applied = from
	// unsaved keeps counting the events applied after the stored snapshot:
	// a Trim must not pass it (checkpoint).
	s.changed = false
	ins, err := m.st.OpenInteractions(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("load open interactions: %w", err)
	}
	for _, in := range ins {
		msg, err := protocol.Decode(in.Request)
		if err != nil {
			continue
		}
		if req, ok := msg.Payload.(*protocol.InteractionRequest); ok {
			s.addOpen(in.ID, in.Request, req.TimeoutMS, in.CreatedAt)
		}
	}
	return s, nil
}

func newSession(m *Master, row store.Session) *session {
	if row.Mode == "" {
		row.Mode = protocol.ModeDefault
	}
	if row.State == "" {
		row.State = protocol.SessionIdle
	}
	row.Snapshot = nil
	return &session{
		m: m, id: row.ID, machineID: row.MachineID, epoch: row.Epoch, epochFld: epochField(row.Epoch),
		row: row, prompts: map[string]string{}, text: map[string][]byte{},
	}
}

// info describes the session as a UI sees it.
func (s *session) info() protocol.SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.infoLocked()
}

func (s *session) infoLocked() protocol.SessionInfo {
	info := sessionInfo(s.row)
	info.Preview = preview(s.turns)
	info.Waiting = len(s.open)
	if s.settings != nil {
		st := *s.settings
		info.Settings = &st
	}
	info.Worktree = cloneWorktree(s.worktree)
	if s.usage.Turns > 0 {
		u := s.usage
		info.Usage = &u
	}
	return info
}

func sessionInfo(r store.Session) protocol.SessionInfo {
	mode, state := r.Mode, r.State
	if mode == "" {
		mode = protocol.ModeDefault
	}
	if state == "" {
		state = protocol.SessionIdle
	}
	updated := r.UpdatedAt
	if updated.IsZero() {
		updated = r.CreatedAt
	}
	return protocol.SessionInfo{
		ID: r.ID, MachineID: r.MachineID, WorkspaceID: r.WorkspaceID, Adapter: r.Adapter,
		Title: r.Title, TitleSource: r.TitleSource, Mode: mode, State: state, Epoch: r.Epoch, LastSeq: r.LastSeq,
		CreatedAt: r.CreatedAt.UTC().Format(time.RFC3339Nano),
		UpdatedAt: updated.UTC().Format(time.RFC3339Nano),
		Archived:  r.Archived,
	}
}

// capabilities is what the session's agent really offers, as its last
// agent.capabilities said, or nil (its adapter's declaration holds).
func (s *session) capabilities() *protocol.AdapterCapability {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps
}

// openFields is what a control.session.open for this session carries:
// permTimeout is the session's own permission timeout in ms ("" for the
// client's default), model and effort its own model and thinking effort
// ("" for the adapter's defaults).
func (s *session) openFields() (workspace, adapter, mode, permTimeout, model, effort string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.settings; st != nil {
		if st.PermissionTimeoutSet {
			permTimeout = strconv.Itoa(st.PermissionTimeoutMS)
		}
		model, effort = st.Model, st.Effort
	}
	return s.row.WorkspaceID, s.row.Adapter, s.row.Mode, permTimeout, model, effort
}

// reopenIsolation is the isolation a control.session.open of the session
// carries: the worktree the client made (its name, so that it is found
// again), else what the session was started with; "" when it is not
// isolated. title is the session's title (for a first open's name).
func (s *session) reopenIsolation() (isolation, title string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	iso := s.isolation
	if w := s.worktree; w != nil {
		iso = &protocol.Isolation{Name: w.Name, Base: w.Base, Group: w.Group}
	}
	if iso == nil {
		return "", ""
	}
	b, err := json.Marshal(iso)
	if err != nil {
		return "", ""
	}
	return string(b), s.row.Title
}

// snapshot returns the session's state and the seq it reflects.
func (s *session) snapshot() (protocol.SessionSnapshot, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshotLocked(), s.row.LastSeq
}

func (s *session) snapshotLocked() protocol.SessionSnapshot {
	snap, text := s.captureLocked()
	fillText(&snap, text)
	return snap
}

// captureLocked returns the snapshot without the running turns' text, and
// that text by turn index as it stands. A turn's text is only ever appended
// to (apply), so the slices stay as they are after s.mu is released: the
// caller copies up to 256 KB outside the lock (fillText).
func (s *session) captureLocked() (protocol.SessionSnapshot, map[int][]byte) {
	snap := protocol.SessionSnapshot{
		Session:   s.infoLocked(),
		Turns:     slices.Clone(s.turns),
		Artifacts: slices.Clone(s.artifacts),
		Commands:  slices.Clone(s.commands),

		Instructions: slices.Clone(s.instructions),
	}
	if s.caps != nil {
		c := *s.caps
		snap.Capabilities = &c
	}
	if s.isolation != nil {
		iso := *s.isolation
		snap.Isolation = &iso
	}
	if snap.Turns == nil {
		snap.Turns = []protocol.TurnSnapshot{}
	}
	var text map[int][]byte
	for i := range snap.Turns {
		if b, ok := s.text[snap.Turns[i].TurnID]; ok && !snap.Turns[i].Done {
			if text == nil {
				text = make(map[int][]byte)
			}
			text[i] = b[:len(b):len(b)]
		}
	}
	for _, o := range s.open {
		if msg, err := protocol.Decode(o.request); err == nil {
			if req, ok := msg.Payload.(*protocol.InteractionRequest); ok {
				snap.OpenInteractions = append(snap.OpenInteractions, *req)
			}
		}
	}
	return snap, text
}

// fillText puts the running turns' text captureLocked returned into snap.
func fillText(snap *protocol.SessionSnapshot, text map[int][]byte) {
	for i, b := range text {
		snap.Turns[i].Text = string(b)
	}
}

// openRequests returns the stored agent.interaction.request of every open
// interaction, oldest first.
func (s *session) openRequests() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]byte, len(s.open))
	for i, o := range s.open {
		out[i] = o.request
	}
	return out
}

// addOpen records an open interaction and arms its timeout.
func (s *session) addOpen(id string, request []byte, timeoutMS int, created time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.ContainsFunc(s.open, func(o *openInteraction) bool { return o.id == id }) {
		return
	}
	o := &openInteraction{id: id, request: request}
	if timeoutMS > 0 {
		wait := time.Until(created.Add(time.Duration(timeoutMS) * time.Millisecond))
		o.timer = time.AfterFunc(max(wait, 0), func() {
			s.m.goBG(func() { s.expire(id) })
		})
	}
	s.open = append(s.open, o)
}

func (s *session) removeOpenLocked(id string) {
	s.open = slices.DeleteFunc(s.open, func(o *openInteraction) bool {
		if o.id == id && o.timer != nil {
			o.timer.Stop()
		}
		return o.id == id
	})
}

func (s *session) openIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, len(s.open))
	for i, o := range s.open {
		ids[i] = o.id
	}
	return ids
}

func (s *session) stopTimers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.open {
		if o.timer != nil {
			o.timer.Stop()
		}
	}
}

// submitResolved queues the master's agent.interaction.resolved.
func (s *session) submitResolved(id, outcome string, resp *protocol.InteractionResponse) error {
	r := &protocol.InteractionResolved{InteractionID: id, Outcome: outcome}
	if resp != nil {
		sv := resp.SelectedValue
		r.SelectedValue, r.TextInput, r.Note = &sv, resp.TextInput, resp.Note
	}
	msg := protocol.New(protocol.TypeInteractionResolved, r)
	msg.SessionID = s.id
	return s.submitMaster(s.m.ctx, msg, nil)
}

// submitMaster queues one of the master's own events.
func (s *session) submitMaster(ctx context.Context, msg *protocol.Message, done func(seq uint64, dup bool, err error)) error {
	data, err := protocol.Encode(msg)
	if err != nil {
		return err
	}
	return s.submit(ctx, &pending{msg: msg, data: data, done: done})
}

// submit queues p for the session's writer, starting it if needed. It
// waits while maxQueued events are already waiting.
func (s *session) submit(ctx context.Context, p *pending) error {
	for {
		s.mu.Lock()
		if len(s.queue) < maxQueued {
			p.queued = time.Now()
			s.gap += (min(p.queued.Sub(s.lastQueued), time.Second) - s.gap) / 8
			s.lastQueued = p.queued
			s.queue = append(s.queue, p)
			s.m.met.WriterQueued(1)
			if s.lingering && len(s.queue) >= groupTarget {
				s.lingering = false
				select {
				case s.grown <- struct{}{}:
				default:
				}
			}
			start := !s.running
			s.running = true
			s.mu.Unlock()
			if start && !s.m.goWriter(s.run) {
				s.mu.Lock()
				s.running = false
				s.mu.Unlock()
				return errClosing
			}
			return nil
		}
		if s.roomCh == nil {
			s.roomCh = make(chan struct{})
		}
		room := s.roomCh
		s.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// batchSize is the most events stored and relayed at once: a burst must
// fit in a UI's queue with room to spare, or a UI that reads as fast as it
// can would be dropped as slow.
func (m *Master) batchSize() int {
	return max(1, min(maxBatch, m.cfg.QueueSize/4))
}

// run is the session's writer: it stores what queued, in batches, then
// relays it, until the queue is empty.
func (s *session) run() {
	var linger *time.Timer
	defer func() {
		if linger != nil {
			linger.Stop()
		}
	}()
	lingered := false
	for {
		s.mu.Lock()
		n := min(len(s.queue), s.m.batchSize())
		if n == 0 {
			s.running = false
			s.queue = nil
			s.mu.Unlock()
			return
		}
		if wait := s.lingerFor(n); wait > 0 && !lingered {
			s.lingering = true
			if s.grown == nil {
				s.grown = make(chan struct{}, 1)
			}
			grown := s.grown
			s.mu.Unlock()
			if linger == nil {
				linger = time.NewTimer(wait)
			} else {
				linger.Reset(wait)
			}
			select {
			case <-linger.C:
			case <-grown:
				linger.Stop()
			}
			s.mu.Lock()
			s.lingering = false
			s.mu.Unlock()
			lingered = true
			continue
		}
		lingered = false
		batch := slices.Clone(s.queue[:n])
		k := copy(s.queue, s.queue[n:])
		clear(s.queue[k:])
		s.queue = s.queue[:k]
		s.m.met.WriterQueued(-n)
		if s.roomCh != nil {
			close(s.roomCh)
			s.roomCh = nil
		}
		s.mu.Unlock()
		s.persist(batch)
	}
}

// lingerFor is how long the writer holds a batch of n queued events for
// more (see groupLinger): zero for a full batch, or unless events arrive
// less than groupGap apart. s.mu is held.
func (s *session) lingerFor(n int) time.Duration {
	if n >= groupTarget || s.gap > groupGap || s.lastQueued.IsZero() {
		return 0
	}
	return groupLinger - time.Since(s.queue[0].queued)
}

// persist stores a batch, then relays each new event in seq order. An event
// that was stored before (same message_id) is acknowledged but not relayed.
func (s *session) persist(batch []*pending) {
	ctx := s.m.ctx
	now := time.Now().UTC()
	// After a store failure, the rest of that client connection's events are
	// not stored either: it re-sends them all, in order, after reconnecting.
	batch = slices.DeleteFunc(batch, func(p *pending) bool {
		if p.from != nil && p.from.cl.storeFailed.Load() {
			p.failed(errEarlierFailed)
			return true
		}
		return false
	})
	if len(batch) == 0 {
		return
	}
	batch, err := s.registerArtifacts(ctx, batch, now)
	if err != nil {
		s.m.log.Error("register artifacts", "session", s.id, "err", err)
		for _, p := range batch {
			p.failed(err)
		}
		return
	}
	if len(batch) == 0 {
		return
	}
	evs := make([]store.Event, len(batch))
	for i, p := range batch {
		stampDeadline(p, now)
		evs[i] = store.Event{MessageID: p.msg.MessageID, Type: p.msg.Type, Data: p.data, CreatedAt: now,
			Deliver: p.deliver, Answers: answered(p.msg), Quiet: quiet(p.msg.Type)}
	}
	res, err := s.m.st.AppendEvents(ctx, s.id, evs)
	if err == nil && len(res) != len(batch) {
		err = fmt.Errorf("store returned %d events for %d", len(res), len(batch))
	}
	if err != nil {
		s.m.log.Error("store events", "session", s.id, "err", err)
		for _, p := range batch {
			p.failed(err)
		}
		return
	}
	s.m.met.Stored(len(evs))
	turnEnded, status := false, false
	var titles []string // agent.title events stored
	s.foldMu.Lock()
	for _, r := range res {
		if !r.Duplicate {
			// Another node stored events between this node's: fold them
			// first, so the state (and the snapshot stored) misses none.
			s.catchUpLocked(ctx, r.Seq-1)
			break
		}
	}
	// The batch's new events go out as one broker message (or a few, see
	// maxFrameBytes) once all are applied: one publish per batch, not per
	// event, is most of what a burst costs the relay.
	fb := frameBuilder{epochFld: s.epochFld}
	for i, r := range res {
		if !r.Duplicate {
			fb.reserve(len(batch[i].data))
		}
	}
	wires := make([][]byte, len(res))
	for i, r := range res {
		p := batch[i]
		req, isReq := p.msg.Payload.(*protocol.InteractionRequest)
		if r.Duplicate {
			if isReq {
				// Stored before, but maybe not recorded as open (the
				// master stopped in between): make sure it is.
				s.openInteraction(ctx, p, req, now)
			}
			continue
		}
		if isReq {
			s.openInteraction(ctx, p, req, now)
		}
		if s.apply(p.msg, r.Seq, now) {
			turnEnded = true
		}
		status = status || changesStatus(p.msg.Type)
		if at, ok := p.msg.Payload.(*protocol.AgentTitle); ok {
			titles = append(titles, at.Title)
		}
		wires[i] = fb.add(p.data, r.Seq)
		s.m.notify.observe(s, p.msg)
	}
	s.foldMu.Unlock()
	published := true
	for _, f := range fb.done() {
		if err := s.m.br.Publish(ctx, sessionTopic(s.id), f); err != nil {
			s.m.log.Error("publish events", "session", s.id, "err", err)
			published = false
		}
	}
	if published {
		for i, p := range batch {
			if !res[i].Duplicate && !p.read.IsZero() {
				s.m.met.Relayed(time.Since(p.read))
			}
		}
	}
	s.checkpoint()
	for i, r := range res {
		batch[i].stored(r.Seq, wires[i], r.Duplicate)
	}
	if status {
		s.m.publishStatus(ctx, s.info())
	}
	for _, t := range titles {
		s.m.agentTitled(s, t)
	}
	if turnEnded {
		s.cancelOpen(ctx)
	}
}

// registerArtifacts registers the batch's agent.artifact events as the
// session's artifacts before they are stored, so that every artifact a UI
// sees can be downloaded (registering again, for a re-sent event, changes
// nothing). An artifact_id the session already has for another file is
// refused: that event is acknowledged, answered with invalid_value and
// dropped. On a store failure the batch is returned whole with the error.
func (s *session) registerArtifacts(ctx context.Context, batch []*pending, now time.Time) ([]*pending, error) {
	kept := make([]*pending, 0, len(batch))
	for _, p := range batch {
		a, ok := p.msg.Payload.(*protocol.Artifact)
		if !ok {
			kept = append(kept, p)
			continue
		}
		err := s.m.st.PutArtifact(ctx, store.Artifact{SessionID: s.id, ID: a.ArtifactID, TurnID: a.TurnID, Path: a.Path,
			FileName: a.FileName, Size: a.Size, MimeType: a.MimeType, ToolUseID: a.ToolUseID, CreatedAt: now})
		switch {
		case errors.Is(err, store.ErrExists):
			s.m.log.Warn("refused an artifact_id registered for another file", "session", s.id, "artifact", a.ArtifactID)
			p.refused(&protocol.Error{Code: protocol.CodeInvalidValue, Field: "payload.artifact_id",
				Message: "another file of this session already has this artifact_id"})
		case err != nil:
			return batch, err
		default:
			kept = append(kept, p)
		}
	}
	return kept, nil
}

// openInteraction records an agent.interaction.request before it is
// relayed, so an answer racing the relay finds it.
func (s *session) openInteraction(ctx context.Context, p *pending, req *protocol.InteractionRequest, now time.Time) {
	err := s.m.st.OpenInteraction(ctx, store.Interaction{
		SessionID: s.id, ID: req.InteractionID, TurnID: req.TurnID, Request: p.data, CreatedAt: now,
	})
	switch {
	case errors.Is(err, store.ErrExists):
		s.m.log.Debug("interaction already recorded", "session", s.id, "interaction", req.InteractionID)
	case err != nil:
		s.m.log.Error("record interaction", "session", s.id, "err", err)
	default:
		s.addOpen(req.InteractionID, p.data, req.TimeoutMS, now)
	}
}

// cancelOpen resolves every interaction still open when a turn ended.
func (s *session) cancelOpen(ctx context.Context) {
	var resolved []*pending
	for _, id := range s.openIDs() {
		won, err := s.m.st.SettleInteraction(ctx, s.id, id, "cancelled", nil)
		if err != nil {
			s.m.log.Error("cancel interaction", "session", s.id, "interaction", id, "err", err)
			continue
		}
		if !won {
			continue // answered or timed out meanwhile: its own resolved is queued
		}
		msg := protocol.New(protocol.TypeInteractionResolved, &protocol.InteractionResolved{InteractionID: id, Outcome: "cancelled"})
		msg.SessionID = s.id
		data, err := protocol.Encode(msg)
		if err != nil {
			continue
		}
		resolved = append(resolved, &pending{msg: msg, data: data})
	}
	if len(resolved) > 0 {
		s.persist(resolved)
	}
}

// apply folds one stored event into the state and the snapshot; it reports
// whether the event ended a turn. It has no side effects beyond the state,
// so loading a session replays events through it too.
func (s *session) apply(msg *protocol.Message, seq uint64, at time.Time) (turnEnded bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if seq <= s.applied {
		return false // folded already (by a catch-up)
	}
	s.applied = seq
	if seq > s.row.LastSeq {
		s.row.LastSeq = seq
	}
	if !quiet(msg.Type) {
		s.row.UpdatedAt = at
	}
	s.unsaved++
	s.untrimmed++
	switch p := msg.Payload.(type) {
	case *protocol.PromptRequest:
		if len(s.prompts) >= maxPendingPrompts {
			clear(s.prompts)
		}
		s.prompts[msg.MessageID] = p.PromptText
	case *protocol.TurnStarted:
		t := protocol.TurnSnapshot{TurnID: p.TurnID, Prompt: s.prompts[msg.ParentID]}
		delete(s.prompts, msg.ParentID)
		s.turns = append(s.turns, t)
		if over := len(s.turns) - maxSnapshotTurns; over > 0 {
			for _, old := range s.turns[:over] {
				delete(s.text, old.TurnID)
			}
			s.turns = slices.Delete(s.turns, 0, over)
		}
		s.text[p.TurnID] = nil
		s.row.State, s.row.Mode, s.changed = protocol.SessionRunning, p.Mode, true
	case *protocol.TextDelta:
		if b, ok := s.text[p.TurnID]; ok && p.Channel == "text" && len(b) < maxSnapshotTurnText {
			s.text[p.TurnID] = append(b, runecut.Prefix(p.Delta, maxSnapshotTurnText-len(b))...)
		}
	case *protocol.TextDone:
		if t := s.turnLocked(p.TurnID); t != nil {
			t.Done, t.Cancelled, t.StopReason = true, p.IsCancelled, p.StopReason
			t.Text = string(s.text[p.TurnID])
			if p.Text != "" {
				t.Text = runecut.Prefix(p.Text, maxSnapshotTurnText)
			}
		}
		delete(s.text, p.TurnID)
		s.row.State, s.changed = protocol.SessionIdle, true
		turnEnded = true
		s.addTurnUsageLocked(p.TurnID)
	case *protocol.Usage:
		if s.turnUsage == nil {
			s.turnUsage = map[string]protocol.Usage{}
		}
		s.turnUsage[p.TurnID] = *p // "so far in a turn": the last one counts
	case *protocol.InteractionResolved:
		s.removeOpenLocked(p.InteractionID)
	case *protocol.PromptRefused:
		delete(s.prompts, msg.ParentID) // it starts no turn
	case *protocol.Artifact:
		s.artifacts = append(s.artifacts, *p)
		if over := len(s.artifacts) - maxSnapshotArtifacts; over > 0 {
			s.artifacts = slices.Delete(s.artifacts, 0, over)
		}
	case *protocol.ModeChanged:
		s.row.Mode, s.changed = p.Mode, true
	case *protocol.AgentCommands:
		s.commands, s.changed = slices.Clone(p.Commands), true
	case *protocol.AgentInstructions:
		s.instructions, s.changed = slices.Clone(p.Files), true
	case *protocol.AgentCapabilities:
		if p.Adapter.ID == s.row.Adapter { // the session's own adapter only
			c := p.Adapter
			s.caps, s.changed = &c, true
		}
	case *protocol.SessionOpened:
		s.row.Adapter, s.row.Mode, s.changed = p.Adapter, p.Mode, true
		if p.Settings != nil {
			st := *p.Settings
			s.settings = &st
		}
		if p.Worktree != nil {
			s.worktree = cloneWorktree(p.Worktree)
		}
	case *protocol.WorktreeState:
		s.worktree, s.changed = cloneWorktree(&p.Worktree), true
	case *protocol.WorktreeShipped:
		s.worktree, s.changed = cloneWorktree(&p.Worktree), true
	case *protocol.Settings:
		st := *p
		s.settings, s.changed = &st, true
	}
	return turnEnded
}

// quiet reports whether an event of type typ is bookkeeping rather than
// activity: a client (re)opening the session when a UI opens it (after a
// restart, any control message opens it first) and what its agent says
// about itself then. It does not move the session's UpdatedAt, so opening
// or reading a session leaves the lists' order and "N min ago" as they
// were.
func quiet(typ string) bool {
	switch typ {
	case protocol.TypeSessionOpened, protocol.TypeCommands, protocol.TypeInstructions, protocol.TypeAgentCapabilities, protocol.TypeAgentTitle,
		protocol.TypeWorktreeState, protocol.TypeWorktreeSetup:
		return true
	}
	return false
}

func (s *session) turnLocked(id string) *protocol.TurnSnapshot {
	for i := len(s.turns) - 1; i >= 0; i-- {
		if s.turns[i].TurnID == id {
			return &s.turns[i]
		}
	}
	return nil
}

// checkpointWork is what the saver does next: store a snapshot, trim, or
// both, in that order.
type checkpointWork struct {
	save   bool
	row    store.Session // the row to store, its Snapshot encoded by the saver
	snap   protocol.SessionSnapshot
	text   map[int][]byte // the running turns' text (captureLocked)
	covers int            // events the snapshot covers beyond the stored one
	trim   bool
	done   chan struct{} // closed once done, when the writer waits for it
}

// checkpoint has the row and snapshot stored when the state changed or
// snapshotEvery events passed, and old events trimmed every trimEvery
// events: small deletes, so that no batch waits long behind one (the
// writer's connection is the store's only one on SQLite).
//
// The writer only takes the snapshot; the session's saver goroutine
// encodes and stores it, then trims. Encoding a running turn's 256 KB of
// text took 4–8 ms on the writer, which held up every event behind it (the
// relay's p99 at 5,000 events/s). Snapshots taken while the saver is busy
// replace the one it has not started; they are stored in order. After a
// change of state (a turn started or ended, a new mode) the writer waits
// for the saver, as it did when it stored the row itself: the session
// lists, which read the stored row, say the new state before the event is
// acknowledged and the status relayed. Those changes are a few per turn.
//
// A Trim keeps the newest Retention events, so it cannot leave a gap after
// the stored snapshot while fewer than Retention events were applied since
// that snapshot; past half of that, the snapshot is stored first, and the
// saver skips a Trim while the stored one is further behind (saveAndTrim).
func (s *session) checkpoint() {
	keep := s.m.cfg.Retention
	trimEvery := max(1, min(keep/16, maxTrimEvery))
	s.mu.Lock()
	trim := s.untrimmed >= trimEvery
	save := s.changed || s.unsaved >= snapshotEvery || trim && s.unsaved > keep/2
	if !save && !trim {
		s.mu.Unlock()
		return
	}
	w := s.ckNext
	if w == nil {
		w = &checkpointWork{}
		s.ckNext = w
	}
	var done chan struct{}
	if s.changed {
		if w.done == nil {
			w.done = make(chan struct{})
		}
		done = w.done
	}
	if save {
		w.save, w.row = true, s.row
		w.snap, w.text = s.captureLocked()
		w.covers += s.unsaved
		s.saving += s.unsaved
		s.unsaved, s.changed = 0, false
	}
	if trim {
		w.trim = true
		s.untrimmed = 0
	}
	start := !s.ckRunning
	s.ckRunning = true
	s.mu.Unlock()
	if start && !s.m.goBG(s.saver) {
		// The master is closing, and this writer is one it waits for:
		// store it here, as the writer always did before the saver.
		s.saver()
	}
	if done != nil {
		<-done
	}
}

// saver does the checkpoint work handed to it until there is none.
func (s *session) saver() {
	for {
		s.mu.Lock()
		w := s.ckNext
		s.ckNext = nil
		if w == nil {
			s.ckRunning = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		s.saveAndTrim(s.m.ctx, w)
		if w.done != nil {
			close(w.done)
		}
	}
}

// saveAndTrim stores w's snapshot, then trims, unless the stored snapshot
// is more than half the retention behind the state (a failed or pending
// save): the Trim could then pass it.
func (s *session) saveAndTrim(ctx context.Context, w *checkpointWork) {
	keep := s.m.cfg.Retention
	if w.save {
		fillText(&w.snap, w.text)
		snap, err := json.Marshal(w.snap)
		if err != nil {
			err = fmt.Errorf("encode snapshot: %w", err)
		} else {
			w.row.Snapshot = snap
			err = s.m.st.UpdateSession(ctx, w.row)
		}
		s.mu.Lock()
		s.saving -= w.covers
		if err != nil {
			// The stored snapshot is as old as before: count its events
			// again, and have it stored with the next batch.
			s.unsaved += w.covers
			s.changed = true
		}
		s.mu.Unlock()
		if err != nil {
			s.m.log.Error("store session snapshot", "session", s.id, "err", err)
			return
		}
	}
	if !w.trim {
		return
	}
	s.mu.Lock()
	behind := s.unsaved + s.saving
	s.mu.Unlock()
	if behind > keep/2 {
		return
	}
	if err := s.m.st.Trim(ctx, s.id, keep); err != nil {
		s.m.log.Error("trim session events", "session", s.id, "err", err)
	}
}

// stored finishes an event after it was stored (and relayed unless dup,
// as wire: the message with seq and epoch).
func (p *pending) stored(seq uint64, wire []byte, dup bool) {
	if p.ack != nil {
		p.ack.stored()
	}
	if p.from != nil && p.msg.ParentID != "" {
		// The open's waiter needs the answer; a turn's start just ends the
		// wait for its prompt.
		if replyTo := p.from.cl.takeReply(p.msg.ParentID); replyTo != "" && !dup && p.msg.Type == protocol.TypeSessionOpened {
			_ = p.from.m.br.Publish(p.from.m.ctx, replyTo, wire)
		}
	}
	if p.done != nil {
		p.done(seq, dup, nil)
	}
}

// refused finishes an event that is not stored because of what it says:
// acknowledged (re-sending cannot help) and answered with e.
func (p *pending) refused(e *protocol.Error) {
	if p.ack != nil {
		p.ack.stored()
	}
	if p.from != nil {
		if b, err := protocol.Encode(protocol.ErrorMessage(p.msg.MessageID, p.msg.SessionID, e)); err == nil {
			p.from.tryEnqueue(b)
		}
	}
	if p.done != nil {
		p.done(0, false, e)
	}
}

// failed finishes an event the store refused. A client's connection is
// closed so that it re-sends its unacknowledged events after reconnecting.
func (p *pending) failed(err error) {
	if p.from != nil {
		p.from.cl.storeFailed.Store(true)
		p.from.close(closeInternal, "internal error", errInternal, false)
	}
	if p.done != nil {
		p.done(0, false, err)
	}
}

// catchUp folds into the state the events other nodes stored up to seq
// upTo (the store's last seq, read by the caller), so that a snapshot this
// node serves or stores reflects them. The node holding the client stores
// the agent's events and the node of a UI its prompts and answers, each
// into its own copy of the session.
func (s *session) catchUp(ctx context.Context, upTo uint64) {
	s.foldMu.Lock()
	defer s.foldMu.Unlock()
	s.catchUpLocked(ctx, upTo)
}

func (s *session) catchUpLocked(ctx context.Context, upTo uint64) {
	s.mu.Lock()
	from := s.applied
	s.mu.Unlock()
	for from < upTo {
		evs, err := s.m.st.Events(ctx, s.id, from, 1000)
		if err != nil {
			s.m.log.Error("catch up with events stored by other nodes", "session", s.id, "err", err)
			return
		}
		if len(evs) == 0 {
			return
		}
		for _, ev := range evs {
			if ev.Seq > upTo {
				return
			}
			msg, err := protocol.Decode(ev.Data)
			if err == nil {
				if req, ok := msg.Payload.(*protocol.InteractionRequest); ok {
					s.addOpen(req.InteractionID, ev.Data, req.TimeoutMS, ev.CreatedAt)
				}
				s.apply(msg, ev.Seq, ev.CreatedAt)
			}
			from = ev.Seq
		}
	}
}
