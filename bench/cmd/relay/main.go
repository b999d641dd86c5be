// Command relay is the load benchmark of the live system. It builds the
// ferry binary, starts `ferry serve` on a fresh SQLite file as a child
// process, and drives it over loopback WebSockets with simulated clients
// and UIs speaking the real protocol:
//
//   - latency: one client streams agent.text.delta events of 1 KB at a fixed
//     rate (default 1,000/s) for a fixed time; one subscribed UI times each
//     event from the client's write to the UI's read (one process, one
//     monotonic clock), so the figure is what the relay adds: decode,
//     persist, fan out, encode;
//   - idle connections: it opens N authenticated UI connections (default
//     10,000) and reads the master's resident memory before and after;
//   - resume: a UI subscribes from 1,000 events back and times the replay
//     until it is live again.
//
// Everything is bounded by count and time. See bench/README.md.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
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

	"github.com/ferry-dev/ferry/protocol"
)

func main() {
	repo := flag.String("repo", "..", "ferry's module root, to build cmd/ferry")
	rate := flag.Int("rate", 1000, "events per second for the latency run")
	dur := flag.Duration("duration", 10*time.Second, "length of the latency run")
	size := flag.Int("size", 1024, "bytes of text per event")
	idle := flag.Int("idle", 10000, "idle UI connections to open")
	resume := flag.Int("resume", 1000, "missed events to resume")
	flag.Parse()
	if err := run(*repo, *rate, *dur, *size, *idle, *resume); err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		os.Exit(1)
	}
}

type master struct {
	cmd      *exec.Cmd
	base     string
	uiToken  string
	cliToken string
}

func run(repo string, rate int, dur time.Duration, size, idle, resumeN int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	m, err := startMaster(ctx, repo)
	if err != nil {
		return err
	}
	defer func() { _ = m.cmd.Process.Kill(); _ = m.cmd.Wait() }()

	cli, err := dialClient(ctx, m)
	if err != nil {
		return err
	}
	ui, err := dialUI(ctx, m)
	if err != nil {
		return err
	}
	sessionID, err := ui.startSession(ctx, cli)
	if err != nil {
		return err
	}
	fmt.Printf("## Relay latency: client → master → UI, %d events/s of %d B for %s\n\n", rate, size, dur)
	if err := latency(ctx, cli, ui, sessionID, rate, dur, size); err != nil {
		return err
	}
	fmt.Printf("\n## Resume of %d missed events\n\n", resumeN)
	if err := resume(ctx, m, cli, sessionID, resumeN, size); err != nil {
		return err
	}
	fmt.Printf("\n## %d idle UI connections\n\n", idle)
	return idleConns(ctx, m, idle)
}

func startMaster(ctx context.Context, repo string) (*master, error) {
	dir, err := os.MkdirTemp("", "ferry-relay-")
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "ferry")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/ferry")
	build.Dir = repo
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("build ferry: %w", err)
	}
	db := filepath.Join(dir, "ferry.db")
	token := func(kind string) (string, error) {
		out, err := exec.CommandContext(ctx, bin, "token", "create", "--db", db, "--kind", kind, "--name", "relay bench").Output()
		return strings.TrimSpace(string(out)), err
	}
	m := &master{}
	if m.uiToken, err = token("ui"); err != nil {
		return nil, fmt.Errorf("create ui token: %w", err)
	}
	if m.cliToken, err = token("client"); err != nil {
		return nil, fmt.Errorf("create client token: %w", err)
	}
	m.cmd = exec.CommandContext(ctx, bin, "serve", "--addr", "127.0.0.1:0", "--db", db)
	m.cmd.Env = append(os.Environ(), "GOMAXPROCS=2")
	out, err := m.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	m.cmd.Stderr = os.Stderr
	if err := m.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start ferry serve: %w", err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if _, addr, ok := strings.Cut(sc.Text(), "listening on "); ok {
			m.base = strings.TrimPrefix(strings.TrimSpace(addr), "http://")
			break
		}
	}
	if m.base == "" {
		return nil, errors.New("ferry serve did not say where it listens")
	}
	go func() {
		for sc.Scan() { // keep draining so the child never blocks on stdout
		}
	}()
	return m, nil
}

// peer is one WebSocket speaking the protocol; reads go to in.
type peer struct {
	conn *websocket.Conn
	in   chan *protocol.Message
	mu   sync.Mutex // serialises writes
	// onRead, if set, sees every message as it is read (before in).
	onRead atomic.Pointer[func(*protocol.Message, time.Time)]
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
	go func() {
		for {
			_, data, err := conn.Read(context.Background())
			if err != nil {
				close(p.in)
				return
			}
			now := time.Now()
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

func dialClient(ctx context.Context, m *master) (*peer, error) {
	p, err := dial(ctx, "ws://"+m.base+"/v1/client", m.cliToken)
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

func dialUI(ctx context.Context, m *master) (*peer, error) {
	return dial(ctx, "ws://"+m.base+"/v1/ui", m.uiToken)
}

// startSession opens a session from the UI, answering the master's
// control.session.open on the client side, and subscribes to it.
func (u *peer) startSession(ctx context.Context, cli *peer) (string, error) {
	var machineID, wsID string
	for machineID == "" {
		list := protocol.New(protocol.TypeMachinesList, &protocol.MachinesList{})
		if err := u.send(ctx, list); err != nil {
			return "", err
		}
		r, err := u.await(ctx, func(m *protocol.Message) bool { return m.ParentID == list.MessageID })
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
	if err := u.send(ctx, start); err != nil {
		return "", err
	}
	open, err := cli.await(ctx, func(m *protocol.Message) bool { return m.Type == protocol.TypeSessionOpen })
	if err != nil {
		return "", err
	}
	if err := cli.send(ctx, open.Reply(protocol.TypeSessionOpened, &protocol.SessionOpened{Adapter: "bench", Mode: "default"})); err != nil {
		return "", err
	}
	r, err := u.await(ctx, func(m *protocol.Message) bool { return m.ParentID == start.MessageID })
	if err != nil {
		return "", err
	}
	ans, ok := r.Payload.(*protocol.SessionAnswer)
	if !ok {
		return "", fmt.Errorf("session start answered %s", r.Type)
	}
	sub := protocol.New(protocol.TypeSessionSubscribe, &protocol.SessionSubscribe{})
	sub.SessionID = ans.Session.ID
	if err := u.send(ctx, sub); err != nil {
		return "", err
	}
	if _, err := u.await(ctx, func(m *protocol.Message) bool { return m.ParentID == sub.MessageID }); err != nil {
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

func latency(ctx context.Context, cli, ui *peer, sessionID string, rate int, dur time.Duration, size int) error {
	turn, err := openTurn(ctx, cli, ui, sessionID)
	if err != nil {
		return err
	}
	n := int(dur.Seconds() * float64(rate))
	var (
		mu      sync.Mutex
		sent    = make(map[string]time.Time, n)
		lat     = make([]time.Duration, 0, n)
		all     = make(chan struct{})
		waiting = n
	)
	f := func(m *protocol.Message, at time.Time) {
		if m.Type != protocol.TypeTextDelta {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if t0, ok := sent[m.MessageID]; ok {
			lat = append(lat, at.Sub(t0))
			delete(sent, m.MessageID)
			waiting--
			if waiting == 0 {
				close(all)
			}
		}
	}
	ui.onRead.Store(&f)
	defer ui.onRead.Store(nil)
	text := strings.Repeat("x", size)
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for i := range n {
		// Paced by the wall clock, so a slow write does not lower the rate.
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		m := protocol.New(protocol.TypeTextDelta, &protocol.TextDelta{TurnID: turn, Delta: text})
		m.SessionID = sessionID
		mu.Lock()
		sent[m.MessageID] = time.Now()
		mu.Unlock()
		if err := cli.send(ctx, m); err != nil {
			return err
		}
	}
	elapsed := time.Since(start)
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		return fmt.Errorf("%d of %d events never reached the UI", waiting, n)
	}
	if err := closeTurn(ctx, cli, sessionID, turn); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / 1e6 }
	fmt.Printf("| events | achieved rate | p50 | p90 | p99 | max |\n|---:|---:|---:|---:|---:|---:|\n")
	fmt.Printf("| %d | %.0f/s | %.2f ms | %.2f ms | %.2f ms | %.2f ms |\n", len(lat), float64(n)/elapsed.Seconds(), q(0.5), q(0.9), q(0.99), q(1))
	return nil
}

func resume(ctx context.Context, m *master, cli *peer, sessionID string, n, size int) error {
	ui, err := dialUI(ctx, m)
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
	watcher, err := dialUI(ctx, m)
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
	ui, err = dialUI(ctx, m)
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
	pid := m.cmd.Process.Pid
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
		c, resp, err := websocket.Dial(ctx, "ws://"+m.base+"/v1/ui", &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + m.uiToken}}})
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
