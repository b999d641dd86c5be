package master_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	brokernats "github.com/ferry-dev/ferry/internal/broker/nats"
	"github.com/ferry-dev/ferry/internal/broker/nats/natstest"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/protocol"
)

// TestTwoNodesOverNATS runs two masters on one store, each with its own
// connection to one real nats-server: a UI on node 2 starts a turn of a
// session whose client is connected to node 1, and gets the client's events
// relayed by node 1, complete and in order.
func TestTwoNodesOverNATS(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t)
	nodeBroker := func(name string) *brokernats.Broker {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		b, err := brokernats.Connect(ctx, brokernats.Options{URL: srv.URL(), Name: name})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	e := newEnv(t, master.Config{Broker: nodeBroker("node 1")})
	m2, err := master.New(testCtx(t), master.Config{Store: e.st, Broker: nodeBroker("node 2"), Logger: logger(t), OfflineGrace: 200 * time.Millisecond, PingInterval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	srv2 := httptest.NewServer(m2.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = m2.Shutdown(ctx)
		srv2.Close()
	})
	ui := e.dialUI("node 1")
	c := e.connectClient(testCaps("m1"), ui)
	s, _ := startSession(ui, c)

	far, _, _, err := dial(t, "ws"+strings.TrimPrefix(srv2.URL, "http")+"/v1/ui", bearer(e.ui))
	if err != nil {
		t.Fatal(err)
	}
	far.name, far.skip = "node 2", []string{protocol.TypeMachineStatus, protocol.TypeSessionChanged}
	far.sync()
	subscribe(far, s.ID, 0, "")
	events(far, 1, 0) // session.opened, from the store

	// The prompt goes from node 2 to the client on node 1 over NATS.
	req := prompt(far, c, s.ID, "hello from node 2")
	turnStart(c, req, "t1")
	const n = 200
	for i := range n {
		delta(c, s.ID, "t1", fmt.Sprintf("d%d ", i))
	}
	// Every event, after the prompt node 2 persisted itself, in seq order.
	got := events(far, n+2, 1)
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
