package master_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/auth"
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
	base, ui, client string
}

func (e *env) node(cfg master.Config) node {
	e.t.Helper()
	u := e.secondNode(cfg)
	base := "http" + strings.TrimPrefix(strings.TrimSuffix(u, "/v1/ui"), "ws")
	return node{base: base, ui: u, client: strings.TrimSuffix(u, "/v1/ui") + "/v1/client"}
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
	// Long enough that a loaded machine still repeats in time.
	const refresh = 300 * time.Millisecond
	mb := &muteBroker{Broker: br}
	e := newEnv(t, master.Config{Broker: mb, PresenceRefresh: refresh})
	n2 := e.node(master.Config{Broker: br, PresenceRefresh: refresh})
	far := e.dialUIAt(n2.ui, "node 2")
	far.skip = nil // this test reads the status broadcasts
	c := e.connectClient(testCaps("m1"), nil)
	waitMachine(far, "m1", true)

	// Repeated, it stays online past the expiry.
	time.Sleep(4 * refresh)
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

// cluster is two nodes on one store and one memory broker: the env's
// (node 1), holding the client, and node 2, each with a UI.
type cluster struct {
	e        *env
	n2       node
	ui1, ui2 *peer
	c        *fakeClient
	s        protocol.SessionInfo
}

func startCluster(t *testing.T, caps *protocol.Capabilities) *cluster {
	t.Helper()
	br := broker.NewMemory()
	t.Cleanup(func() { _ = br.Close() })
	k := &cluster{e: newEnv(t, master.Config{Broker: br})}
	k.n2 = k.e.node(master.Config{Broker: br})
	k.ui1 = k.e.dialUI("node 1")
	k.ui2 = k.e.dialUIAt(k.n2.ui, "node 2")
	k.c = k.e.connectClient(caps, k.ui1)
	waitFor(t, "node 2 to list the machine online", func() bool { return onlineAt(k.ui2, caps.Machine.ID) })
	k.s, _ = startSession(k.ui1, k.c)
	return k
}

// TestRoutingAcrossNodes: a prompt, an interaction answer and a cancel from
// a UI on node 2 reach the client on node 1, and the session's events,
// those node 1 stores and those node 2 stores, reach that UI in order.
func TestRoutingAcrossNodes(t *testing.T) {
	t.Parallel()
	k := startCluster(t, testCaps("m1"))
	c, far, sid := k.c, k.ui2, k.s.ID
	subscribe(far, sid, 1, k.s.Epoch)

	req := prompt(far, c, sid, "from node 2") // stored by node 2
	turnStart(c, req, "t1")                   // stored by node 1
	interaction(c, sid, "t1", "q1", 0)
	delta(c, sid, "t1", "working")
	evs := events(far, 4, 1)
	for i, want := range []string{protocol.TypePromptRequest, protocol.TypeTurnStarted, protocol.TypeInteractionRequest, protocol.TypeTextDelta} {
		if evs[i].Type != want {
			t.Fatalf("event %d on node 2 is %s, want %s", i, evs[i].Type, want)
		}
	}

	a := answer(far, sid, "q1", protocol.AllowOnce)
	if got := c.next(protocol.TypeInteractionResponse); got.MessageID != a.MessageID {
		t.Fatalf("the client got answer %s, want %s", got.MessageID, a.MessageID)
	}
	resolved(t, far, "q1", "answered") // stored by node 2

	cancel := protocol.New(protocol.TypePromptCancel, &protocol.PromptCancel{TargetTurnID: "t1", Reason: "user_cancelled"})
	cancel.SessionID = sid
	far.send(cancel)
	if got := c.next(protocol.TypePromptCancel); got.MessageID != cancel.MessageID {
		t.Fatalf("the client got cancel %s, want %s", got.MessageID, cancel.MessageID)
	}
	c.emit(sid, protocol.TypeTextDone, &protocol.TextDone{TurnID: "t1", IsCancelled: true, StopReason: "cancelled", Text: "working"})
	if ev := events(far, 1, 6)[0]; ev.Type != protocol.TypeTextDone {
		t.Fatalf("node 2 got %s, want agent.text.done", ev.Type)
	}
	clientSync(far, c, sid) // nothing else reached the client
}

// TestFirstAnswerWinsAcrossNodes: UIs on two nodes answer each permission
// at once; the store decides: the client gets exactly one answer, the
// loser is told interaction_settled and the winner nothing.
func TestFirstAnswerWinsAcrossNodes(t *testing.T) {
	t.Parallel()
	k := startCluster(t, testCaps("m1"))
	c, sid := k.c, k.s.ID
	turnStart(c, prompt(k.ui1, c, sid, "go"), "t1")
	const rounds = 30
	wins := map[string]int{}
	for r := range rounds {
		id := fmt.Sprintf("q%d", r)
		c.waitAck(interaction(c, sid, "t1", id, 0).MessageID)
		uis := []*peer{k.ui1, k.ui2}
		if r%2 == 1 {
			uis[0], uis[1] = uis[1], uis[0]
		}
		sent := map[string]*peer{}
		for _, ui := range uis {
			sent[answer(ui, sid, id, protocol.AllowOnce).MessageID] = ui
		}
		got := c.next(protocol.TypeInteractionResponse)
		winner := sent[got.MessageID]
		if winner == nil {
			t.Fatalf("round %d: the client got %s, not one of this round's answers", r, describe(got))
		}
		wins[winner.name]++
		for msgID, ui := range sent {
			if ui != winner {
				ui.expectError(msgID, protocol.CodeInteractionSettled, "payload.interaction_id")
			}
		}
		winner.sync() // the winner was told nothing
	}
	clientSync(k.ui1, c, sid)
	clientSync(k.ui2, c, sid) // no second answer reached the client
	t.Logf("wins: %v", wins)
}

// TestAnswerRacesTimeoutAcrossNodes: node 1 (holding the client) times a
// permission out while a UI on node 2 answers it; whichever the store
// settles first is the one outcome: the client gets either the answer or
// the timeout, never both, the UIs see it resolved once that way, and the
// answering UI is refused exactly when the timeout won.
func TestAnswerRacesTimeoutAcrossNodes(t *testing.T) {
	t.Parallel()
	k := startCluster(t, testCaps("m1"))
	c, far, sid := k.c, k.ui2, k.s.ID
	subscribe(far, sid, 1, k.s.Epoch)
	turnStart(c, prompt(far, c, sid, "go"), "t1")
	events(far, 2, 1)
	outcomes := map[string]int{}
	for r := range 30 {
		id := fmt.Sprintf("q%d", r)
		interaction(c, sid, "t1", id, 4)
		far.next(protocol.TypeInteractionRequest) // stored: it may be answered
		// Answer from before to well after the deadline: both outcomes.
		time.Sleep(time.Duration(r%8) * time.Millisecond)
		a := answer(far, sid, id, protocol.AllowOnce)
		got := c.next(protocol.TypeInteractionResponse, protocol.TypeInteractionTimeout)
		outcomes[got.Type]++
		switch p := got.Payload.(type) {
		case *protocol.InteractionResponse:
			if got.MessageID != a.MessageID || p.InteractionID != id {
				t.Fatalf("round %d: the client got %s", r, describe(got))
			}
			resolved(t, far, id, "answered")
			far.sync() // the UI was refused nothing
		case *protocol.InteractionTimeout:
			if p.InteractionID != id {
				t.Fatalf("round %d: the client got %s", r, describe(got))
			}
			// The refusal and the resolved event, in either order.
			var refused, timedOut bool
			for !refused || !timedOut {
				m := far.next(protocol.TypeError, protocol.TypeInteractionResolved)
				if m.Type == protocol.TypeError {
					if e := m.Payload.(*protocol.Error); refused || m.ParentID != a.MessageID || e.Code != protocol.CodeInteractionSettled {
						t.Fatalf("round %d: node 2's UI got %s", r, describe(m))
					}
					refused = true
					continue
				}
				if rv := m.Payload.(*protocol.InteractionResolved); timedOut || rv.InteractionID != id || rv.Outcome != "timeout" {
					t.Fatalf("round %d: node 2's UI got %s", r, describe(m))
				}
				timedOut = true
			}
		}
	}
	clientSync(k.ui1, c, sid)
	clientSync(far, c, sid) // no second settlement reached the client
	t.Logf("outcomes: %v", outcomes)
}

// TestDownloadLinkWorksOnAnyNode: a link a UI on node 1 got downloads
// through node 2, streamed from the client connected to node 1.
func TestDownloadLinkWorksOnAnyNode(t *testing.T) {
	t.Parallel()
	k := startCluster(t, downloadCaps("m1"))
	c, sid := k.c, k.s.ID
	c.waitAck(c.emit(sid, protocol.TypeArtifact, testArtifact("t1", "art_one", "out/a.csv")).MessageID)
	l := listArtifacts(k.ui1, sid, &protocol.ArtifactsList{}).Payload.(*protocol.Artifacts).Artifacts[0]

	content := bytes.Repeat([]byte("0123456789"), 300)
	res := make(chan result, 1)
	go func() {
		req, err := http.NewRequestWithContext(testCtx(t), http.MethodGet, k.n2.base+l.DownloadURL, nil)
		if err != nil {
			res <- result{err: err}
			return
		}
		req.Header = bearer(k.e.ui)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			res <- result{err: err}
			return
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		res <- result{resp, body, err}
	}()
	_, id := c.answerRead(int64(len(content)))
	if rng := c.next(protocol.TypeArtifactRange).Payload.(*protocol.ArtifactRange); rng.Window < int64(len(content)) {
		t.Fatalf("range %+v: the test sends the file in one window", rng)
	}
	c.sendChunk(id, 0, content)
	c.end(sid, id, nil)
	r := <-res
	if r.err != nil || r.resp.StatusCode != http.StatusOK || !bytes.Equal(r.body, content) {
		t.Fatalf("download through node 2: %v, status %v, %d bytes", r.err, r.resp, len(r.body))
	}
}

// postLoginAt submits a login form to the node at base, as its own page
// would; it returns the HTTP status.
func postLoginAt(ctx context.Context, base, token string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return statusOf(noRedirect, req)
}

// statusOf sends req with hc and returns the response's status, its body
// read and closed.
func statusOf(hc *http.Client, req *http.Request) (int, error) {
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// TestLoginTokenOnceOnAnyNode: a login link used on one node is refused
// on the other, also when both are used at the same moment.
func TestLoginTokenOnceOnAnyNode(t *testing.T) {
	t.Parallel()
	br := broker.NewMemory()
	t.Cleanup(func() { _ = br.Close() })
	e := newEnv(t, master.Config{Broker: br})
	n2 := e.node(master.Config{Broker: br})
	bases := []string{e.srv.URL, n2.base}
	issue := func() string {
		secret, _, err := auth.Issue(testCtx(t), e.st, store.TokenLogin, "login URL", auth.LoginTTL)
		if err != nil {
			t.Fatal(err)
		}
		return secret
	}

	secret := issue()
	if st, err := postLoginAt(testCtx(t), n2.base, secret); err != nil || st != http.StatusOK {
		t.Fatalf("login on node 2: %d %v", st, err)
	}
	if st, err := postLoginAt(testCtx(t), e.srv.URL, secret); err != nil || st != http.StatusUnauthorized {
		t.Fatalf("the used link on node 1: %d %v, want 401", st, err)
	}

	for r := range 10 {
		secret := issue()
		status := make([]int, len(bases))
		var wg sync.WaitGroup
		for i, base := range bases {
			wg.Go(func() {
				st, err := postLoginAt(testCtx(t), base, secret)
				if err != nil {
					t.Errorf("login on node %d: %v", i+1, err)
				}
				status[i] = st
			})
		}
		wg.Wait()
		if ok := slices.Index(status, http.StatusOK); ok < 0 || slices.Index(status[ok+1:], http.StatusOK) >= 0 || slices.Contains(status, 0) {
			t.Fatalf("round %d: the same link on both nodes at once: %v, want exactly one 200", r, status)
		}
	}
}

// TestPresenceRepeatsNeverUndoNewer publishes presence frames as another
// node would: a repeat of a replaced connection does not take the machine
// back from the newer one, and a repeat that arrives after a connection's
// goodbye does not bring the machine back online.
func TestPresenceRepeatsNeverUndoNewer(t *testing.T) {
	t.Parallel()
	br := broker.NewMemory()
	t.Cleanup(func() { _ = br.Close() })
	e := newEnv(t, master.Config{Broker: br})
	if err := e.st.PutMachine(testCtx(t), store.Machine{ID: "m9", Name: "m9", TokenID: "x", LastSeen: time.Now()}); err != nil {
		t.Fatal(err)
	}
	ui := e.dialUI("node 1")
	ui.skip = nil // this test reads every status broadcast
	caps, err := json.Marshal(testCaps("m9"))
	if err != nil {
		t.Fatal(err)
	}
	publish := func(f string, args ...any) {
		t.Helper()
		if err := br.Publish(testCtx(t), "presence", fmt.Appendf(nil, f, args...)); err != nil {
			t.Fatal(err)
		}
	}
	const hour = 3600000
	online := func(conn string, since int, refresh bool) {
		t.Helper()
		publish(`{"node":"x","machine_id":"m9","conn_id":%q,"online":true,"caps":%s,"since":%d,"refresh":%t,"refresh_ms":%d}`,
			conn, caps, since, refresh, hour)
	}
	status := func(want bool) {
		t.Helper()
		mc := ui.next(protocol.TypeMachineStatus).Payload.(*protocol.MachineStatus).Machine
		if mc.ID != "m9" || mc.Online != want {
			t.Fatalf("status %+v, want m9 online %t", mc, want)
		}
	}

	online("a", 100, false)
	status(true)
	online("b", 200, false) // b replaces a
	status(true)
	online("a", 100, true)                                  // a late repeat of a: nothing
	publish(`{"node":"x","machine_id":"m9","conn_id":"b"}`) // b leaves
	status(false)                                           // the next broadcast: b is gone
	online("b", 200, true)                                  // a repeat b sent before its goodbye
	if onlineAt(ui, "m9") {
		t.Fatal("a repeat after the goodbye brought m9 back online")
	}
	online("c", 300, true) // a connection whose online frame was lost
	status(true)
	if !onlineAt(ui, "m9") {
		t.Fatal("a repeat of an unknown, newer connection did not bring m9 online")
	}
}

// pushAnswerAt posts a notification's answer to the node at base.
func pushAnswerAt(ctx context.Context, base, uiToken, sid, id, value string) (int, error) {
	b, err := json.Marshal(map[string]string{"session_id": sid, "interaction_id": id, "value": value})
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/push/answer", bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	req.Header = bearer(uiToken)
	req.Header.Set("Content-Type", "application/json")
	return statusOf(http.DefaultClient, req)
}

// TestPushAnswerRacesUIAcrossNodes: a notification's answer posted to
// node 2 races a UI's answer on node 1: the client gets exactly one, and
// the loser is refused (409 or interaction_settled).
func TestPushAnswerRacesUIAcrossNodes(t *testing.T) {
	t.Parallel()
	k := startCluster(t, testCaps("m1"))
	c, ui, sid := k.c, k.ui1, k.s.ID
	subscribe(ui, sid, 1, k.s.Epoch)
	turnStart(c, prompt(ui, c, sid, "go"), "t1")
	events(ui, 2, 1)
	wins := map[string]int{}
	for r := range 10 {
		id := fmt.Sprintf("p%d", r)
		permission(c, sid, "t1", id)
		ui.next(protocol.TypeInteractionRequest)
		httpDone := make(chan int, 1)
		go func() {
			st, err := pushAnswerAt(testCtx(t), k.n2.base, k.e.ui, sid, id, "deny")
			if err != nil {
				t.Errorf("push answer: %v", err)
			}
			httpDone <- st
		}()
		uiMsg := answer(ui, sid, id, protocol.AllowOnce)
		st := <-httpDone
		got := c.next(protocol.TypeInteractionResponse).Payload.(*protocol.InteractionResponse)
		pushWon := got.SelectedValue.Values[0] == protocol.Deny
		if pushWon != (st == http.StatusOK) || !pushWon && st != http.StatusConflict {
			t.Fatalf("round %d: the client got %v, the push answer HTTP %d", r, got.SelectedValue.Values, st)
		}
		var res, refused bool
		for !res || pushWon && !refused {
			m := ui.next(protocol.TypeInteractionResolved, protocol.TypeError)
			if m.Type == protocol.TypeError {
				if refused || !pushWon || m.ParentID != uiMsg.MessageID || m.Payload.(*protocol.Error).Code != protocol.CodeInteractionSettled {
					t.Fatalf("round %d: the UI got %s", r, describe(m))
				}
				refused = true
				continue
			}
			if rv := m.Payload.(*protocol.InteractionResolved); res || rv.InteractionID != id || (rv.SelectedValue.Values[0] == protocol.Deny) != pushWon {
				t.Fatalf("round %d: resolved %s", r, describe(m))
			}
			res = true
		}
		if pushWon {
			wins["push on node 2"]++
		} else {
			wins["UI on node 1"]++
		}
		clientSync(ui, c, sid) // the loser was not forwarded
	}
	t.Logf("wins: %v", wins)
}

// TestTimeoutTakenOverByAnotherNode: node 1 holds the client when a
// permission with a timeout is stored, then stops before the deadline.
// Node 2 had loaded the session before the permission existed; when the
// client reconnects to it, it picks the open permission up from the store
// and times it out: the client gets control.interaction.timeout.
func TestTimeoutTakenOverByAnotherNode(t *testing.T) {
	t.Parallel()
	br := broker.NewMemory()
	t.Cleanup(func() { _ = br.Close() })
	e := newEnv(t, master.Config{Broker: br}) // node 2, the survivor
	n1 := startNode(t, master.Config{Store: e.st, Broker: br, OfflineGrace: 200 * time.Millisecond, PingInterval: time.Minute})
	srv1 := httptest.NewServer(n1.Handler())
	t.Cleanup(srv1.Close)

	ui := e.dialUI("node 2")
	c := e.connectClientAt("ws"+strings.TrimPrefix(srv1.URL, "http")+"/v1/client", testCaps("m1"), ui)
	info, _ := startSession(ui, c) // loaded on node 2 from here on
	subscribe(ui, info.ID, 1, info.Epoch)
	turnStart(c, prompt(ui, c, info.ID, "go"), "t1")
	interaction(c, info.ID, "t1", "q1", 3000) // long enough to stop node 1 first
	events(ui, 3, 1)

	stopNode(t, n1) // before the deadline: its timer goes with it
	c.reconnect(ui) // to node 2
	if to := nextTimeout(t, c); to.InteractionID != "q1" {
		t.Fatalf("timeout for %q, want q1", to.InteractionID)
	}
	resolved(t, ui, "q1", "timeout")
}

// TestSilentNodeMachinesExpireOverNATS: node 1 loses its NATS connection
// for good (as a killed node does) while its client is connected; node 2
// shows the machine offline once the repeats stop, and online again when
// the client reconnects to node 2.
func TestSilentNodeMachinesExpireOverNATS(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t)
	connect := func(name string) *brokernats.Broker {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		b, err := brokernats.Connect(ctx, brokernats.Options{URL: srv.URL(), Name: name})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	const refresh = 300 * time.Millisecond
	b1 := connect("node 1")
	e := newEnv(t, master.Config{Broker: b1, PresenceRefresh: refresh})
	n2 := e.node(master.Config{Broker: connect("node 2"), PresenceRefresh: refresh})
	far := e.dialUIAt(n2.ui, "node 2")
	far.skip = nil
	e.connectClient(testCaps("m1"), nil)
	waitMachine(far, "m1", true)

	_ = b1.Close() // node 1 can no longer tell anyone anything
	waitMachine(far, "m1", false)
	e.connectClientAt(n2.client, testCaps("m1"), nil)
	waitMachine(far, "m1", true)
}

// TestSnapshotOnOtherNodeIsCurrent: node 2 loaded the session (it stored
// the prompt) but node 1 stored the turn. A UI on node 2 that needs a
// snapshot gets one with the whole turn and the store's last seq, and then
// the live events after it, none missing: node 2's copy of the session
// catches up with what node 1 stored.
func TestSnapshotOnOtherNodeIsCurrent(t *testing.T) {
	t.Parallel()
	k := startCluster(t, testCaps("m1"))
	c, far, sid := k.c, k.ui2, k.s.ID
	subscribe(far, sid, 1, k.s.Epoch)
	req := prompt(far, c, sid, "from node 2") // node 2 loads the session
	turnStart(c, req, "t1")
	delta(c, sid, "t1", "hello ")
	delta(c, sid, "t1", "world")
	c.emit(sid, protocol.TypeTextDone, &protocol.TextDone{TurnID: "t1", StopReason: protocol.StopEndTurn})
	evs := events(far, 5, 1)
	last := evs[len(evs)-1].Seq

	late := k.e.dialUIAt(k.n2.ui, "late UI on node 2")
	sub := subscribe(late, sid, 1, "another-epoch")
	if sub.Recovered || sub.Snapshot == nil {
		t.Fatalf("want a snapshot, got %+v", sub)
	}
	if sub.LastSeq != last {
		t.Fatalf("the snapshot is at seq %d, the store at %d", sub.LastSeq, last)
	}
	turns := sub.Snapshot.Turns
	if len(turns) != 1 || turns[0].TurnID != "t1" || !turns[0].Done || turns[0].Text != "hello world" || turns[0].Prompt != "from node 2" {
		t.Fatalf("node 2's snapshot has turns %+v, want t1 done with \"hello world\"", turns)
	}
	if sub.Snapshot.Session.State != protocol.SessionIdle {
		t.Fatalf("node 2's snapshot says the session is %s, want idle", sub.Snapshot.Session.State)
	}
	delta(c, sid, "t1", "after")
	if ev := events(late, 1, last)[0]; ev.Type != protocol.TypeTextDelta {
		t.Fatalf("the late UI got %s after the snapshot, want the next delta", ev.Type)
	}
}
