// Package master is ferry's hub (`ferry serve`): the HTTP server that UIs and
// local clients connect to over WebSockets, which authenticates both,
// persists every session event before relaying it, and lets a UI or a
// client that reconnects resume without loss.
//
// Endpoints (see Handler): GET /v1/ui and GET /v1/client (WebSockets),
// GET and POST /login (the one-time login link; login.go), POST
// /v1/signin/status (why a browser is signed out; cookie.go), GET
// /v1/artifacts/{token} (artifact downloads), POST
// /v1/sessions/{session_id}/uploads and GET /v1/uploads/{upload_id}
// (attachments; package upload), GET /v1/push/key, POST and DELETE
// /v1/push/subscriptions and POST /v1/push/answer (Web Push; pushhttp.go),
// GET /healthz (liveness: 200 while the process serves, draining
// included), GET /readyz (readiness: 200 only when not draining, the store
// answers a ping within ReadyTimeout and the broker is connected; else 503
// and a short reason, never an internal error's text), and the UI
// (Config.UI) at /.
//
// Guarantees:
//
//   - Authentication happens before the upgrade: a missing, malformed,
//     unknown, revoked, expired or wrong-kind token is answered with HTTP 401
//     and a JSON body {"code":"unauthorized",…}. coder/websocket refuses a
//     foreign Origin for every upgrade besides.
//   - The session cookie alone, replayed by any client with any headers,
//     opens nothing (a browser sends it to every port of the host). A
//     browser's UI token is split into a cookie share and a key share kept
//     in the origin's localStorage (browser.go); /v1/ui needs both, and an
//     Origin naming the master's own origin. Only the POST that consumes a
//     login token hands out a key share. A download needs its link and the
//     cookie share of the link's owner.
//   - The session cookie's name is per master (ferry_session_<id>, the id
//     kept in the store: cookie.go), so masters on several ports of one
//     host never replace each other's sign-ins.
//   - Forwarded headers (X-Forwarded-Proto, -Host, -For) are believed only
//     from Config.TrustedProxies: the session cookie is Secure whenever the
//     browser came over HTTPS, directly or through such a proxy, and origin
//     checks compare the browser's own scheme and host.
//   - A login link opened from another site never replaces a session
//     silently, and fetching it (a link preview) does not use it up
//     (login.go).
//   - Every frame is decoded once, strictly, for the sender's role
//     (protocol.DecodeFrom). Bad input is answered with a coded error
//     message (parent_id = the offending message when it has a readable id)
//     and the connection stays up. Internal failures are logged and sent as
//     code internal only; the mapping lives in one function (wireError).
//   - A frame over protocol.MaxMessageBytes is drained and answered with
//     message_too_large, the connection kept; only a frame over
//     hardReadLimit (4× the limit) makes coder/websocket close with 1009.
//   - Each connection has two long-lived goroutines: a reader (the HTTP
//     handler returns after the upgrade, freeing its grown stack and the
//     request) and one writer fed by a bounded queue; pings run on a timer. The hub never blocks on a connection: a connection whose queue
//     is full is dropped with slow_consumer. A connection's own answers and
//     replays wait for room instead, using at most half the queue, so they
//     slow down only that connection's reader. A peer that does not answer
//     a ping within a ping interval (so at most two intervals after it was
//     last heard) is dropped.
//   - Every agent.* event and session.opened from a client, and the master's
//     own control.prompt.request, agent.interaction.resolved and
//     agent.prompt.refused, is stored
//     with the session's next seq before it is relayed; the client gets a
//     cumulative master.ack only for what is stored, in the order it sent
//     it, so a master restart loses nothing acknowledged. A re-sent event
//     (same message_id) is acknowledged but not relayed again.
//   - A prompt is delivered at least once and runs once (deliveries.go):
//     to a client that declares prompts_once it is stored as waiting for
//     the client's answer (its agent.turn.started or its refusal) in the
//     same transaction as the prompt itself, and the node holding the
//     client's connection sends it again until it is answered: when the
//     client connects, and at every sweep (RevokeCheck) for those waiting
//     longer than one. The client drops a copy by its message_id. Its
//     refusal of a prompt is stored as agent.prompt.refused (which answers
//     the prompt), so every UI of the session learns why it did not run,
//     whether or not the UI that sent it is still there.
//   - A UI that subscribes from (epoch, after_seq) gets every later event in
//     order with no gap and no duplicate, then live events; or, when the
//     epoch differs or the events are no longer retained, recovered:false
//     with a snapshot. Never a partial replay: a replay that finds a hole
//     closes the connection so the UI subscribes again.
//   - Artifacts: every agent.artifact is registered in the store before it
//     is stored as an event; ui.artifacts.list issues download tokens (32
//     random bytes, stored hashed, bound to the asking UI token, the
//     session and the artifact, expiring after Config.DownloadTTL). A
//     download needs the token and the login of the UI token it was issued
//     to: no login is 401, any other problem with the token the same 404.
//     The file is streamed from the session's client within a credit
//     window (protocol/download.go), so a download holds at most that much
//     memory whatever its size; when the downloader goes away the client's
//     read is cancelled. Range, If-Range, If-None-Match and
//     If-Modified-Since follow RFC 9110 for one range (several get the
//     whole file); the response is always an attachment with a sanitised
//     name (RFC 6266) that cannot run as a page of the master's origin.
//   - Uploads (package upload): a UI token (bearer, or a browser's cookie
//     share with its key share in KeyHeader from the master's origin)
//     uploads a file to a session it may see; a ui.prompt may name only
//     its own session's uploads of its own UI token, and the relayed
//     prompt carries each with a grant bound to that prompt, which is all
//     GET /v1/uploads/{upload_id} accepts. Expired uploads are swept with
//     expired download tokens (once per cluster: see cluster jobs below).
//   - Web Push (notify.go, pushhttp.go): a browser subscribes with its UI
//     token (as an upload authenticates); subscriptions die with their
//     token. An interaction request, a finished turn and a failed one are
//     sent to every subscription whose token may see the session's
//     machine, unless a UI connection shows that session focused
//     (ui.focus; forgotten when the connection closes). Each node
//     publishes its connections' focus on the broker and repeats it every
//     FocusRefresh, so the node storing the event knows them all; a node
//     that died stops holding notifications back after 3×FocusRefresh. Deciding
//     never blocks a session's writer: a bounded queue, then package
//     push's own. POST /v1/push/answer settles an interaction through the
//     same path as a UI's control.interaction.response (forwardTo).
//   - Drain (Shutdown, on SIGTERM): /readyz and every new upgrade answer
//     503 at once; UIs are closed with 1012 (service restart) and
//     DrainReason; a client connection accepts no further event, gets the
//     master.ack of every event it sent before once that is stored, and is
//     closed with 1012 too, so nothing accepted is left unacknowledged and
//     what was not accepted is re-sent to the next node. /healthz stays 200.
//   - Measurements go to Config.Metrics (the seam package metrics exports
//     to Prometheus); the master itself imports no metrics library.
//   - Routing between connections goes through a broker.Broker only: a
//     topic per session (events to UIs), per machine (control messages to
//     the client's connection), per UI connection (answers meant for one UI),
//     per download (the client's stream to the request serving it) and one
//     for machine presence.
//   - Presence (presence.go): every node repeats its client connections
//     on the presence topic every Config.PresenceRefresh, and answers at
//     once the query a node publishes when it starts, so a new node knows
//     every online machine within one round trip. A node takes a machine
//     of another node offline when it was not repeated for three of that
//     node's refreshes, exactly as if its client had left; it never
//     expires its own connections. The connection of record is the one
//     whose online frame came last; a repeat never takes a machine from a
//     newer connection (Since) nor undoes a goodbye.
//   - Decisions shared by master nodes are made once, in the store: an
//     interaction is settled by store.SettleInteraction whichever node the
//     answer or the timeout comes through (the loser is refused with
//     interaction_settled and nothing reaches the client), a login token
//     is consumed once, and download tokens work on every node.
//   - Cluster jobs (deleting expired download tokens and uploads) run on
//     the node holding the store lease jobsLease, renewed at every token
//     sweep and released at Shutdown; closing connections of revoked
//     tokens runs on every node for its own connections.
//
// Decisions and limits:
//
//   - A UI token may be limited to some machines (store.Token.Machines;
//     none: every machine). Its connections are told about, and may act
//     on, only those machines and their sessions: everything else is
//     answered exactly as if it did not exist (not_found, or left out of
//     lists and status broadcasts). A machine stays bound to the client
//     token it first registered with until that token is revoked.
//   - The master does not refuse a second prompt while a turn runs: the
//     client knows whether it is busy and answers busy; the master routes
//     that error to the UI that sent the prompt.
//   - ui.session.start stores the session before the client opens it; if
//     the client refuses, the session stays listed, idle and empty — except
//     an isolated one (worktree.go), which is deleted: a refused isolated
//     start leaves nothing behind. An isolated session's isolation is kept
//     in its snapshot and sent with every control.session.open (its
//     worktree's name once known); archiving or deleting it refuses
//     unshipped_changes without discard and machine_offline, else has the
//     client remove the worktree first; once its worktree is missing,
//     nothing that would make it again reaches the client.
//   - Loaded session state stays in memory for the master's lifetime.
//     With several nodes, each keeps its own copy of a session it loaded
//     and folds in the events other nodes stored (read from the store)
//     before it applies its own and before it serves a snapshot, so a
//     snapshot from any node is current up to the store's last seq.
//   - Presence is shared by repeating it, not stored: a node that dies
//     without a word has its machines shown online by the other nodes
//     for up to three refreshes (6 s by default). Repeating costs one
//     broker message per connected machine per refresh; storing presence
//     would cost a write per connection change and still need expiry.
package master

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/broker"
	"github.com/ferry-dev/ferry/internal/connlimit"
	"github.com/ferry-dev/ferry/internal/master/upload"
	"github.com/ferry-dev/ferry/internal/push"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// Defaults of Config.
const (
	DefaultRetention    = 10000
	DefaultPingInterval = 15 * time.Second
	DefaultQueueSize    = 1024
	DefaultOfflineGrace = 5 * time.Second
	// DefaultEmptySessionAge is Config.EmptySessionAge's default.
	DefaultEmptySessionAge = time.Hour
	// DefaultReopenGrace is Config.ReopenGrace's default: well past the
	// web UI's longest reconnect backoff (10 s).
	DefaultReopenGrace = time.Minute
)

// HandshakeTimeout bounds a WebSocket handshake from the hijack to the
// end of the 101 answer (reading the request is bounded by the HTTP
// server's ReadHeaderTimeout).
const HandshakeTimeout = 10 * time.Second

// hardReadLimit is where coder/websocket gives up on a frame and closes the
// connection (1009). Frames between protocol.MaxMessageBytes and this are
// drained and answered with message_too_large, keeping the connection.
const hardReadLimit = 4 * protocol.MaxMessageBytes

// Config configures a Master.
type Config struct {
	// Store persists tokens, machines, sessions and events (required).
	Store store.Store
	// Broker routes messages between connections; nil: broker.NewMemory().
	Broker broker.Broker
	// Retention is how many events are kept per session; default 10000.
	Retention int
	// PingInterval is how often peers are pinged; default 15s. A peer that
	// does not answer is dropped after at most two intervals.
	PingInterval time.Duration
	// QueueSize bounds each connection's outbound queue; default 1024.
	QueueSize int
	// OfflineGrace is how long a control message waits for its client to
	// come back before the UI gets client_offline; default 5s.
	OfflineGrace time.Duration
	// EmptySessionAge is how long a session that was never prompted, has
	// no title and is not open in a UI of the sweeping node is kept
	// before the jobs sweep deletes it (sessions opened and left are not
	// kept as clutter); default 1h, negative: never.
	EmptySessionAge time.Duration
	// ReopenGrace is how long after this node starts the sweep spares the
	// sessions created before it started: a UI that had one open when the
	// master stopped has not reconnected and reopened it yet; default 1m.
	ReopenGrace time.Duration
	// Logger receives the master's log; nil: discard.
	Logger *slog.Logger
	// UI is served at / when not nil; else a minimal status page.
	UI http.Handler
	// RevokeCheck is how often open connections are checked against the
	// stored tokens, so that revoking (or the expiry of) a token closes the
	// connections it opened; default PingInterval. Expired download tokens
	// and uploads are deleted as often, by one node of a cluster
	// (JobsLease), and each node sends the clients connected to it the
	// prompts they have not answered for as long (deliveries.go).
	RevokeCheck time.Duration
	// DownloadTTL is how long the download links ui.artifacts.list hands
	// out work; default DefaultDownloadTTL.
	DownloadTTL time.Duration
	// TrustedProxies are the addresses of TLS-terminating reverse proxies
	// whose X-Forwarded-Proto, -Host and -For are believed (package
	// forwarded); none: those headers are ignored.
	TrustedProxies []netip.Prefix
	// UploadMaxBytes caps one file a browser uploads; 0 (or more):
	// attachment.MaxBytes.
	UploadMaxBytes int64
	// UploadTTL is how long an upload is kept; default upload.DefaultTTL.
	UploadTTL time.Duration
	// UploadQuota bounds one session's live uploads; zero fields take
	// upload's defaults, negative ones set no bound.
	UploadQuota store.UploadQuota
	// Push sends Web Push notifications; nil: a push.Service signing with
	// the VAPID key kept in the store (created on first start).
	Push push.Sender
	// PushContact is the VAPID contact (mailto: or https:); default
	// push.DefaultContact.
	PushContact string
	// PushAllowLoopback lets push subscriptions name loopback endpoints,
	// over http too: for tests only (see docs/security.md).
	PushAllowLoopback bool
	// FocusRefresh is how often this node repeats its UI connections'
	// focus to the other nodes, which forget a focus not heard for three
	// of these; default DefaultFocusRefresh.
	FocusRefresh time.Duration
	// NodeID names this node in what it tells the other nodes sharing its
	// broker, and holds the jobs lease in the store; it must differ from
	// every other node's. Default: random, so every start is a new node.
	NodeID string
	// JobsLease is how long this node keeps the right to run the cluster's
	// background jobs (deleting expired download tokens and uploads)
	// without renewing it at a sweep; another node takes them over after
	// that, or at once when this one shuts down; default 3×RevokeCheck.
	JobsLease time.Duration
	// PresenceRefresh is how often this node repeats its client
	// connections' presence; the other nodes forget a machine not repeated
	// for three of these; default DefaultPresenceRefresh.
	PresenceRefresh time.Duration
	// Metrics receives the hub's measurements; nil: none are taken.
	Metrics Metrics
	// PublicURL is the master's URL as other devices reach it (the login
	// URL the CLI prints: https://NAME.ts.net, an ACME name); login links
	// a UI asks for (ui.login_link.create) point there. Empty or a
	// loopback URL: they point at the origin the asking UI reached.
	PublicURL string
}

// Master is the hub. Create it with New, serve Handler, stop it with Shutdown.
type Master struct {
	cfg       Config
	publicURL atomic.Pointer[string] // Config.PublicURL, checked; SetPublicURL changes it
	st        store.Store
	br        broker.Broker
	ownBroker bool
	log       *slog.Logger
	met       Metrics
	// ctx outlives every connection; background work (persistence, timers)
	// runs under it and it ends when Shutdown is done.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	closing bool
	// writersDone is set once Shutdown waits for the background work:
	// until then a session's writer may still start (goWriter).
	writersDone bool
	conns       map[*conn]struct{}
	nconns      map[protocol.Role]int // open connections by role, for Metrics
	uis         map[*conn]struct{}
	clients     map[string]*conn // local client connection per machine
	sessions    map[string]*sessionEntry

	node         string    // Config.NodeID
	started      time.Time // when New returned, for Config.ReopenGrace
	presence     presence
	stopPresence func()
	stopChanges  func()

	uploads *upload.Service
	notify  *notifier
	// cookieName is the session cookie's name, per master (cookie.go).
	cookieName string

	// sweepStop ends the revoked-token sweep; sweepDone is closed when it has.
	sweepStop, sweepDone chan struct{}

	connWG sync.WaitGroup // one per connection
	bgWG   sync.WaitGroup // session writers and waiting tasks
}

// New starts a master on cfg. ctx bounds the start only (loading sessions
// whose turns were running, to re-arm their interaction timeouts).
func New(ctx context.Context, cfg Config) (*Master, error) {
	if cfg.Store == nil {
		return nil, errors.New("master: Config.Store is required")
	}
	pub, err := checkPublicURL(cfg.PublicURL)
	if err != nil {
		return nil, err
	}
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = DefaultPingInterval
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.OfflineGrace <= 0 {
		cfg.OfflineGrace = DefaultOfflineGrace
	}
	if cfg.EmptySessionAge == 0 {
		cfg.EmptySessionAge = DefaultEmptySessionAge
	}
	if cfg.ReopenGrace <= 0 {
		cfg.ReopenGrace = DefaultReopenGrace
	}
	if cfg.DownloadTTL <= 0 {
		cfg.DownloadTTL = DefaultDownloadTTL
	}
	if cfg.PresenceRefresh <= 0 {
		cfg.PresenceRefresh = DefaultPresenceRefresh
	}
	if cfg.NodeID == "" {
		cfg.NodeID = newEpoch()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Master{
		cfg:      cfg,
		st:       cfg.Store,
		br:       cfg.Broker,
		log:      cfg.Logger,
		node:     cfg.NodeID,
		started:  time.Now(),
		met:      cfg.Metrics,
		conns:    map[*conn]struct{}{},
		nconns:   map[protocol.Role]int{},
		uis:      map[*conn]struct{}{},
		clients:  map[string]*conn{},
		sessions: map[string]*sessionEntry{},
	}
	if m.br == nil {
		m.br, m.ownBroker = broker.NewMemory(), true
	}
	if m.met == nil {
		m.met = noMetrics{}
	}
	m.publicURL.Store(&pub)
	if m.cookieName, err = newCookieName(ctx, cfg.Store); err != nil {
		return nil, err
	}
	if m.uploads, err = newUploads(ctx, cfg); err != nil {
		return nil, err
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	if m.notify, err = newNotifier(ctx, m, cfg); err != nil {
		m.cancel()
		if m.ownBroker {
			_ = m.br.Close()
		}
		return nil, err
	}
	if err := m.startPresence(); err != nil {
		m.notify.close(ctx)
		m.cancel()
		return nil, err
	}
	unsub := func() { m.stopPresence(); m.presence.stop() }
	if m.stopChanges, err = m.br.Subscribe(sessionsTopic, m.onSessionChanged); err != nil {
		unsub()
		m.notify.close(ctx)
		m.cancel()
		return nil, fmt.Errorf("master: subscribe to session changes: %w", err)
	}
	if err := m.resumeRunning(ctx); err != nil {
		unsub()
		m.stopChanges()
		m.notify.close(ctx)
		m.cancel()
		return nil, err
	}
	m.sweepStop, m.sweepDone = make(chan struct{}), make(chan struct{})
	go m.sweepRevoked()
	return m, nil
}

// jobsLease is the store lease whose holder runs the cluster's background
// jobs (sweepRevoked).
const jobsLease = "master.jobs"

// sweepRevoked closes, every RevokeCheck, the connections whose token was
// revoked or has expired: one token listing per sweep, whatever the number
// of connections. Authentication holds for a connection's whole life, not
// only at its upgrade. The node holding jobsLease also deletes expired
// download tokens and uploads, so that a cluster does it once per sweep,
// not once per node; it gives the lease up when it stops.
func (m *Master) sweepRevoked() {
	defer close(m.sweepDone)
	every := m.cfg.RevokeCheck
	if every <= 0 {
		every = m.cfg.PingInterval
	}
	ttl := m.cfg.JobsLease
	if ttl <= 0 {
		ttl = 3 * every
	}
	defer m.releaseJobs()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-m.sweepStop:
			return
		case <-t.C:
		}
		m.clusterJobs(ttl)
		m.redeliverStale(time.Now().Add(-every))
		toks, err := m.st.ListTokens(m.ctx)
		if err != nil {
			m.log.Warn("token sweep failed; trying again later", "err", err)
			continue
		}
		now := time.Now()
		valid := make(map[string]bool, len(toks))
		for _, tok := range toks {
			valid[tok.ID] = tok.ExpiresAt.IsZero() || now.Before(tok.ExpiresAt)
		}
		m.mu.Lock()
		var gone []*conn
		for c := range m.conns {
			if !valid[c.token] {
				gone = append(gone, c)
			}
		}
		m.mu.Unlock()
		for _, c := range gone {
			c.log.Info("closing a connection whose token was revoked or expired")
			c.close(websocket.StatusPolicyViolation, "token revoked", &protocol.Error{Code: protocol.CodeUnauthorized, Message: "the token of this connection was revoked or has expired"}, false)
		}
	}
}

// clusterJobs runs the retention jobs when this node holds (or now takes,
// or renews for ttl) the jobs lease.
func (m *Master) clusterJobs(ttl time.Duration) {
	held, err := m.st.AcquireLease(m.ctx, jobsLease, m.node, ttl)
	if err != nil {
		m.log.Warn("taking the jobs lease failed; trying again later", "err", err)
		return
	}
	if !held {
		return // another node runs them
	}
	if _, err := m.st.DeleteExpiredDownloadTokens(m.ctx, time.Now()); err != nil {
		m.log.Warn("deleting expired download tokens failed; trying again later", "err", err)
	}
	if _, err := m.st.DeleteExpiredUploads(m.ctx, time.Now()); err != nil {
		m.log.Warn("deleting expired uploads failed; trying again later", "err", err)
	}
	m.sweepEmptySessions()
}

// releaseJobs gives the jobs lease up (if held) so that another node takes
// the jobs over at its next sweep rather than after the lease's ttl.
func (m *Master) releaseJobs() {
	ctx, cancel := context.WithTimeout(m.ctx, 5*time.Second)
	defer cancel()
	if err := m.st.ReleaseLease(ctx, jobsLease, m.node); err != nil {
		m.log.Info("releasing the jobs lease failed; it expires on its own", "err", err)
	}
}

// resumeRunning loads the sessions whose turn was running when the master
// stopped, so that their open interactions time out as they should.
func (m *Master) resumeRunning(ctx context.Context) error {
	rows, err := m.st.ListSessions(ctx, "", 1000)
	if err != nil {
		return fmt.Errorf("master: list sessions: %w", err)
	}
	for _, r := range rows {
		if r.State != protocol.SessionRunning {
			continue
		}
		if _, err := m.session(ctx, r.ID); err != nil {
			return fmt.Errorf("master: load session %s: %w", r.ID, err)
		}
	}
	return nil
}

// Handler serves the master's endpoints.
func (m *Master) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/ui", m.serveUI)
	mux.HandleFunc("GET /v1/client", m.serveClient)
	mux.HandleFunc("GET /login", m.serveLogin)
	mux.HandleFunc("POST /login", m.serveLoginPost)
	mux.HandleFunc("POST /v1/signin/status", m.serveSignInStatus)
	mux.HandleFunc("GET "+LoginStylePath, serveLoginStyle)
	mux.HandleFunc("GET /healthz", m.serveHealth)
	mux.HandleFunc("GET /readyz", m.serveReady)
	mux.HandleFunc("GET /v1/artifacts/{token}", m.serveArtifact)
	mux.HandleFunc("POST /v1/sessions/{session_id}/uploads", m.serveUpload)
	mux.HandleFunc("GET /v1/uploads/{upload_id}", m.uploads.Serve)
	mux.HandleFunc("GET /v1/push/key", m.servePushKey)
	mux.HandleFunc("POST /v1/push/subscriptions", m.servePushSubscribe)
	mux.HandleFunc("DELETE /v1/push/subscriptions", m.servePushUnsubscribe)
	mux.HandleFunc("POST /v1/push/answer", m.servePushAnswer)
	if m.cfg.UI != nil {
		mux.Handle("/", m.cfg.UI)
	} else {
		mux.HandleFunc("GET /{$}", m.serveStatus)
	}
	return mux
}

// DrainReason is the close reason of every connection a draining node
// closes (with 1012, service restart).
const DrainReason = "master node draining; reconnect"

// Shutdown drains the node: readiness turns 503 and new WebSocket upgrades
// get 503 at once (a load balancer sends them elsewhere); every UI
// connection is closed with 1012 (service restart); each client connection
// stops taking new events, gets the acknowledgement of every event it
// already sent once that is stored, and is closed with 1012 too, so the
// peers reconnect (to another node) without a long backoff. It then waits
// for every accepted event to be stored and stops the master's timers. It
// returns ctx's error if that takes too long (the remaining connections
// are then cut). The Store is not closed.
func (m *Master) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	if m.closing {
		m.mu.Unlock()
		return nil
	}
	m.closing = true
	close(m.sweepStop)
	conns := make([]*conn, 0, len(m.conns))
	for c := range m.conns {
		conns = append(conns, c)
	}
	m.mu.Unlock()
	<-m.sweepDone
	var drains sync.WaitGroup
	for _, c := range conns {
		if c.role != protocol.RoleClient {
			c.close(websocket.StatusServiceRestart, DrainReason, nil, false)
			continue
		}
		drains.Go(func() {
			c.drainClient(ctx)
			c.close(websocket.StatusServiceRestart, DrainReason, nil, false)
		})
	}
	drains.Wait()
	err := waitGroup(ctx, &m.connWG)
	if err != nil {
		for _, c := range conns {
			c.cut()
		}
	}
	m.mu.Lock()
	m.writersDone = true
	m.mu.Unlock()
	if werr := waitGroup(ctx, &m.bgWG); err == nil {
		err = werr
	}
	m.notify.close(ctx)
	m.stopPresence()
	m.stopChanges()
	m.presence.stop()
	m.mu.Lock()
	for _, e := range m.sessions {
		if e.s != nil {
			e.s.stopTimers()
		}
	}
	m.mu.Unlock()
	if m.ownBroker {
		_ = m.br.Close()
	}
	m.cancel()
	if err != nil {
		return fmt.Errorf("master: shutdown: %w", err)
	}
	return nil
}

func waitGroup(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// goBG runs f in the background, tracked by Shutdown; false after Shutdown.
func (m *Master) goBG(f func()) bool { return m.goUnless(&m.closing, f) }

// goWriter is goBG for a session's writer, which may start while the node
// drains too: an event a client connection accepted just before the drain
// began must be stored and acknowledged before the connection is closed
// with 1012, and its session's writer may have been idle then.
func (m *Master) goWriter(f func()) bool { return m.goUnless(&m.writersDone, f) }

// goUnless runs f in the background, tracked by Shutdown, unless *stopped
// (a field guarded by m.mu).
func (m *Master) goUnless(stopped *bool, f func()) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if *stopped {
		return false
	}
	m.bgWG.Go(f)
	return true
}

// httpError answers a request refused before the upgrade.
func httpError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(protocol.Error{Code: code, Message: message})
}

func unauthorized(w http.ResponseWriter) {
	httpError(w, http.StatusUnauthorized, protocol.CodeUnauthorized, "missing, invalid or expired token")
}

// authenticate verifies secret for kind and answers the request itself when
// it does not authenticate.
func (m *Master) authenticate(w http.ResponseWriter, r *http.Request, secret, kind string) (store.Token, bool) {
	tok, err := auth.Verify(r.Context(), m.st, secret, kind)
	switch {
	case errors.Is(err, auth.ErrUnauthorized):
		// The route, not the path: a download's path holds its token.
		m.log.Info("refused connection", "route", r.Pattern, "remote", m.remote(r))
		unauthorized(w)
		return tok, false
	case err != nil:
		m.log.Error("verify token", "err", err)
		httpError(w, http.StatusInternalServerError, protocol.CodeInternal, "internal error")
		return tok, false
	}
	// An authenticated connection is out of the idle-connection caps.
	connlimit.MarkAuthenticated(r.Context())
	return tok, true
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", false
	}
	scheme, secret, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", true // present but not a bearer token: refused
	}
	return strings.TrimSpace(secret), true
}

// serveUI authenticates a UI by its bearer token, or a browser by both
// shares of its token (browser.go): the cookie alone opens nothing.
func (m *Master) serveUI(w http.ResponseWriter, r *http.Request) {
	secret, ok := bearer(r)
	if !ok {
		if secret, ok = m.browserSecret(r); !ok {
			m.log.Info("refused connection", "path", r.URL.Path, "remote", m.remote(r))
			unauthorized(w)
			return
		}
	}
	tok, ok := m.authenticate(w, r, secret, store.TokenUI)
	if !ok {
		return
	}
	if value, legacy, ok := m.sessionCookie(r); ok && legacy && !tok.ExpiresAt.IsZero() {
		// Signed in under the old shared name: the 101 answer moves the
		// cookie to this master's own name (cookie.go).
		m.setSessionCookie(w, r, value, time.Until(tok.ExpiresAt))
	}
	m.serveConn(w, r, protocol.RoleUI, tok)
}

func (m *Master) serveClient(w http.ResponseWriter, r *http.Request) {
	secret, ok := bearer(r)
	if !ok {
		unauthorized(w)
		return
	}
	tok, ok := m.authenticate(w, r, secret, store.TokenClient)
	if !ok {
		return
	}
	m.serveConn(w, r, protocol.RoleClient, tok)
}

func (m *Master) serveConn(w http.ResponseWriter, r *http.Request, role protocol.Role, tok store.Token) {
	m.mu.Lock()
	closing := m.closing
	m.mu.Unlock()
	if closing {
		httpError(w, http.StatusServiceUnavailable, protocol.CodeInternal, "the master is shutting down")
		return
	}
	// coder/websocket refuses a foreign Origin.
	hw := &hijackRecorder{ResponseWriter: w}
	ws, err := websocket.Accept(hw, r, m.acceptOptions(r))
	if err != nil {
		m.log.Info("websocket upgrade failed", "err", err, "remote", m.remote(r))
		return
	}
	if hw.conn != nil {
		_ = hw.conn.SetDeadline(time.Time{}) // the handshake is over
	}
	c := newConn(m, ws, hw.conn, role, tok)
	if role == protocol.RoleUI {
		c.origin = m.view(r).Origin()
	}
	if !m.register(c) {
		_ = ws.Close(websocket.StatusGoingAway, "master shutting down")
		return
	}
	c.log.Debug("connected", "remote", m.remote(r), "token", tok.Name)
	// The reader runs on a fresh goroutine and the handler returns: net/http
	// no longer needs its goroutine, whose stack grew large serving the
	// request, nor the request itself, so an idle connection costs less.
	go func() {
		defer m.connWG.Done()
		if role == protocol.RoleUI {
			m.runUI(c)
		} else {
			m.runClient(c)
		}
		c.log.Debug("disconnected")
	}()
}

// hijackRecorder keeps the socket coder/websocket takes over, so that a
// connection can be cut at once: coder/websocket's Close waits up to 5 s for
// a peer that does not read, and CloseNow waits for a Close under way.
type hijackRecorder struct {
	http.ResponseWriter
	conn net.Conn
}

// Hijack implements http.Hijacker.
func (h *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := h.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the response writer cannot hijack")
	}
	c, rw, err := hj.Hijack()
	if err == nil {
		// Hijacking clears the server's deadlines: bound the rest of the
		// handshake (the 101 answer) until serveConn clears this one.
		_ = c.SetDeadline(time.Now().Add(HandshakeTimeout))
	}
	h.conn = c
	return c, rw, err
}

func (m *Master) register(c *conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		return false
	}
	m.conns[c] = struct{}{}
	m.countConn(c, 1)
	if c.role == protocol.RoleUI {
		m.uis[c] = struct{}{}
	}
	m.connWG.Add(1)
	return true
}

func (m *Master) unregister(c *conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.conns[c]; ok {
		m.countConn(c, -1)
	}
	delete(m.conns, c)
	delete(m.uis, c)
}

// serveHealth is liveness: it answers 200 while the process serves HTTP,
// draining included, so an orchestrator does not kill a node that is
// finishing its writes.
func (m *Master) serveHealth(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte("ok\n"))
}

// ReadyTimeout bounds the store's ping in a readiness check.
const ReadyTimeout = 2 * time.Second

// serveReady is readiness: 200 only when this node can serve a new
// connection (not draining, the store answers a ping within ReadyTimeout,
// the broker is connected), else 503 with a short reason. The reason never
// carries an internal error's text; the log does.
func (m *Master) serveReady(w http.ResponseWriter, r *http.Request) {
	reason := m.notReady(r.Context())
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if reason != "" {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(reason + "\n"))
		return
	}
	_, _ = w.Write([]byte("ready\n"))
}

// notReady says why this node should get no new connections ("" when it
// should).
func (m *Master) notReady(ctx context.Context) string {
	m.mu.Lock()
	closing := m.closing
	m.mu.Unlock()
	if closing {
		return "draining"
	}
	if !broker.Connected(m.br) {
		return "broker unavailable"
	}
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	if err := m.st.Ping(ctx); err != nil {
		m.log.Warn("readiness: the store does not answer", "err", err)
		return "store unavailable"
	}
	return ""
}

func (m *Master) serveStatus(w http.ResponseWriter, _ *http.Request) {
	online := m.presence.onlineCount()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = fmt.Fprintf(w, "<!doctype html><title>ferry</title><h1>ferry master</h1><p>%s machine(s) online. The web UI is not built into this binary.</p>\n",
		html.EscapeString(fmt.Sprint(online)))
}
