package master_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	brokernats "github.com/ferry-dev/ferry/internal/broker/nats"
	"github.com/ferry-dev/ferry/internal/broker/nats/natstest"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/protocol"
)

// natsNodes are two masters on one store, each with its own connection
// to one real nats-server, a client on node 1 and a session it runs.
type natsNodes struct {
	t      *testing.T
	srv    *natstest.Server
	e      *env
	b1, b2 *brokernats.Broker
	c      *fakeClient
	s      protocol.SessionInfo
	url    string
}

func startNATSNodes(t *testing.T, node1 brokernats.Options) *natsNodes {
	t.Helper()
	srv := natstest.Start(t)
	nodeBroker := func(o brokernats.Options) *brokernats.Broker {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		o.URL = srv.URL()
		b, err := brokernats.Connect(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	n := &natsNodes{t: t, srv: srv, b1: nodeBroker(node1), b2: nodeBroker(brokernats.Options{Name: "node 2"})}
	n.e = newEnv(t, master.Config{Broker: n.b1})
	n.url = n.e.secondNode(master.Config{Broker: n.b2})
	ui := n.e.dialUI("node 1")
	n.c = n.e.connectClient(testCaps("m1"), ui)
	n.s, _ = startSession(ui, n.c)
	return n
}

// dialFar connects a UI to node 2.
func (n *natsNodes) dialFar() *peer {
	n.t.Helper()
	far, _, _, err := dial(n.t, n.url, bearer(n.e.ui))
	if err != nil {
		n.t.Fatal(err)
	}
	far.name, far.skip = "node 2", []string{protocol.TypeMachineStatus, protocol.TypeSessionChanged}
	far.sync()
	return far
}

// TestTwoNodesOverNATS runs two masters on one store, each with its own
// connection to one real nats-server: a UI on node 2 starts a turn of a
// session whose client is connected to node 1, and gets the client's events
// relayed by node 1, complete and in order.
func TestTwoNodesOverNATS(t *testing.T) {
	t.Parallel()
	n := startNATSNodes(t, brokernats.Options{})
	c, s, far := n.c, n.s, n.dialFar()
	subscribe(far, s.ID, 0, "")
	events(far, 1, 0) // session.opened, from the store

	// The prompt goes from node 2 to the client on node 1 over NATS.
	req := prompt(far, c, s.ID, "hello from node 2")
	turnStart(c, req, "t1")
	const k = 200
	for i := range k {
		delta(c, s.ID, "t1", fmt.Sprintf("d%d ", i))
	}
	// Every event, after the prompt node 2 persisted itself, in seq order.
	got := events(far, k+2, 1)
	if got[0].Type != protocol.TypePromptRequest || got[1].Type != protocol.TypeTurnStarted {
		t.Fatalf("node 2's UI got %s then %s, want control.prompt.request then agent.turn.started", got[0].Type, got[1].Type)
	}
	for i, m := range got[2:] {
		d, ok := m.Payload.(*protocol.TextDelta)
		if !ok || d.Delta != fmt.Sprintf("d%d ", i) {
			t.Fatalf("node 2's event %d is %s %+v", i+2, m.Type, m.Payload)
		}
	}
}

// TestEventsLostBetweenNodesAreFilled: node 1 cannot publish while
// nats-server is down (no reconnect buffer), so a UI on node 2 misses
// events that are in the store. At the next event it sees, node 2 notices
// the gap in seq and sends the missed events from the store, then that
// one: nothing lost, nothing twice, in order, and the UI stays connected
// (it used to be dropped to resume, which also happened whenever two
// nodes published a session's events out of order).
func TestEventsLostBetweenNodesAreFilled(t *testing.T) {
	t.Parallel()
	n := startNATSNodes(t, brokernats.Options{Name: "node 1", ReconnectBufSize: -1})
	c, s, far := n.c, n.s, n.dialFar()
	subscribe(far, s.ID, 0, "")
	events(far, 1, 0)
	req := prompt(far, c, s.ID, "hello")
	turnStart(c, req, "t1")
	events(far, 2, 1) // the prompt and agent.turn.started: seq 3

	n.srv.Kill()
	const lost = 5
	for i := range lost {
		delta(c, s.ID, "t1", fmt.Sprintf("d%d ", i))
	}
	waitFor(t, "the deltas stored", func() bool { return len(storedEvents(t, n.e.st, s.ID, protocol.TypeTextDelta)) == lost })
	n.srv.Start()
	waitFor(t, "both nodes reconnected", func() bool { return n.b1.Connected() && n.b2.Connected() })
	time.Sleep(300 * time.Millisecond) // node 2's renewed subscription reaches the server
	delta(c, s.ID, "t1", fmt.Sprintf("d%d ", lost))

	for i, m := range events(far, lost+1, 3) {
		if d, ok := m.Payload.(*protocol.TextDelta); !ok || d.Delta != fmt.Sprintf("d%d ", i) {
			t.Fatalf("event %d after the gap is %s %+v", i, m.Type, m.Payload)
		}
	}
	// Still subscribed and live: the next event follows at once.
	delta(c, s.ID, "t1", "after")
	if m := far.next(); m.Seq != 3+lost+2 {
		t.Fatalf("then %s seq %d, want seq %d", m.Type, m.Seq, 3+lost+2)
	}
}

// waitFor polls cond until it holds, for up to wait.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(wait); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
