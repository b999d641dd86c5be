package push_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/push"
	"github.com/ferry-dev/ferry/internal/push/pushtest"
)

type goneLog struct {
	mu  sync.Mutex
	got []string
}

func (g *goneLog) add(_ context.Context, e string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.got = append(g.got, e)
}

func (g *goneLog) list() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.got...)
}

func newService(t *testing.T, mod func(*push.Config)) (*push.Service, *goneLog) {
	t.Helper()
	key, err := push.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	g := &goneLog{}
	cfg := push.Config{PrivateKey: key, Contact: "mailto:ops@example.com", AllowLoopback: true, Gone: g.add,
		Backoff: 10 * time.Millisecond, MaxBackoff: 3 * time.Second, Timeout: 5 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	s, err := push.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return s, g
}

func subOf(s *pushtest.Subscriber) push.Subscription {
	return push.Subscription{Endpoint: s.Endpoint, P256dh: s.P256dh, Auth: s.Auth}
}

// TestDelivers: the stand-in service checks the VAPID JWT and decrypts
// the body; what it reads is what was sent, with TTL, Urgency and the
// contact and key of this service.
func TestDelivers(t *testing.T) {
	srv := pushtest.New(t)
	svc, _ := newService(t, nil)
	sub := srv.Subscribe()
	payload := []byte(`{"kind":"permission","body":"Allow Edit on main.go?"}`)
	if !svc.Send(subOf(sub), push.Notification{Payload: payload, Urgency: push.UrgencyHigh, TTL: 90 * time.Second, Topic: "i1"}) {
		t.Fatal("Send refused a notification on an empty queue")
	}
	got := srv.Wait(10*time.Second, func(m []pushtest.Message) bool { return len(m) == 1 })[0]
	if !bytes.Equal(got.Payload, payload) {
		t.Fatalf("decrypted payload %q, want %q", got.Payload, payload)
	}
	if got.Urgency != "high" || got.TTL != "90" || got.Topic != "i1" {
		t.Fatalf("headers Urgency %q TTL %q Topic %q, want high, 90, i1", got.Urgency, got.TTL, got.Topic)
	}
	if got.Sub != "mailto:ops@example.com" || !bytes.Equal(got.Key, svc.PublicKey()) {
		t.Fatalf("VAPID sub %q key %x, want the configured contact and the service's key %x", got.Sub, got.Key, svc.PublicKey())
	}
	if d := time.Until(got.Exp); d <= 0 || d > 24*time.Hour {
		t.Fatalf("VAPID exp in %v", d)
	}

	// A normal notification says so, with a default TTL.
	svc.Send(subOf(sub), push.Notification{Payload: []byte("done")})
	got = srv.Wait(10*time.Second, func(m []pushtest.Message) bool { return len(m) == 2 })[1]
	if string(got.Payload) != "done" || got.Urgency != "normal" || got.TTL != "3600" {
		t.Fatalf("second notification %q Urgency %q TTL %q", got.Payload, got.Urgency, got.TTL)
	}
}

// TestGoneRemoves: 404 and 410 report the endpoint gone, once, without
// retrying; another 4xx is dropped without retrying or removing.
func TestGoneRemoves(t *testing.T) {
	srv := pushtest.New(t)
	svc, gone := newService(t, nil)
	subs := map[int]*pushtest.Subscriber{}
	for _, code := range []int{http.StatusNotFound, http.StatusGone, http.StatusBadRequest} {
		sub := srv.Subscribe()
		subs[code] = sub
		srv.Script(sub, pushtest.Reply{Status: code})
		svc.Send(subOf(sub), push.Notification{Payload: []byte("x")})
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(gone.list()) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	got := gone.list()
	slices.Sort(got)
	want := []string{subs[404].Endpoint, subs[410].Endpoint}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("gone = %v, want the 404 and 410 endpoints", got)
	}
	// Give a wrong retry the time to happen (several backoffs).
	time.Sleep(300 * time.Millisecond)
	for code, sub := range subs {
		if n := len(srv.Attempts(sub)); n != 1 {
			t.Fatalf("status %d: %d attempts, want 1 (no retry)", code, n)
		}
	}
	if len(gone.list()) != 2 || len(srv.Messages()) != 0 {
		t.Fatalf("gone %v, messages %d", gone.list(), len(srv.Messages()))
	}
}

// TestRetries: 503 and 429 are retried with backoff, Retry-After
// honoured, then the notification is delivered; attempts are capped.
func TestRetries(t *testing.T) {
	srv := pushtest.New(t)
	svc, gone := newService(t, func(c *push.Config) { c.MaxAttempts = 4 })
	sub := srv.Subscribe()
	srv.Script(sub, pushtest.Reply{Status: 503}, pushtest.Reply{Status: 429, RetryAfter: "1"})
	svc.Send(subOf(sub), push.Notification{Payload: []byte("after retries")})
	got := srv.Wait(15*time.Second, func(m []pushtest.Message) bool { return len(m) == 1 })
	if string(got[0].Payload) != "after retries" {
		t.Fatalf("payload %q", got[0].Payload)
	}
	at := srv.Attempts(sub)
	if len(at) != 3 {
		t.Fatalf("%d attempts, want 3", len(at))
	}
	if gap := at[2].Sub(at[1]); gap < 900*time.Millisecond {
		t.Fatalf("the retry after 429 with Retry-After: 1 came after %v", gap)
	}
	if gap := at[1].Sub(at[0]); gap < 5*time.Millisecond {
		t.Fatalf("the retry after 503 came after %v, want a backoff", gap)
	}

	// Always failing: MaxAttempts attempts, then dropped.
	bad := srv.Subscribe()
	srv.Script(bad, pushtest.Reply{Status: 500}, pushtest.Reply{Status: 502}, pushtest.Reply{Status: 500},
		pushtest.Reply{Status: 500}, pushtest.Reply{Status: 500}, pushtest.Reply{Status: 500})
	svc.Send(subOf(bad), push.Notification{Payload: []byte("never")})
	deadline := time.Now().Add(10 * time.Second)
	for len(srv.Attempts(bad)) < 4 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // room for a fifth attempt that must not come
	if n := len(srv.Attempts(bad)); n != 4 {
		t.Fatalf("%d attempts, want MaxAttempts = 4", n)
	}
	if len(gone.list()) != 0 {
		t.Fatalf("a failing endpoint was reported gone: %v", gone.list())
	}
}

// TestStuckServiceNeverBlocks: with the push service stuck, Send still
// returns at once, and drops what does not fit the queue.
func TestStuckServiceNeverBlocks(t *testing.T) {
	srv := pushtest.New(t)
	svc, _ := newService(t, func(c *push.Config) { c.Workers, c.QueueSize = 1, 4 })
	sub := srv.Subscribe()
	blocks := make([]pushtest.Reply, 20)
	for i := range blocks {
		blocks[i] = pushtest.Reply{Block: true}
	}
	srv.Script(sub, blocks...)
	done := make(chan int)
	go func() {
		accepted := 0
		for range 100 {
			if svc.Send(subOf(sub), push.Notification{Payload: []byte("x")}) {
				accepted++
			}
		}
		done <- accepted
	}()
	select {
	case n := <-done:
		if n > 6 {
			t.Fatalf("%d of 100 notifications accepted by a queue of 4 and one stuck worker", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Send blocked on a stuck push service")
	}
	srv.Unblock()
}

// TestCheckEndpoint: only https endpoints on public hosts are accepted,
// loopback ones only when allowed.
func TestCheckEndpoint(t *testing.T) {
	for _, tc := range []struct {
		url      string
		loopback bool
		ok       bool
	}{
		{"https://fcm.googleapis.com/fcm/send/abc", false, true},
		{"https://updates.push.services.mozilla.com/wpush/v2/x", false, true},
		{"https://8.8.8.8/push", false, true},
		{"http://fcm.googleapis.com/fcm/send/abc", false, false},
		{"ftp://push.example.com/x", false, false},
		{"https://127.0.0.1/x", false, false},
		{"https://[::1]/x", false, false},
		{"https://10.1.2.3/x", false, false},
		{"https://192.168.0.1/x", false, false},
		{"https://172.16.0.1/x", false, false},
		{"https://169.254.169.254/latest/meta-data", false, false},
		{"https://[fe80::1]/x", false, false},
		{"https://100.64.0.1/x", false, false},
		{"https://0.0.0.0/x", false, false},
		{"https://[::ffff:127.0.0.1]/x", false, false},
		{"https://localhost/x", false, false},
		{"https://push.localhost/x", false, false},
		{"https://metadata.google.internal/x", false, false},
		{"https://intranet/x", false, false},
		{"https://user:pw@push.example.com/x", false, false},
		{"/relative", false, false},
		{"", false, false},
		{"http://127.0.0.1:8080/push/x", true, true},
		{"http://10.0.0.1/push/x", true, false},
		{"http://localhost:8080/push/x", true, false},
	} {
		err := push.CheckEndpoint(tc.url, tc.loopback)
		if (err == nil) != tc.ok {
			t.Errorf("CheckEndpoint(%q, loopback %v) = %v, want ok %v", tc.url, tc.loopback, err, tc.ok)
		}
		if err != nil && !errors.Is(err, push.ErrEndpoint) {
			t.Errorf("CheckEndpoint(%q) = %v, want ErrEndpoint", tc.url, err)
		}
	}
	long := "https://push.example.com/" + string(bytes.Repeat([]byte("a"), push.MaxEndpointBytes))
	if push.CheckEndpoint(long, false) == nil {
		t.Error("an endpoint over MaxEndpointBytes was accepted")
	}
}

// TestCheckKeys: p256dh must be a point on P-256, auth 16 bytes.
func TestCheckKeys(t *testing.T) {
	srv := pushtest.New(t)
	sub := srv.Subscribe()
	if err := push.CheckKeys(sub.P256dh, sub.Auth); err != nil {
		t.Fatalf("real keys refused: %v", err)
	}
	notOnCurve := append([]byte{4}, bytes.Repeat([]byte{1}, 64)...)
	for name, k := range map[string][2][]byte{
		"short p256dh": {sub.P256dh[:33], sub.Auth},
		"off curve":    {notOnCurve, sub.Auth},
		"short auth":   {sub.P256dh, sub.Auth[:8]},
		"long auth":    {sub.P256dh, append(sub.Auth, 0)},
	} {
		if err := push.CheckKeys(k[0], k[1]); !errors.Is(err, push.ErrKeys) {
			t.Errorf("%s: CheckKeys = %v, want ErrKeys", name, err)
		}
	}
}

func TestContact(t *testing.T) {
	for c, ok := range map[string]bool{
		"mailto:ops@example.com": true, "https://example.com/contact": true,
		"ops@example.com": false, "mailto:": false, "http://example.com": false, "mailto:a b@c": false,
	} {
		if err := push.CheckContact(c); (err == nil) != ok {
			t.Errorf("CheckContact(%q) = %v, want ok %v", c, err, ok)
		}
	}
	key, _ := push.NewPrivateKey()
	if _, err := push.New(push.Config{PrivateKey: key, Contact: "nobody"}); err == nil {
		t.Error("New accepted a bad contact")
	}
	if _, err := push.New(push.Config{PrivateKey: []byte("short")}); err == nil {
		t.Error("New accepted a bad key")
	}
}

// TestSharedPayload: one payload sent to many subscriptions at once
// reaches each intact (the encryption pads a copy, never the caller's
// slice; run with -race).
func TestSharedPayload(t *testing.T) {
	srv := pushtest.New(t)
	svc, _ := newService(t, func(c *push.Config) { c.Workers = 4 })
	payload := make([]byte, 0, 4096) // spare capacity invites an append in place
	payload = append(payload, `{"kind":"done"}`...)
	const n = 8
	for range n {
		svc.Send(subOf(srv.Subscribe()), push.Notification{Payload: payload})
	}
	for _, m := range srv.Wait(10*time.Second, func(m []pushtest.Message) bool { return len(m) == n }) {
		if string(m.Payload) != `{"kind":"done"}` {
			t.Fatalf("payload %q", m.Payload)
		}
	}
	if string(payload) != `{"kind":"done"}` || string(payload[:cap(payload)][len(payload):len(payload)+1]) != "\x00" {
		t.Fatal("the caller's payload was written to")
	}
}

// TestFailedDeliveryLogsNoEndpointPath (issue 31, item 1.4): whatever way
// a delivery fails — the connection refused or closed by the service, a
// timeout, a 5xx, a refusal, a gone subscription, an endpoint refused at
// delivery — the log names the endpoint's origin only, never its path
// (the subscription's capability), not even inside an error's text.
func TestFailedDeliveryLogsNoEndpointPath(t *testing.T) {
	srv := pushtest.New(t)
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	svc, _ := newService(t, func(c *push.Config) {
		c.Logger, c.MaxAttempts, c.Timeout = log, 2, 300*time.Millisecond
	})
	strict, _ := newService(t, func(c *push.Config) { c.Logger, c.AllowLoopback = log, false })

	// A port nothing listens on: the connection is refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := ln.Addr().String()
	_ = ln.Close()
	refused := &pushtest.Subscriber{Endpoint: "http://" + closedPort + "/push/refused-capability-0123456789", P256dh: srv.Subscribe().P256dh, Auth: make([]byte, 16)}

	replies := map[string]pushtest.Reply{
		"closed": {Close: true}, "timeout": {Block: true}, "500": {Status: 500},
		"400": {Status: 400}, "410": {Status: 410},
	}
	var endpoints []string
	for name, r := range replies {
		sub := srv.Subscribe()
		srv.Script(sub, r, r)
		svc.Send(subOf(sub), push.Notification{Payload: []byte(name)})
		endpoints = append(endpoints, sub.Endpoint)
	}
	svc.Send(subOf(refused), push.Notification{Payload: []byte("refused")})
	loopback := srv.Subscribe()
	strict.Send(subOf(loopback), push.Notification{Payload: []byte("not public")})
	endpoints = append(endpoints, refused.Endpoint, loopback.Endpoint)

	// Every failure is logged: four give up after MaxAttempts, one is
	// refused by the service, one is gone, one is refused before sending.
	deadline := time.Now().Add(15 * time.Second)
	for {
		s := logs.String()
		if strings.Count(s, "giving up") == 4 && strings.Contains(s, "push service refused") &&
			strings.Contains(s, "subscription gone") && strings.Contains(s, "push endpoint refused") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every failure was logged:\n%s", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
	srv.Unblock()
	out := logs.String()
	// A timeout reads as the context's deadline or as the transport's
	// header timeout, whichever timer fires first. A connection the
	// service closes reads as whatever the transport saw first: a reset,
	// an EOF, a broken pipe, or its own writer finding the connection
	// its reader already closed.
	for _, what := range []string{
		"connection refused",
		"connection reset|EOF|broken pipe|use of closed network connection",
		"deadline exceeded|Timeout|timeout awaiting response headers",
	} {
		if !slices.ContainsFunc(strings.Split(what, "|"), func(w string) bool { return strings.Contains(out, w) }) {
			t.Errorf("the log does not say why a delivery failed (%q):\n%s", what, out)
		}
	}
	for _, e := range endpoints {
		u, err := url.Parse(e)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, u.Path) || strings.Contains(out, url.PathEscape(u.Path)) {
			t.Errorf("the log holds the path of %s:\n%s", e, out)
		}
		if !strings.Contains(out, "endpoint="+u.Scheme+"://"+u.Host) {
			t.Errorf("the log does not name the origin of %s", e)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the workers' concurrent logging.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
