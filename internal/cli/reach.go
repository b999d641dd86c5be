package cli

// How ferry serve and ferry up are reached (docs/reach.md): plain HTTP on
// --addr (loopback by default); HTTPS with the operator's own certificate
// (--tls-cert/--tls-key, reloaded when the files change); or HTTPS with
// certificates an ACME CA issues and ferry renews (--acme DOMAIN, Let's
// Encrypt unless --acme-ca says otherwise).
//
// Every bad setting is refused before anything serves: a pair that does
// not load, a domain that does not resolve here, a CA that cannot be
// reached or refuses. With --acme the listener is bound first (the CA
// validates TLS-ALPN-01 on it), but until the first certificate is issued
// it completes only the CA's challenge handshakes.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"

	"github.com/ferry-dev/ferry/internal/certfile"
	"github.com/ferry-dev/ferry/internal/version"
)

// reachFlags are the TLS and ACME flags of ferry serve and ferry up.
type reachFlags struct {
	tlsCert, tlsKey string
	acme            stringList
	acmeCA          string
	acmeEmail       string
	acmeCARoot      string
	acmeHTTPAddr    string
}

// acmeHTTPOff is the --acme-http-addr that offers no HTTP-01.
const acmeHTTPOff = "off"

func (f *reachFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.tlsCert, "tls-cert", "", "serve HTTPS with the PEM certificate (chain) in `FILE`, reloaded when it changes; needs --tls-key (see docs/reach.md)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "the PEM private key `FILE` of --tls-cert")
	fs.Var(&f.acme, "acme", "serve HTTPS for `DOMAIN` with a certificate from an ACME CA (Let's Encrypt by default), obtained at start and renewed; "+
		"the domain must resolve to this machine and the CA reach it on port 443 (repeatable; see docs/reach.md)")
	fs.StringVar(&f.acmeCA, "acme-ca", autocert.DefaultACMEDirectory, "the ACME CA's directory `URL`")
	fs.StringVar(&f.acmeEmail, "acme-email", "", "the `ADDRESS` the ACME CA writes to about your certificates (optional)")
	fs.StringVar(&f.acmeCARoot, "acme-ca-root", "", "trust the PEM root certificate(s) in `FILE` for the connection to --acme-ca (a test or private CA)")
	fs.StringVar(&f.acmeHTTPAddr, "acme-http-addr", "", "answer the ACME HTTP-01 challenge on `HOST:PORT` (default :80 when it is free; "+acmeHTTPOff+": only TLS-ALPN-01 on --addr)")
}

// check refuses what the flags cannot mean (a usage error), and
// normalises the domains.
func (f *reachFlags) check() error {
	switch {
	case (f.tlsCert == "") != (f.tlsKey == ""):
		return usageErrorf("--tls-cert and --tls-key go together: give the certificate and its private key (both PEM files)")
	case len(f.acme) > 0 && f.tlsCert != "":
		return usageErrorf("--acme obtains its own certificate: give --acme, or --tls-cert and --tls-key, not both")
	case len(f.acme) == 0:
		for _, fl := range []struct{ name, v, def string }{
			{"acme-ca", f.acmeCA, autocert.DefaultACMEDirectory}, {"acme-email", f.acmeEmail, ""},
			{"acme-ca-root", f.acmeCARoot, ""}, {"acme-http-addr", f.acmeHTTPAddr, ""},
		} {
			if fl.v != fl.def {
				return usageErrorf("--%s is a setting of --acme: give --acme DOMAIN too", fl.name)
			}
		}
		return nil
	}
	var domains stringList
	for _, d := range f.acme {
		n, err := acmeDomain(d)
		if err != nil {
			return usageErrorf("--acme %q: %v [acme_bad_domain]", d, err)
		}
		if !slices.Contains(domains, n) {
			domains = append(domains, n)
		}
	}
	f.acme = domains
	if u, err := url.Parse(f.acmeCA); err != nil || u.Scheme != "https" || u.Host == "" {
		return usageErrorf("--acme-ca %q: want the https:// URL of the CA's ACME directory, e.g. %s", f.acmeCA, autocert.DefaultACMEDirectory)
	}
	if e := f.acmeEmail; e != "" && (strings.Count(e, "@") != 1 || strings.ContainsAny(e, " \t\r\n<>,") || strings.HasPrefix(e, "@") || strings.HasSuffix(e, "@")) {
		return usageErrorf("--acme-email %q: want one address, like you@example.com", e)
	}
	if a := f.acmeHTTPAddr; a != "" && a != acmeHTTPOff {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return usageErrorf("--acme-http-addr %q: want HOST:PORT (or %s)", a, acmeHTTPOff)
		}
	}
	return nil
}

// acmeDomain checks that d can have a certificate from an ACME CA by
// TLS-ALPN-01 or HTTP-01, and returns it in lower case without a final
// dot.
func acmeDomain(d string) (string, error) {
	n := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(d)), ".")
	switch {
	case n == "":
		return "", errors.New("no domain given; want a DNS name such as ferry.example.com")
	case strings.HasPrefix(n, "*."):
		return "", errors.New("a wildcard needs the DNS-01 challenge, which ferry does not answer; name the host itself")
	case strings.Contains(n, "://") || strings.ContainsAny(n, "/:"):
		return "", errors.New("want the DNS name alone, without a scheme, a port or a path")
	}
	if _, err := netip.ParseAddr(n); err == nil {
		return "", errors.New("an IP address: ACME certificates here are for DNS names; name the host")
	}
	if len(n) > 253 {
		return "", errors.New("longer than 253 characters")
	}
	labels := strings.Split(n, ".")
	if len(labels) < 2 {
		return "", errors.New("not a full DNS name (it has no dot); want e.g. ferry.example.com")
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return "", fmt.Errorf("the label %q is not a DNS label (1 to 63 of a-z, 0-9 and -, not starting or ending with -)", l)
		}
		for _, r := range l {
			if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
				if r > 127 {
					return "", fmt.Errorf("the label %q is not ASCII: give its xn-- (punycode) form", l)
				}
				return "", fmt.Errorf("the label %q holds %q: a DNS label has only a-z, 0-9 and -", l, r)
			}
		}
	}
	return n, nil
}

// reached is where ferry serves, and how it is reached.
type reached struct {
	// ln is the bound listener, plain TCP: serveHTTP puts the limiter and
	// then tlsConfig (when set) on top of it.
	ln        net.Listener
	tlsConfig *tls.Config
	// base is the URL people and clients use.
	base string
	// serverName and leaf pin ferry up's own client to the certificate
	// served right now (TLS only).
	serverName string
	leaf       func() *x509.Certificate
	// closers release what Close must (the HTTP-01 server, the renewal
	// watch).
	closers []func()
}

// Close releases what the listener needed beside itself (serveHTTP's
// server closes the listener).
func (r *reached) Close() {
	for _, c := range r.closers {
		c()
	}
	r.closers = nil
}

// secure reports whether ferry serves HTTPS.
func (r *reached) secure() bool { return r.tlsConfig != nil }

// listen binds addr and returns how ferry is reached there, as the flags
// say. dataFolder holds the ACME cache.
func (f *reachFlags) listen(ctx context.Context, env Env, addr, dataFolder string, log *slog.Logger) (*reached, error) {
	switch {
	case f.tlsCert != "":
		return f.listenFiles(addr, log)
	case len(f.acme) > 0:
		return f.listenACME(ctx, env, addr, dataFolder, log)
	}
	ln, base, err := listener(addr)
	if err != nil {
		return nil, err
	}
	return &reached{ln: ln, base: base}, nil
}

// serverTLS is the TLS configuration ferry serves with: TLS 1.2 and up,
// HTTP/1.1 (the WebSockets need it), certificates from get.
func serverTLS(get func(*tls.ClientHelloInfo) (*tls.Certificate, error), protos ...string) *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: get,
		NextProtos:     append([]string{"http/1.1"}, protos...),
	}
}

// listenFiles serves the pair --tls-cert and --tls-key name, reloaded
// when the files change; a pair that does not load is refused before
// anything listens.
func (f *reachFlags) listenFiles(addr string, log *slog.Logger) (*reached, error) {
	rl, err := certfile.New(f.tlsCert, f.tlsKey, log)
	if err != nil {
		flagName := "--tls-cert"
		var ce *certfile.Error
		if errors.As(err, &ce) && ce.Key {
			flagName = "--tls-key"
		}
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	ln, err := listen("--addr", addr)
	if err != nil {
		return nil, err
	}
	leaf := func() *x509.Certificate { return rl.Certificate().Leaf }
	tcp, _ := ln.Addr().(*net.TCPAddr)
	host := urlHost(tcp, leaf())
	log.Info("serving HTTPS", "cert", f.tlsCert, "served", certfile.Describe(leaf()), "left", certfile.Left(leaf(), time.Now()))
	return &reached{
		ln: ln, tlsConfig: serverTLS(rl.GetCertificate),
		base:       "https://" + hostPort(host, tcp.Port),
		serverName: host, leaf: leaf,
	}, nil
}

// urlHost is the host of the printed URL with the certificate leaf: the
// listener's address when the certificate is for it; else the
// certificate's first DNS name (not a wildcard), then its first IP
// address; else the listener's address, loopback for a wildcard one.
func urlHost(tcp *net.TCPAddr, leaf *x509.Certificate) string {
	specified := tcp != nil && !tcp.IP.IsUnspecified()
	if specified && leaf.VerifyHostname(tcp.IP.String()) == nil {
		return tcp.IP.String()
	}
	for _, n := range leaf.DNSNames {
		if !strings.Contains(n, "*") {
			return n
		}
	}
	if len(leaf.IPAddresses) > 0 {
		return leaf.IPAddresses[0].String()
	}
	return localIP(tcp).String()
}

// localIP is where this machine reaches the listener tcp: its address,
// loopback for a wildcard one.
func localIP(tcp *net.TCPAddr) net.IP {
	switch {
	case tcp == nil || tcp.IP.To4() != nil && tcp.IP.IsUnspecified():
		return net.IPv4(127, 0, 0, 1)
	case tcp.IP.IsUnspecified():
		return net.IPv6loopback
	}
	return tcp.IP
}

// hostPort is host with port, which is left out when it is HTTPS's 443.
func hostPort(host string, port int) string {
	if port == 443 {
		if strings.Contains(host, ":") {
			return "[" + host + "]"
		}
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// localClient is the HTTP client ferry up's own client reaches its master
// with over TLS: it dials the listener on this machine, whatever name the
// URL has, and trusts only the certificate served at that moment, under
// the name the URL uses (never skipping verification). nil for plain
// HTTP.
func (r *reached) localClient() *http.Client {
	if !r.secure() {
		return nil
	}
	tcp, _ := r.ln.Addr().(*net.TCPAddr)
	target := net.JoinHostPort(localIP(tcp).String(), strconv.Itoa(tcp.Port))
	return &http.Client{Transport: &http.Transport{
		DialTLSContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			raw, err := (&net.Dialer{}).DialContext(ctx, "tcp", target)
			if err != nil {
				return nil, err
			}
			pinned := x509.NewCertPool()
			if leaf := r.leaf(); leaf != nil {
				pinned.AddCert(leaf)
			}
			c := tls.Client(raw, &tls.Config{ServerName: r.serverName, RootCAs: pinned, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}})
			if err := c.HandshakeContext(ctx); err != nil {
				_ = raw.Close()
				return nil, err
			}
			return c, nil
		},
	}}
}

// withHSTS sends Strict-Transport-Security on every answer over TLS: a
// browser that saw ferry over HTTPS never tries plain HTTP for it again.
func withHSTS(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil {
			w.Header().Set("Strict-Transport-Security", "max-age=31536000")
		}
		h.ServeHTTP(w, r)
	})
}

// acmeResolverEnv names a DNS server (HOST:PORT) that ferry resolves the
// --acme domains with instead of the system's: for tests, whose domains
// only a test DNS server knows.
const acmeResolverEnv = "FERRY_ACME_RESOLVER"

// Bounds of the ACME start-up.
const (
	acmeResolveTimeout  = 10 * time.Second
	acmeDiscoverTimeout = 30 * time.Second
	// acmeObtainTimeout bounds obtaining the first certificates.
	acmeObtainTimeout = 3 * time.Minute
)

// listenACME obtains a certificate for each --acme domain before serving,
// answering the CA's TLS-ALPN-01 challenge on addr (and HTTP-01 on
// --acme-http-addr, or :80 when it is free), and serves them renewed.
// The account key and certificates are cached in dataFolder/acme (0700,
// files 0600).
func (f *reachFlags) listenACME(ctx context.Context, env Env, addr, dataFolder string, log *slog.Logger) (*reached, error) {
	if err := resolveAll(ctx, env, f.acme); err != nil {
		return nil, err
	}
	hc, err := acmeHTTPClient(f.acmeCARoot)
	if err != nil {
		return nil, err
	}
	client := &acme.Client{DirectoryURL: f.acmeCA, HTTPClient: hc, UserAgent: "ferry/" + version.String()}
	dctx, cancel := context.WithTimeout(ctx, acmeDiscoverTimeout)
	_, err = client.Discover(dctx)
	cancel()
	if err != nil {
		hint := "check the URL"
		if errors.As(err, new(x509.UnknownAuthorityError)) {
			hint = "its certificate is not trusted here: give its root with --acme-ca-root FILE"
		}
		return nil, fmt.Errorf("--acme-ca %s: no ACME directory there (%w): %s [acme_ca_unreachable]", f.acmeCA, err, hint)
	}
	cacheDir := filepath.Join(dataFolder, "acme")
	if err := os.MkdirAll(cacheDir, 0o700); err != nil {
		return nil, fmt.Errorf("ACME cache: %w", err)
	}
	if err := os.Chmod(cacheDir, 0o700); err != nil { //nolint:gosec // a folder: 0700 is owner-only; it may predate ferry
		return nil, fmt.Errorf("ACME cache: %w", err)
	}
	mgr := &autocert.Manager{
		Prompt:     autocert.AcceptTOS,
		Cache:      autocert.DirCache(cacheDir), // files 0600, written whole then renamed
		HostPolicy: autocert.HostWhitelist(f.acme...),
		Email:      f.acmeEmail,
		Client:     client,
	}
	ln, err := listen("--addr", addr)
	if err != nil {
		return nil, err
	}
	tcp, _ := ln.Addr().(*net.TCPAddr)
	if tcp != nil && tcp.Port != 443 {
		log.Info("the CA validates TLS-ALPN-01 on port 443 of the domain: forward it to --addr, or listen on :443", "addr", ln.Addr().String())
	}
	r := &reached{ln: ln, base: "https://" + hostPort(f.acme[0], tcp.Port), serverName: f.acme[0]}
	fail := func(err error) (*reached, error) {
		r.Close()
		_ = ln.Close()
		return nil, err
	}
	if err := f.startHTTP01(r, mgr, log); err != nil {
		return fail(err)
	}
	stop := answerChallenges(ln, mgr, log)
	err = obtain(ctx, mgr, f.acme, f.acmeCA)
	stop()
	if err != nil {
		return fail(err)
	}
	current := func(domain string) *x509.Certificate {
		c, err := mgr.GetCertificate(helloFor(domain))
		if err != nil || c.Leaf == nil {
			return nil
		}
		return c.Leaf
	}
	r.leaf = func() *x509.Certificate { return current(f.acme[0]) }
	r.tlsConfig = serverTLS(mgr.GetCertificate, acme.ALPNProto)
	for _, d := range f.acme {
		log.Info("serving HTTPS with an ACME certificate", "domain", d, "ca", f.acmeCA, "left", certfile.Left(current(d), time.Now()))
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { watchRenewals(done, f.acme, current, log) })
	r.closers = append(r.closers, func() { close(done); wg.Wait() })
	return r, nil
}

// resolveAll checks that every domain resolves here, with the resolver
// $FERRY_ACME_RESOLVER names or the system's.
func resolveAll(ctx context.Context, env Env, domains []string) error {
	res := net.DefaultResolver
	if server := env.Getenv(acmeResolverEnv); server != "" {
		res = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, server)
		}}
	}
	for _, d := range domains {
		rctx, cancel := context.WithTimeout(ctx, acmeResolveTimeout)
		addrs, err := res.LookupHost(rctx, d)
		cancel()
		if err == nil && len(addrs) == 0 {
			err = errors.New("no address")
		}
		if err != nil {
			return fmt.Errorf("--acme %s: does not resolve here (%w): the CA connects to the address the domain resolves to; "+
				"point its DNS record (A or AAAA) at this machine, then start again [acme_unresolved]", d, err)
		}
	}
	return nil
}

// acmeHTTPClient is the client of the CA's directory: the system's roots,
// or only those in rootFile.
func acmeHTTPClient(rootFile string) (*http.Client, error) {
	tr, _ := http.DefaultTransport.(*http.Transport)
	tr = tr.Clone()
	if rootFile != "" {
		b, err := os.ReadFile(rootFile) //nolint:gosec // the operator names the file
		if err != nil {
			return nil, fmt.Errorf("--acme-ca-root: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("--acme-ca-root %s: holds no PEM certificate (-----BEGIN CERTIFICATE-----)", rootFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, Timeout: time.Minute}, nil
}

// startHTTP01 answers the CA's HTTP-01 challenge on --acme-http-addr, or
// on :80 when that is free; other requests there are sent to r.base.
func (f *reachFlags) startHTTP01(r *reached, mgr *autocert.Manager, log *slog.Logger) error {
	addr, must := f.acmeHTTPAddr, true
	switch addr {
	case acmeHTTPOff:
		return nil
	case "":
		addr, must = ":80", false
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if must {
			return fmt.Errorf("--acme-http-addr %s: %w", addr, err)
		}
		log.Info("HTTP-01 not offered: port 80 is not free here (the CA validates TLS-ALPN-01 on --addr)", "error", err)
		return nil
	}
	toHTTPS := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		// The host is ferry's own: the request only picks the path.
		http.Redirect(w, req, r.base+req.URL.RequestURI(), http.StatusFound) //nolint:gosec // not open: r.base fixes the origin
	})
	srv := &http.Server{Handler: mgr.HTTPHandler(toHTTPS), ReadHeaderTimeout: readHeaderTimeout, IdleTimeout: idleTimeout,
		MaxHeaderBytes: maxHeaderBytes, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() { _ = srv.Serve(ln) }()
	r.closers = append(r.closers, func() { _ = srv.Close() })
	log.Info("answering the ACME HTTP-01 challenge", "addr", ln.Addr().String())
	return nil
}

// answerChallenges completes, on ln, the TLS handshakes of the CA's
// TLS-ALPN-01 validations and nothing else, until stop is called; ln is
// then as it was, for the server.
func answerChallenges(ln net.Listener, mgr *autocert.Manager, log *slog.Logger) (stop func()) {
	tcp, ok := ln.(*net.TCPListener)
	if !ok {
		return func() {}
	}
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{acme.ALPNProto},
		GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if len(h.SupportedProtos) == 1 && h.SupportedProtos[0] == acme.ALPNProto {
				return mgr.GetCertificate(h)
			}
			return nil, errors.New("ferry is obtaining its certificate: not serving yet")
		},
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := tcp.Accept()
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, net.ErrClosed) {
					return
				}
				log.Debug("accept during ACME validation", "error", err)
				time.Sleep(10 * time.Millisecond)
				continue
			}
			wg.Go(func() {
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				_ = tls.Server(c, cfg).Handshake()
				_ = c.Close()
			})
		}
	})
	return func() {
		_ = tcp.SetDeadline(time.Now()) // ends the Accept above
		wg.Wait()
		_ = tcp.SetDeadline(time.Time{})
	}
}

// helloFor is the ClientHello of a client that takes an ECDSA
// certificate for domain, as browsers do.
func helloFor(domain string) *tls.ClientHelloInfo {
	return &tls.ClientHelloInfo{
		ServerName:        domain,
		CipherSuites:      []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256},
		SignatureSchemes:  []tls.SignatureScheme{tls.ECDSAWithP256AndSHA256},
		SupportedCurves:   []tls.CurveID{tls.CurveP256},
		SupportedVersions: []uint16{tls.VersionTLS13, tls.VersionTLS12},
	}
}

// obtain gets (from the cache, else from the CA) a certificate for each
// domain, within acmeObtainTimeout.
func obtain(ctx context.Context, mgr *autocert.Manager, domains []string, ca string) error {
	ctx, cancel := context.WithTimeout(ctx, acmeObtainTimeout)
	defer cancel()
	for _, d := range domains {
		errc := make(chan error, 1)
		go func() {
			_, err := mgr.GetCertificate(helloFor(d))
			errc <- err
		}()
		select {
		case err := <-errc:
			if err != nil {
				return fmt.Errorf("--acme %s: the CA %s issued no certificate: %w; nothing was served [acme_refused]", d, ca, err)
			}
		case <-ctx.Done():
			return fmt.Errorf("--acme %s: the CA %s issued no certificate within %s; nothing was served [acme_timeout]", d, ca, acmeObtainTimeout)
		}
	}
	return nil
}

// watchRenewals logs each certificate autocert renews, and warns, with
// the days left, while one is past the time it should have been renewed
// (autocert retries a failed renewal every 30 to 60 minutes, and serves
// the working certificate until then). It looks every thirtieth of a
// certificate's lifetime, between a second and an hour, until done.
func watchRenewals(done <-chan struct{}, domains []string, current func(string) *x509.Certificate, log *slog.Logger) {
	type seen struct {
		serial string
		warned int // the days left at the last warning; -1: none
	}
	last := map[string]*seen{}
	for {
		wait := time.Hour
		for _, d := range domains {
			leaf := current(d)
			if leaf == nil {
				continue
			}
			life := leaf.NotAfter.Sub(leaf.NotBefore)
			wait = min(wait, max(life/30, time.Second))
			now := time.Now()
			s := last[d]
			switch {
			case s == nil:
				last[d] = &seen{serial: leaf.SerialNumber.String(), warned: -1}
				continue
			case s.serial != leaf.SerialNumber.String():
				s.serial, s.warned = leaf.SerialNumber.String(), -1
				log.Info("renewed the ACME certificate", "domain", d, "served", certfile.Describe(leaf), "left", certfile.Left(leaf, now))
				continue
			}
			// autocert renews at a third of the lifetime left (at most 30
			// days) plus a tenth of that in jitter: past half of it, it failed.
			threshold := min(life/3, 30*24*time.Hour)
			days := int(leaf.NotAfter.Sub(now) / (24 * time.Hour))
			if now.After(leaf.NotAfter.Add(-threshold/2)) && s.warned != days {
				s.warned = days
				log.Warn("the ACME certificate was not renewed in time; the working one is served until it expires, and renewal is retried every 30 to 60 minutes: "+
					"check that the CA is reachable and the domain still resolves to this machine",
					"domain", d, "left", certfile.Left(leaf, now))
			}
		}
		select {
		case <-done:
			return
		case <-time.After(wait):
		}
	}
}

// dataFolder is where the master keeps its files beside the database:
// the SQLite file's folder, else the default data directory.
func dataFolder(env Env, dbPath string) (string, error) {
	if dbPath != "" {
		return filepath.Dir(dbPath), nil
	}
	return dataDir(env)
}
