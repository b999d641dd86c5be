package master_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/broker"
	brokernats "github.com/ferry-dev/ferry/internal/broker/nats"
	"github.com/ferry-dev/ferry/internal/broker/nats/natstest"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// muteBroker drops every message its node publishes once mute is set, as
// if the node had died without a word; it still receives.
type muteBroker struct {
	broker.Broker
	mute atomic.Bool
}

func (b *muteBroker) Publish(ctx context.Context, topic string, data []byte) error {
	if b.mute.Load() {
		return nil
	}
	return b.Broker.Publish(ctx, topic, data)
}

// node is a second master node's URLs.
type node struct {
	ui, client string
}

func (e *env) node(cfg master.Config) node {
	e.t.Helper()
	u := e.secondNode(cfg)
	return node{ui: u, client: strings.TrimSuffix(u, "/v1/ui") + "/v1/client"}
}

// dialUIAt connects a UI to another node, passing over status broadcasts.
func (e *env) dialUIAt(url, name string) *peer {
	e.t.Helper()
	p, _, _, err := dial(e.t, url, bearer(e.ui))
	if err != nil {
		e.t.Fatalf("dial UI on %s: %v", name, err)
	}
	p.name = name
	p.skip, p.skipStatus = []string{protocol.TypeMachineStatus, protocol.TypeSessionChanged}, true
	p.sync()
	return p
}

// connectClientAt connects the fake client to another node.
func (e *env) connectClientAt(url string, caps *protocol.Capabilities, ui *peer) *fakeClient {
	e.t.Helper()
	p, _, _, err := dial(e.t, url, bearer(e.client))
	if err != nil {
		e.t.Fatalf("dial client: %v", err)
	}
	p.name, p.skip = "client", []string{protocol.TypeAck}
	c := &fakeClient{peer: p, e: e, caps: caps}
	c.send(protocol.New(protocol.TypeCapabilities, caps))
	if ui != nil {
		waitMachine(ui, caps.Machine.ID, true)
	}
	return c
}

// onlineAt returns whether ui's node lists machine id online.
func onlineAt(ui *peer, id string) bool {
	ui.t.Helper()
	req := ui.send(protocol.New(protocol.TypeMachinesList, &protocol.MachinesList{}))
	for {
		m := ui.next(protocol.TypeMachines)
		if m.ParentID != req.MessageID {
			continue
		}
		for _, mc := range m.Payload.(*protocol.Machines).Machines {
			if mc.ID == id {
				return mc.Online
			}
		}
		return false
	}
}

// TestLateNodeKnowsOnlineMachines: a node started after a client connected
// to another one asks for presence when it starts, so it lists the machine
// online at once, long before any refresh (an hour here).
func TestLateNodeKnowsOnlineMachines(t *testing.T) {
	t.Parallel()
	br := broker.NewMemory()
	t.Cleanup(func() { _ = br.Close() })
	e := newEnv(t, master.Config{Broker: br, PresenceRefresh: time.Hour})
	e.connectClient(testCaps("m1"), e.dialUI("node 1"))

	n2 := e.node(master.Config{Broker: br, PresenceRefresh: time.Hour})
	far := e.dialUIAt(n2.ui, "node 2")
	waitFor(t, "node 2 to list m1 online", func() bool { return onlineAt(far, "m1") })
}

// TestLateNodeKnowsOnlineMachinesOverNATS is the same over a real
// nats-server, each node with its own connection.
func TestLateNodeKnowsOnlineMachinesOverNATS(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t)
	connect := func(name string) broker.Broker {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		b, err := brokernats.Connect(ctx, brokernats.Options{URL: srv.URL(), Name: name})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	e := newEnv(t, master.Config{Broker: connect("node 1"), PresenceRefresh: time.Hour})
	e.connectClient(testCaps("m1"), e.dialUI("node 1"))

	n2 := e.node(master.Config{Broker: connect("node 2"), PresenceRefresh: time.Hour})
	far := e.dialUIAt(n2.ui, "node 2")
	waitFor(t, "node 2 to list m1 online", func() bool { return onlineAt(far, "m1") })
}

// TestSilentNodeMachinesExpire: node 1 holds the client and then falls
// silent (its publishes are dropped, its goodbye never arrives). Node 2
// shows the machine offline once node 1 stopped repeating it, and online
// again when the client reconnects to node 2.
func TestSilentNodeMachinesExpire(t *testing.T) {
	t.Parallel()
	br := broker.NewMemory()
	t.Cleanup(func() { _ = br.Close() })
	const refresh = 50 * time.Millisecond
	mb := &muteBroker{Broker: br}
	e := newEnv(t, master.Config{Broker: mb, PresenceRefresh: refresh})
	n2 := e.node(master.Config{Broker: br, PresenceRefresh: refresh})
	far := e.dialUIAt(n2.ui, "node 2")
	far.skip = nil // this test reads the status broadcasts
	c := e.connectClient(testCaps("m1"), nil)
	waitMachine(far, "m1", true)

	// Refreshed, it stays online well past the expiry.
	time.Sleep(10 * refresh)
	if !onlineAt(far, "m1") {
		t.Fatal("node 2 forgot m1 although node 1 repeats it")
	}

	mb.mute.Store(true)
	_ = c.ws.CloseNow() // its goodbye is lost too
	waitMachine(far, "m1", false)
	if onlineAt(far, "m1") {
		t.Fatal("node 2 lists m1 online after it expired")
	}

	e.connectClientAt(n2.client, testCaps("m1"), nil)
	waitMachine(far, "m1", true)
	if !onlineAt(far, "m1") {
		t.Fatal("node 2 does not list m1 online after it reconnected there")
	}
}

// jobStore counts, on one node, the lease attempts and the job runs.
type jobStore struct {
	store.Store
	tries, runs atomic.Int64
}

func (s *jobStore) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	s.tries.Add(1)
	return s.Store.AcquireLease(ctx, name, holder, ttl)
}

func (s *jobStore) DeleteExpiredDownloadTokens(ctx context.Context, now time.Time) (int, error) {
	s.runs.Add(1)
	return s.Store.DeleteExpiredDownloadTokens(ctx, now)
}

// startNode starts a master node without a listener (for what it does on
// its own), stopped at cleanup.
func startNode(t *testing.T, cfg master.Config) *master.Master {
	t.Helper()
	cfg.Logger = logger(t)
	m, err := master.New(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopNode(t, m) })
	return m
}

func stopNode(t *testing.T, m *master.Master) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := m.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// TestClusterJobsRunOnOneNode: two nodes on one store sweep often, but
// only the holder of the jobs lease deletes expired download tokens; when
// it stops, the other takes the jobs over.
func TestClusterJobsRunOnOneNode(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{RevokeCheck: time.Hour}) // the env's node stays out
	const every = 10 * time.Millisecond
	stores := []*jobStore{{Store: e.st}, {Store: e.st}}
	nodes := make([]*master.Master, len(stores))
	for i, s := range stores {
		// A lease far longer than the test: only a release hands it over.
		nodes[i] = startNode(t, master.Config{Store: s, RevokeCheck: every, JobsLease: time.Hour})
	}
	waitFor(t, "both nodes to sweep 10 times", func() bool {
		return stores[0].tries.Load() >= 10 && stores[1].tries.Load() >= 10
	})
	holder := -1
	for i, s := range stores {
		if s.runs.Load() > 0 {
			if holder >= 0 {
				t.Fatalf("both nodes ran the jobs (%d and %d times)", stores[0].runs.Load(), stores[1].runs.Load())
			}
			holder = i
		}
	}
	if holder < 0 {
		t.Fatal("no node ran the jobs")
	}
	other := stores[1-holder]
	stopNode(t, nodes[holder])
	waitFor(t, "the other node to take the jobs over", func() bool { return other.runs.Load() > 0 })
}
