// Command relay is the load benchmark of the live system. It builds the
// ferry binary and starts `ferry serve` child processes in three setups —
// one node on a fresh SQLite file, one node on a fresh PostgreSQL database
// (-postgres, default $FERRY_TEST_POSTGRES), and two nodes on one fresh
// PostgreSQL database sharing a nats-server it starts on a free loopback
// port (-nats-server, default $FERRY_TEST_NATS_SERVER) — and drives them
// over loopback WebSockets with simulated clients and UIs speaking the real
// protocol:
//
//   - latency: one client streams agent.text.delta events of 1 KB at each
//     of -rates (default 1,000 and 5,000/s) for -duration; one subscribed UI
//     times each event from the client's write to the UI's read (one
//     process, one monotonic clock), so the figure is what the relay adds:
//     decode, persist, fan out (across nodes: through NATS), encode. With
//     two nodes the client is on node 1 and the UI on node 2;
//   - idle connections (SQLite node; -idle 0 skips): it opens N
//     authenticated UI connections and reads the master's resident memory
//     before and after;
//   - resume (SQLite node; -resume 0 skips): a UI subscribes from 1,000
//     events back and times the replay until it is live again.
//
// -before DIR builds a second ferry from another source tree and measures
// every setup with both builds in turn, so before/after ratios come from
// one run. Everything is bounded by count and time. See bench/README.md.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/jackc/pgx/v5"

	"github.com/ferry-dev/ferry/protocol"
)

func main() {
	repo := flag.String("repo", "..", "ferry's module root, to build cmd/ferry")
	rates := flag.String("rates", "1000,5000", "events per second of the latency runs, comma-separated")
	dur := flag.Duration("duration", 10*time.Second, "length of each latency run")
	size := flag.Int("size", 1024, "bytes of text per event")
	idle := flag.Int("idle", 10000, "idle UI connections to open on the SQLite node (0: skip)")
	resume := flag.Int("resume", 1000, "missed events to resume on the SQLite node (0: skip)")
	natsBin := flag.String("nats-server", os.Getenv("FERRY_TEST_NATS_SERVER"),
		"nats-server binary for the two-node setup (default $FERRY_TEST_NATS_SERVER; empty: skip it)")
	pgDSN := flag.String("postgres", os.Getenv("FERRY_TEST_POSTGRES"),
		"PostgreSQL DSN whose server gets a fresh database per run (default $FERRY_TEST_POSTGRES; empty: skip the PostgreSQL setups)")
	before := flag.String("before", "", "another ferry source `DIR` (an older commit's tree) to measure in the same run: each setup with both builds in turn")
	setups := flag.String("setups", "sqlite,postgres,cluster", "setups to measure: sqlite, postgres (one node), cluster (two nodes over NATS on PostgreSQL)")
	flag.Parse()
	var rs []int
	for f := range strings.SplitSeq(*rates, ",") {
		r, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || r < 1 {
			fmt.Fprintf(os.Stderr, "relay: -rates: %q is not a positive number\n", f)
			os.Exit(2)
		}
		rs = append(rs, r)
	}
	o := options{repo: *repo, rates: rs, dur: *dur, size: *size, idle: *idle, resume: *resume,
		natsBin: *natsBin, pgDSN: *pgDSN, setups: strings.Split(*setups, ","), before: *before}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		os.Exit(1)
	}
}

type options struct {
	repo           string
	rates          []int
	dur            time.Duration
	size           int
	idle, resume   int
	natsBin, pgDSN string
	setups         []string
	before         string
}

// node is one `ferry serve` child process.
type node struct {
	cmd  *exec.Cmd
	base string
}

// master is one setup under test: one or more nodes on one database, with
// the tokens its peers use.
type master struct {
	name     string
	nodes    []*node
	uiToken  string
	cliToken string
	cleanup  []func()
}

func (m *master) close() {
	for _, n := range m.nodes {
		_ = n.cmd.Process.Kill()
		_ = n.cmd.Wait()
	}
	for i := len(m.cleanup) - 1; i >= 0; i-- {
		m.cleanup[i]()
	}
}

// result is one latency run.
type result struct {
	setup                string
	rate, events         int
	achieved             float64
	p50, p90, p99, worst float64 // ms
}

func run(o options) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "ferry-relay-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	type build struct{ name, src, bin string }
	builds := []build{{"", o.repo, filepath.Join(dir, "ferry")}}
	if o.before != "" {
		builds = []build{{"before", o.before, filepath.Join(dir, "ferry-before")}, {"after", o.repo, builds[0].bin}}
	}
	for _, b := range builds {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", b.bin, "./cmd/ferry") //nolint:gosec // the bench's own build
		cmd.Dir = b.src
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build ferry in %s: %w", b.src, err)
		}
	}
	var results []result
	for i, name := range o.setups {
		name = strings.TrimSpace(name)
		for _, b := range builds {
			label := setupName(name)
			if b.name != "" {
				label += ", " + b.name
			}
			rs, err := runSetup(ctx, o, name, label, b.bin, filepath.Join(dir, fmt.Sprintf("ferry-%d-%s.db", i, b.name)))
			results = append(results, rs...)
			if err != nil {
				return fmt.Errorf("%s: %w", label, err)
			}
		}
	}
	fmt.Printf("\n## Relay latency, %d B events for %s per rate, client → master → UI\n\n", o.size, o.dur)
	fmt.Printf("| setup | rate | events | achieved | p50 | p90 | p99 | max |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		fmt.Printf("| %s | %d/s | %d | %.0f/s | %.2f ms | %.2f ms | %.2f ms | %.2f ms |\n",
			r.setup, r.rate, r.events, r.achieved, r.p50, r.p90, r.p99, r.worst)
	}
	return nil
}

// runSetup starts one setup with the ferry binary bin, measures it and
// stops it; sqliteFile is the database of the sqlite setup.
func runSetup(ctx context.Context, o options, name, label, bin, sqliteFile string) ([]result, error) {
	var (
		m   *master
		err error
	)
	switch name {
	case "sqlite":
		m, err = startSetup(ctx, bin, sqliteFile, "", 1)
	case "postgres", "cluster":
		if o.pgDSN == "" {
			fmt.Fprintf(os.Stderr, "relay: skipping %s: no -postgres DSN (set FERRY_TEST_POSTGRES, e.g. with internal/store/postgres/testdata/start-postgres.sh)\n", name)
			return nil, nil
		}
		nodes, natsURL := 1, ""
		var stopNATS func()
		if name == "cluster" {
			if o.natsBin == "" {
				fmt.Fprintln(os.Stderr, "relay: skipping cluster: no -nats-server binary (set FERRY_TEST_NATS_SERVER)")
				return nil, nil
			}
			if natsURL, stopNATS, err = startNATS(ctx, o.natsBin); err != nil {
				return nil, err
			}
			nodes = 2
		}
		var (
			db   string
			drop func()
		)
		db, drop, err = freshDatabase(ctx, o.pgDSN)
		if err != nil {
			if stopNATS != nil {
				stopNATS()
			}
			return nil, err
		}
		m, err = startSetup(ctx, bin, db, natsURL, nodes)
		if m != nil {
			m.cleanup = append(m.cleanup, drop)
			if stopNATS != nil {
				m.cleanup = append(m.cleanup, stopNATS)
			}
		} else {
			drop()
			if stopNATS != nil {
				stopNATS()
			}
		}
	default:
		return nil, fmt.Errorf("unknown setup %q", name)
	}
	if err != nil {
		return nil, err
	}
	defer m.close()
	m.name = label
	rs, err := measure(ctx, m, o)
	if err == nil && name == "sqlite" {
		err = extras(ctx, m, o)
	}
	return rs, err
}

func setupName(s string) string {
	switch s {
	case "sqlite":
		return "one node, SQLite"
	case "postgres":
		return "one node, PostgreSQL"
	}
	return "two nodes, PostgreSQL + NATS (client on 1, UI on 2)"
}

// measure opens a session with the client on the first node and the UI on
// the last, then runs the latency measure at each rate.
func measure(ctx context.Context, m *master, o options) ([]result, error) {
	cli, err := dialClient(ctx, m, m.nodes[0])
	if err != nil {
		return nil, err
	}
	defer func() { _ = cli.conn.CloseNow() }()
	ui, err := dialUI(ctx, m, m.nodes[len(m.nodes)-1])
	if err != nil {
		return nil, err
	}
	defer func() { _ = ui.conn.CloseNow() }()
	sessionID, err := ui.startSession(ctx, cli)
	if err != nil {
		return nil, err
	}
	var out []result
	for _, rate := range o.rates {
		r, err := latency(ctx, cli, ui, sessionID, rate, o.dur, o.size)
		if err != nil {
			return out, fmt.Errorf("%d/s: %w", rate, err)
		}
		r.setup = m.name
		fmt.Printf("%s, %d/s: p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", m.name, rate, r.p50, r.p99, r.worst)
		out = append(out, r)
	}
	return out, nil
}

// extras runs the resume and idle-connection measures on the single node.
func extras(ctx context.Context, m *master, o options) error {
	if o.resume > 0 {
		cli, err := dialClient(ctx, m, m.nodes[0])
		if err != nil {
			return err
		}
		defer func() { _ = cli.conn.CloseNow() }()
		ui, err := dialUI(ctx, m, m.nodes[0])
		if err != nil {
			return err
		}
		sessionID, err := ui.startSession(ctx, cli)
		_ = ui.conn.CloseNow()
		if err != nil {
			return err
		}
		fmt.Printf("\n## Resume of %d missed events (%s)\n\n", o.resume, m.name)
		if err := resume(ctx, m, cli, sessionID, o.resume, o.size); err != nil {
			return err
		}
	}
	if o.idle > 0 {
		fmt.Printf("\n## %d idle UI connections (%s)\n\n", o.idle, m.name)
		return idleConns(ctx, m, o.idle)
	}
	return nil
}

// startSetup creates the tokens in db and starts n nodes on it (sharing
// natsURL when there are several).
func startSetup(ctx context.Context, bin, db, natsURL string, n int) (*master, error) {
	token := func(kind string) (string, error) {
		out, err := exec.CommandContext(ctx, bin, "token", "create", //nolint:gosec // the ferry the bench built
			"--db", db, "--kind", kind, "--name", "relay bench").Output()
		return strings.TrimSpace(string(out)), err
	}
	m := &master{}
	var err error
	if m.uiToken, err = token("ui"); err != nil {
		return nil, fmt.Errorf("create ui token: %w", err)
	}
	if m.cliToken, err = token("client"); err != nil {
		return nil, fmt.Errorf("create client token: %w", err)
	}
	for range n {
		nd, err := startNode(ctx, bin, db, natsURL)
		if err != nil {
			m.close()
			return nil, err
		}
		m.nodes = append(m.nodes, nd)
	}
	return m, nil
}

func startNode(ctx context.Context, bin, db, natsURL string) (*node, error) {
	args := []string{"serve", "--addr", "127.0.0.1:0", "--db", db}
	if natsURL != "" {
		args = append(args, "--nats", natsURL)
	}
	nd := &node{cmd: exec.CommandContext(ctx, bin, args...)} //nolint:gosec // the ferry the bench built
	nd.cmd.Env = append(os.Environ(), "GOMAXPROCS=2")
	out, err := nd.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	nd.cmd.Stderr = os.Stderr
	if err := nd.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start ferry serve: %w", err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if _, addr, ok := strings.Cut(sc.Text(), "listening on "); ok {
			nd.base = strings.TrimPrefix(strings.TrimSpace(addr), "http://")
			break
		}
	}
	if nd.base == "" {
		_ = nd.cmd.Process.Kill()
		_ = nd.cmd.Wait()
		return nil, errors.New("ferry serve did not say where it listens")
	}
	go func() {
		for sc.Scan() { // keep draining so the child never blocks on stdout
		}
	}()
	return nd, nil
}

// startNATS runs nats-server on a free loopback port until stop.
func startNATS(ctx context.Context, bin string) (url string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := l.Addr().String()
	_ = l.Close()
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.CommandContext(ctx, bin, "-a", host, "-p", port) //nolint:gosec // the nats-server the user named
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start nats-server: %w", err)
	}
	stop = func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			return "nats://" + addr, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("nats-server did not listen on %s: %w", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freshDatabase creates an empty database on dsn's server and returns its
// DSN and a function that drops it.
func freshDatabase(ctx context.Context, dsn string) (string, func(), error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", nil, fmt.Errorf("-postgres: %w", err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	name := "ferry_relay_" + strings.ToLower(protocol.NewID()[:12])
	name = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, name)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		_ = conn.Close(ctx)
		return "", nil, fmt.Errorf("create database: %w", err)
	}
	u.Path = "/" + name
	drop := func() {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := conn.Exec(c, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			fmt.Fprintf(os.Stderr, "relay: drop database %s: %v\n", name, err)
		}
		_ = conn.Close(c)
	}
	return u.String(), drop, nil
}

// peer is one WebSocket speaking the protocol; reads go to in.
type peer struct {
	conn *websocket.Conn
	in   chan *protocol.Message
	mu   sync.Mutex // serialises writes
	// onRead, if set, sees every message as it is read (before in).
	onRead atomic.Pointer[func(*protocol.Message, time.Time)]
	// onRaw, if set, sees every message undecoded first; true consumes it
	// (the latency run reads only the message_id, so that the bench's own
	// JSON work does not take CPU from the master it measures).
	onRaw atomic.Pointer[func([]byte, time.Time) bool]
}

func dial(ctx context.Context, url, token string) (*peer, error) {
	conn, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	conn.SetReadLimit(protocol.MaxMessageBytes)
	p := &peer{conn: conn, in: make(chan *protocol.Message, 1<<16)}
	go func() { //nolint:gosec // the reader outlives dial's ctx: it ends with the connection
		for {
			_, data, err := conn.Read(context.Background())
			if err != nil {
				close(p.in)
				return
			}
			now := time.Now()
			if f := p.onRaw.Load(); f != nil && (*f)(data, now) {
				continue
			}
			msg, err := protocol.DecodeRelayed(data)
			if err != nil {
				fmt.Fprintf(os.Stderr, "undecodable message: %v\n", err)
				continue
			}
			if f := p.onRead.Load(); f != nil {
				(*f)(msg, now)
				continue
			}
			p.in <- msg
		}
	}()
	return p, nil
}

func (p *peer) send(ctx context.Context, m *protocol.Message) error {
	data, err := protocol.Encode(m)
	if err != nil {
		return err
	}
	return p.sendRaw(ctx, data)
}

func (p *peer) sendRaw(ctx context.Context, data []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conn.Write(ctx, websocket.MessageText, data)
}

func (p *peer) await(ctx context.Context, match func(*protocol.Message) bool) (*protocol.Message, error) {
	for {
		select {
		case m, ok := <-p.in:
			if !ok {
				return nil, errors.New("connection closed")
			}
			if match(m) {
				return m, nil
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

const machineName = "relay-bench"

func dialClient(ctx context.Context, m *master, n *node) (*peer, error) {
	p, err := dial(ctx, "ws://"+n.base+"/v1/client", m.cliToken)
	if err != nil {
		return nil, err
	}
	caps := protocol.New(protocol.TypeCapabilities, &protocol.Capabilities{
		ProtocolVersion: 1,
		Client:          protocol.ClientInfo{Name: "relay-bench", Version: "0"},
		Machine:         &protocol.MachineInfo{ID: "relay-bench-machine", Name: machineName},
		Workspaces:      []protocol.Workspace{{ID: "ws", Name: "ws", Path: "/tmp"}},
		Adapters: []protocol.AdapterCapability{{ID: "bench", Name: "bench", Modes: []string{"default"},
			InputTypes: []string{"text"}, Cancel: true, FileTokens: "literal"}},
		Messages: []string{protocol.TypeSessionOpen, protocol.TypePromptRequest, protocol.TypePromptCancel},
	})
	return p, p.send(ctx, caps)
}

func dialUI(ctx context.Context, m *master, n *node) (*peer, error) {
	return dial(ctx, "ws://"+n.base+"/v1/ui", m.uiToken)
}

// startSession opens a session from the UI, answering the master's
// control.session.open on the client side, and subscribes to it.
func (p *peer) startSession(ctx context.Context, cli *peer) (string, error) {
	var machineID, wsID string
	for machineID == "" {
		list := protocol.New(protocol.TypeMachinesList, &protocol.MachinesList{})
		if err := p.send(ctx, list); err != nil {
			return "", err
		}
		r, err := p.await(ctx, func(m *protocol.Message) bool { return m.ParentID == list.MessageID })
		if err != nil {
			return "", err
		}
		for _, mc := range r.Payload.(*protocol.Machines).Machines {
			if mc.Online && mc.Name == machineName {
				machineID, wsID = mc.ID, mc.Workspaces[0].ID
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := protocol.New(protocol.TypeSessionStart, &protocol.SessionStart{MachineID: machineID, WorkspaceID: wsID, Adapter: "bench"})
	if err := p.send(ctx, start); err != nil {
		return "", err
	}
	open, err := cli.await(ctx, func(m *protocol.Message) bool { return m.Type == protocol.TypeSessionOpen })
	if err != nil {
		return "", err
	}
	if err := cli.send(ctx, open.Reply(protocol.TypeSessionOpened, &protocol.SessionOpened{Adapter: "bench", Mode: "default"})); err != nil {
		return "", err
	}
	r, err := p.await(ctx, func(m *protocol.Message) bool { return m.ParentID == start.MessageID })
	if err != nil {
		return "", err
	}
	ans, ok := r.Payload.(*protocol.SessionAnswer)
	if !ok {
		return "", fmt.Errorf("session start answered %s", r.Type)
	}
	sub := protocol.New(protocol.TypeSessionSubscribe, &protocol.SessionSubscribe{})
	sub.SessionID = ans.Session.ID
	if err := p.send(ctx, sub); err != nil {
		return "", err
	}
	if _, err := p.await(ctx, func(m *protocol.Message) bool { return m.ParentID == sub.MessageID }); err != nil {
		return "", err
	}
	return ans.Session.ID, nil
}

// openTurn sends a prompt from the UI and answers it with agent.turn.started
// on the client, returning the turn id.
func openTurn(ctx context.Context, cli, ui *peer, sessionID string) (string, error) {
	p := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{Segments: []protocol.PromptSegment{{Kind: protocol.SegmentText, Text: "go"}}})
	p.SessionID = sessionID
	if err := ui.send(ctx, p); err != nil {
		return "", err
	}
	req, err := cli.await(ctx, func(m *protocol.Message) bool { return m.Type == protocol.TypePromptRequest })
	if err != nil {
		return "", err
	}
	turn := "turn-" + protocol.NewID()[:8]
	return turn, cli.send(ctx, req.Reply(protocol.TypeTurnStarted, &protocol.TurnStarted{TurnID: turn, InputType: "text", Mode: "default"}))
}

func closeTurn(ctx context.Context, cli *peer, sessionID, turn string) error {
	done := protocol.New(protocol.TypeTextDone, &protocol.TextDone{TurnID: turn, StopReason: "end_turn"})
	done.SessionID = sessionID
	return cli.send(ctx, done)
}

func latency(ctx context.Context, cli, ui *peer, sessionID string, rate int, dur time.Duration, size int) (result, error) {
	turn, err := openTurn(ctx, cli, ui, sessionID)
	if err != nil {
		return result{}, err
	}
	n := int(dur.Seconds() * float64(rate))
	var (
		mu      sync.Mutex
		sent    = make(map[string]time.Time, n)
		lat     = make([]time.Duration, 0, n)
		all     = make(chan struct{})
		waiting = n
	)
	idKey := []byte(`"message_id":"`)
	f := func(data []byte, at time.Time) bool {
		i := bytes.Index(data, idKey)
		if i < 0 || len(data) < i+len(idKey)+36 {
			return true
		}
		id := data[i+len(idKey) : i+len(idKey)+36]
		mu.Lock()
		defer mu.Unlock()
		if t0, ok := sent[string(id)]; ok {
			lat = append(lat, at.Sub(t0))
			delete(sent, string(id))
			waiting--
			if waiting == 0 {
				close(all)
			}
		}
		return true
	}
	ui.onRaw.Store(&f)
	defer ui.onRaw.Store(nil)
	// One encoding, then only the message_id changes: the client's side
	// costs little CPU, which the master on the same cores needs.
	tmpl := protocol.New(protocol.TypeTextDelta, &protocol.TextDelta{TurnID: turn, Delta: strings.Repeat("x", size)})
	tmpl.SessionID = sessionID
	frame, err := protocol.Encode(tmpl)
	if err != nil {
		return result{}, err
	}
	at := bytes.Index(frame, []byte(tmpl.MessageID))
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for i := range n {
		// Paced by the wall clock, so a slow write does not lower the rate.
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		id := protocol.NewID()
		data := slices.Clone(frame)
		copy(data[at:], id)
		mu.Lock()
		sent[id] = time.Now()
		mu.Unlock()
		if err := cli.sendRaw(ctx, data); err != nil {
			return result{}, err
		}
	}
	elapsed := time.Since(start)
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		return result{}, fmt.Errorf("%d of %d events never reached the UI", waiting, n)
	}
	if err := closeTurn(ctx, cli, sessionID, turn); err != nil {
		return result{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / 1e6 }
	return result{rate: rate, events: len(lat), achieved: float64(n) / elapsed.Seconds(),
		p50: q(0.5), p90: q(0.9), p99: q(0.99), worst: q(1)}, nil
}

func resume(ctx context.Context, m *master, cli *peer, sessionID string, n, size int) error {
	ui, err := dialUI(ctx, m, m.nodes[0])
	if err != nil {
		return err
	}
	defer func() { _ = ui.conn.Close(websocket.StatusNormalClosure, "") }()
	// Find where the session is, then produce n events nobody watches.
	sub := protocol.New(protocol.TypeSessionSubscribe, &protocol.SessionSubscribe{})
	sub.SessionID = sessionID
	if err := ui.send(ctx, sub); err != nil {
		return err
	}
	r, err := ui.await(ctx, func(x *protocol.Message) bool { return x.ParentID == sub.MessageID })
	if err != nil {
		return err
	}
	_ = ui.conn.Close(websocket.StatusNormalClosure, "")
	before := r.Payload.(*protocol.Subscribed)
	watcher, err := dialUI(ctx, m, m.nodes[0])
	if err != nil {
		return err
	}
	turn, err := openTurn(ctx, cli, watcher, sessionID)
	if err != nil {
		return err
	}
	_ = watcher.conn.Close(websocket.StatusNormalClosure, "")
	text := strings.Repeat("y", size)
	var lastID string
	for range n {
		d := protocol.New(protocol.TypeTextDelta, &protocol.TextDelta{TurnID: turn, Delta: text})
		d.SessionID = sessionID
		lastID = d.MessageID
		if err := cli.send(ctx, d); err != nil {
			return err
		}
	}
	// Wait until the master persisted the last one.
	if _, err := cli.await(ctx, func(x *protocol.Message) bool {
		a, ok := x.Payload.(*protocol.Ack)
		return ok && a.Through == lastID
	}); err != nil {
		return fmt.Errorf("wait for ack: %w", err)
	}
	ui, err = dialUI(ctx, m, m.nodes[0])
	if err != nil {
		return err
	}
	after := before.LastSeq + 2 // the prompt and turn.started came first
	start := time.Now()
	sub = protocol.New(protocol.TypeSessionSubscribe, &protocol.SessionSubscribe{AfterSeq: after, Epoch: before.Epoch})
	sub.SessionID = sessionID
	if err := ui.send(ctx, sub); err != nil {
		return err
	}
	got := 0
	var first time.Duration
	if _, err := ui.await(ctx, func(x *protocol.Message) bool {
		if x.Type == protocol.TypeTextDelta && x.Seq > after {
			if got == 0 {
				first = time.Since(start)
			}
			got++
		}
		return got == n
	}); err != nil {
		return err
	}
	total := time.Since(start)
	// Live again: a new event arrives right after the replay.
	live := protocol.New(protocol.TypeTextDelta, &protocol.TextDelta{TurnID: turn, Delta: "live"})
	live.SessionID = sessionID
	t0 := time.Now()
	if err := cli.send(ctx, live); err != nil {
		return err
	}
	if _, err := ui.await(ctx, func(x *protocol.Message) bool { return x.MessageID == live.MessageID }); err != nil {
		return err
	}
	liveLat := time.Since(t0)
	if err := closeTurn(ctx, cli, sessionID, turn); err != nil {
		return err
	}
	fmt.Printf("| missed events | first replayed | all replayed | next live event |\n|---:|---:|---:|---:|\n")
	fmt.Printf("| %d | %.2f ms | %.2f ms | %.2f ms |\n", got, float64(first)/1e6, float64(total)/1e6, float64(liveLat)/1e6)
	return nil
}

func rss(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, errors.New("no VmRSS")
}

func idleConns(ctx context.Context, m *master, n int) error {
	pid := m.nodes[0].cmd.Process.Pid
	// Let the master settle after the earlier runs.
	time.Sleep(2 * time.Second)
	base, err := rss(pid)
	if err != nil {
		return err
	}
	conns := make([]*websocket.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			_ = c.CloseNow()
		}
	}()
	start := time.Now()
	for i := range n {
		c, resp, err := websocket.Dial(ctx, "ws://"+m.nodes[0].base+"/v1/ui", &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + m.uiToken}}})
		if resp != nil && resp.Body != nil {
			_ = resp.Body.Close()
		}
		if err != nil {
			return fmt.Errorf("connection %d: %w", i, err)
		}
		conns = append(conns, c)
	}
	opened := time.Since(start)
	time.Sleep(3 * time.Second)
	after, err := rss(pid)
	if err != nil {
		return err
	}
	// Every connection must still be alive: ask each one something small.
	alive := 0
	for _, c := range conns[:min(len(conns), 200)] {
		l := protocol.New(protocol.TypeMachinesList, &protocol.MachinesList{})
		data, _ := protocol.Encode(l)
		if c.Write(ctx, websocket.MessageText, data) == nil {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if _, _, err := c.Read(rctx); err == nil {
				alive++
			}
			cancel()
		}
	}
	per := float64(after-base) / float64(n)
	fmt.Printf("| connections | opened in | master RSS before | after | per connection | sampled alive |\n|---:|---:|---:|---:|---:|---:|\n")
	fmt.Printf("| %d | %.1f s | %.1f MB | %.1f MB | %.1f KB | %d/%d |\n", n, opened.Seconds(), float64(base)/1e6, float64(after)/1e6, per/1024, alive, min(len(conns), 200))
	return nil
}
