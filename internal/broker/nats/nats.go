// Package nats is a broker.Broker on a NATS server (github.com/nats-io/nats.go),
// so several master nodes can route messages between their connections.
//
// It gives the guarantees package broker documents, and in particular:
//
//   - Topics are mapped one to one onto subjects under a prefix (default
//     "ferry"): every byte outside [A-Za-z0-9_-] is escaped as %XX, so a
//     topic holding '.', '*', '>' or whitespace is one literal subject token
//     and never a wildcard or another topic's subject.
//   - Subscribe returns after the server has confirmed the subscription (a
//     flush round trip), so every message published after it returns is
//     delivered while the connection holds.
//   - One subscription's messages are delivered in order on one goroutine
//     (nats.go's), and one publisher's messages travel on one connection, so
//     per-publisher, per-topic order holds across nodes.
//   - Delivery is at most once. The connection reconnects without limit,
//     with exponential backoff and jitter, and nats.go subscribes again after
//     a reconnect; messages published while the server is unreachable are
//     buffered up to Options.ReconnectBufSize and sent after the reconnect,
//     and Publish fails once that buffer is full. Messages other nodes
//     publish during an outage are lost: the relay persists events before it
//     publishes them and peers resume from the store.
//   - Publish never waits for the network beyond one bounded socket write;
//     it returns ctx.Err() for a done context and broker.ErrClosed after Close.
package nats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	natsgo "github.com/nats-io/nats.go"

	"github.com/ferry-dev/ferry/internal/broker"
)

var (
	_ broker.Broker       = (*Broker)(nil)
	_ broker.Connectivity = (*Broker)(nil)
)

// Defaults of Options.
const (
	DefaultPrefix           = "ferry"
	DefaultConnectTimeout   = 10 * time.Second
	DefaultSubscribeTimeout = 5 * time.Second
	DefaultReconnectBufSize = 8 << 20
	// reconnect backoff: doubles from minBackoff up to maxBackoff, with full
	// jitter so that the nodes of a cluster do not reconnect in step.
	minBackoff = 50 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// Options configure Connect. Only URL is required.
type Options struct {
	// URL is one NATS server URL or several separated by commas, as
	// nats.Connect takes them: nats://user:pass@host:4222, tls://host:4222.
	URL string
	// Name is the connection's name shown by the server (monitoring).
	Name string
	// CredsFile is a NATS credentials file (JWT and NKey seed), if the
	// server uses decentralized auth.
	CredsFile string
	// CAFile is a PEM file of root CAs to verify a TLS server with, if the
	// system roots do not hold its CA.
	CAFile string
	// Prefix is the first subject token of every topic, so several ferry
	// clusters (or other applications) can share one NATS account.
	Prefix string
	// ConnectTimeout bounds the first connection (also bounded by ctx).
	ConnectTimeout time.Duration
	// SubscribeTimeout bounds the server's confirmation of a subscription.
	SubscribeTimeout time.Duration
	// ReconnectBufSize bounds the bytes of messages buffered while the
	// server is unreachable; Publish fails once it is full. 0: the default;
	// negative: no buffer, Publish fails during an outage.
	ReconnectBufSize int
	// Logger receives disconnects, reconnects and dropped messages; nil
	// discards them.
	Logger *slog.Logger
	// Extra are further nats.go options (TLS client certificates, NKeys...),
	// applied after the ones above.
	Extra []natsgo.Option
}

// Broker routes messages through one NATS connection.
type Broker struct {
	nc        *natsgo.Conn
	prefix    string
	subWait   time.Duration
	log       *slog.Logger
	closed    atomic.Bool
	closeOnce sync.Once
}

// ErrBadTopic is returned for a topic that cannot be a subject (empty).
var ErrBadTopic = errors.New("broker/nats: empty topic")

// Connect dials the NATS server and returns a broker on it. The first
// connection must succeed before ctx is done and within ConnectTimeout;
// later losses of the connection are repaired in the background.
func Connect(ctx context.Context, o Options) (*Broker, error) {
	if o.URL == "" {
		return nil, errors.New("broker/nats: no server URL")
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if strings.ContainsAny(o.Prefix, ".*> \t\r\n") {
		return nil, fmt.Errorf("broker/nats: prefix %q must be one subject token", o.Prefix)
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.SubscribeTimeout <= 0 {
		o.SubscribeTimeout = DefaultSubscribeTimeout
	}
	switch {
	case o.ReconnectBufSize == 0:
		o.ReconnectBufSize = DefaultReconnectBufSize
	case o.ReconnectBufSize < 0:
		o.ReconnectBufSize = -1 // nats.go's "no buffer"
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	timeout := o.ConnectTimeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = max(time.Until(dl), time.Millisecond)
	}
	opts := []natsgo.Option{
		natsgo.Name(o.Name),
		natsgo.Timeout(timeout),
		natsgo.MaxReconnects(-1),
		natsgo.CustomReconnectDelay(backoff),
		natsgo.ReconnectBufSize(o.ReconnectBufSize),
		// A publisher is never held by a stalled socket longer than this.
		natsgo.FlusherTimeout(5 * time.Second),
		natsgo.DisconnectErrHandler(func(nc *natsgo.Conn, err error) {
			log.Warn("nats: disconnected", "err", err)
		}),
		natsgo.ReconnectHandler(func(nc *natsgo.Conn) {
			log.Info("nats: reconnected", "server", nc.ConnectedUrlRedacted())
		}),
		natsgo.ClosedHandler(func(*natsgo.Conn) { log.Debug("nats: connection closed") }),
		natsgo.ErrorHandler(func(_ *natsgo.Conn, s *natsgo.Subscription, err error) {
			// Mostly slow consumers: messages dropped for a subscription
			// whose deliver fell behind (at most once).
			subj := ""
			if s != nil {
				subj = s.Subject
			}
			log.Warn("nats: async error", "subject", subj, "err", err)
		}),
	}
	if o.CredsFile != "" {
		opts = append(opts, natsgo.UserCredentials(o.CredsFile))
	}
	if o.CAFile != "" {
		opts = append(opts, natsgo.RootCAs(o.CAFile))
	}
	opts = append(opts, o.Extra...)

	type result struct {
		nc  *natsgo.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		nc, err := natsgo.Connect(o.URL, opts...)
		done <- result{nc, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, fmt.Errorf("broker/nats: connect: %w", hideSecrets(r.err, o.URL))
		}
		log.Info("nats: connected", "server", r.nc.ConnectedUrlRedacted())
		return &Broker{nc: r.nc, prefix: o.Prefix + ".", subWait: o.SubscribeTimeout, log: log}, nil
	case <-ctx.Done():
		// The dial finishes within its timeout; close what it yields.
		go func() {
			if r := <-done; r.nc != nil {
				r.nc.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// hideSecrets keeps the user info of the server URLs out of err's text:
// Go's url package quotes a malformed URL whole, password included.
func hideSecrets(err error, urls string) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return fmt.Errorf("malformed server URL: %w", ue.Err)
	}
	msg := err.Error()
	for _, u := range strings.Split(urls, ",") {
		_, rest, ok := strings.Cut(u, "://")
		if !ok {
			rest = u
		}
		if i := strings.LastIndex(rest, "@"); i > 0 && strings.Contains(msg, rest[:i]) {
			return errors.New(strings.ReplaceAll(msg, rest[:i], "REDACTED"))
		}
	}
	return err
}

// backoff is the delay before the next round of reconnect attempts: full
// jitter over an exponentially growing cap.
func backoff(attempts int) time.Duration {
	limit := maxBackoff
	if attempts < 20 {
		limit = min(minBackoff<<attempts, maxBackoff)
	}
	return limit/2 + rand.N(limit/2+1) //nolint:gosec // jitter needs no crypto randomness
}

// Subject returns the NATS subject a topic is published on under prefix.
func Subject(prefix, topic string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(prefix) + 1 + len(topic))
	b.WriteString(prefix)
	b.WriteByte('.')
	for i := range len(topic) {
		c := topic[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

func (b *Broker) subject(topic string) (string, error) {
	if topic == "" {
		return "", ErrBadTopic
	}
	return Subject(strings.TrimSuffix(b.prefix, "."), topic), nil
}

// Publish implements broker.Broker. While the server is unreachable the
// message is buffered (see Options.ReconnectBufSize).
func (b *Broker) Publish(ctx context.Context, topic string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.closed.Load() {
		return broker.ErrClosed
	}
	subj, err := b.subject(topic)
	if err != nil {
		return err
	}
	if err := b.nc.Publish(subj, data); err != nil {
		if errors.Is(err, natsgo.ErrConnectionClosed) {
			return broker.ErrClosed
		}
		return fmt.Errorf("broker/nats: publish: %w", err)
	}
	return nil
}

// Subscribe implements broker.Broker. While the server is unreachable the
// subscription is kept and becomes active when the connection is back
// (messages published in between are lost, as at most once allows).
func (b *Broker) Subscribe(topic string, deliver func(data []byte)) (func(), error) {
	if b.closed.Load() {
		return nil, broker.ErrClosed
	}
	subj, err := b.subject(topic)
	if err != nil {
		return nil, err
	}
	// dead stops a delivery nats.go has already dequeued when unsubscribe
	// returns, so nothing reaches deliver after that.
	var dead atomic.Bool
	sub, err := b.nc.Subscribe(subj, func(m *natsgo.Msg) {
		if !dead.Load() && !b.closed.Load() {
			deliver(m.Data) // nats.go copies each message's payload
		}
	})
	if err != nil {
		if errors.Is(err, natsgo.ErrConnectionClosed) {
			return nil, broker.ErrClosed
		}
		return nil, fmt.Errorf("broker/nats: subscribe: %w", err)
	}
	// Unbounded by messages, bounded by bytes: deliver is non-blocking, so
	// this only fills when the process cannot keep up; then NATS drops
	// (slow consumer, logged) rather than the hub blocking.
	_ = sub.SetPendingLimits(-1, 64<<20)
	if !b.nc.IsConnected() {
		// No server to confirm it now: nats.go sends the subscription on
		// reconnect; waiting here would only hold the hub up.
		b.log.Warn("nats: subscribed while disconnected; active after reconnect", "topic", topic)
	} else if err := b.nc.FlushTimeout(b.subWait); err != nil {
		switch {
		case b.closed.Load() || b.nc.IsClosed():
			_ = sub.Unsubscribe()
			return nil, broker.ErrClosed
		case b.nc.IsConnected():
			_ = sub.Unsubscribe()
			return nil, fmt.Errorf("broker/nats: subscribe %q not confirmed: %w", topic, err)
		default:
			b.log.Warn("nats: subscribed while disconnected; active after reconnect", "topic", topic)
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			dead.Store(true)
			_ = sub.Unsubscribe() // fails only when the connection is closed: nothing to undo
		})
	}, nil
}

// Connected reports whether the broker is connected to a server now (not
// reconnecting, not closed).
func (b *Broker) Connected() bool { return b.nc.IsConnected() }

// Close implements broker.Broker: it closes the connection, which drops
// every subscription. It is idempotent.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		b.closed.Store(true)
		if b.nc.IsConnected() {
			// Send what is buffered before closing (bounded: the peer may
			// be gone); during an outage the buffer is dropped.
			_ = b.nc.FlushTimeout(time.Second)
		}
		b.nc.Close()
	})
	return nil
}
