package metrics_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/broker"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/metrics"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/sqlite"
	"github.com/ferry-dev/ferry/protocol"
)

const wait = 20 * time.Second

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	t.Cleanup(cancel)
	return ctx
}

// node is a master on a real SQLite file behind a loopback HTTP server,
// its metrics on a loopback listener of their own.
type node struct {
	t             *testing.T
	srv           *httptest.Server
	metricsURL    string
	client, uiTok string
}

func startNode(t *testing.T) *node {
	t.Helper()
	st, err := sqlite.Open(testCtx(t), filepath.Join(t.TempDir(), "ferry.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	n := &node{t: t}
	if n.client, _, err = auth.Issue(testCtx(t), st, store.TokenClient, "laptop", 0); err != nil {
		t.Fatal(err)
	}
	if n.uiTok, _, err = auth.Issue(testCtx(t), st, store.TokenUI, "browser", time.Hour); err != nil {
		t.Fatal(err)
	}
	met := metrics.New()
	br := broker.NewMemory()
	t.Cleanup(func() { _ = br.Close() })
	m, err := master.New(testCtx(t), master.Config{Store: met.Store(st), Broker: met.Broker(br), Metrics: met,
		PingInterval: time.Minute, OfflineGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	n.srv = httptest.NewServer(m.Handler())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ms := &http.Server{Handler: met.Handler(), ReadHeaderTimeout: wait}
	go func() { _ = ms.Serve(ln) }()
	n.metricsURL = "http://" + ln.Addr().String() + "/metrics"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = m.Shutdown(ctx)
		n.srv.Close()
		_ = ms.Close()
	})
	return n
}

// peer is a raw WebSocket peer.
type peer struct {
	t  *testing.T
	ws *websocket.Conn
}

func (n *node) dial(path, secret string) *peer {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(n.srv.URL, "http")+path,
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + secret}}})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		n.t.Fatalf("dial %s: %v", path, err)
	}
	ws.SetReadLimit(-1)
	n.t.Cleanup(func() { _ = ws.CloseNow() })
	return &peer{t: n.t, ws: ws}
}

func (p *peer) send(m *protocol.Message) *protocol.Message {
	p.t.Helper()
	b, err := protocol.Encode(m)
	if err != nil {
		p.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := p.ws.Write(ctx, websocket.MessageText, b); err != nil {
		p.t.Fatal(err)
	}
	return m
}

// until reads until a message of type typ.
func (p *peer) until(typ string) *protocol.Message {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for {
		_, b, err := p.ws.Read(ctx)
		if err != nil {
			p.t.Fatalf("read (waiting for %s): %v", typ, err)
		}
		m, err := protocol.Decode(b)
		if err != nil {
			p.t.Fatal(err)
		}
		if m.Type == typ {
			return m
		}
	}
}

// scrape fetches the metrics over HTTP and parses the text format.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse the scrape: %v", err)
	}
	return fams
}

// value is the value of family name's series whose labels include
// labels (name, value pairs): a gauge's or counter's value, a histogram's
// count.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no series %s in the scrape", name)
	}
next:
	for _, m := range f.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
				return l.GetName() == labels[i] && l.GetValue() == labels[i+1]
			}) {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	t.Fatalf("no series %s%v in the scrape", name, labels)
	return 0
}

func caps() *protocol.Capabilities {
	return &protocol.Capabilities{
		ProtocolVersion: 1,
		Client:          protocol.ClientInfo{Name: "fake", Version: "0"},
		Machine:         &protocol.MachineInfo{ID: "m1", Name: "laptop"},
		Workspaces:      []protocol.Workspace{{ID: "ws1", Name: "proj", Path: "/home/me/proj"}},
		Adapters: []protocol.AdapterCapability{{
			ID: "echo", Name: "Echo", Modes: []string{protocol.ModeDefault},
			InputTypes: []string{protocol.InputText}, Interactions: []string{protocol.InteractionPermission},
			Cancel: true, Compact: true, FileTokens: "file_list",
		}},
		Messages: []string{protocol.TypePromptRequest, protocol.TypePromptCancel, protocol.TypeSessionOpen},
		FileReferences: &protocol.FileRefCapabilities{
			Search: true, SearchScopes: []string{protocol.ScopeWorkspace}, MaxResultsCap: 50,
			PositionEncoding: protocol.PositionUTF16, TokenSyntaxVersion: 1,
		},
	}
}

// TestScrape drives a client's events and a UI through a master, scrapes
// its metrics listener over HTTP and checks that the series moved.
func TestScrape(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	before := scrape(t, n.metricsURL)
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if before[name] == nil {
			t.Errorf("the Go and process collectors' %s is not served", name)
		}
	}
	if v := value(t, before, "ferry_connections", "role", "ui"); v != 0 {
		t.Fatalf("ferry_connections{role=ui} = %v before any connection", v)
	}

	ui := n.dial("/v1/ui", n.uiTok)
	ui.send(protocol.New(protocol.TypeMachinesList, &protocol.MachinesList{}))
	ui.until(protocol.TypeMachines) // registered for machine status from here on
	c := n.dial("/v1/client", n.client)
	c.send(protocol.New(protocol.TypeCapabilities, caps()))
	for {
		if st := ui.until(protocol.TypeMachineStatus).Payload.(*protocol.MachineStatus).Machine; st.ID == "m1" && st.Online {
			break
		}
	}
	ui.send(protocol.New(protocol.TypeSessionStart, &protocol.SessionStart{MachineID: "m1", WorkspaceID: "ws1", Adapter: "echo", Title: "t"}))
	open := c.until(protocol.TypeSessionOpen)
	opened := protocol.New(protocol.TypeSessionOpened, &protocol.SessionOpened{Adapter: "echo", Mode: protocol.ModeDefault})
	opened.SessionID, opened.ParentID = open.SessionID, open.MessageID
	c.send(opened)
	info := ui.until(protocol.TypeSessionAnswer).Payload.(*protocol.SessionAnswer).Session
	d := protocol.New(protocol.TypeTextDelta, &protocol.TextDelta{TurnID: "t1", Delta: "hello"})
	d.SessionID = info.ID
	c.send(d)
	for c.until(protocol.TypeAck).Payload.(*protocol.Ack).Through != d.MessageID {
	}
	// A UI that comes back from seq 1 resumes from the store.
	sub := protocol.New(protocol.TypeSessionSubscribe, &protocol.SessionSubscribe{AfterSeq: 1, Epoch: info.Epoch})
	sub.SessionID = info.ID
	ui.send(sub)
	if !ui.until(protocol.TypeSubscribed).Payload.(*protocol.Subscribed).Recovered {
		t.Fatal("the resume was not recovered")
	}

	after := scrape(t, n.metricsURL)
	for _, c := range []struct {
		name   string
		labels []string
		atLeast,
		atMost float64
	}{
		{"ferry_connections", []string{"role", "ui"}, 1, 1},
		{"ferry_connections", []string{"role", "client"}, 1, 1},
		{"ferry_machines_online", nil, 1, 1},
		{"ferry_sessions_loaded", nil, 1, 1},
		{"ferry_events_stored_total", nil, 2, 1e9},     // session.opened, the delta
		{"ferry_relay_latency_seconds", nil, 2, 1e9},   // both came from the client
		{"ferry_store_batch_size", nil, 1, 1e9},        // observations
		{"ferry_writer_queue_depth", nil, 0, 0},        // all stored
		{"ferry_conn_queue_depth", nil, 1, 1e9},        // observations
		{"ferry_ui_resumes_total", nil, 1, 1},          // the subscribe from seq 1
		{"ferry_slow_consumer_drops_total", nil, 0, 0}, // nobody is slow
		{"ferry_store_errors_total", nil, -1, -1},      // no failure: no series yet
		{"ferry_broker_errors_total", nil, -1, -1},     // idem
	} {
		if c.atLeast < 0 {
			if f := after[c.name]; f != nil && len(f.GetMetric()) > 0 {
				t.Errorf("%s has series without any failure: %v", c.name, f)
			}
			continue
		}
		if v := value(t, after, c.name, c.labels...); v < c.atLeast || v > c.atMost {
			t.Errorf("%s%v = %v, want %v to %v", c.name, c.labels, v, c.atLeast, c.atMost)
		}
	}
}

// brokenStore fails every call it is asked for.
type brokenStore struct{ store.Store }

func (brokenStore) ListTokens(context.Context) ([]store.Token, error) {
	return nil, errors.New("disk on fire")
}

func (brokenStore) Session(context.Context, string) (store.Session, error) {
	return store.Session{}, store.ErrNotFound
}

// TestErrorsCounted: a store call that fails counts under its method's
// name, an answer like not found does not; a broker call that fails
// counts under publish or subscribe.
func TestErrorsCounted(t *testing.T) {
	t.Parallel()
	met := metrics.New()
	st := met.Store(brokenStore{})
	if _, err := st.ListTokens(t.Context()); err == nil {
		t.Fatal("ListTokens did not fail")
	}
	if _, err := st.Session(t.Context(), "x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Session: %v", err)
	}
	br := broker.NewMemory()
	_ = br.Close()
	b := met.Broker(br)
	if err := b.Publish(t.Context(), "t", nil); err == nil {
		t.Fatal("Publish on a closed broker did not fail")
	}
	if _, err := b.Subscribe("t", func([]byte) {}); err == nil {
		t.Fatal("Subscribe on a closed broker did not fail")
	}
	if !broker.Connected(b) {
		t.Fatal("the wrapper of a memory broker is not connected")
	}
	srv := httptest.NewServer(met.Handler())
	defer srv.Close()
	fams := scrape(t, srv.URL)
	for _, c := range []struct {
		name, op string
		want     float64
	}{
		{"ferry_store_errors_total", "ListTokens", 1},
		{"ferry_broker_errors_total", "publish", 1},
		{"ferry_broker_errors_total", "subscribe", 1},
	} {
		if v := value(t, fams, c.name, "op", c.op); v != c.want {
			t.Errorf("%s{op=%s} = %v, want %v", c.name, c.op, v, c.want)
		}
	}
	for _, m := range fams["ferry_store_errors_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetValue() == "Session" {
				t.Error("a not-found answer counted as a store error")
			}
		}
	}
}

// TestDocumentedSeries: docs/scale.md's metrics table lists exactly the
// ferry series the page serves, each with its type and label, so the docs
// cannot drift.
func TestDocumentedSeries(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "scale.md"))
	if err != nil {
		t.Fatal(err)
	}
	// | `name` | type (buckets) | `label` (values) | meaning |
	row := regexp.MustCompile("(?m)^\\| `(ferry_[a-z_]+)` \\| ([a-z]+)[^|]*\\| (?:`([a-z_]+)`)?[^|]*\\|")
	var documented []string
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		documented = append(documented, m[1]+" "+m[2]+" "+m[3])
	}
	// Every labelled vector gets a series, so that the page lists it.
	met := metrics.New()
	_, _ = met.Store(brokenStore{}).ListTokens(t.Context())
	br := broker.NewMemory()
	_ = br.Close()
	_ = met.Broker(br).Publish(t.Context(), "t", nil)
	srv := httptest.NewServer(met.Handler())
	defer srv.Close()
	var served []string
	for name, f := range scrape(t, srv.URL) {
		if !strings.HasPrefix(name, "ferry_") {
			continue
		}
		var label string
		for _, l := range f.GetMetric()[0].GetLabel() {
			label = l.GetName()
		}
		served = append(served, name+" "+strings.ToLower(f.GetType().String())+" "+label)
	}
	slices.Sort(documented)
	slices.Sort(served)
	if len(documented) == 0 || !slices.Equal(documented, served) {
		t.Fatalf("docs/scale.md documents %q\nserved: %q", documented, served)
	}
}

// get fetches the page with the headers given, without the transport's
// own gzip handling: the status, the response's headers, the body.
func get(t *testing.T, method, url string, header http.Header) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if header != nil {
		req.Header = header
	}
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// TestPage: after known observations the page, as Prometheus' parser reads
// it, holds their values and buckets, and the Go runtime and process series
// Prometheus users expect, under their usual names and types; it is served
// as text 0.0.4, gzipped when asked, to any method.
func TestPage(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	m.Relayed(700 * time.Microsecond)
	m.Relayed(700 * time.Microsecond)
	m.Relayed(2 * time.Second)
	m.Stored(3)
	m.WriterQueued(5)
	m.WriterQueued(-2)
	m.ConnQueue(1)
	m.ConnQueue(5000)
	m.Connections(protocol.RoleUI, 2)
	m.SlowConsumer()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()

	_, h, page := get(t, http.MethodGet, srv.URL, nil)
	if ct := h.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(page))
	if err != nil {
		t.Fatalf("parse the page: %v", err)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"ferry_connections", []string{"role", "ui"}, 2},
		{"ferry_connections", []string{"role", "client"}, 0},
		{"ferry_events_stored_total", nil, 3},
		{"ferry_writer_queue_depth", nil, 3},
		{"ferry_slow_consumer_drops_total", nil, 1},
		{"ferry_relay_latency_seconds", nil, 3},
		{"ferry_conn_queue_depth", nil, 2},
		{"ferry_ui_resumes_total", nil, 0},
	} {
		if v := value(t, fams, c.name, c.labels...); v != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, v, c.want)
		}
	}
	buckets := func(name string) map[float64]uint64 {
		got := map[float64]uint64{}
		for _, b := range fams[name].GetMetric()[0].GetHistogram().GetBucket() {
			got[b.GetUpperBound()] = b.GetCumulativeCount()
		}
		return got
	}
	relay := buckets("ferry_relay_latency_seconds")
	if len(relay) != 12 || relay[.0005] != 0 || relay[.001] != 2 || relay[1] != 2 || relay[math.Inf(1)] != 3 {
		t.Errorf("relay buckets %v", relay)
	}
	if s := fams["ferry_relay_latency_seconds"].GetMetric()[0].GetHistogram().GetSampleSum(); math.Abs(s-2.0014) > 1e-9 {
		t.Errorf("relay sum %v, want 2.0014", s)
	}
	if b := buckets("ferry_store_batch_size"); len(b) != 10 || b[2] != 0 || b[4] != 1 || b[256] != 1 {
		t.Errorf("batch buckets %v", b)
	}
	if b := buckets("ferry_conn_queue_depth"); len(b) != 7 || b[1] != 1 || b[1024] != 1 || b[math.Inf(1)] != 2 {
		t.Errorf("conn queue buckets %v", b)
	}

	now := float64(time.Now().Unix())
	for _, c := range []struct {
		name     string
		typ      dto.MetricType
		min, max float64
	}{
		{"go_goroutines", dto.MetricType_GAUGE, 1, 1e6},
		{"go_threads", dto.MetricType_GAUGE, 1, 1e6},
		{"go_gc_duration_seconds", dto.MetricType_SUMMARY, 0, 1e9},
		{"go_memstats_alloc_bytes", dto.MetricType_GAUGE, 1, 1e12},
		{"go_memstats_heap_inuse_bytes", dto.MetricType_GAUGE, 1, 1e12},
		{"go_memstats_sys_bytes", dto.MetricType_GAUGE, 1, 1e12},
		{"go_info", dto.MetricType_GAUGE, 1, 1},
		{"process_cpu_seconds_total", dto.MetricType_COUNTER, 0, 1e6},
		{"process_resident_memory_bytes", dto.MetricType_GAUGE, 1, 1e12},
		{"process_virtual_memory_bytes", dto.MetricType_GAUGE, 1, 1e15},
		{"process_open_fds", dto.MetricType_GAUGE, 3, 1e6},
		{"process_max_fds", dto.MetricType_GAUGE, 3, math.MaxUint64},
		{"process_start_time_seconds", dto.MetricType_GAUGE, now - 3600, now + 1},
	} {
		if strings.HasPrefix(c.name, "process_") && runtime.GOOS != "linux" {
			continue // Linux only, bar CPU time and max fds on the BSDs
		}
		f := fams[c.name]
		if f == nil || len(f.GetMetric()) != 1 {
			t.Errorf("%s is not served (one series)", c.name)
			continue
		}
		if f.GetType() != c.typ {
			t.Errorf("%s is a %v, want %v", c.name, f.GetType(), c.typ)
		}
		if c.typ == dto.MetricType_SUMMARY {
			continue
		}
		if v := value(t, fams, c.name); v < c.min || v > c.max {
			t.Errorf("%s = %v, want %v to %v", c.name, v, c.min, c.max)
		}
	}
	if l := fams["go_info"].GetMetric()[0].GetLabel(); len(l) != 1 || l[0].GetName() != "version" || l[0].GetValue() != runtime.Version() {
		t.Errorf("go_info's labels %v", l)
	}
	if q := fams["go_gc_duration_seconds"].GetMetric()[0].GetSummary().GetQuantile(); len(q) != 5 {
		t.Errorf("go_gc_duration_seconds has quantiles %v, want 0, .25, .5, .75, 1", q)
	}

	// Gzipped when asked, to any method as promhttp served.
	code, h, zipped := get(t, http.MethodPost, srv.URL, http.Header{"Accept-Encoding": {"br;q=1.0, gzip;q=0.5"}})
	if code != http.StatusOK || h.Get("Content-Encoding") != "gzip" {
		t.Fatalf("POST with gzip accepted: HTTP %d, Content-Encoding %q", code, h.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(zipped))
	if err != nil {
		t.Fatal(err)
	}
	p = expfmt.NewTextParser(model.UTF8Validation)
	if fams, err := p.TextToMetricFamilies(zr); err != nil || fams["ferry_events_stored_total"] == nil {
		t.Fatalf("the gzipped page: %v", err)
	}
	if _, h, _ := get(t, http.MethodGet, srv.URL, http.Header{"Accept-Encoding": {"gzip;q=0"}}); h.Get("Content-Encoding") != "" {
		t.Errorf("gzip;q=0 got Content-Encoding %q", h.Get("Content-Encoding"))
	}
}
