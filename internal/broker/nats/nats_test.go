package nats_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/broker"
	"github.com/ferry-dev/ferry/internal/broker/brokertest"
	brokernats "github.com/ferry-dev/ferry/internal/broker/nats"
	"github.com/ferry-dev/ferry/internal/broker/nats/natstest"
)

var prefixes atomic.Int64

// connect returns a broker on s under a prefix of its own, closed at cleanup.
func connect(t *testing.T, url string, log *slog.Logger) *brokernats.Broker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := brokernats.Connect(ctx, brokernats.Options{
		URL: url, Name: t.Name(), Logger: log,
		Prefix: "test" + strconv.FormatInt(prefixes.Add(1), 10),
	})
	if err != nil {
		t.Fatalf("Connect(%s): %v", url, err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func TestSuite(t *testing.T) {
	s := natstest.Start(t)
	brokertest.Run(t, func(t *testing.T) broker.Broker { return connect(t, s.URL(), nil) })
}

// rec collects deliveries.
type rec struct {
	mu  sync.Mutex
	got []string
}

func (r *rec) deliver(b []byte) { r.mu.Lock(); r.got = append(r.got, string(b)); r.mu.Unlock() }
func (r *rec) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// waitUntil polls cond for up to 10s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSubjectIsOneLiteralToken(t *testing.T) {
	topics := []string{"a", "a.b", "a.*", "a.>", "*", ">", "a b", "a\tb", "a\nb", "%41", "A", "é", "a%2Eb", "session.x.y"}
	seen := map[string]string{}
	for _, tp := range topics {
		subj := brokernats.Subject("ferry", tp)
		rest, ok := strings.CutPrefix(subj, "ferry.")
		if !ok {
			t.Fatalf("Subject(%q) = %q: no prefix", tp, subj)
		}
		if strings.ContainsAny(rest, ".*> \t\r\n") || rest == "" {
			t.Fatalf("Subject(%q) = %q: token %q is not one literal token", tp, subj, rest)
		}
		if other, dup := seen[subj]; dup {
			t.Fatalf("topics %q and %q share subject %q", tp, other, subj)
		}
		seen[subj] = tp
	}
}

// TestSpecialTopicsOnServer checks on a real server that topics holding
// NATS's special characters reach exactly their own subscribers: a topic
// "a.*" or ">" must not act as a wildcard over the others.
func TestSpecialTopicsOnServer(t *testing.T) {
	s := natstest.Start(t)
	b := connect(t, s.URL(), nil)
	topics := []string{"a", "a.b", "a.*", "a.>", "*", ">", "a b", "a\tb", "%41", "A"}
	recs := make([]*rec, len(topics))
	for i, tp := range topics {
		recs[i] = &rec{}
		unsub, err := b.Subscribe(tp, recs[i].deliver)
		if err != nil {
			t.Fatalf("Subscribe(%q): %v", tp, err)
		}
		t.Cleanup(unsub)
	}
	for _, tp := range topics {
		if err := b.Publish(context.Background(), tp, []byte("to "+tp)); err != nil {
			t.Fatalf("Publish(%q): %v", tp, err)
		}
	}
	// A final message on every topic proves the earlier ones had their chance.
	for _, tp := range topics {
		if err := b.Publish(context.Background(), tp, []byte("end")); err != nil {
			t.Fatal(err)
		}
	}
	for i, tp := range topics {
		waitUntil(t, "end on "+tp, func() bool { return len(recs[i].snapshot()) >= 2 })
		if got, want := recs[i].snapshot(), []string{"to " + tp, "end"}; !slices.Equal(got, want) {
			t.Errorf("topic %q got %q, want %q", tp, got, want)
		}
	}
	if _, err := b.Subscribe("", func([]byte) {}); !errors.Is(err, brokernats.ErrBadTopic) {
		t.Errorf("Subscribe(\"\") = %v, want ErrBadTopic", err)
	}
	if err := b.Publish(context.Background(), "", nil); !errors.Is(err, brokernats.ErrBadTopic) {
		t.Errorf("Publish(\"\") = %v, want ErrBadTopic", err)
	}
}

// TestTwoNodes is the reason for the package: what one master node
// publishes reaches a subscriber on another, complete and in order.
func TestTwoNodes(t *testing.T) {
	s := natstest.Start(t)
	ctx := context.Background()
	opts := brokernats.Options{URL: s.URL(), Prefix: "two"}
	a, err := brokernats.Connect(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Close() }()
	b, err := brokernats.Connect(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	r := &rec{}
	unsub, err := a.Subscribe("session.1", r.deliver)
	if err != nil {
		t.Fatal(err)
	}
	defer unsub()
	const n = 1000
	for i := range n {
		if err := b.Publish(ctx, "session.1", []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "all messages on node a", func() bool { return len(r.snapshot()) >= n })
	for i, m := range r.snapshot() {
		if m != strconv.Itoa(i) {
			t.Fatalf("message %d is %q", i, m)
		}
	}
}

// syncBuf is a log sink safe for the nats.go handler goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestServerRestart kills nats-server mid-run and starts it again on the same
// port: publishes during the outage return promptly (buffered or failed),
// the broker reconnects, its subscriptions work again without being
// renewed, and nothing is delivered twice or out of order.
func TestServerRestart(t *testing.T) {
	s := natstest.Start(t)
	logs := &syncBuf{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// Two nodes sharing the subject space (one prefix).
	ctx := context.Background()
	shared, err := brokernats.Connect(ctx, brokernats.Options{URL: s.URL(), Prefix: "restart", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = shared.Close() })
	other, err := brokernats.Connect(ctx, brokernats.Options{URL: s.URL(), Prefix: "restart"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })

	local, remote := &rec{}, &rec{}
	for _, sub := range []struct {
		b broker.Broker
		r *rec
	}{{shared, local}, {other, remote}} {
		unsub, err := sub.b.Subscribe("events", sub.r.deliver)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(unsub)
	}
	seq := 0
	publish := func(ctx context.Context) error {
		err := shared.Publish(ctx, "events", []byte(strconv.Itoa(seq)))
		seq++
		return err
	}
	if err := publish(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "first message", func() bool { return len(local.snapshot()) == 1 && len(remote.snapshot()) == 1 })

	s.Kill()
	waitUntil(t, "disconnect logged", func() bool { return strings.Contains(logs.String(), "nats: disconnected") })
	for range 20 {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := natstest.Within(t, 3*time.Second, "Publish during outage", func() error { return publish(pctx) })
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Logf("publish during outage failed (allowed): %v", err)
		}
	}
	// A subscription made during the outage becomes active after it.
	late := &rec{}
	unsubLate, err := within2(t, func() (func(), error) { return other.Subscribe("events", late.deliver) })
	if err != nil {
		t.Fatalf("Subscribe during outage: %v", err)
	}
	t.Cleanup(unsubLate)

	s.Start()
	waitUntil(t, "reconnect logged", func() bool { return strings.Contains(logs.String(), "nats: reconnected") })
	// Publish until the remote node, which reconnects on its own schedule,
	// gets messages again; then a final run must arrive complete.
	waitUntil(t, "delivery after restart", func() bool {
		if err := publish(ctx); err != nil {
			t.Fatalf("Publish after reconnect: %v", err)
		}
		return len(remote.snapshot()) > 1 && len(late.snapshot()) > 0
	})
	from := seq
	for range 100 {
		if err := publish(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for name, r := range map[string]*rec{"local": local, "remote": remote, "late": late} {
		waitUntil(t, name+" final run", func() bool {
			got := r.snapshot()
			return len(got) > 0 && got[len(got)-1] == strconv.Itoa(seq-1)
		})
		got := r.snapshot()
		// In order, no duplicates (a strictly increasing subsequence), and
		// the run after the reconnect complete.
		prev := -1
		have := map[int]bool{}
		for _, m := range got {
			i, err := strconv.Atoi(m)
			if err != nil || i <= prev {
				t.Fatalf("%s: %q after %d: out of order or twice (%v)", name, m, prev, got)
			}
			prev = i
			have[i] = true
		}
		for i := from; i < seq; i++ {
			if !have[i] {
				t.Fatalf("%s: message %d after the reconnect is missing", name, i)
			}
		}
		t.Logf("%s: %d of %d messages delivered across the restart", name, len(got), seq)
	}
}

func within2(t *testing.T, fn func() (func(), error)) (func(), error) {
	t.Helper()
	var u func()
	err := natstest.Within(t, 2*time.Second, "Subscribe during outage", func() error {
		var err error
		u, err = fn()
		return err
	})
	return u, err
}

func TestCloseIdempotentAndPublishHonoursContext(t *testing.T) {
	s := natstest.Start(t)
	b := connect(t, s.URL(), nil)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Publish(done, "x", []byte("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Publish with a done ctx = %v, want context.Canceled", err)
	}
	for i := range 3 {
		if err := b.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	if err := b.Publish(context.Background(), "x", []byte("x")); !errors.Is(err, broker.ErrClosed) {
		t.Fatalf("Publish after Close = %v, want ErrClosed", err)
	}
}

// TestConnectHonoursContext: a peer that accepts TCP but never speaks NATS
// must not hold Connect past ctx.
func TestConnectHonoursContext(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer func() { _ = c.Close() }() // held open, silent
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = brokernats.Connect(ctx, brokernats.Options{URL: "nats://" + l.Addr().String(), ConnectTimeout: time.Minute})
	if err == nil {
		t.Fatal("Connect to a silent peer succeeded")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Connect returned after %s, past its 300ms context", d)
	}

	// Nothing listening: a clear error, not a hang.
	port := natstest.FreePort(t)
	_, err = brokernats.Connect(context.Background(), brokernats.Options{URL: fmt.Sprintf("nats://127.0.0.1:%d", port), ConnectTimeout: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "broker/nats: connect") {
		t.Fatalf("Connect to a closed port = %v, want a connect error", err)
	}
	if _, err := brokernats.Connect(context.Background(), brokernats.Options{}); err == nil {
		t.Fatal("Connect without a URL succeeded")
	}
	if _, err := brokernats.Connect(context.Background(), brokernats.Options{URL: "nats://127.0.0.1:1", Prefix: "a.b"}); err == nil {
		t.Fatal("Connect with a prefix of two tokens succeeded")
	}
}

// TestUserPasswordInURL: credentials in the URL authenticate; without them
// the server refuses.
func TestUserPasswordInURL(t *testing.T) {
	s := natstest.Start(t, "--user", "ferry", "--pass", "s3cret")
	u := "nats://ferry:s3cret@127.0.0.1:" + strconv.Itoa(s.Port)
	b := connect(t, u, nil)
	r := &rec{}
	unsub, err := b.Subscribe("auth", r.deliver)
	if err != nil {
		t.Fatal(err)
	}
	defer unsub()
	if err := b.Publish(context.Background(), "auth", []byte("ok")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "delivery with credentials", func() bool { return len(r.snapshot()) == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := brokernats.Connect(ctx, brokernats.Options{URL: s.URL()}); err == nil {
		t.Fatal("Connect without credentials succeeded")
	}
	if _, err := brokernats.Connect(ctx, brokernats.Options{URL: "nats://ferry:wrong@127.0.0.1:" + strconv.Itoa(s.Port)}); err == nil {
		t.Fatal("Connect with a wrong password succeeded")
	}
}

// TestConnectErrorsHideThePassword: a malformed URL's error (Go's url
// package quotes the URL) must not carry the password into logs.
func TestConnectErrorsHideThePassword(t *testing.T) {
	for _, u := range []string{
		"nats://ferry:s3cret@127.0.0.1:abc",
		"nats://ferry:s3cret@[::1",
		"nats://127.0.0.1:1,nats://ferry:s3cret@127.0.0.1:x",
		"nats://ferry:s3cret@127.0.0.1:1",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := brokernats.Connect(ctx, brokernats.Options{URL: u, ConnectTimeout: time.Second})
		cancel()
		if err == nil {
			t.Fatalf("Connect(%q) succeeded", u)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Connect(%q) error shows the password: %v", u, err)
		}
	}
}
