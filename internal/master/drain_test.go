package master_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/broker"
	brokernats "github.com/ferry-dev/ferry/internal/broker/nats"
	"github.com/ferry-dev/ferry/internal/broker/nats/natstest"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// get returns the status and body of GET url.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	return resp.StatusCode, string(b)
}

// pingFailStore is a store whose Ping fails, with a text no peer may see.
type pingFailStore struct{ store.Store }

func (pingFailStore) Ping(context.Context) error {
	return errors.New("connection refused by db.internal:5432 as user admin")
}

// TestReadiness: /readyz is 200 on a node that can serve, 503 with a short
// reason (never the store's error text) when the store does not answer;
// /healthz stays 200.
func TestReadiness(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	if code, body := get(t, e.srv.URL+"/readyz"); code != http.StatusOK || body != "ready\n" {
		t.Fatalf("readyz: %d %q", code, body)
	}
	down := newEnv(t, master.Config{}, func(e *env) { e.wrap = func(s store.Store) store.Store { return pingFailStore{s} } })
	code, body := get(t, down.srv.URL+"/readyz")
	if code != http.StatusServiceUnavailable || body != "store unavailable\n" {
		t.Fatalf("readyz with the store down: %d %q", code, body)
	}
	if code, body := get(t, down.srv.URL+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("healthz with the store down: %d %q", code, body)
	}
}

// TestReadinessFollowsNATS: with its nats-server gone, a node is not ready
// (the broker is down) though alive; it is ready again once the server is
// back.
func TestReadinessFollowsNATS(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	b, err := brokernats.Connect(ctx, brokernats.Options{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	e := newEnv(t, master.Config{Broker: b})
	if code, body := get(t, e.srv.URL+"/readyz"); code != http.StatusOK {
		t.Fatalf("readyz: %d %q", code, body)
	}
	srv.Kill()
	waitReady(t, e.srv.URL, http.StatusServiceUnavailable, "broker unavailable\n")
	if code, _ := get(t, e.srv.URL+"/healthz"); code != http.StatusOK {
		t.Fatalf("healthz with the broker down: %d", code)
	}
	srv.Start()
	waitReady(t, e.srv.URL, http.StatusOK, "ready\n")
}

// waitReady polls /readyz until it answers code and body (the broker
// notices a lost server on its own schedule), within the test's bound.
func waitReady(t *testing.T, base string, code int, body string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		c, b := get(t, base+"/readyz")
		if c == code && b == body {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz: %d %q, want %d %q", c, b, code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readTurn reads p's session events after seq after up to the turn's
// agent.text.done, checking that seqs run on without a gap or a
// duplicate, and returns the deltas' text in order.
func readTurn(p *peer, after uint64, deltas []string) []string {
	p.t.Helper()
	for {
		m := p.next()
		if m.Seq == 0 {
			continue
		}
		if m.Seq != after+1 {
			p.t.Fatalf("%s: got %s seq %d, want seq %d", p.name, m.Type, m.Seq, after+1)
		}
		after = m.Seq
		switch pl := m.Payload.(type) {
		case *protocol.TextDelta:
			deltas = append(deltas, pl.Delta)
		case *protocol.TextDone:
			return deltas
		}
	}
}

// TestDrainMovesPeersToAnotherNode: two nodes share a broker and a store; a
// client streams a turn on node 1, which drains. Node 1 turns not ready at
// once and refuses upgrades with 503; its client and UI are closed with
// 1012, every event it accepted is stored and acknowledged first, and the
// client, reconnected to node 2, re-sends the rest. A UI on node 2 and the
// UI that moved from node 1 each get every event once, in order.
func TestDrainMovesPeersToAnotherNode(t *testing.T) {
	t.Parallel()
	br := broker.NewMemory()
	t.Cleanup(func() { _ = br.Close() })
	e := newEnv(t, master.Config{Broker: br})
	uiURL2 := e.secondNode(master.Config{Broker: br})
	clientURL2 := strings.TrimSuffix(uiURL2, "/v1/ui") + "/v1/client"

	near := e.dialUI("UI on node 1")
	c := e.connectClient(testCaps("m1"), near)
	s, _ := startSession(near, c)
	subscribe(near, s.ID, 1, s.Epoch)
	far, _, _, err := dial(t, uiURL2, bearer(e.ui))
	if err != nil {
		t.Fatal(err)
	}
	far.name, far.skip = "UI on node 2", []string{protocol.TypeMachineStatus, protocol.TypeSessionChanged}
	far.sync()
	subscribe(far, s.ID, 1, s.Epoch)

	req := prompt(near, c, s.ID, "a long turn")
	turnStart(c, req, "t1")
	const k = 300
	var want []string
	var mid *protocol.Message
	for i := range k / 2 {
		want = append(want, fmt.Sprintf("d%d ", i))
		if m := delta(c, s.ID, "t1", want[i]); i == k/4 {
			mid = m
		}
	}
	c.waitAck(mid.MessageID) // node 1 is busy with the stream when it drains

	drained := make(chan error, 1)
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		drained <- e.m.Shutdown(ctx)
	}()
	// The client is told to go elsewhere, after the acks of what node 1
	// accepted.
	_, err = c.waitClosed()
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusServiceRestart || ce.Reason != master.DrainReason {
		t.Fatalf("client connection ended with %v, want 1012 %q", err, master.DrainReason)
	}
	if code, body := get(t, e.srv.URL+"/readyz"); code != http.StatusServiceUnavailable || body != "draining\n" {
		t.Fatalf("readyz while draining: %d %q", code, body)
	}
	if code, _ := get(t, e.srv.URL+"/healthz"); code != http.StatusOK {
		t.Fatalf("healthz while draining: %d", code)
	}
	if _, code, _, err := dial(t, e.wsURL("/v1/ui"), bearer(e.ui)); err == nil || code != http.StatusServiceUnavailable {
		t.Fatalf("an upgrade on the draining node: HTTP %d, %v; want 503", code, err)
	}
	if err := <-drained; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	t.Logf("node 1 drained in %v", time.Since(start).Round(time.Millisecond))
	// Whatever node 1 stored, it acknowledged: what is left unacknowledged
	// was not stored.
	c.applyAcks()
	stored := map[string]bool{}
	for _, ev := range storedEvents(t, e.st, s.ID, "") {
		stored[ev.MessageID] = true
	}
	c.mu.Lock()
	for _, m := range c.outbox {
		if stored[m.MessageID] {
			t.Errorf("event %s was stored by the draining node but not acknowledged", m.MessageID)
		}
	}
	left := len(c.outbox)
	c.mu.Unlock()
	t.Logf("%d of %d events left to re-send after the drain", left, k/2)

	// The client's dialler picks the live node; it re-sends its outbox.
	moved, _, _, err := dial(t, clientURL2, bearer(e.client))
	if err != nil {
		t.Fatal(err)
	}
	moved.name, moved.skip = "client on node 2", []string{protocol.TypeAck}
	c.peer = moved
	c.send(protocol.New(protocol.TypeCapabilities, c.caps))
	c.mu.Lock()
	out := slices.Clone(c.outbox)
	c.mu.Unlock()
	for _, m := range out {
		c.send(m)
	}
	for i := k / 2; i < k; i++ {
		want = append(want, fmt.Sprintf("d%d ", i))
		delta(c, s.ID, "t1", want[i])
	}
	done := c.emit(s.ID, protocol.TypeTextDone, &protocol.TextDone{TurnID: "t1", StopReason: "end_turn"})
	c.waitAck(done.MessageID)

	// The UI on node 2 saw the whole turn once, in order.
	if got := readTurn(far, 1, nil); !slices.Equal(got, want) {
		t.Fatalf("UI on node 2 got %d deltas, want %d in order:\n%q", len(got), len(want), got)
	}
	// The UI of node 1 was closed with 1012 too and resumes on node 2.
	seen, err := near.waitClosed()
	if websocket.CloseStatus(err) != websocket.StatusServiceRestart {
		t.Fatalf("UI on node 1 ended with %v, want 1012", err)
	}
	var last uint64 = 1
	var got []string
	for _, m := range seen {
		if m.Seq == 0 {
			continue
		}
		if m.Seq != last+1 {
			t.Fatalf("UI on node 1: seq %d after %d", m.Seq, last)
		}
		last = m.Seq
		if d, ok := m.Payload.(*protocol.TextDelta); ok {
			got = append(got, d.Delta)
		}
	}
	back, _, _, err := dial(t, uiURL2, bearer(e.ui))
	if err != nil {
		t.Fatal(err)
	}
	back.name, back.skip = "UI moved to node 2", []string{protocol.TypeMachineStatus, protocol.TypeSessionChanged}
	if sub := subscribe(back, s.ID, last, s.Epoch); !sub.Recovered {
		t.Fatalf("resubscribed on node 2: %+v", sub)
	}
	if got = readTurn(back, last, got); !slices.Equal(got, want) {
		t.Fatalf("the UI that moved got %d deltas, want %d in order:\n%q", len(got), len(want), got)
	}
	if n := len(storedEvents(t, e.st, s.ID, protocol.TypeTextDelta)); n != k {
		t.Fatalf("%d deltas stored, want %d", n, k)
	}
}
