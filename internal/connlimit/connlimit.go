// Package connlimit caps the unauthenticated connections an HTTP server
// holds, per remote address and in total, so that peers which connect and
// then sit idle cannot use up the process's file descriptors and keep the
// real user out.
//
// Use it by wrapping the server's listener with Limiter.Listen (under TLS,
// if any: tls.NewListener(l.Listen(ln), cfg)) and calling Limiter.Install
// on the http.Server (it chains ConnState and ConnContext).
// Handlers call MarkAuthenticated(r.Context()) once a request on the
// connection has presented a valid credential.
//
// Guarantees:
//
//   - A connection counts as unauthenticated from its accept until a
//     request on it is marked authenticated, or until it closes (whether it
//     was hijacked or not). An authenticated connection is never counted,
//     evicted or refused.
//   - At most Config.PerAddr unauthenticated connections come from one
//     address (an IPv4 address, or an IPv6 /64: one host owns a whole /64),
//     and at most Config.Total in all.
//   - A connection over a cap evicts the unauthenticated connection that
//     has been idle the longest (no request in flight: just accepted, or
//     waiting between keep-alive requests): of its own address when that
//     address is at its cap, else of any address. It is refused (closed at
//     once) only when every counted connection is busy with a request.
//     So a user arriving after many idle sockets from the same address
//     (127.0.0.1, say) still gets in.
//   - Counts are released exactly once per connection, when it closes.
//
// Busy connections are not evicted: the server's ReadHeaderTimeout bounds
// how long a request's headers take, so a busy slot frees itself.
package connlimit

import (
	"container/list"
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Config.
const (
	// DefaultPerAddr is how many unauthenticated connections one address
	// may hold: a browser opens about six per host, a reverse proxy more.
	DefaultPerAddr = 64
	// DefaultTotal is how many unauthenticated connections the server
	// holds in all, at most: never more than half the process's limit on
	// open files, so that the rest stays for authenticated connections,
	// the database and the agents.
	DefaultTotal = 512
	// minTotal is the floor of the default total when files are scarce.
	minTotal = 16
)

// Config sets the caps; zero values take the defaults.
type Config struct {
	// PerAddr caps one address's unauthenticated connections; default
	// DefaultPerAddr.
	PerAddr int
	// Total caps all unauthenticated connections; default DefaultTotal or
	// half the open-file limit, whichever is lower.
	Total int
	// Log, when set, hears at Warn that a cap was reached: at the first
	// eviction or refusal, then at most once per logEvery, with counts.
	Log *slog.Logger
}

// logEvery spaces the warnings that caps were reached: under a flood
// there is one line a minute, not one per connection.
const logEvery = time.Minute

// Stats are a Limiter's counters.
type Stats struct {
	// Unauthenticated is how many connections are counted now.
	Unauthenticated int
	// Evicted and Refused count connections closed to make room, and new
	// connections closed for want of it.
	Evicted, Refused uint64
}

// Limiter tracks the connections of one server. Create it with New.
type Limiter struct {
	perAddr, total int

	mu     sync.Mutex
	count  int
	byAddr map[string]int
	idle   *list.List // of *Conn, the longest idle at the front

	evicted, refused atomic.Uint64

	log      *slog.Logger
	logMu    sync.Mutex
	loggedAt time.Time
}

// New returns a Limiter with cfg's caps.
func New(cfg Config) *Limiter {
	if cfg.PerAddr <= 0 {
		cfg.PerAddr = DefaultPerAddr
	}
	if cfg.Total <= 0 {
		cfg.Total = defaultTotal(fdLimit())
	}
	return &Limiter{perAddr: cfg.PerAddr, total: cfg.Total, byAddr: map[string]int{}, idle: list.New(), log: cfg.Log}
}

// defaultTotal is the total cap for a process allowed nofile open files.
func defaultTotal(nofile uint64, known bool) int {
	if !known || nofile/2 >= DefaultTotal {
		return DefaultTotal
	}
	return max(int(nofile/2), minTotal)
}

// Caps returns the caps in force: per address and in total.
func (l *Limiter) Caps() (perAddr, total int) { return l.perAddr, l.total }

// Stats returns the current counters.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	n := l.count
	l.mu.Unlock()
	return Stats{Unauthenticated: n, Evicted: l.evicted.Load(), Refused: l.refused.Load()}
}

// Conn is an accepted connection the Limiter tracks. Its fields are
// guarded by the Limiter's mutex.
type Conn struct {
	net.Conn
	l       *Limiter
	key     string
	counted bool          // counted as unauthenticated
	elem    *list.Element // in l.idle while counted and idle
	once    sync.Once
}

// Close releases the connection's count and closes it.
func (c *Conn) Close() error {
	c.once.Do(func() { c.l.uncount(c) })
	return c.Conn.Close()
}

// Listen wraps ln: every accepted connection is admitted under the caps.
func (l *Limiter) Listen(ln net.Listener) net.Listener {
	return &listener{Listener: ln, l: l}
}

type listener struct {
	net.Listener
	l *Limiter
}

// Accept returns the next admitted connection; refused ones are closed
// here and never reach the server.
func (ln *listener) Accept() (net.Conn, error) {
	for {
		nc, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if c := ln.l.admit(nc); c != nil {
			return c, nil
		}
		_ = nc.Close()
	}
}

// admit counts nc, evicting the longest idle connection when a cap is
// reached; nil when there is no room.
func (l *Limiter) admit(nc net.Conn) *Conn {
	c := &Conn{Conn: nc, l: l, key: addrKey(nc.RemoteAddr())}
	l.mu.Lock()
	var victim *Conn
	switch {
	case l.byAddr[c.key] >= l.perAddr:
		victim = l.oldestIdle(c.key)
	case l.count >= l.total:
		victim = l.oldestIdle("")
	}
	if victim == nil && (l.byAddr[c.key] >= l.perAddr || l.count >= l.total) {
		l.mu.Unlock()
		l.refused.Add(1)
		l.warn()
		return nil
	}
	if victim != nil {
		// Uncounted now, so that the new connection fits at once; the
		// victim's own Close later finds nothing left to release.
		l.uncountLocked(victim)
	}
	c.counted = true
	l.count++
	l.byAddr[c.key]++
	c.elem = l.idle.PushBack(c) // a new connection has no request yet
	l.mu.Unlock()
	if victim != nil {
		l.evicted.Add(1)
		_ = victim.Close()
		l.warn()
	}
	return c
}

// warn logs that a cap was reached, at most once per logEvery.
func (l *Limiter) warn() {
	if l.log == nil {
		return
	}
	l.logMu.Lock()
	now := time.Now()
	if !l.loggedAt.IsZero() && now.Sub(l.loggedAt) < logEvery {
		l.logMu.Unlock()
		return
	}
	l.loggedAt = now
	l.logMu.Unlock()
	st := l.Stats()
	l.log.Warn("unauthenticated connections at their cap: closing the longest idle ones",
		"per_address", l.perAddr, "total", l.total, "evicted", st.Evicted, "refused", st.Refused)
}

// oldestIdle is the longest idle counted connection from key ("": any).
func (l *Limiter) oldestIdle(key string) *Conn {
	for e := l.idle.Front(); e != nil; e = e.Next() {
		if c := e.Value.(*Conn); key == "" || c.key == key {
			return c
		}
	}
	return nil
}

func (l *Limiter) uncount(c *Conn) {
	l.mu.Lock()
	l.uncountLocked(c)
	l.mu.Unlock()
}

func (l *Limiter) uncountLocked(c *Conn) {
	if !c.counted {
		return
	}
	c.counted = false
	if c.elem != nil {
		l.idle.Remove(c.elem)
		c.elem = nil
	}
	l.count--
	if l.byAddr[c.key]--; l.byAddr[c.key] <= 0 {
		delete(l.byAddr, c.key)
	}
}

// ConnState is the http.Server hook that tells idle connections from busy
// ones.
func (l *Limiter) ConnState(nc net.Conn, state http.ConnState) {
	c, ok := unwrap(nc).(*Conn)
	if !ok || c.l != l {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !c.counted {
		return
	}
	switch state {
	case http.StateIdle:
		if c.elem == nil {
			c.elem = l.idle.PushBack(c)
		}
	case http.StateActive, http.StateHijacked:
		// A hijacked connection left the server: it is busy until closed.
		if c.elem != nil {
			l.idle.Remove(c.elem)
			c.elem = nil
		}
	case http.StateClosed:
		l.uncountLocked(c)
	}
}

type ctxKey struct{}

// ConnContext is the http.Server hook that lets MarkAuthenticated find a
// request's connection.
func (l *Limiter) ConnContext(ctx context.Context, nc net.Conn) context.Context {
	if c, ok := unwrap(nc).(*Conn); ok && c.l == l {
		return context.WithValue(ctx, ctxKey{}, c)
	}
	return ctx
}

// unwrap is the connection under TLS: a server on TLS wraps the
// limiter's listener (tls.NewListener(l.Listen(ln), cfg)), so that the
// http.Server sees the *tls.Conn and sets Request.TLS.
func unwrap(nc net.Conn) net.Conn {
	if tc, ok := nc.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return nc
}

// Install sets srv's ConnState and ConnContext hooks, calling any that
// were set before.
func (l *Limiter) Install(srv *http.Server) {
	prevState, prevCtx := srv.ConnState, srv.ConnContext
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		l.ConnState(c, s)
		if prevState != nil {
			prevState(c, s)
		}
	}
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if prevCtx != nil {
			ctx = prevCtx(ctx, c)
		}
		return l.ConnContext(ctx, c)
	}
}

// MarkAuthenticated takes the connection that ctx (a request's context)
// arrived on out of the counts for good. It does nothing for a request
// that did not come through a Limiter.
func MarkAuthenticated(ctx context.Context) {
	if c, ok := ctx.Value(ctxKey{}).(*Conn); ok {
		c.l.uncount(c)
	}
}

// addrKey is the address a connection counts against: the IP for IPv4
// (and IPv4-mapped IPv6), the /64 for IPv6.
func addrKey(a net.Addr) string {
	if a == nil {
		return ""
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return a.String()
	}
	ip := ap.Addr().Unmap()
	if ip.Is4() {
		return ip.String()
	}
	p, err := ip.WithZone("").Prefix(64)
	if err != nil {
		return ip.String()
	}
	return p.String()
}
