package master

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// DefaultPresenceRefresh is how often a node repeats its client
// connections' presence. Another node forgets a machine not repeated for
// three of these, so a node that dies without a word stops showing its
// machines online within 6 s. A client whose node dies usually reconnects
// to another node at once, and that online frame wins without waiting; the
// expiry only bounds how long a machine that does not come back is shown
// online (a prompt sent to it meanwhile waits for its client to come back,
// deliveries.go; other control messages are lost, as they would be to any
// dead connection). Each repeat costs one broker message per
// connected machine: 2 s keeps that small for thousands of machines.
const DefaultPresenceRefresh = 2 * time.Second

// presenceFrame is what the presence topic carries: a client connection
// came or went, a node repeats a connection that is still there (Refresh),
// or a node that just started asks every node to repeat theirs at once
// (Query). Each master node keeps its own table from these and tells its
// UIs (master.machine.status).
type presenceFrame struct {
	// Node is the publishing node's Config.NodeID.
	Node      string          `json:"node"`
	MachineID string          `json:"machine_id,omitempty"`
	ConnID    string          `json:"conn_id,omitempty"`
	Online    bool            `json:"online,omitempty"`
	Caps      json.RawMessage `json:"caps,omitempty"`
	// Since is when the connection announced its machine (Unix ns, on its
	// node's clock): of two repeats naming different connections of one
	// machine, the later connection is the one of record. An online frame
	// that is not a repeat always is.
	Since int64 `json:"since,omitempty"`
	// Refresh marks a repeat of an online frame; RefreshMS is the
	// publisher's PresenceRefresh, so that the expiry follows the pace of
	// the node that repeats.
	Refresh   bool  `json:"refresh,omitempty"`
	RefreshMS int64 `json:"refresh_ms,omitempty"`
	// Query asks every other node to repeat its connections now.
	Query bool `json:"query,omitempty"`
}

// presence is this node's view of which machines have a client connected,
// built from the presence topic, and the control messages waiting (for at
// most the offline grace) for their machine to come back.
type presence struct {
	mu       sync.Mutex
	machines map[string]*machineState
	waiters  map[string][]*waiter
	stopped  bool
	// stopLoop ends refreshLoop; loopDone is closed when it has.
	stopLoop, loopDone chan struct{}
}

type machineState struct {
	connID string
	online bool
	caps   *protocol.Capabilities
	// node holds the connection; since is when it announced the machine;
	// seen is when this node last heard of it, ttl how long it may stay
	// unheard before it is forgotten (3× its node's refresh).
	node  string
	since int64
	seen  time.Time
	ttl   time.Duration
	// expired: offline because its node stopped repeating it, not because
	// it said goodbye; a repeat of that same connection brings it back.
	expired bool
}

type waiter struct {
	done  bool
	timer *time.Timer
	fn    func(caps *protocol.Capabilities, online bool)
}

func (p *presence) init() {
	p.machines = map[string]*machineState{}
	p.waiters = map[string][]*waiter{}
	p.stopLoop, p.loopDone = make(chan struct{}), make(chan struct{})
}

// online returns the capabilities of a machine whose client is connected.
func (p *presence) online(machineID string) (*protocol.Capabilities, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.machines[machineID]; s != nil && s.online {
		return s.caps, true
	}
	return nil, false
}

// isCurrent reports whether connID is the machine's connection of record: a
// connection replaced by a newer one ignores control messages.
func (p *presence) isCurrent(machineID, connID string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.machines[machineID]
	return s != nil && s.online && s.connID == connID
}

func (p *presence) onlineCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, s := range p.machines {
		if s.online {
			n++
		}
	}
	return n
}

func (p *presence) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stopped {
		close(p.stopLoop)
	}
	p.stopped = true
	for _, ws := range p.waiters {
		for _, w := range ws {
			w.done = true
			w.timer.Stop()
		}
	}
	p.waiters = map[string][]*waiter{}
}

// whenOnline calls fn with the machine's capabilities once its client is
// connected: at once on the caller's goroutine if it is, else from a
// background goroutine when it comes back within the offline grace, in the
// order the waits began. If it does not, fn gets online false.
func (m *Master) whenOnline(machineID string, fn func(caps *protocol.Capabilities, online bool)) {
	p := &m.presence
	p.mu.Lock()
	if s := p.machines[machineID]; s != nil && s.online {
		caps := s.caps
		p.mu.Unlock()
		fn(caps, true)
		return
	}
	if p.stopped {
		p.mu.Unlock()
		fn(nil, false)
		return
	}
	w := &waiter{fn: fn}
	w.timer = time.AfterFunc(m.cfg.OfflineGrace, func() {
		p.mu.Lock()
		if w.done {
			p.mu.Unlock()
			return
		}
		w.done = true
		ws := p.waiters[machineID]
		if i := slices.Index(ws, w); i >= 0 {
			ws = slices.Delete(ws, i, i+1)
		}
		if len(ws) == 0 {
			delete(p.waiters, machineID)
		} else {
			p.waiters[machineID] = ws
		}
		p.mu.Unlock()
		fn(nil, false)
	})
	p.waiters[machineID] = append(p.waiters[machineID], w)
	p.mu.Unlock()
}

// onPresence is the presence topic's subscriber.
func (m *Master) onPresence(data []byte) {
	var f presenceFrame
	if err := json.Unmarshal(data, &f); err != nil {
		m.log.Error("bad presence frame", "err", err)
		return
	}
	if f.Query {
		if f.Node != m.node {
			m.goBG(m.repeatPresence)
		}
		return
	}
	var caps *protocol.Capabilities
	if f.Online {
		caps = new(protocol.Capabilities)
		if err := json.Unmarshal(f.Caps, caps); err != nil {
			m.log.Error("bad capabilities in presence frame", "err", err)
			return
		}
	}
	ttl := 3 * m.cfg.PresenceRefresh
	if f.RefreshMS > 0 {
		ttl = 3 * time.Duration(f.RefreshMS) * time.Millisecond
	}
	now := time.Now()
	p := &m.presence
	p.mu.Lock()
	s := p.machines[f.MachineID]
	var (
		changed, cameOnline bool
		ready               []*waiter
	)
	switch {
	case f.Online && f.Refresh && s != nil && s.connID == f.ConnID:
		// A repeat of the connection of record keeps it; after a goodbye
		// (offline, not expired) a late repeat changes nothing.
		if s.online || s.expired {
			s.seen, s.ttl = now, ttl
			cameOnline = !s.online
		}
		if cameOnline {
			s.online, s.expired = true, false
		}
	case f.Online && f.Refresh && s != nil && (f.Since < s.since || f.Since == s.since && f.ConnID < s.connID):
		// A repeat of an older connection than the one of record (replaced,
		// its close not yet heard): nothing.
	case f.Online:
		// A new connection, or a repeat of one this node never heard of (it
		// started later, or the online frame was lost).
		s = &machineState{connID: f.ConnID, online: true, caps: caps, node: f.Node, since: f.Since, seen: now, ttl: ttl}
		p.machines[f.MachineID] = s
		cameOnline = true
	case s != nil && s.online && s.connID == f.ConnID:
		// Only the connection of record takes the machine offline: a
		// replaced connection's late goodbye changes nothing.
		s.online, s.expired = false, false
		changed = true
	}
	if cameOnline {
		changed = true
		for _, w := range p.waiters[f.MachineID] {
			if !w.done {
				w.done = true
				w.timer.Stop()
				ready = append(ready, w)
			}
		}
		delete(p.waiters, f.MachineID)
	}
	var view protocol.Machine
	if changed {
		view = machineView(f.MachineID, s.caps, s.online)
	}
	p.mu.Unlock()

	if cameOnline {
		m.replaceClient(f.MachineID, f.ConnID)
		m.goBG(func() { m.resumeTimeouts(f.MachineID) })
		m.redeliverOnline(f.MachineID, f.ConnID)
	}
	if changed {
		m.broadcastMachine(view)
	}
	if len(ready) > 0 {
		caps := s.caps
		m.goBG(func() {
			for _, w := range ready {
				w.fn(caps, true)
			}
		})
	}
}

// startPresence subscribes to the presence topic, asks the other nodes for
// their connections (so this node knows every online machine within one
// round trip, not one refresh) and starts refreshLoop.
func (m *Master) startPresence() error {
	m.presence.init()
	unsub, err := m.br.Subscribe(presenceTopic, m.onPresence)
	if err != nil {
		return fmt.Errorf("master: subscribe to presence: %w", err)
	}
	m.stopPresence = unsub
	m.publishPresence(presenceFrame{Query: true})
	go m.refreshLoop()
	return nil
}

// refreshLoop repeats this node's connections every PresenceRefresh and
// forgets the machines of other nodes not repeated in time, exactly as if
// they had gone offline. It ends with presence.stop.
func (m *Master) refreshLoop() {
	p := &m.presence
	defer close(p.loopDone)
	t := time.NewTicker(m.cfg.PresenceRefresh)
	defer t.Stop()
	for {
		select {
		case <-p.stopLoop:
			return
		case <-t.C:
		}
		m.repeatPresence()
		m.expirePresence(time.Now())
	}
}

// repeatPresence publishes a refresh of every client connection of this
// node that announced its machine.
func (m *Master) repeatPresence() {
	m.mu.Lock()
	cs := make([]*conn, 0, len(m.clients))
	for _, c := range m.clients {
		cs = append(cs, c)
	}
	m.mu.Unlock()
	for _, c := range cs {
		c.cl.mu.Lock()
		id, caps, since := c.cl.machineID, c.cl.caps, c.cl.since
		c.cl.mu.Unlock()
		if id == "" || caps == nil {
			continue
		}
		m.publishPresence(presenceFrame{MachineID: id, ConnID: c.id, Online: true, Caps: caps, Since: since, Refresh: true})
	}
}

// expirePresence takes offline every machine held by another node that was
// not heard of within its ttl. This node's own connections never expire:
// it knows them first hand, even while the broker is down.
func (m *Master) expirePresence(now time.Time) {
	p := &m.presence
	var views []protocol.Machine
	p.mu.Lock()
	for id, s := range p.machines {
		if s.online && s.node != m.node && now.Sub(s.seen) > s.ttl {
			s.online, s.expired = false, true
			views = append(views, machineView(id, s.caps, false))
		}
	}
	p.mu.Unlock()
	for _, v := range views {
		m.log.Info("machine not repeated by its node in time: offline", "machine", v.ID)
		m.broadcastMachine(v)
	}
}

// replaceClient closes this node's older connection of a machine whose
// client connected again (here or on another node).
func (m *Master) replaceClient(machineID, connID string) {
	m.mu.Lock()
	old := m.clients[machineID]
	m.mu.Unlock()
	if old != nil && old.id != connID {
		old.log.Info("replaced by a newer connection of the same machine")
		old.close(websocket.StatusPolicyViolation, "replaced by a newer connection", nil, false)
	}
}

// broadcastMachine tells this node's UIs that may see it about a machine.
func (m *Master) broadcastMachine(view protocol.Machine) {
	b, err := protocol.Encode(protocol.New(protocol.TypeMachineStatus, &protocol.MachineStatus{Machine: view}))
	if err != nil {
		m.log.Error("encode machine status", "err", err)
		return
	}
	m.mu.Lock()
	uis := make([]*conn, 0, len(m.uis))
	for c := range m.uis {
		if c.sees(view.ID) {
			uis = append(uis, c)
		}
	}
	m.mu.Unlock()
	for _, c := range uis {
		c.tryEnqueue(b)
	}
}

// machineView is a machine as a UI sees it.
func machineView(id string, caps *protocol.Capabilities, online bool) protocol.Machine {
	v := protocol.Machine{ID: id, Name: id, Online: online,
		Workspaces: []protocol.Workspace{}, Adapters: []protocol.AdapterCapability{}}
	if caps == nil {
		return v
	}
	if caps.Machine != nil && caps.Machine.Name != "" {
		v.Name = caps.Machine.Name
	}
	if caps.Workspaces != nil {
		v.Workspaces = caps.Workspaces
	}
	if caps.Adapters != nil {
		v.Adapters = caps.Adapters
	}
	v.FileSearch = caps.FileReferences != nil && caps.FileReferences.Search &&
		slices.Contains(caps.Messages, protocol.TypeFileSearch)
	v.FileHistory = slices.Contains(caps.Messages, protocol.TypeHistoryUndo)
	return v
}

// storedCaps parses a stored machine's capabilities; nil when unreadable.
func storedCaps(mc store.Machine) *protocol.Capabilities {
	if len(mc.Capabilities) == 0 {
		return nil
	}
	caps := new(protocol.Capabilities)
	if json.Unmarshal(mc.Capabilities, caps) != nil {
		return nil
	}
	return caps
}
