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
