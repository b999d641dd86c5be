package master

import (
	"time"

	"github.com/ferry-dev/ferry/protocol"
)

// Metrics receives the hub's measurements (package metrics exports them
// to Prometheus). Every method is called on hot paths: it must be cheap
// and must not block. Config.Metrics nil: nothing is measured.
type Metrics interface {
	// Connections sets how many connections of role are open on this node.
	Connections(role protocol.Role, n int)
	// SessionsLoaded sets how many sessions this node holds in memory.
	SessionsLoaded(n int)
	// MachinesOnline sets how many machines have their client connection
	// on this node.
	MachinesOnline(n int)
	// Relayed observes one client event's latency from the read off its
	// socket to its publication on the broker, after it was stored.
	Relayed(d time.Duration)
	// Stored counts one batch of n events written to the store (a
	// re-sent duplicate included).
	Stored(n int)
	// WriterQueued moves the number of events waiting in the session
	// writers by delta.
	WriterQueued(delta int)
	// ConnQueue observes the depth of a connection's outbound queue each
	// time its writer takes it.
	ConnQueue(depth int)
	// SlowConsumer counts a connection dropped for reading too slowly.
	SlowConsumer()
	// UIResumed counts a UI subscription that resumed from a seq (replayed
	// from the store, recovered: true).
	UIResumed()
}

// noMetrics is Metrics when Config.Metrics is nil.
type noMetrics struct{}

var _ Metrics = noMetrics{}

func (noMetrics) Connections(protocol.Role, int) {}
func (noMetrics) SessionsLoaded(int)             {}
func (noMetrics) MachinesOnline(int)             {}
func (noMetrics) Relayed(time.Duration)          {}
func (noMetrics) Stored(int)                     {}
func (noMetrics) WriterQueued(int)               {}
func (noMetrics) ConnQueue(int)                  {}
func (noMetrics) SlowConsumer()                  {}
func (noMetrics) UIResumed()                     {}

// countConn moves the open connections of c's role by delta; m.mu is held.
func (m *Master) countConn(c *conn, delta int) {
	m.nconns[c.role] += delta
	m.met.Connections(c.role, m.nconns[c.role])
}
