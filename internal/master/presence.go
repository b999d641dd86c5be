package master

import (
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// presence is this node's view of which machines have a client connected,
// built from the presence topic, and the control messages waiting (for at
// most the offline grace) for their machine to come back.
type presence struct {
	mu       sync.Mutex
	machines map[string]*machineState
	waiters  map[string][]*waiter
	stopped  bool
}

type machineState struct {
	connID string
	online bool
	caps   *protocol.Capabilities
}

type waiter struct {
	done  bool
	timer *time.Timer
	fn    func(caps *protocol.Capabilities, online bool)
}

func (p *presence) init() {
	p.machines = map[string]*machineState{}
	p.waiters = map[string][]*waiter{}
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
	var caps *protocol.Capabilities
	if f.Online {
		caps = new(protocol.Capabilities)
		if err := json.Unmarshal(f.Caps, caps); err != nil {
			m.log.Error("bad capabilities in presence frame", "err", err)
			return
		}
	}
	p := &m.presence
	p.mu.Lock()
	s := p.machines[f.MachineID]
	var (
		changed bool
		ready   []*waiter
	)
	switch {
	case f.Online:
		s = &machineState{connID: f.ConnID, online: true, caps: caps}
		p.machines[f.MachineID] = s
		changed = true
		for _, w := range p.waiters[f.MachineID] {
			if !w.done {
				w.done = true
				w.timer.Stop()
				ready = append(ready, w)
			}
		}
		delete(p.waiters, f.MachineID)
	case s != nil && s.online && s.connID == f.ConnID:
		// Only the connection of record takes the machine offline: a
		// replaced connection's late goodbye changes nothing.
		s.online = false
		changed = true
	}
	var view protocol.Machine
	if changed {
		view = machineView(f.MachineID, s.caps, s.online)
	}
	p.mu.Unlock()

	if f.Online {
		m.replaceClient(f.MachineID, f.ConnID)
		m.goBG(func() { m.resumeTimeouts(f.MachineID) })
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
