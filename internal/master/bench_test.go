package master_test

import (
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/protocol"
)

// BenchmarkRelayLatency measures the latency the master adds between a
// client's agent.text.delta and a subscribed UI receiving it, at a steady
// 1,000 events/s of about 1 KB, over loopback with a real SQLite file. It
// reports p50 and p99 (the goals: 5 ms and 25 ms). bench/ holds the
// full load generator; this one checks the hub's own design.
func BenchmarkRelayLatency(b *testing.B) { benchRelay(b, 1000) }

// BenchmarkRelayLatency5000 is the same at 5,000 events/s, where the
// session writer's batches and the connection writers' flushes matter
// (issue 21's goal: p99 10 ms on one node). Run it with -cpuprofile to see
// where the time goes.
func BenchmarkRelayLatency5000(b *testing.B) { benchRelay(b, 5000) }

// streamingTurn starts a turn in a new session with a subscribed UI, and
// reads the client's acks in the background, as a real client does, until
// ctx ends.
func streamingTurn(ctx context.Context, b *testing.B) (*peer, *fakeClient, protocol.SessionInfo) {
	e := newEnv(b, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	subscribe(ui, info.ID, 1, info.Epoch)
	req := prompt(ui, c, info.ID, "go")
	turnStart(c, req, "turn-1")
	events(ui, 2, 1)
	go func() {
		for {
			if _, _, err := c.ws.Read(ctx); err != nil {
				return
			}
		}
	}()
	return ui, c, info
}

func benchRelay(b *testing.B, rate int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ui, c, info := streamingTurn(ctx, b)
	n := max(b.N, 2*rate)
	pad := strings.Repeat("x", 1000)
	lat := make([]time.Duration, 0, n)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range n {
			_, data, err := ui.ws.Read(ctx)
			if err != nil {
				return
			}
			var env struct {
				Payload struct {
					Delta string `json:"delta"`
				} `json:"payload"`
			}
			if json.Unmarshal(data, &env) != nil || len(env.Payload.Delta) < 16 {
				continue
			}
			ns, _ := strconv.ParseInt(env.Payload.Delta[:19], 10, 64)
			lat = append(lat, time.Since(time.Unix(0, ns)))
		}
	}()
	cpu0 := cpuTime()
	b.ResetTimer()
	// Paced by the wall clock (a ticker drops ticks when the loop lags, which
	// would lower the rate).
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for i := range n {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		m := protocol.New(protocol.TypeTextDelta, &protocol.TextDelta{TurnID: "turn-1",
			Delta: strconv.FormatInt(time.Now().UnixNano(), 10) + pad})
		m.SessionID = info.ID
		data, _ := protocol.Encode(m)
		wctx, wcancel := context.WithTimeout(ctx, wait)
		if err := c.ws.Write(wctx, websocket.MessageText, data); err != nil {
			wcancel()
			b.Fatal(err)
		}
		wcancel()
	}
	select {
	case <-done:
	case <-time.After(2 * wait):
		b.Fatal("the UI did not receive every event")
	}
	b.StopTimer()
	// At a steady rate, CPU per event is what leaves the cores room: the
	// tail grows as they fill (both peers' side included, as above).
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(n), "cpu-µs/event")
	slices.Sort(lat)
	if len(lat) == 0 {
		b.Fatal("no latencies")
	}
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
}

// BenchmarkRelayThroughput streams b.N agent.text.delta events of about
// 1 KB from a client to a subscribed UI as fast as the master relays them
// (at most 256 in flight), and reports the process's CPU time per event (user+system, both
// peers' cheap side included: the frames are encoded once and the UI does
// not decode them). On a shared machine this is steadier than a latency,
// and it is what a rate costs: at 5,000 events/s, 100 µs an event is half
// a core. Profile it with -cpuprofile.
func BenchmarkRelayThroughput(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ui, c, info := streamingTurn(ctx, b)
	tmpl := protocol.New(protocol.TypeTextDelta, &protocol.TextDelta{TurnID: "turn-1", Delta: strings.Repeat("x", 1000)})
	tmpl.SessionID = info.ID
	frame, err := protocol.Encode(tmpl)
	if err != nil {
		b.Fatal(err)
	}
	at := strings.Index(string(frame), tmpl.MessageID)
	frames := make([][]byte, b.N)
	for i := range frames {
		f := slices.Clone(frame)
		copy(f[at:], protocol.NewID())
		frames[i] = f
	}
	// At most a window of events in flight: the master drops a UI that
	// falls a whole queue behind (slow_consumer), and this benchmark
	// measures the relay's cost, not that.
	window := make(chan struct{}, 256)
	done := make(chan error, 1)
	go func() {
		for range b.N {
			if _, _, err := ui.ws.Read(ctx); err != nil {
				done <- err
				return
			}
			<-window
		}
		done <- nil
	}()
	cpu0 := cpuTime()
	b.ResetTimer()
	for _, f := range frames {
		select {
		case window <- struct{}{}:
		case err := <-done:
			b.Fatalf("the UI stopped reading: %v", err)
		}
		if err := c.ws.Write(ctx, websocket.MessageText, f); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case err := <-done:
		if err != nil {
			b.Fatal(err)
		}
	case <-time.After(time.Duration(b.N)*time.Millisecond + wait):
		b.Fatal("the UI did not receive every event")
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/event")
}

// BenchmarkResume measures how long a UI takes to get 1,000 missed events
// of about 1 KB back and reach live (the goal: 1 s).
func BenchmarkResume(b *testing.B) {
	e := newEnv(b, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	req := prompt(ui, c, info.ID, "go")
	turnStart(c, req, "turn-1")
	pad := strings.Repeat("x", 1000)
	var last *protocol.Message
	for range 1000 {
		last = delta(c, info.ID, "turn-1", pad)
	}
	c.waitAck(last.MessageID)
	b.ResetTimer()
	for range b.N {
		u := e.dialUI("resuming UI")
		sub := subscribe(u, info.ID, 3, info.Epoch)
		if !sub.Recovered || sub.LastSeq != 1003 {
			b.Fatalf("subscribed %+v", sub)
		}
		events(u, 1000, 3)
		_ = u.ws.CloseNow()
	}
}

// BenchmarkIdleConnections reports the memory (heap and stacks) that idle
// UI connections cost, master and dialing side together in one process, so
// the master's share is below the figure (goal: 32 KB per connection). A
// heap profile put the master's share at about 10 KB of heap (4 KB each of
// net/http's bufio reader and writer that coder/websocket keeps) plus two
// goroutine stacks, about 23 KB in all.
func BenchmarkIdleConnections(b *testing.B) {
	e := newEnv(b, master.Config{})
	const n = 1000
	b.ResetTimer()
	for range b.N {
		before := memInUse()
		peers := make([]*peer, 0, n)
		for range n {
			p, _, _, err := dial(b, e.wsURL("/v1/ui"), bearer(e.ui))
			if err != nil {
				b.Fatal(err)
			}
			peers = append(peers, p)
		}
		// Every connection answered once: all are registered and idle.
		for _, p := range peers {
			p.name = "idle"
			p.sync()
		}
		after := memInUse()
		b.ReportMetric(float64(after-before)/n/1024, "KiB/conn")
		for _, p := range peers {
			_ = p.ws.CloseNow()
		}
	}
}

func memInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse
}
