package connlimit

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/certfile/certtest"
)

// server is a real http.Server on loopback behind a Limiter.
type server struct {
	t    *testing.T
	l    *Limiter
	addr string
	// release lets the requests to /block finish.
	release chan struct{}
}

func newServer(t *testing.T, cfg Config) *server {
	t.Helper()
	s := &server{t: t, l: New(cfg), release: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("/block", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-s.release:
		case <-r.Context().Done():
		}
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("/auth", func(w http.ResponseWriter, r *http.Request) {
		MarkAuthenticated(r.Context())
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("/hijack", func(w http.ResponseWriter, _ *http.Request) {
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			// Kept open until the peer closes it.
			go func() { _, _ = io.Copy(io.Discard, c); _ = c.Close() }()
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.l.Install(srv)
	go func() { _ = srv.Serve(s.l.Listen(ln)) }()
	t.Cleanup(func() {
		select {
		case <-s.release:
		default:
			close(s.release)
		}
		_ = srv.Close()
	})
	return s
}

// peer is one client connection speaking HTTP/1.1 by hand.
type peer struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

// dial connects from local (an address on loopback, "" for any).
func (s *server) dial(local string) *peer {
	s.t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	c, err := d.Dial("tcp", s.addr)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { _ = c.Close() })
	return &peer{t: s.t, c: c, br: bufio.NewReader(c)}
}

func (p *peer) send(path string) {
	p.t.Helper()
	if _, err := io.WriteString(p.c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		p.t.Fatalf("send %s: %v", path, err)
	}
}

// answer reads one response; an error when the server closed instead.
func (p *peer) answer() error {
	_ = p.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(p.br, nil)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if string(b) != "ok" {
		return errors.New("unexpected body " + string(b))
	}
	return nil
}

// get sends a request and needs its answer.
func (p *peer) get(path string) {
	p.t.Helper()
	p.send(path)
	if err := p.answer(); err != nil {
		p.t.Fatalf("GET %s: %v", path, err)
	}
}

// closed reports whether the server closed the connection.
func (p *peer) closed() bool { return p.closedWithin(5 * time.Second) }

// closedWithin is closed with a shorter wait, for a connection that may
// well be open: an eviction closes before the evicting connection is
// served, so its end is already on the wire.
func (p *peer) closedWithin(d time.Duration) bool {
	p.t.Helper()
	_ = p.c.SetReadDeadline(time.Now().Add(d))
	_, err := p.br.ReadByte()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return err != nil
}

// waitIdle waits until n counted connections are idle: the server marks a
// connection idle just after it answered, so the peer may be ahead of it.
func (s *server) waitIdle(n int) {
	s.t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		s.l.mu.Lock()
		got := s.l.idle.Len()
		s.l.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%d idle connections, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func (s *server) waitCount(n int) {
	s.t.Helper()
	for deadline := time.Now().Add(5 * time.Second); s.l.Stats().Unauthenticated != n; {
		if time.Now().After(deadline) {
			s.t.Fatalf("%d unauthenticated connections counted, want %d", s.l.Stats().Unauthenticated, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestEvictsOldestIdleOfTheSameAddress: at the per-address cap, a new
// connection closes the one idle the longest; the others keep working.
func TestEvictsOldestIdleOfTheSameAddress(t *testing.T) {
	s := newServer(t, Config{PerAddr: 3, Total: 100})
	var ps []*peer
	for i := range 3 {
		p := s.dial("")
		p.get("/")
		s.waitIdle(i + 1)
		ps = append(ps, p)
	}
	// Make the first connection the most recently idle: the second is now
	// the one idle the longest.
	ps[0].get("/")
	s.waitIdle(3)
	late := s.dial("")
	late.get("/")
	if !ps[1].closed() {
		t.Fatal("the connection idle the longest was not evicted")
	}
	for _, i := range []int{0, 2} {
		ps[i].get("/")
	}
	if st := s.l.Stats(); st.Evicted != 1 || st.Refused != 0 || st.Unauthenticated != 3 {
		t.Fatalf("stats %+v, want 1 evicted, 0 refused, 3 counted", st)
	}
}

// TestJustAcceptedCountsAsIdle: connections that never send a byte are
// evictable too, oldest first.
func TestJustAcceptedCountsAsIdle(t *testing.T) {
	s := newServer(t, Config{PerAddr: 2, Total: 100})
	a, b := s.dial(""), s.dial("")
	s.waitCount(2)
	c := s.dial("")
	c.get("/")
	if !a.closed() {
		t.Fatal("the silent connection accepted first was not evicted")
	}
	b.get("/")
}

// TestRefusesWhenNoneIsIdle: when every counted connection of the address
// is busy with a request, a new one is closed at once, and it gets in
// again once one is idle.
func TestRefusesWhenNoneIsIdle(t *testing.T) {
	s := newServer(t, Config{PerAddr: 2, Total: 100})
	a, b := s.dial(""), s.dial("")
	a.send("/block")
	b.send("/block")
	s.waitCount(2)
	s.waitIdle(0)
	c := s.dial("")
	if !c.closed() {
		t.Fatal("a connection over the cap was admitted while none was idle")
	}
	if st := s.l.Stats(); st.Refused != 1 || st.Evicted != 0 {
		t.Fatalf("stats %+v, want 1 refused", st)
	}
	close(s.release)
	if a.answer() != nil || b.answer() != nil {
		t.Fatal("the busy connections did not finish their requests")
	}
	s.waitIdle(2)
	s.dial("").get("/")
	if a.closedWithin(300*time.Millisecond) == b.closedWithin(300*time.Millisecond) {
		t.Fatal("want exactly one of the two idle connections evicted")
	}
}

// TestTotalCapEvictsAcrossAddresses: at the total cap, the connection idle
// the longest goes, whatever its address; under it, addresses are apart.
func TestTotalCapEvictsAcrossAddresses(t *testing.T) {
	s := newServer(t, Config{PerAddr: 2, Total: 3})
	a := s.dial("127.0.0.2")
	a.get("/")
	s.waitIdle(1)
	b := s.dial("127.0.0.3")
	b.get("/")
	s.waitIdle(2)
	c := s.dial("127.0.0.3")
	c.get("/")
	s.waitIdle(3)
	d := s.dial("127.0.0.4")
	d.get("/")
	if !a.closed() {
		t.Fatal("at the total cap the connection idle the longest was not evicted")
	}
	b.get("/")
	c.get("/")
	// 127.0.0.3 is at its own cap: its own oldest idle goes, not 127.0.0.4's.
	s.waitIdle(3)
	s.dial("127.0.0.3").get("/")
	if c.closedWithin(300*time.Millisecond) == b.closedWithin(300*time.Millisecond) {
		t.Fatal("want exactly one of 127.0.0.3's connections evicted")
	}
	d.get("/")
}

// TestAuthenticatedConnectionsAreNotCounted: a connection marked
// authenticated is out of the counts for good and is never evicted.
func TestAuthenticatedConnectionsAreNotCounted(t *testing.T) {
	s := newServer(t, Config{PerAddr: 1, Total: 100})
	var authed []*peer
	for range 3 {
		p := s.dial("")
		p.get("/auth")
		authed = append(authed, p)
	}
	s.waitCount(0)
	x := s.dial("")
	x.get("/")
	s.waitIdle(1)
	y := s.dial("")
	y.get("/")
	if !x.closed() {
		t.Fatal("the unauthenticated idle connection was not evicted")
	}
	for _, p := range authed {
		p.get("/")
	}
	if st := s.l.Stats(); st.Unauthenticated != 1 || st.Evicted != 1 {
		t.Fatalf("stats %+v, want 1 counted, 1 evicted", st)
	}
}

// TestCountsReleasedOnClose: closing, by the peer or after a hijack,
// releases the count exactly once.
func TestCountsReleasedOnClose(t *testing.T) {
	s := newServer(t, Config{PerAddr: 4, Total: 4})
	var ps []*peer
	for range 3 {
		p := s.dial("")
		p.get("/")
		ps = append(ps, p)
	}
	h := s.dial("")
	h.get("/hijack")
	s.waitCount(4)
	for _, p := range append(ps, h) {
		_ = p.c.Close()
	}
	s.waitCount(0)
	s.l.mu.Lock()
	addrs, idle := len(s.l.byAddr), s.l.idle.Len()
	s.l.mu.Unlock()
	if addrs != 0 || idle != 0 {
		t.Fatalf("after every close: %d addresses, %d idle left", addrs, idle)
	}
	for range 4 {
		s.dial("").get("/")
	}
	if st := s.l.Stats(); st.Evicted != 0 || st.Refused != 0 {
		t.Fatalf("stats %+v: released counts were not reused", st)
	}
}

// TestMarkAuthenticatedWithoutLimiter is a no-op for requests that did
// not come through a Limiter.
func TestMarkAuthenticatedWithoutLimiter(t *testing.T) {
	MarkAuthenticated(context.Background())
}

func TestAddrKey(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:80":                "127.0.0.1",
		"[::ffff:10.0.0.1]:80":        "10.0.0.1",
		"[2001:db8:1:2:3:4:5:6]:443":  "2001:db8:1:2::/64",
		"[2001:db8:1:2:ff::1]:1":      "2001:db8:1:2::/64",
		"[fe80::1%eth0]:22":           "fe80::/64",
		"not an address":              "not an address",
		"[2001:db8:1:3::1]:443":       "2001:db8:1:3::/64",
		"[::1]:7860":                  "::/64",
		"192.168.1.20:65535":          "192.168.1.20",
		"[2001:db8:1:2:ffff::ffff]:9": "2001:db8:1:2::/64",
	} {
		if got := addrKey(fakeAddr(in)); got != want {
			t.Errorf("addrKey(%s) = %s, want %s", in, got, want)
		}
	}
	if addrKey(nil) != "" {
		t.Error("addrKey(nil)")
	}
}

type fakeAddr string

func (a fakeAddr) Network() string { return "tcp" }
func (a fakeAddr) String() string  { return strings.TrimSpace(string(a)) }

func TestDefaultTotal(t *testing.T) {
	for _, c := range []struct {
		nofile uint64
		known  bool
		want   int
	}{
		{0, false, DefaultTotal},
		{1 << 20, true, DefaultTotal},
		{1024, true, 512},
		{256, true, 128},
		{10, true, minTotal},
	} {
		if got := defaultTotal(c.nofile, c.known); got != c.want {
			t.Errorf("defaultTotal(%d, %v) = %d, want %d", c.nofile, c.known, got, c.want)
		}
	}
	if per, total := New(Config{}).Caps(); per != DefaultPerAddr || total < minTotal || total > DefaultTotal {
		t.Errorf("default caps %d, %d", per, total)
	}
}

// TestWarnsOnceAMinute: the first eviction is logged, the next ones in
// the same minute are not.
func TestWarnsOnceAMinute(t *testing.T) {
	var b syncBuf
	s := newServer(t, Config{PerAddr: 1, Total: 100, Log: slog.New(slog.NewTextHandler(&b, nil))})
	for range 5 {
		s.dial("").get("/")
		s.waitIdle(1)
	}
	if got := strings.Count(b.String(), "at their cap"); got != 1 {
		t.Fatalf("%d warnings, want 1: %s", got, b.String())
	}
	if st := s.l.Stats(); st.Evicted != 4 {
		t.Fatalf("stats %+v, want 4 evicted", st)
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestUnderTLS: with TLS on top of the limiter's listener (so that the
// server sets Request.TLS), connections are still told idle from busy and
// marked authenticated.
func TestUnderTLS(t *testing.T) {
	ca := certtest.NewCA(t, "test CA")
	leaf := ca.Issue(t, []string{"127.0.0.1"}, time.Time{}, time.Time{})
	pair, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	l := New(Config{PerAddr: 4, Total: 4})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			http.Error(w, "no TLS", http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("/auth", func(w http.ResponseWriter, r *http.Request) {
		MarkAuthenticated(r.Context())
		_, _ = io.WriteString(w, "ok")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	l.Install(srv)
	go func() {
		_ = srv.Serve(tls.NewListener(l.Listen(ln), &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}))
	}()
	t.Cleanup(func() { _ = srv.Close() })
	s := &server{t: t, l: l, addr: ln.Addr().String()}
	dial := func() *peer {
		c, err := tls.Dial("tcp", s.addr, &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return &peer{t: t, c: c, br: bufio.NewReader(c)}
	}
	idle := dial()
	idle.get("/")
	s.waitIdle(1)
	authed := dial()
	authed.get("/auth")
	s.waitCount(1)
	_ = idle.c.Close()
	s.waitCount(0)
}
