// Package tailnet puts ferry on the user's tailnet as a node of its own
// (tailscale.com/tsnet) and serves it there over HTTPS with the tailnet's
// certificate.
//
// Guarantees:
//   - Start returns only once the node is logged in and running, holds a
//     certificate for its MagicDNS name, and listens on the tailnet (port
//     443; Node.TLSConfig serves the certificate); the URL it returns is https://NAME.TAILNET.ts.net, the
//     name the tailnet gave the node. Nothing it opens accepts plain TCP
//     on any address: the listener is inside the tailnet (tsnet's
//     userspace network stack). The one socket on the machine's own
//     addresses is tsnet's WireGuard UDP port, which accepts only packets
//     encrypted to the node's key.
//   - With Config.Funnel the same listener is also published on the
//     internet through Tailscale Funnel (Node.Public is set; the caller
//     warns).
//   - Refusals are coded *Error values, returned before anything listens:
//     an auth key the tailnet refuses (CodeAuthKeyRefused, naming
//     TS_AUTHKEY and how to make a new key), a control server not reached
//     within Config.ReachTimeout (CodeControlUnreachable, with tsnet's
//     health warnings), a tailnet without MagicDNS or HTTPS certificates
//     (CodeHTTPSDisabled, saying where to enable them), no certificate
//     (CodeCertificate), Funnel not allowed (CodeFunnelRefused), a bad
//     hostname or state folder. The node is closed on every refusal.
//   - Without an auth key, the interactive login URL is handed to
//     Config.LoginURL once, however often tsnet repeats it; tsnet's own
//     logs (user and backend) go to Config.Log at debug level only.
//   - The state folder (Config.Dir) is 0700 and the files tsnet left in it
//     when Start returns are 0600 (tsnet writes its certificate 0644 and
//     its log files with the umask's mode).
package tailnet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/ferry-dev/ferry/internal/lazyregexp"

	"tailscale.com/ipn"
	"tailscale.com/ipn/ipnstate"
	"tailscale.com/tsnet"
)

// DefaultHostname is the node's name on the tailnet unless told otherwise.
const DefaultHostname = "ferry"

// Default bounds of Start.
const (
	// DefaultReachTimeout bounds the wait for the control server's first
	// answer (logged in, a login URL, or a refusal).
	DefaultReachTimeout = 60 * time.Second
	// DefaultCertTimeout bounds getting the certificate (the first one is
	// issued by Let's Encrypt through the control server: tens of seconds).
	DefaultCertTimeout = 3 * time.Minute
)

// Error codes.
const (
	// CodeBadHostname: Config.Hostname is not a DNS label.
	CodeBadHostname = "tailscale_bad_hostname"
	// CodeState: the state folder cannot be made or used.
	CodeState = "tailscale_state"
	// CodeAuthKeyRefused: the control server refused the auth key.
	CodeAuthKeyRefused = "tailscale_auth_key_refused"
	// CodeLoginRefused: the control server refused the login (no auth key).
	CodeLoginRefused = "tailscale_login_refused"
	// CodeControlUnreachable: no answer from the control server in time.
	CodeControlUnreachable = "tailscale_control_unreachable"
	// CodeHTTPSDisabled: the tailnet has MagicDNS or HTTPS certificates off.
	CodeHTTPSDisabled = "tailscale_https_disabled"
	// CodeCertificate: the certificate could not be had.
	CodeCertificate = "tailscale_certificate"
	// CodeFunnelRefused: Funnel is not allowed for this node.
	CodeFunnelRefused = "tailscale_funnel_refused"
)

// Error is a refusal of Start.
type Error struct {
	// Code is one of the codes above.
	Code string
	// Reason says what is wrong and what to do, for people.
	Reason string
	// Err is the underlying error, if any.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("tailscale: %s: %v [%s]", e.Reason, e.Err, e.Code)
	}
	return fmt.Sprintf("tailscale: %s [%s]", e.Reason, e.Code)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is matches another *Error with the same code, so callers can write
// errors.Is(err, &tailnet.Error{Code: tailnet.CodeAuthKeyRefused}).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Config says how to start the node.
type Config struct {
	// Dir is the node's state folder (keys, certificates); made 0700.
	Dir string
	// Hostname is the node's name on the tailnet (default DefaultHostname).
	// The tailnet may give another (ferry-1) when the name is taken.
	Hostname string
	// AuthKey logs a new node in without a person ("" : LoginURL).
	AuthKey string
	// ControlURL is the control server ("" : Tailscale's).
	ControlURL string
	// Funnel publishes the listener on the internet too.
	Funnel bool
	// LoginURL is called once with the URL a person must open to add the
	// node to their tailnet (nil: the URL is logged at debug level only).
	LoginURL func(url string)
	// Log gets tsnet's logs at debug level (nil: discarded).
	Log *slog.Logger
	// ReachTimeout and CertTimeout bound Start's waits (0: the defaults).
	ReachTimeout, CertTimeout time.Duration
}

// Node is ferry's node on the tailnet.
type Node struct {
	srv *tsnet.Server
	// Listener accepts connections from the tailnet on port 443, before
	// TLS: wrap it in TLSConfig outermost (tls.NewListener), after any
	// other wrapper, so that an http.Server sees *tls.Conn (r.TLS).
	Listener net.Listener
	// TLSConfig serves the node's certificate (renewed by tsnet).
	TLSConfig *tls.Config
	// URL is https://NAME.TAILNET.ts.net (no trailing slash).
	URL string
	// Name is the node's DNS name, NAME.TAILNET.ts.net.
	Name string
	// Public is set when the listener is on the internet too (Funnel).
	Public bool
}

// Close stops listening and takes the node off the tailnet (its state is
// kept, so the next Start is the same node).
func (n *Node) Close() error {
	lnErr := n.Listener.Close()
	if err := n.srv.Close(); err != nil {
		return err
	}
	if lnErr != nil && !errors.Is(lnErr, net.ErrClosed) {
		return lnErr
	}
	return nil
}

// hostnameRE is a DNS label, as MagicDNS names are made of.
var hostnameRE = lazyregexp.New(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Start joins the tailnet and listens on it; see the package guarantees.
// ctx bounds the start only: the node lives until Close.
func Start(ctx context.Context, cfg Config) (_ *Node, err error) {
	if cfg.Hostname == "" {
		cfg.Hostname = DefaultHostname
	}
	if !hostnameRE.MatchString(cfg.Hostname) {
		return nil, &Error{Code: CodeBadHostname, Reason: fmt.Sprintf("hostname %q: want a DNS label: lower-case letters, digits and '-', at most 63, not starting or ending with '-'", cfg.Hostname)}
	}
	if cfg.ReachTimeout <= 0 {
		cfg.ReachTimeout = DefaultReachTimeout
	}
	if cfg.CertTimeout <= 0 {
		cfg.CertTimeout = DefaultCertTimeout
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, &Error{Code: CodeState, Reason: "state folder " + cfg.Dir, Err: err}
	}
	if err := os.Chmod(cfg.Dir, 0o700); err != nil { //nolint:gosec // a folder: its owner needs x; an older, looser one is tightened
		return nil, &Error{Code: CodeState, Reason: "state folder " + cfg.Dir, Err: err}
	}
	srv := &tsnet.Server{
		Dir:        cfg.Dir,
		Hostname:   cfg.Hostname,
		AuthKey:    cfg.AuthKey,
		ControlURL: cfg.ControlURL,
		// tsnet repeats the login URL every few seconds and says more
		// besides: people see LoginURL's one line instead.
		UserLogf: debugf(cfg.Log, "tsnet"),
		Logf:     debugf(cfg.Log, "tailscale"),
	}
	defer func() {
		if err != nil {
			_ = srv.Close()
		}
	}()
	if err := srv.Start(); err != nil {
		return nil, &Error{Code: CodeState, Reason: "start the node in " + cfg.Dir, Err: err}
	}
	lc, err := srv.LocalClient()
	if err != nil {
		return nil, &Error{Code: CodeState, Reason: "start the node in " + cfg.Dir, Err: err}
	}
	if err := waitRunning(ctx, srv, cfg); err != nil {
		return nil, err
	}
	st, err := lc.StatusWithoutPeers(ctx)
	if err != nil {
		return nil, fmt.Errorf("tailscale: status: %w", err)
	}
	name, err := certName(st)
	if err != nil {
		return nil, err
	}
	// Get the certificate now: a refusal is said at start, not on the
	// first phone's handshake, and that handshake does not wait for it.
	cctx, cancel := context.WithTimeout(ctx, cfg.CertTimeout)
	defer cancel()
	if _, _, err := lc.CertPair(cctx, name); err != nil {
		return nil, &Error{Code: CodeCertificate, Reason: "could not get the HTTPS certificate of " + name +
			" (is \"HTTPS Certificates\" enabled on the admin console's DNS page?)", Err: err}
	}
	n := &Node{srv: srv, Name: name, URL: "https://" + name, Public: cfg.Funnel,
		// HTTP/1.1 only: the UI's WebSocket upgrades over it.
		TLSConfig: &tls.Config{GetCertificate: lc.GetCertificate, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}}
	var ln net.Listener
	if cfg.Funnel {
		ln, err = srv.ListenFunnel("tcp", ":443")
		if err != nil {
			return nil, &Error{Code: CodeFunnelRefused, Reason: "Funnel is not allowed for this node: allow it in the tailnet policy file " +
				"(nodeAttrs \"funnel\", see tailscale.com/kb/1223/funnel), or drop --tailscale-funnel", Err: err}
		}
	} else {
		ln, err = srv.ListenTLS("tcp", ":443")
		if err != nil {
			return nil, &Error{Code: CodeHTTPSDisabled, Reason: httpsHowTo, Err: err}
		}
	}
	n.Listener = plainListener{ln}
	if err := tighten(cfg.Dir); err != nil {
		_ = n.Listener.Close()
		return nil, &Error{Code: CodeState, Reason: "make the state folder private", Err: err}
	}
	return n, nil
}

// plainListener hands out the connections under tsnet's TLS listener
// (ListenTLS and ListenFunnel always wrap): no handshake has begun on
// them, so the caller's own wrappers can go under TLS.
type plainListener struct{ net.Listener }

func (l plainListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*tls.Conn); ok {
		return tc.NetConn(), nil
	}
	return c, nil
}

// httpsHowTo says how to give a tailnet what ferry needs for HTTPS.
const httpsHowTo = "the tailnet has no HTTPS certificates for its nodes: enable MagicDNS and HTTPS Certificates " +
	"in the admin console (login.tailscale.com/admin/dns), then start ferry again"

// certName is the node's name to get a certificate for: its MagicDNS
// name, which must be one of the tailnet's certificate domains.
func certName(st *ipnstate.Status) (string, error) {
	if st.CurrentTailnet == nil || !st.CurrentTailnet.MagicDNSEnabled || len(st.CertDomains) == 0 {
		return "", &Error{Code: CodeHTTPSDisabled, Reason: httpsHowTo}
	}
	if st.Self != nil {
		self := strings.TrimSuffix(st.Self.DNSName, ".")
		for _, d := range st.CertDomains {
			if d == self {
				return d, nil
			}
		}
	}
	return st.CertDomains[0], nil
}

// waitRunning waits until the node runs, handing the login URL to
// cfg.LoginURL once. Until the control server first answers the wait is
// bounded by cfg.ReachTimeout; a person logging in has as long as ctx.
func waitRunning(ctx context.Context, srv *tsnet.Server, cfg Config) error {
	lc, err := srv.LocalClient()
	if err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := lc.WatchIPNBus(wctx, ipn.NotifyInitialState)
	if err != nil {
		return fmt.Errorf("tailscale: watch the node: %w", err)
	}
	defer func() { _ = w.Close() }()
	notes := make(chan ipn.Notify)
	watchErr := make(chan error, 1)
	go func() {
		for {
			n, err := w.Next()
			if err != nil {
				watchErr <- err
				return
			}
			select {
			case notes <- n:
			case <-wctx.Done():
				return
			}
		}
	}()
	reach := time.NewTimer(cfg.ReachTimeout)
	defer reach.Stop()
	reached := false // the control server answered: a login URL
	shown := ""
	showLogin := func(u string) {
		if u == "" || u == shown {
			return
		}
		if shown == "" && cfg.LoginURL != nil {
			cfg.LoginURL(u) // once: a later URL replaces it only in the logs
		}
		shown = u
		debugf(cfg.Log, "tsnet")("login URL: %s", u)
		reached = true
		reach.Stop()
	}
	for {
		select {
		case n := <-notes:
			if n.ErrMessage != nil {
				return refusal(cfg, *n.ErrMessage)
			}
			if n.BrowseToURL != nil {
				showLogin(*n.BrowseToURL)
			}
			if n.State == nil {
				continue
			}
			switch *n.State {
			case ipn.Running:
				return nil
			case ipn.NeedsLogin:
				if st, err := lc.StatusWithoutPeers(ctx); err == nil {
					showLogin(st.AuthURL)
				}
			}
		case err := <-watchErr:
			return fmt.Errorf("tailscale: watch the node: %w", err)
		case <-reach.C:
			if reached {
				continue
			}
			return unreachable(ctx, srv, cfg)
		case <-ctx.Done():
			return fmt.Errorf("tailscale: joining the tailnet: %w", ctx.Err())
		}
	}
}

// refusal is the error for what the control server said when it refused
// the node.
func refusal(cfg Config, msg string) error {
	if cfg.AuthKey != "" {
		return &Error{Code: CodeAuthKeyRefused, Reason: fmt.Sprintf("the tailnet refused the auth key in $TS_AUTHKEY (%s): it may be expired, revoked or used up. "+
			"Generate a new one in the admin console (login.tailscale.com/admin/settings/keys), set TS_AUTHKEY to it, and start ferry again; "+
			"or unset TS_AUTHKEY to log in with a URL instead", msg)}
	}
	return &Error{Code: CodeLoginRefused, Reason: "the tailnet refused the login: " + msg}
}

// unreachable is the error for a control server that did not answer.
func unreachable(ctx context.Context, srv *tsnet.Server, cfg Config) error {
	where := "Tailscale's control server"
	if cfg.ControlURL != "" {
		where = "the control server " + cfg.ControlURL
	}
	reason := fmt.Sprintf("no answer from %s within %s: check this machine's network (and proxy), then start ferry again", where, cfg.ReachTimeout)
	if lc, err := srv.LocalClient(); err == nil {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if st, err := lc.StatusWithoutPeers(sctx); err == nil && len(st.Health) > 0 {
			reason += "; tailscale says: " + strings.Join(st.Health, "; ")
		}
	}
	return &Error{Code: CodeControlUnreachable, Reason: reason}
}

// debugf logs to log at debug level, or nowhere.
func debugf(log *slog.Logger, source string) func(string, ...any) {
	if log == nil || !log.Enabled(context.Background(), slog.LevelDebug) {
		return func(string, ...any) {}
	}
	return func(format string, args ...any) {
		log.Debug(strings.TrimSpace(fmt.Sprintf(format, args...)), "source", source)
	}
}

// tighten makes the folders under dir 0700 and its files 0600, never
// following a link out of dir.
func tighten(dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()
	return fs.WalkDir(root.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // a temporary file tsnet renamed meanwhile
		}
		if err != nil {
			return err
		}
		mode := os.FileMode(0o600)
		switch {
		case d.IsDir():
			mode = 0o700
		case !d.Type().IsRegular():
			return nil // a socket or link: not tsnet's files
		}
		if err := root.Chmod(path, mode); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
}
