//go:build unix

package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/jackc/pgx/v5"

	"github.com/ferry-dev/ferry/internal/binarytest"
	"github.com/ferry-dev/ferry/internal/broker/nats/natstest"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/store/postgres"
	"github.com/ferry-dev/ferry/protocol"
)

// TestFailoverThreeNodes is issue 21's failover test, with real processes
// only: PostgreSQL, a nats-server, three `ferry serve` nodes behind a
// round-robin TCP proxy, and `ferry connect` running ferry's own agent on
// the fake model provider, dialling the proxy. One UI is connected
// directly to each node. While the agent streams a long turn, the node
// holding the client's connection is SIGKILLed: the client reconnects
// through the proxy to another node, the killed node's UI to another node
// (resuming from its epoch and last seq), and every UI must end with
// exactly the session's events as stored in PostgreSQL, in order, none
// lost or doubled, and the text the provider streamed. Then a permission
// answered from a UI on a node that does not hold the client lets the
// agent write a file, and a download link made on that node fetches the
// file's bytes from another node.
func TestFailoverThreeNodes(t *testing.T) {
	dsn := failoverDatabase(t) // first: dropped after every process is killed
	nats := natstest.Start(t)
	bin := binarytest.Build(t)
	start := time.Now()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	// The long turn: many text deltas over about three seconds.
	const pieces = 200
	long := make([]string, pieces)
	for i := range long {
		long[i] = fmt.Sprintf("p%03d ", i)
	}
	srv := stepModel(t,
		fake.Reply{Text: long, Delay: 15 * time.Millisecond},
		fake.Reply{Text: []string{"Writing report.txt."}, ToolCalls: []fake.ToolCall{{ID: "toolu_report", Name: "Write",
			Input: map[string]any{"file_path": "report.txt", "content": "written on another node\n"}}}},
		fake.Reply{Text: []string{"Done."}},
		fake.Reply{Text: []string{"Third."}},
	)
	env := append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_STATE_HOME="+filepath.Join(dir, "state"),
		"ANTHROPIC_BASE_URL="+srv.BaseURL(fake.Anthropic), "ANTHROPIC_API_KEY=test-key", "FERRY_PROVIDER=anthropic", "FERRY_MODEL=test-model",
		"OPENAI_API_KEY=", "OPENAI_BASE_URL=", "FERRY_NATS=", "FERRY_TOKEN=")
	uiToken := strings.TrimSpace(runFerry(t, bin, env, "token", "create", "--kind", "ui", "--db", dsn))
	clientToken := strings.TrimSpace(runFerry(t, bin, env, "token", "create", "--kind", "client", "--db", dsn))

	// Every node starts before the client connects: a node knows only the
	// presence it hears.
	nodes := make([]*process, 3)
	addrs := make([]string, 3)
	for i := range nodes {
		nodes[i] = startServe(t, bin, env, "serve", "--db", dsn, "--nats", nats.URL(), "--addr", freeAddr(t))
		addrs[i] = nodes[i].addr
	}
	px := newRoundRobin(t, addrs)
	cli := launch(t, bin, append(env, "FERRY_TOKEN="+clientToken), "connect", "--master", "http://"+px.addr(),
		"--workspace", ws, "--agent", "builtin", "--name", "test-machine", "--state", filepath.Join(dir, "client"))
	t.Cleanup(func() {
		if t.Failed() {
			for i, n := range nodes {
				t.Logf("node %d (%s) stderr:\n%s", i, n.addr, tail(n.errb.String()))
			}
			t.Logf("ferry connect stderr:\n%s", tail(cli.errb.String()))
		}
	})

	// The session is started from node 0, then one UI per node follows it.
	starter := (&system{t: t, addr: addrs[0], uiToken: uiToken}).ui()
	sess := starter.startAdapterSession("builtin")
	starter.close()
	uis := make([]*nodeUI, len(addrs))
	for i := range uis {
		uis[i] = followSession(t, fmt.Sprintf("ui%d", i), uiToken, sess.ID, addrs, i)
	}

	// Turn 1: the long stream, and SIGKILL of the client's node mid-stream.
	uis[0].prompt("tell a long story")
	uis[0].waitFor("a fifth of the deltas", func(ev []*protocol.Message) bool { return count(ev, protocol.TypeTextDelta) >= pieces/5 })
	killed := px.clientNode()
	if killed < 0 {
		t.Fatal("the proxy holds no client connection")
	}
	nodes[killed].kill(t)
	killedAt := time.Now()
	t.Logf("SIGKILL node %d (%s) after %d of %d deltas reached ui0", killed, addrs[killed], count(uis[0].snapshot(), protocol.TypeTextDelta), pieces)
	var done1 *protocol.TextDone
	for _, u := range uis {
		done1 = u.waitFor("the long turn's end", func(ev []*protocol.Message) bool { return count(ev, protocol.TypeTextDone) >= 1 }).doneOf(1)
	}
	if want := strings.Join(long, ""); done1.Text != want || done1.StopReason != protocol.StopEndTurn {
		t.Fatalf("the long turn ended %q (%s), want the %d pieces the provider streamed", done1.Text, done1.StopReason, pieces)
	}
	now := px.clientNode()
	if now < 0 || now == killed {
		t.Fatalf("after the kill the client is on node %d, want another live node than %d", now, killed)
	}
	stored := storedEvents(t, dsn, sess.ID)
	for _, u := range uis {
		u.matches(stored, done1.TurnID, strings.Join(long, ""))
	}
	if uis[killed].resumes() == 0 || uis[killed].node() == killed {
		t.Fatalf("the killed node's UI did not resume on another node (resumes %d, on node %d)", uis[killed].resumes(), uis[killed].node())
	}
	// How long the killed node's UI went without news: its reconnect and
	// the replay (the client's reconnect too, unless it was quicker).
	t.Logf("the killed node's UI got its first event on node %d %v after the kill",
		uis[killed].node(), uis[killed].firstResumed().Sub(killedAt).Round(time.Millisecond))
	t.Logf("the long turn: %d events stored, client moved from node %d to node %d, UI resumes %d/%d/%d, %v since start",
		len(stored), killed, now, uis[0].resumes(), uis[1].resumes(), uis[2].resumes(), time.Since(start).Round(time.Millisecond))

	// Turn 2: a permission answered on node a reaches the client on node
	// b; a link made on a downloads on b.
	a := 3 - killed - now // the third node: alive, without the client
	ua := uis[a]
	if ua.node() != a {
		t.Fatalf("ui%d moved to node %d; want it on node %d", a, ua.node(), a)
	}
	resumesBefore := ua.resumes()
	ua.prompt("write the report")
	req := ua.waitFor("the permission request", func(ev []*protocol.Message) bool { return count(ev, protocol.TypeInteractionRequest) >= 1 }).
		last(protocol.TypeInteractionRequest).Payload.(*protocol.InteractionRequest)
	ans := protocol.New(protocol.TypeInteractionResponse, &protocol.InteractionResponse{
		InteractionID: req.InteractionID, SelectedValue: protocol.Single(protocol.AllowOnce)})
	ans.SessionID = sess.ID
	ua.send(ans)
	done2 := ua.waitFor("the second turn's end", func(ev []*protocol.Message) bool { return count(ev, protocol.TypeTextDone) >= 2 }).doneOf(2)
	if done2.StopReason != protocol.StopEndTurn || done2.Text != "Writing report.txt.Done." {
		t.Fatalf("the write turn ended %+v", done2)
	}
	if ua.resumes() != resumesBefore || ua.node() != a {
		t.Fatalf("ui%d reconnected during the write turn (now on node %d): the answer may not have come from node %d", a, ua.node(), a)
	}
	written, err := os.ReadFile(filepath.Join(ws, "report.txt"))
	if err != nil || string(written) != "written on another node\n" {
		t.Fatalf("report.txt after the permission from node %d: %q, %v", a, written, err)
	}
	stored = storedEvents(t, dsn, sess.ID)
	for _, u := range uis {
		u.matches(stored, done1.TurnID, strings.Join(long, ""))
	}

	al := protocol.New(protocol.TypeArtifactsList, &protocol.ArtifactsList{})
	al.SessionID = sess.ID
	arts, ok := ua.request(al).Payload.(*protocol.Artifacts)
	if !ok || len(arts.Artifacts) != 1 || arts.Artifacts[0].Artifact.Path != "report.txt" {
		t.Fatalf("ui.artifacts.list on node %d: %+v", a, arts)
	}
	status, body := download(t, addrs[now], arts.Artifacts[0].DownloadURL, uiToken)
	if status != http.StatusOK || !bytes.Equal(body, written) {
		t.Fatalf("the link made on node %d, fetched from node %d: %d %q, want %q", a, now, status, body, written)
	}

	// Turn 3: a prompt in flight when the client's node dies. That node is
	// frozen (SIGSTOP) first, so it cannot relay anything: the prompt,
	// sent from node a and stored there, waits in the frozen node's socket
	// and dies with it (SIGKILL). The client reconnects to node a, which
	// sends it every prompt it has not answered; the turn runs once.
	held := px.clientNode()
	if held != now {
		t.Fatalf("the client moved from node %d to node %d between turns", now, held)
	}
	nodes[held].freeze(t)
	lost := ua.prompt("after the freeze")
	ua.waitFor("the third prompt stored on node "+fmt.Sprint(a), func(ev []*protocol.Message) bool {
		return slices.ContainsFunc(ev, func(m *protocol.Message) bool { return m.MessageID == lost })
	})
	nodes[held].kill(t)
	killedAt = time.Now()
	done3 := ua.waitFor("the third turn's end", func(ev []*protocol.Message) bool { return count(ev, protocol.TypeTextDone) >= 3 }).doneOf(3)
	t.Logf("the prompt held by the frozen node %d ran %v after its SIGKILL", held, time.Since(killedAt).Round(time.Millisecond))
	if done3.StopReason != protocol.StopEndTurn || done3.Text != "Third." {
		t.Fatalf("the third turn ended %+v", done3)
	}
	if px.clientNode() != a {
		t.Fatalf("after the second kill the client is on node %d, want node %d", px.clientNode(), a)
	}
	if !strings.Contains(nodes[a].errb.String(), "sending again a prompt the client has not answered") {
		t.Fatalf("node %d did not log sending the prompt again", a)
	}
	// Give a second delivery the time to show up, then count.
	time.Sleep(time.Second)
	stored = storedEvents(t, dsn, sess.ID)
	started := 0
	for _, m := range stored {
		if m.Type == protocol.TypeTurnStarted && m.ParentID == lost {
			started++
		}
	}
	if started != 1 || count(stored, protocol.TypeTurnStarted) != 3 {
		t.Fatalf("the prompt held by the killed node started %d turns (%d turns in all); want exactly one (three)",
			started, count(stored, protocol.TypeTurnStarted))
	}
	for _, u := range uis {
		u.matches(stored, done1.TurnID, strings.Join(long, ""))
	}
	t.Logf("failover test done in %v", time.Since(start).Round(time.Millisecond))
}

// failoverDatabase returns a DSN on a fresh schema of $FERRY_TEST_POSTGRES,
// dropped when the test ends; without a DSN the test skips (fails under
// FERRY_REQUIRE_POSTGRES=1), as the store's own tests do.
func failoverDatabase(t *testing.T) string {
	t.Helper()
	admin := os.Getenv("FERRY_TEST_POSTGRES")
	if admin == "" {
		if os.Getenv("FERRY_REQUIRE_POSTGRES") == "1" {
			t.Fatal("FERRY_REQUIRE_POSTGRES=1 but FERRY_TEST_POSTGRES is not set")
		}
		t.Skip("set FERRY_TEST_POSTGRES to a PostgreSQL DSN (bash internal/store/postgres/testdata/start-postgres.sh prints one; .ci/run sets it)")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "ferry_failover_" + hex.EncodeToString(b[:])
	run := func(sql string) error {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			return fmt.Errorf("connect: %w", err)
		}
		defer func() { _ = conn.Close(ctx) }()
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := run("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		if err := run("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	if strings.HasPrefix(admin, "postgres://") || strings.HasPrefix(admin, "postgresql://") {
		u, err := url.Parse(admin)
		if err != nil {
			t.Fatalf("FERRY_TEST_POSTGRES does not parse: %v", err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return admin + " search_path=" + schema
}

// storedEvents reads a session's events from PostgreSQL, decoded as a UI
// gets them.
func storedEvents(t *testing.T, dsn, sessionID string) []*protocol.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	st, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	evs, err := st.Events(ctx, sessionID, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*protocol.Message, len(evs))
	for i, e := range evs {
		m, err := protocol.DecodeRelayed(e.Data)
		if err != nil {
			t.Fatalf("stored event %d: %v", e.Seq, err)
		}
		m.Seq = e.Seq
		if m.MessageID != e.MessageID {
			t.Fatalf("stored event %d: message_id %q in the row, %q in the data", e.Seq, e.MessageID, m.MessageID)
		}
		out[i] = m
	}
	return out
}

// download fetches path on addr with the UI token as its login.
func download(t *testing.T, addr, path, login string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+login)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, body
}

// startServe runs `ferry serve` and waits until it says where it listens.
func startServe(t *testing.T, bin string, env []string, args ...string) *process {
	t.Helper()
	p := launch(t, bin, env, args...)
	p.waitAddr(t, "ferry master listening on http://", "\n")
	return p
}

func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}

func count(ev []*protocol.Message, ty string) int {
	n := 0
	for _, m := range ev {
		if m.Type == ty {
			n++
		}
	}
	return n
}

// seen is what a UI holds of the session at one moment.
type seen []*protocol.Message

// doneOf returns the n-th agent.text.done.
func (s seen) doneOf(n int) *protocol.TextDone {
	for _, m := range s {
		if d, ok := m.Payload.(*protocol.TextDone); ok {
			if n--; n == 0 {
				return d
			}
		}
	}
	return nil
}

func (s seen) last(ty string) *protocol.Message {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i].Type == ty {
			return s[i]
		}
	}
	return nil
}

// nodeUI is a UI's WebSocket that follows one session and, when its
// connection ends, connects again (to the same node first, else the next
// one that accepts) and resumes with ui.session.subscribe from its epoch
// and last seq, as the web UI does. It records every session event and
// every break of order.
type nodeUI struct {
	t       *testing.T
	name    string
	token   string
	session string
	nodes   []string
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
	answers chan *protocol.Message
	changed chan struct{} // signalled (without blocking) on every event

	mu     sync.Mutex
	conn   *websocket.Conn
	cur    int
	epoch  string
	events []*protocol.Message
	bad    []string
	subs   int
	// resumed is when the first event came on a connection after the first.
	resumed time.Time
}

func followSession(t *testing.T, name, token, sessionID string, nodes []string, first int) *nodeUI {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	u := &nodeUI{t: t, name: name, token: token, session: sessionID, nodes: nodes, ctx: ctx, cancel: cancel,
		done: make(chan struct{}), answers: make(chan *protocol.Message, 64), changed: make(chan struct{}, 1), cur: first}
	subscribed := make(chan struct{})
	go u.run(sync.OnceFunc(func() { close(subscribed) }))
	t.Cleanup(func() {
		u.cancel()
		<-u.done
	})
	select {
	case <-subscribed:
	case <-time.After(wait):
		t.Fatalf("%s: not subscribed within %s", name, wait)
	}
	return u
}

func (u *nodeUI) run(subscribed func()) {
	defer close(u.done)
	i, misses := u.cur, 0
	for u.ctx.Err() == nil {
		conn, err := u.dial(u.nodes[i])
		if err != nil {
			// A dead node refuses at once: try the next one.
			i, misses = (i+1)%len(u.nodes), misses+1
			select {
			case <-u.ctx.Done():
			case <-time.After(time.Duration(min(misses, 10)) * 20 * time.Millisecond):
			}
			continue
		}
		misses = 0
		u.follow(conn, i, subscribed)
	}
}

func (u *nodeUI) dial(addr string) (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(u.ctx, wait)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, "ws://"+addr+"/v1/ui", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + u.token}},
	})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	conn.SetReadLimit(protocol.MaxMessageBytes)
	return conn, nil
}

// follow subscribes on conn and records the session's events until the
// connection ends.
func (u *nodeUI) follow(conn *websocket.Conn, node int, subscribed func()) {
	defer func() { _ = conn.CloseNow() }()
	stop := context.AfterFunc(u.ctx, func() { _ = conn.Close(websocket.StatusNormalClosure, "") })
	defer stop()
	u.mu.Lock()
	after := uint64(0)
	if n := len(u.events); n > 0 {
		after = u.events[n-1].Seq
	}
	u.conn, u.cur, u.subs = conn, node, u.subs+1
	epoch := u.epoch
	u.mu.Unlock()
	sub := protocol.New(protocol.TypeSessionSubscribe, &protocol.SessionSubscribe{AfterSeq: after, Epoch: epoch})
	sub.SessionID = u.session
	if err := u.write(conn, sub); err != nil {
		return
	}
	for {
		_, data, err := conn.Read(u.ctx)
		if err != nil {
			return
		}
		m, err := protocol.DecodeRelayed(data)
		if err != nil {
			u.fail("undecodable message %v: %s", err, data)
			return
		}
		switch {
		case m.ParentID == sub.MessageID:
			s, ok := m.Payload.(*protocol.Subscribed)
			if !ok || (after > 0 && !s.Recovered) {
				u.fail("subscribing on node %d after seq %d answered %s %+v", node, after, m.Type, m.Payload)
				continue
			}
			u.mu.Lock()
			u.epoch = s.Epoch
			u.mu.Unlock()
			subscribed()
		case m.SessionID == u.session && m.Seq > 0:
			u.add(m)
		case m.ParentID != "":
			select {
			case u.answers <- m:
			default: // nobody waits for it
			}
		}
	}
}

func (u *nodeUI) write(conn *websocket.Conn, m *protocol.Message) error {
	data, err := protocol.Encode(m)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	ctx, cancel := context.WithTimeout(u.ctx, wait)
	defer cancel()
	if err := conn.Write(ctx, websocket.MessageText, data); err != nil {
		return fmt.Errorf("write %s: %w", m.Type, err)
	}
	return nil
}

// add records an event; anything but the next seq breaks the order.
func (u *nodeUI) add(m *protocol.Message) {
	u.mu.Lock()
	last := uint64(0)
	if n := len(u.events); n > 0 {
		last = u.events[n-1].Seq
	}
	if m.Seq != last+1 {
		u.bad = append(u.bad, fmt.Sprintf("seq %d (%s) after seq %d", m.Seq, m.Type, last))
	} else {
		u.events = append(u.events, m)
	}
	if u.subs > 1 && u.resumed.IsZero() {
		u.resumed = time.Now()
	}
	u.mu.Unlock()
	select {
	case u.changed <- struct{}{}:
	default:
	}
}

func (u *nodeUI) fail(format string, args ...any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.bad = append(u.bad, fmt.Sprintf(format, args...))
}

func (u *nodeUI) snapshot() seen {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append(seen(nil), u.events...)
}

func (u *nodeUI) node() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.cur
}

// firstResumed is when the first event came after a reconnect (zero:
// none yet).
func (u *nodeUI) firstResumed() time.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.resumed
}

// resumes is how many times the UI subscribed again.
func (u *nodeUI) resumes() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.subs - 1
}

// waitFor waits until cond holds for the events so far and returns them.
func (u *nodeUI) waitFor(what string, cond func([]*protocol.Message) bool) seen {
	u.t.Helper()
	deadline := time.After(wait)
	for {
		ev := u.snapshot()
		if cond(ev) {
			return ev
		}
		select {
		case <-u.changed:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			u.mu.Lock()
			bad := u.bad
			u.mu.Unlock()
			u.t.Fatalf("%s: no %s within %s (%d events, on node %d, order breaks %q)", u.name, what, wait, len(ev), u.node(), bad)
		}
	}
}

// send writes m on the current connection.
func (u *nodeUI) send(m *protocol.Message) {
	u.t.Helper()
	u.mu.Lock()
	conn := u.conn
	u.mu.Unlock()
	if err := u.write(conn, m); err != nil {
		u.t.Fatalf("%s: %v", u.name, err)
	}
}

// request sends m and returns the answer whose parent_id is m's id.
func (u *nodeUI) request(m *protocol.Message) *protocol.Message {
	u.t.Helper()
	u.send(m)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case r := <-u.answers:
			if r.ParentID == m.MessageID {
				return r
			}
		case <-timer.C:
			u.t.Fatalf("%s: no answer to %s within %s", u.name, m.Type, wait)
			return nil
		}
	}
}

// prompt sends a prompt and returns its message_id.
func (u *nodeUI) prompt(s string) string {
	u.t.Helper()
	m := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{Segments: []protocol.PromptSegment{text(s)}})
	m.SessionID = u.session
	u.send(m)
	return m.MessageID
}

// matches fails the test unless the UI holds exactly the stored events
// (seq, message_id and type, in order) and the deltas of turnID assemble
// text.
func (u *nodeUI) matches(stored []*protocol.Message, turnID, text string) {
	u.t.Helper()
	ev := u.waitFor(fmt.Sprintf("all %d stored events", len(stored)), func(ev []*protocol.Message) bool { return len(ev) >= len(stored) })
	u.mu.Lock()
	bad := u.bad
	u.mu.Unlock()
	if len(bad) > 0 {
		u.t.Fatalf("%s: order broken: %q", u.name, bad)
	}
	if len(ev) != len(stored) {
		u.t.Fatalf("%s: %d events, %d stored", u.name, len(ev), len(stored))
	}
	var sb strings.Builder
	for i, m := range ev {
		if m.Seq != stored[i].Seq || m.MessageID != stored[i].MessageID || m.Type != stored[i].Type {
			u.t.Fatalf("%s: event %d is seq %d %s %s; stored: seq %d %s %s", u.name, i, m.Seq, m.Type, m.MessageID, stored[i].Seq, stored[i].Type, stored[i].MessageID)
		}
		if d, ok := m.Payload.(*protocol.TextDelta); ok && d.TurnID == turnID && d.Channel != "thinking" {
			sb.WriteString(d.Delta)
		}
	}
	if got := sb.String(); got != text {
		u.t.Fatalf("%s: the deltas of turn %s assemble %q, want %q", u.name, turnID, got, text)
	}
}

// roundRobin is a TCP proxy that sends each new connection to the next
// node that accepts it (a killed node refuses, and is skipped) and
// remembers which node holds the client's WebSocket.
type roundRobin struct {
	ln    net.Listener
	nodes []string
	mu    sync.Mutex
	next  int
	// client is the node of the newest GET /v1/client still open; -1: none.
	client     int
	clientConn net.Conn
	conns      map[net.Conn]bool
}

func newRoundRobin(t *testing.T, nodes []string) *roundRobin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &roundRobin{ln: ln, nodes: nodes, client: -1, conns: map[net.Conn]bool{}}
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *roundRobin) addr() string { return p.ln.Addr().String() }

func (p *roundRobin) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *roundRobin) forward(c net.Conn) {
	p.mu.Lock()
	first := p.next
	p.next = (p.next + 1) % len(p.nodes)
	p.mu.Unlock()
	var (
		up   net.Conn
		node int
		err  error
	)
	for i := range p.nodes {
		node = (first + i) % len(p.nodes)
		if up, err = net.DialTimeout("tcp", p.nodes[node], 2*time.Second); err == nil {
			break
		}
	}
	if err != nil {
		_ = c.Close()
		return
	}
	// The request line says whether this is the client's WebSocket.
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(wait))
	head, _ := br.Peek(len("GET /v1/client"))
	_ = c.SetReadDeadline(time.Time{})
	isClient := string(head) == "GET /v1/client"
	p.mu.Lock()
	if p.conns == nil { // closed
		p.mu.Unlock()
		_ = c.Close()
		_ = up.Close()
		return
	}
	p.conns[c], p.conns[up] = true, true
	if isClient {
		p.client, p.clientConn = node, c
	}
	p.mu.Unlock()
	go func() {
		_, _ = io.Copy(up, br)
		_ = up.Close()
		_ = c.Close()
	}()
	_, _ = io.Copy(c, up)
	_ = up.Close()
	_ = c.Close()
	p.mu.Lock()
	if p.clientConn == c {
		p.client, p.clientConn = -1, nil
	}
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// clientNode is the node holding the client's connection, or -1.
func (p *roundRobin) clientNode() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.client
}

func (p *roundRobin) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}
