// Package push delivers Web Push notifications: each one encrypted to its
// browser (RFC 8291, aes128gcm) and signed with the master's VAPID key
// (RFC 8292), by github.com/SherClockHolmes/webpush-go.
//
// Guarantees:
//
//   - Send never blocks: a notification goes into a bounded queue that a
//     few workers drain; when the queue is full it is dropped (and logged).
//     A slow or stuck push service costs a worker for at most the request
//     timeout, never the caller.
//   - 429, 5xx and network errors are retried with exponential backoff
//     (with jitter, capped), honouring Retry-After, up to MaxAttempts; a
//     retry waits on a timer, not in a worker. 404 and 410 mean the
//     subscription is gone: Config.Gone is told so that it is deleted.
//     Any other answer is logged and the notification dropped.
//   - Every request carries TTL and Urgency.
//   - Only https endpoints on public addresses are reached: CheckEndpoint
//     refuses others when a subscription is made, and the dialer checks
//     every resolved address again before it connects (a name that
//     resolves to a private address is refused then). No proxy is used,
//     and redirects are not followed. Config.AllowLoopback (tests) also
//     lets http and https endpoints on loopback addresses through.
//   - Logs name an endpoint by its origin only: its path and query are the
//     subscription's capability, and are cut from error texts too (the
//     HTTP client's errors quote the whole URL).
package push

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"

	"github.com/ferry-dev/ferry/internal/netguard"
)

// Defaults of Config.
const (
	DefaultWorkers     = 2
	DefaultQueueSize   = 256
	DefaultMaxAttempts = 5
	DefaultBackoff     = time.Second
	DefaultMaxBackoff  = 5 * time.Minute
	DefaultTimeout     = 30 * time.Second
	// DefaultContact is the VAPID sub claim when none is configured.
	DefaultContact = "mailto:ferry@localhost"
	// MaxEndpointBytes bounds a subscription's endpoint URL.
	MaxEndpointBytes = 2048
)

// Urgency values (RFC 8030 section 5.3).
const (
	UrgencyNormal = "normal"
	UrgencyHigh   = "high"
)

// Subscription is where a notification goes and whom it is encrypted to.
type Subscription struct {
	Endpoint string
	// P256dh is the browser's public key (65 bytes), Auth its secret (16).
	P256dh, Auth []byte
}

// Notification is one message to one subscription.
type Notification struct {
	// Payload is what the service worker's push event gets (encrypted).
	Payload []byte
	// Urgency is UrgencyNormal (default) or UrgencyHigh.
	Urgency string
	// TTL is how long the push service keeps it for an offline browser;
	// default 1 hour.
	TTL time.Duration
	// Topic lets a newer notification replace an undelivered older one
	// (at most 32 base64url characters; "" for none).
	Topic string
}

// Sender is what the master needs of a push service.
type Sender interface {
	// Send queues n for sub without blocking; false when it was dropped.
	Send(sub Subscription, n Notification) bool
	// PublicKey is the VAPID public key (an uncompressed P-256 point),
	// the browser's applicationServerKey.
	PublicKey() []byte
	// Close stops the workers, abandoning what is still queued after ctx.
	Close(ctx context.Context) error
}

var _ Sender = (*Service)(nil)

// Config configures a Service.
type Config struct {
	// PrivateKey is the VAPID private key: a P-256 scalar, 32 bytes
	// (NewPrivateKey makes one).
	PrivateKey []byte
	// Contact is the VAPID sub claim: "mailto:…" or "https://…";
	// default DefaultContact.
	Contact string
	// AllowLoopback also lets endpoints on loopback addresses through,
	// over http too. For tests: never set it for a public master.
	AllowLoopback bool
	// Gone is called (on a worker) for an endpoint the push service says
	// no longer exists (404, 410).
	Gone func(ctx context.Context, endpoint string)
	// Logger receives delivery failures; nil: discard.
	Logger *slog.Logger
	// Workers, QueueSize, MaxAttempts, Backoff, MaxBackoff and Timeout
	// default to the Default* constants.
	Workers, QueueSize, MaxAttempts int
	Backoff, MaxBackoff, Timeout    time.Duration
}

// NewPrivateKey returns a fresh VAPID private key.
func NewPrivateKey() ([]byte, error) {
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("push: new VAPID key: %w", err)
	}
	return k.Bytes(), nil
}

// job is one notification on its way, with its attempts so far.
type job struct {
	sub      Subscription
	n        Notification
	attempts int
}

// Service delivers notifications. Create it with New.
type Service struct {
	cfg     Config
	pub     []byte
	privB64 string
	pubB64  string
	client  *http.Client
	log     *slog.Logger

	q    chan job
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu     sync.Mutex
	closed bool
	timers map[*time.Timer]struct{}
}

// New starts a Service's workers.
func New(cfg Config) (*Service, error) {
	priv, err := ecdh.P256().NewPrivateKey(cfg.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("push: VAPID private key: %w", err)
	}
	if cfg.Contact == "" {
		cfg.Contact = DefaultContact
	}
	if err := CheckContact(cfg.Contact); err != nil {
		return nil, err
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{
		cfg: cfg, pub: priv.PublicKey().Bytes(),
		privB64: base64.RawURLEncoding.EncodeToString(priv.Bytes()),
		log:     cfg.Logger, q: make(chan job, cfg.QueueSize), timers: map[*time.Timer]struct{}{},
	}
	s.pubB64 = base64.RawURLEncoding.EncodeToString(s.pub)
	s.client = guardedClient(cfg.AllowLoopback, cfg.Timeout)
	s.ctx, s.stop = context.WithCancel(context.Background())
	for range cfg.Workers {
		s.wg.Go(s.work)
	}
	return s, nil
}

// PublicKey implements Sender.
func (s *Service) PublicKey() []byte { return append([]byte(nil), s.pub...) }

// Send implements Sender.
func (s *Service) Send(sub Subscription, n Notification) bool {
	return s.enqueue(job{sub: sub, n: n})
}

func (s *Service) enqueue(j job) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	select {
	case s.q <- j:
		return true
	default:
		s.log.Warn("push queue full; notification dropped", "endpoint", origin(j.sub.Endpoint))
		return false
	}
}

// Close implements Sender.
func (s *Service) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for t := range s.timers {
		t.Stop()
	}
	close(s.q)
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		s.stop()
		return nil
	case <-ctx.Done():
		s.stop() // cancels the requests under way
		<-done
		return fmt.Errorf("push: close: %w", ctx.Err())
	}
}

func (s *Service) work() {
	for j := range s.q {
		s.deliver(j)
	}
}

// outcome of one attempt.
type outcome int

const (
	delivered outcome = iota
	retry
	gone
	dropped
)

func (s *Service) deliver(j job) {
	j.attempts++
	res, after := s.attempt(j)
	switch res {
	case delivered:
	case gone:
		s.log.Info("push subscription gone; deleting it", "endpoint", origin(j.sub.Endpoint))
		if s.cfg.Gone != nil {
			s.cfg.Gone(s.ctx, j.sub.Endpoint)
		}
	case retry:
		if j.attempts >= s.cfg.MaxAttempts {
			s.log.Warn("push delivery failed; giving up", "endpoint", origin(j.sub.Endpoint), "attempts", j.attempts)
			return
		}
		s.later(j, s.backoff(j.attempts, after))
	}
}

// backoff is the wait before attempt n+1: Retry-After when the service
// said one, else Backoff doubled per attempt with ±25% jitter; at most
// MaxBackoff either way.
func (s *Service) backoff(n int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, s.cfg.MaxBackoff)
	}
	d := s.cfg.Backoff << min(n-1, 20)
	if d <= 0 || d > s.cfg.MaxBackoff {
		d = s.cfg.MaxBackoff
	}
	jitter := time.Duration(mrand.Int64N(int64(d)/2+1)) - d/4 //nolint:gosec // jitter needs no secrecy
	return min(d+jitter, s.cfg.MaxBackoff)
}

// later queues j again after d, on a timer: no worker waits.
func (s *Service) later(j job, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		s.mu.Lock()
		delete(s.timers, t)
		s.mu.Unlock()
		s.enqueue(j)
	})
	s.timers[t] = struct{}{}
}

func (s *Service) attempt(j job) (outcome, time.Duration) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.Timeout)
	defer cancel()
	if err := CheckEndpoint(j.sub.Endpoint, s.cfg.AllowLoopback); err != nil {
		s.log.Warn("push endpoint refused", "endpoint", origin(j.sub.Endpoint), "err", logErr(err, j.sub.Endpoint))
		return dropped, 0
	}
	ttl := j.n.TTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	urgency := webpush.UrgencyNormal
	if j.n.Urgency == UrgencyHigh {
		urgency = webpush.UrgencyHigh
	}
	// webpush-go pads the message by appending to it: give it a copy of
	// its own, since one payload goes to many subscriptions at once.
	msg := make([]byte, len(j.n.Payload))
	copy(msg, j.n.Payload)
	resp, err := webpush.SendNotificationWithContext(ctx, msg, &webpush.Subscription{
		Endpoint: j.sub.Endpoint,
		Keys: webpush.Keys{P256dh: base64.RawURLEncoding.EncodeToString(j.sub.P256dh),
			Auth: base64.RawURLEncoding.EncodeToString(j.sub.Auth)},
	}, &webpush.Options{
		HTTPClient: s.client, Subscriber: subscriber(s.cfg.Contact), Topic: j.n.Topic,
		TTL: int(ttl / time.Second), Urgency: urgency,
		VAPIDPublicKey: s.pubB64, VAPIDPrivateKey: s.privB64,
	})
	if err != nil {
		if s.ctx.Err() != nil {
			return dropped, 0
		}
		s.log.Info("push delivery failed; retrying", "endpoint", origin(j.sub.Endpoint), "err", logErr(err, j.sub.Endpoint))
		return retry, 0
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
	}()
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return delivered, 0
	case c == http.StatusNotFound || c == http.StatusGone:
		return gone, 0
	case c == http.StatusTooManyRequests || c >= 500:
		s.log.Info("push service busy; retrying", "endpoint", origin(j.sub.Endpoint), "status", c)
		return retry, retryAfter(resp.Header.Get("Retry-After"))
	default:
		s.log.Warn("push service refused a notification; dropped", "endpoint", origin(j.sub.Endpoint), "status", c)
		return dropped, 0
	}
}

// retryAfter parses a Retry-After header: seconds or an HTTP date.
func retryAfter(h string) time.Duration {
	if h == "" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// subscriber is Contact as webpush-go wants it: it adds "mailto:" itself
// to anything that is not an https URL.
func subscriber(contact string) string {
	return strings.TrimPrefix(contact, "mailto:")
}

// CheckContact checks a VAPID contact: a mailto: address or an https URL.
func CheckContact(c string) error {
	switch {
	case strings.HasPrefix(c, "mailto:") && strings.Contains(c, "@") && len(c) > len("mailto:")+2:
	case strings.HasPrefix(c, "https://") && len(c) > len("https://"):
	default:
		return fmt.Errorf("push: contact %q: want mailto:ADDRESS or an https:// URL", c)
	}
	if strings.ContainsAny(c, " \t\r\n\"") {
		return fmt.Errorf("push: contact %q: no spaces or quotes", c)
	}
	return nil
}

// ErrEndpoint is wrapped by CheckEndpoint's refusals.
var ErrEndpoint = errors.New("push endpoint refused")

// CheckEndpoint accepts an endpoint that may be reached: an absolute https
// URL without credentials whose host is a public address or a name that
// is not a local one (the dialer checks what a name resolves to).
// allowLoopback also accepts http and https on loopback addresses.
func CheckEndpoint(raw string, allowLoopback bool) error {
	if raw == "" || len(raw) > MaxEndpointBytes {
		return fmt.Errorf("%w: the endpoint must be 1 to %d bytes", ErrEndpoint, MaxEndpointBytes)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return fmt.Errorf("%w: the endpoint is not an absolute URL", ErrEndpoint)
	}
	if u.User != nil {
		return fmt.Errorf("%w: the endpoint carries credentials", ErrEndpoint)
	}
	host := strings.ToLower(u.Hostname())
	addr, perr := netip.ParseAddr(strings.Trim(host, "[]"))
	isIP := perr == nil
	loopback := isIP && addr.Unmap().IsLoopback()
	switch {
	case allowLoopback && loopback && (u.Scheme == "http" || u.Scheme == "https"):
		return nil
	case u.Scheme != "https":
		return fmt.Errorf("%w: the endpoint must be https", ErrEndpoint)
	case isIP && !netguard.PublicAddr(addr):
		return fmt.Errorf("%w: the endpoint's host is a loopback, private or otherwise non-public address", ErrEndpoint)
	case !isIP && localName(host):
		return fmt.Errorf("%w: the endpoint's host is a local name", ErrEndpoint)
	}
	return nil
}

// localName reports names that only mean something on a local network.
func localName(host string) bool {
	host = strings.TrimSuffix(host, ".")
	if !strings.Contains(host, ".") {
		return true // localhost, intranet hosts
	}
	for _, suf := range []string{".localhost", ".local", ".internal", ".lan", ".home.arpa", ".localdomain", ".intranet", ".corp"} {
		if strings.HasSuffix(host, suf) {
			return true
		}
	}
	return false
}

var errForbiddenAddr = errors.New("push: refusing to connect to a non-public address")

// guardedClient is the client of every delivery: no proxy (it would dial
// for us, past the check), no redirects, and a dialer that checks every
// address before it connects.
func guardedClient(allowLoopback bool, timeout time.Duration) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return errForbiddenAddr
		}
		a := ap.Addr().Unmap()
		if netguard.PublicAddr(a) || allowLoopback && a.IsLoopback() {
			return nil
		}
		return errForbiddenAddr
	}}
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            d.DialContext,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: 64 << 10,
		ForceAttemptHTTP2:      true,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
	}
	return &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
}

// origin is an endpoint's scheme and host, for logs: the path is a
// capability of the browser's subscription (logErr keeps it out of error
// texts too).
func origin(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "?"
	}
	return u.Scheme + "://" + u.Host
}

// logErr is err's text as a log may show it, without endpoint's path or
// query: the HTTP client's *url.Error quotes the whole URL ("Post
// \"https://…/push/send/<capability>\": EOF"), so each one becomes its
// operation, the origin and its cause; any other mention of what follows
// the origin (another library's wording) is cut too.
func logErr(err error, endpoint string) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + " " + origin(endpoint) + ": " + logErr(ue.Err, endpoint)
	}
	msg := err.Error()
	u, perr := url.Parse(endpoint)
	if perr != nil {
		return strings.ReplaceAll(msg, endpoint, "[endpoint]")
	}
	var secret []string
	if o := u.Scheme + "://" + u.Host; strings.HasPrefix(endpoint, o) {
		secret = append(secret, endpoint[len(o):])
	}
	secret = append(secret, u.EscapedPath(), u.Path, u.RawQuery)
	for _, p := range secret {
		if len(p) > 1 {
			msg = strings.ReplaceAll(msg, p, "/[path]")
		}
	}
	return msg
}

// CheckKeys checks a subscription's keys: p256dh an uncompressed point on
// P-256 (65 bytes), auth 16 bytes.
func CheckKeys(p256dh, auth []byte) error {
	if len(p256dh) != 65 {
		return fmt.Errorf("%w: p256dh is %d bytes, want 65 (an uncompressed P-256 point)", ErrKeys, len(p256dh))
	}
	if _, err := ecdh.P256().NewPublicKey(p256dh); err != nil {
		return fmt.Errorf("%w: p256dh is not a point on P-256", ErrKeys)
	}
	if len(auth) != 16 {
		return fmt.Errorf("%w: auth is %d bytes, want 16", ErrKeys, len(auth))
	}
	return nil
}

// ErrKeys is wrapped by CheckKeys's refusals.
var ErrKeys = errors.New("push subscription keys refused")
