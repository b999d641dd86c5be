package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/agentspec"
	"github.com/ferry-dev/ferry/internal/adapter/builtin"
	"github.com/ferry-dev/ferry/internal/attachment"
	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/broker"
	brokernats "github.com/ferry-dev/ferry/internal/broker/nats"
	"github.com/ferry-dev/ferry/internal/client"
	"github.com/ferry-dev/ferry/internal/connlimit"
	"github.com/ferry-dev/ferry/internal/filehistory"
	"github.com/ferry-dev/ferry/internal/forge"
	"github.com/ferry-dev/ferry/internal/forwarded"
	"github.com/ferry-dev/ferry/internal/lsp"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/metrics"
	"github.com/ferry-dev/ferry/internal/push"
	"github.com/ferry-dev/ferry/internal/redact"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/backend"
	"github.com/ferry-dev/ferry/web"
)

// DefaultAddr is where ferry serve and ferry up listen unless told otherwise:
// loopback only, so nothing is exposed by accident.
const DefaultAddr = "127.0.0.1:7860"

// loginTTL is how long the one-time login URL printed at start stays valid.
const loginTTL = 15 * time.Minute

// dataDir is where the master keeps its database unless --db says otherwise:
// $XDG_DATA_HOME/ferry, else ~/.local/share/ferry.
func dataDir(env Env) (string, error) {
	if d := env.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "ferry"), nil
	}
	home := env.Getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no data directory: set XDG_DATA_HOME or HOME, or pass --db: %w", err)
		}
		home = h
	}
	return filepath.Join(home, ".local", "share", "ferry"), nil
}

// storeUse says what a command may do about a database that is not there.
type storeUse int

const (
	// storeServe (serve, up) creates the database and its folders.
	storeServe storeUse = iota
	// storeRead (token list, token revoke) needs it to exist: creating an
	// empty one would only hide that it looked in the wrong place.
	storeRead
	// storeCreate (token create) creates the file, but a folder only in
	// the default place: a --db in a folder that does not exist is a typo.
	storeCreate
)

// openedStore is an open database and where it is, for people.
type openedStore struct {
	store.Store
	// path is the SQLite file's absolute path ("" for PostgreSQL).
	path string
	// isNew is set when this open created the SQLite file.
	isNew bool
}

// openStore opens dsn, or the default SQLite file when dsn is empty, as
// use allows.
func openStore(ctx context.Context, env Env, dsn string, use storeUse) (*openedStore, error) {
	isDefault := dsn == ""
	if isDefault {
		dir, err := dataDir(env)
		if err != nil {
			return nil, err
		}
		dsn = filepath.Join(dir, "ferry.db")
	}
	o := &openedStore{}
	if kind, target, err := backend.Parse(dsn); err == nil && kind == backend.SQLite {
		if abs, err := filepath.Abs(target); err == nil {
			target = abs
		}
		o.path = target
		which := "--db " + target
		if isDefault {
			which = "the default database " + target + " (from $XDG_DATA_HOME or $HOME)"
		}
		_, statErr := os.Stat(target)
		missing := errors.Is(statErr, os.ErrNotExist)
		switch {
		case missing && use == storeRead:
			return nil, fmt.Errorf("%s does not exist, and nothing was created: pass --db with the database your master uses (ferry serve and ferry up print it at start)", which)
		case missing && use == storeCreate && !isDefault:
			if _, err := os.Stat(filepath.Dir(target)); err != nil {
				return nil, fmt.Errorf("%s: the folder %s does not exist, and nothing was created: pass --db with the database your master uses (ferry serve and ferry up print it at start)", which, filepath.Dir(target))
			}
		}
		if missing && use != storeRead && isDefault {
			if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
				return nil, fmt.Errorf("create data directory: %w", err)
			}
		}
		o.isNew = missing
	}
	st, err := backend.Open(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	o.Store = st
	return o, nil
}

// newLogger logs to env.Stderr with every credential redacted (Run's
// Stderr redacts too; the handler covers what a record holds in any form).
func newLogger(env Env, verbose bool) *slog.Logger {
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(redact.NewHandler(slog.NewTextHandler(redact.NewWriter(env.Stderr), &slog.HandlerOptions{Level: level})))
}

// listener binds addr and returns the base URL people and clients use.
func listener(addr string) (net.Listener, string, error) {
	ln, err := listen("--addr", addr)
	if err != nil {
		return nil, "", err
	}
	return ln, "http://" + ln.Addr().String(), nil
}

// listen binds addr, which flagName set. An address in use is most often
// another ferry (an earlier up still running): say so, and how to pick
// another.
func listen(flagName, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("%s %s is in use: is another ferry running? use %s to pick another address: %w", flagName, addr, flagName, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: listen: %w", flagName, addr, err)
	}
	return ln, nil
}

// Limits of the HTTP server (docs/live.md). There is no ReadTimeout or
// WriteTimeout: WebSockets are hijacked out of them anyway, and a download
// streams for as long as it takes (internal/master bounds each write).
const (
	// readHeaderTimeout bounds reading a request's headers, from the
	// connection's start or the end of the previous request.
	readHeaderTimeout = 10 * time.Second
	// idleTimeout closes a keep-alive connection with no request in flight.
	idleTimeout = 60 * time.Second
	// maxHeaderBytes caps a request's headers. Browsers send the cookies of
	// every local server to 127.0.0.1, so this is generous.
	maxHeaderBytes = 64 << 10
)

// newHTTPServer is the server serveHTTP runs h on, with its limits, and
// the limiter whose Listen must wrap its listener.
func newHTTPServer(h http.Handler, log *slog.Logger) (*http.Server, *connlimit.Limiter) {
	lim := connlimit.New(connlimit.Config{Log: log})
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	lim.Install(srv)
	perAddr, total := lim.Caps()
	log.Debug("http limits", "read_header_timeout", readHeaderTimeout, "idle_timeout", idleTimeout,
		"max_header_bytes", maxHeaderBytes, "unauthenticated_per_address", perAddr, "unauthenticated_total", total)
	return srv, lim
}

// serveHTTP serves m on ln until ctx is done (a signal), then drains the
// master within drain (master.Shutdown: not ready, upgrades refused,
// connections closed with 1012 after their accepted events are stored);
// what is left after drain is cut. Unauthenticated connections are capped
// per address and in total (internal/connlimit). With tlsConfig it serves
// HTTPS, and every answer sends HSTS.
func serveHTTP(ctx context.Context, ln net.Listener, tlsConfig *tls.Config, m *master.Master, log *slog.Logger, drain time.Duration) error {
	h := m.Handler()
	if tlsConfig != nil {
		h = withHSTS(h)
	}
	srv, lim := newHTTPServer(h, log)
	l := lim.Listen(ln)
	if tlsConfig != nil {
		// TLS on top, so that the server sees a *tls.Conn (Request.TLS:
		// the cookie is Secure) and the limiter still counts it.
		l = tls.NewListener(l, tlsConfig)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("draining", "timeout", drain)
	shutdown, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	mErr := m.Shutdown(shutdown)
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = srv.Close() // the drain timed out: cut what is left
		if mErr == nil {
			mErr = fmt.Errorf("shut down: %w", err)
		}
	}
	return mErr
}

// printLogin issues a one-time login token and prints the URL that uses it.
func printLogin(ctx context.Context, env Env, st store.Store, base string) error {
	secret, _, err := auth.Issue(ctx, st, store.TokenLogin, "login URL", loginTTL)
	if err != nil {
		return fmt.Errorf("issue login token: %w", err)
	}
	fmt.Fprintf(env.Stdout, "Open this URL in a browser to log in (valid once, for %s):\n\n    %s/login?token=%s\n\n", loginTTL, base, secret)
	if isTerminal(env.Stdout) { // a phone's camera reads it off the screen
		return printQR(env.Stdout, base+"/login?token="+secret)
	}
	return nil
}

// agentUsage is the help of --agent for ferry up and ferry connect.
const agentUsage = "an agent `SPEC` to offer: builtin, echo, claude-code, acp:CMD or script:CMD (repeatable; " +
	"default builtin and echo, plus claude-code when a claude executable is on PATH; see docs/adapters.md)"

// agentSpecs reads the --agent values; with none, the defaults.
func agentSpecs(env Env, values []string) ([]agentspec.Spec, error) {
	if len(values) == 0 {
		return agentspec.Defaults(lookPathEnv(env)), nil
	}
	specs, err := agentspec.ParseAll(values)
	if err != nil {
		return nil, fmt.Errorf("--%w", err) // reads: --agent "x": why [code]
	}
	return specs, nil
}

// liveAdapters builds the agents a client offers. One that cannot start a
// session here (ferry's own without a model provider, an agent command
// that is not found) is still offered, disabled: its capability says what
// to do and to restart cmd, the command the user ran ("ferry up" or "ferry
// connect"); agentLines says so at start.
func liveAdapters(env Env, log *slog.Logger, specs []agentspec.Spec, stateDir, cmd string, tune ...func(*builtin.Config)) ([]adapter.Adapter, error) {
	// Sessions driven from the UI hand files to the user (artifacts),
	// and are named by the model after their first answer (titles).
	bc := builtin.Config{Getenv: env.Getenv, Logger: log, Artifacts: true, Titles: true, MCPFiles: true}
	if diag, err := lsp.LoadConfig(env.Getenv); err != nil {
		// A broken lsp.json only costs the diagnostics: the client stays up.
		log.Warn("language server diagnostics off", "err", err)
	} else {
		bc.Diagnostics = &diag
	}
	for _, t := range tune {
		t(&bc)
	}
	ads, err := agentspec.BuildAll(specs, agentspec.Options{
		Builtin:     bc,
		Getenv:      env.Getenv,
		StateDir:    stateDir,
		Logger:      log,
		HostCommand: cmd,
	})
	if err != nil {
		return nil, fmt.Errorf("--%w", err)
	}
	return ads, nil
}

// agentLines are the start-up lines about the agents, as the UI shows
// them: the ids of those a session can start, then one line for each of
// the others saying why it cannot.
func agentLines(ads []adapter.Adapter) (available string, notAvailable []string) {
	var ids []string
	for _, a := range ads {
		c := a.Capability()
		if c.Unavailable != "" {
			notAvailable = append(notAvailable, fmt.Sprintf("not available: %s: %s", c.ID, c.Unavailable))
			continue
		}
		ids = append(ids, c.ID)
	}
	if len(ids) == 0 {
		return "none (see below)", notAvailable
	}
	return strings.Join(ids, ", "), notAvailable
}

// lookPathEnv finds an executable on the PATH of env (only absolute
// directories: a relative entry would depend on where ferry was started).
func lookPathEnv(env Env) func(string) (string, error) {
	return func(name string) (string, error) {
		for _, dir := range filepath.SplitList(env.Getenv("PATH")) {
			if !filepath.IsAbs(dir) {
				continue
			}
			p := filepath.Join(dir, name)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
				return p, nil
			}
		}
		return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
	}
}

// clientStateDir is the client's state directory: the flag, else
// $XDG_STATE_HOME/ferry/client, else ~/.local/state/ferry/client. It is
// resolved here (not left to the client) so that the adapters keeping
// state (Claude Code's session map) use the same one.
func clientStateDir(env Env, flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if d := env.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "ferry", "client"), nil
	}
	home := env.Getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no state directory: set XDG_STATE_HOME or HOME, or pass --state: %w", err)
		}
		home = h
	}
	return filepath.Join(home, ".local", "state", "ferry", "client"), nil
}

type masterFlags struct {
	addr, db     string
	retention    int
	verbose      bool
	proxies      forwarded.Proxies
	maxUploadMiB int64
	pushContact  string
	pushLoopback bool
	nats         string // NATS server URL(s): nodes share a broker; empty: in-process
	metricsAddr  string // where Prometheus scrapes; empty: no metrics
	drainTimeout time.Duration
	reach        reachFlags // HTTPS: --tls-cert/--tls-key or --acme (reach.go)
	tailscale    tailscaleFlags
}

// DefaultDrainTimeout bounds a drain (SIGTERM) unless --drain-timeout says
// otherwise.
const DefaultDrainTimeout = 30 * time.Second

func (f *masterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "addr", DefaultAddr, "listen on `HOST:PORT`")
	fs.StringVar(&f.db, "db", "", "database: a SQLite file path or a postgres:// `DSN` (default $XDG_DATA_HOME/ferry/ferry.db)")
	fs.IntVar(&f.retention, "retention", 10000, "events kept per session for resuming `N`")
	fs.BoolVar(&f.verbose, "verbose", false, "log every connection")
	fs.Var(&f.proxies, "trusted-proxy", "believe X-Forwarded-Proto/-Host/-For from this TLS-terminating proxy's `CIDR` or address (repeatable)")
	fs.Int64Var(&f.maxUploadMiB, "max-upload", attachment.MaxBytes>>20,
		"the largest file a browser may attach, in `MiB` (1 to the default; see docs/attachments.md)")
	fs.StringVar(&f.pushContact, "push-contact", push.DefaultContact,
		"the `CONTACT` (mailto: or https:) push services see in Web Push notifications (see docs/notifications.md)")
	fs.BoolVar(&f.pushLoopback, "push-allow-loopback", false,
		"accept Web Push subscriptions whose endpoint is on this machine's loopback, over http too: for testing only (see docs/security.md)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "",
		"serve Prometheus metrics at http://`HOST:PORT`/metrics (default none). Unauthenticated: keep it on a private address (see docs/scale.md)")
	fs.DurationVar(&f.drainTimeout, "drain-timeout", DefaultDrainTimeout,
		"on SIGTERM, how long to drain (connections told to reconnect elsewhere, accepted events stored) before the rest is cut")
	f.reach.register(fs)
	f.tailscale.register(fs)
}

// check refuses what the flags cannot mean; every error is a usage error.
func (f *masterFlags) check() error {
	if f.maxUploadMiB < 1 || f.maxUploadMiB > attachment.MaxBytes>>20 {
		return usageErrorf("--max-upload %d: must be 1 to %d MiB (clients take no larger attachment)", f.maxUploadMiB, attachment.MaxBytes>>20)
	}
	if err := push.CheckContact(f.pushContact); err != nil {
		return usageErrorf("--push-contact %q: want mailto:ADDRESS or an https:// URL", f.pushContact)
	}
	if f.drainTimeout <= 0 {
		return usageErrorf("--drain-timeout %s: must be more than 0", f.drainTimeout)
	}
	return f.reach.check()
}

func (f *masterFlags) config(st store.Store, log *slog.Logger) master.Config {
	// The web UI is embedded: serve and up show it at "/" (see docs/ui.md).
	return master.Config{Store: st, Retention: f.retention, Logger: log, UI: web.Handler(), TrustedProxies: f.proxies,
		UploadMaxBytes: f.maxUploadMiB << 20, PushContact: f.pushContact, PushAllowLoopback: f.pushLoopback}
}

// liveMaster is a master started from its flags, bound but not serving yet.
type liveMaster struct {
	st store.Store
	// dbPath is the SQLite database's path ("" for PostgreSQL), printed
	// at start so that ferry token can be pointed at it.
	dbPath string
	br     broker.Broker // nil: the master's own in-process broker
	m      *master.Master
	reach  *reached     // the listener, and how it is reached
	base   string       // the URL ferry up's own client uses: --addr's
	url    string       // the URL people use: the tailnet's, else base
	tsLn   net.Listener // the tailnet's (nil: none; see tailscale.go)
	tsStop func() error
	log    *slog.Logger
	drain  time.Duration
	// metrics serves /metrics on its own listener (nil: none); it outlives
	// the drain, so a scrape shows it.
	metrics *http.Server
}

// startMaster is the master start-up of ferry serve and ferry up: it opens
// the database, builds the master and binds its address, over HTTPS when
// the flags say so (warning cmd's user when it is reachable over plain
// HTTP). Close releases the database once the master is done.
func startMaster(ctx context.Context, env Env, cmd string, f *masterFlags, log *slog.Logger) (*liveMaster, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	tsLn, tsURL, tsStop, err := f.tailscale.start(ctx, env, log) // refused before anything listens
	if err != nil {
		return nil, err
	}
	opened, err := openStore(ctx, env, f.db, storeServe)
	if err != nil {
		_ = tsStop()
		return nil, err
	}
	st := opened.Store
	cfg := f.config(st, log)
	var br broker.Broker
	if f.nats != "" {
		nb, err := connectNATS(ctx, f.nats, log)
		if err != nil {
			_ = st.Close()
			_ = tsStop()
			return nil, err
		}
		br, cfg.Broker = nb, nb
	}
	lm := &liveMaster{st: st, dbPath: opened.path, br: br, log: log, drain: f.drainTimeout, tsStop: tsStop}
	if f.metricsAddr != "" {
		if err := lm.startMetrics(f.metricsAddr, &cfg); err != nil {
			_ = lm.Close()
			return nil, err
		}
	}
	m, err := master.New(ctx, cfg)
	if err != nil {
		_ = lm.Close()
		return nil, err
	}
	folder, err := dataFolder(env, opened.path)
	if err != nil {
		_ = lm.Close()
		return nil, err
	}
	r, err := f.reach.listen(ctx, env, f.addr, folder, log)
	if err != nil {
		_ = lm.Close()
		return nil, err
	}
	if !r.secure() {
		warnPlainListener(env, cmd, r.ln.Addr())
	}
	lm.m, lm.reach, lm.base, lm.url, lm.tsLn = m, r, r.base, r.base, tsLn
	if tsLn != nil {
		lm.url = tsURL
	}
	// Login links from the UI point where people reach ferry: the
	// tailnet's name, the certificate's or the domain's.
	if err := m.SetPublicURL(lm.url); err != nil {
		_ = lm.Close()
		return nil, err
	}
	return lm, nil
}

// connectNATS connects the broker several master nodes share; the first
// connection must succeed within 10 s, later outages are ridden out.
func connectNATS(ctx context.Context, url string, log *slog.Logger) (*brokernats.Broker, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	host, _ := os.Hostname()
	b, err := brokernats.Connect(ctx, brokernats.Options{URL: url, Name: "ferry serve " + host, Logger: log})
	if err != nil {
		// The URL may hold a password: name the flag, not the URL.
		return nil, fmt.Errorf("--nats: %w", err)
	}
	return b, nil
}

// startMetrics binds addr and serves the node's metrics there; the
// master's store and broker are wrapped to count their failures.
func (lm *liveMaster) startMetrics(addr string, cfg *master.Config) error {
	ln, err := listen("--metrics-addr", addr)
	if err != nil {
		return err
	}
	met := metrics.New()
	if lm.br == nil {
		// The in-process broker, made here so that it is counted too.
		lm.br = broker.NewMemory()
	}
	cfg.Metrics, cfg.Store, cfg.Broker = met, met.Store(lm.st), met.Broker(lm.br)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", met.Handler())
	lm.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: readHeaderTimeout, IdleTimeout: idleTimeout,
		MaxHeaderBytes: maxHeaderBytes, ErrorLog: slog.NewLogLogger(lm.log.Handler(), slog.LevelWarn)}
	go func() { _ = lm.metrics.Serve(ln) }()
	lm.log.Info("serving metrics; the endpoint is unauthenticated: keep it private", "url", "http://"+ln.Addr().String()+"/metrics")
	return nil
}

// printDatabase names the SQLite database, which ferry token must be
// given (--db) when it runs as another user or with another $HOME.
func (lm *liveMaster) printDatabase(env Env) {
	if lm.dbPath != "" {
		fmt.Fprintf(env.Stdout, "database: %s (ferry token --db %s)\n", lm.dbPath, lm.dbPath)
	}
}

// serve serves until ctx is done (see serveHTTP).
func (lm *liveMaster) serve(ctx context.Context) error {
	defer serveTailnet(lm.tsLn, lm.m, lm.log, lm.drain)()
	return serveHTTP(ctx, lm.reach.ln, lm.reach.tlsConfig, lm.m, lm.log, lm.drain)
}

// Close releases the metrics listener, the broker and the database once
// the master is done.
func (lm *liveMaster) Close() error {
	if lm.reach != nil {
		lm.reach.Close()
	}
	if lm.metrics != nil {
		_ = lm.metrics.Close()
	}
	if lm.br != nil {
		_ = lm.br.Close()
	}
	_ = lm.tsStop()
	return lm.st.Close()
}

// serveFlags is ferry serve's flag set, --config (the file's path) included.
func serveFlags() (*flag.FlagSet, *masterFlags, *string) {
	fs := flag.NewFlagSet("ferry serve", flag.ContinueOnError)
	var mf masterFlags
	mf.register(fs)
	fs.StringVar(&mf.nats, "nats", "",
		"share a NATS broker at `URL` (nats://[user:pass@]host:4222, several comma-separated) with other master nodes on the same --db (default $FERRY_NATS; see docs/live.md)")
	configFile := fs.String(configKeyFlag, "", configUsage)
	return fs, &mf, configFile
}

// serveRepeatable are the serve flags that take several values.
var serveRepeatable = map[string]bool{"trusted-proxy": true, "acme": true}

// serveSettings fills what args left unset from the environment and the
// configuration file (see applySettings).
func serveSettings(fs *flag.FlagSet, env Env, configFile string) error {
	if configFile == "" {
		configFile = env.Getenv(envName(configKeyFlag))
	}
	return applySettings(fs, env.Getenv, configFile, serveRepeatable)
}

func runServe(ctx context.Context, env Env, args []string) error {
	fs, mf, configFile := serveFlags()
	if ok, err := parseFlags(fs, env, args,
		"Usage: ferry serve [--config FILE] [--addr HOST:PORT] [--db DSN] [--nats URL] [--metrics-addr HOST:PORT]",
		"\nRuns the master: browsers connect to it, and so do the machines running",
		"'ferry connect'. Give each machine a token from 'ferry token create'.",
		"\nEvery flag may also come from the environment, FERRY_ and its name in",
		"upper snake case (FERRY_DB, FERRY_NATS, FERRY_METRICS_ADDR, ...), or from",
		"the TOML file --config (or $FERRY_CONFIG) names, whose keys are the flags'",
		"names. A flag beats the environment, which beats the file. SIGTERM drains",
		"(see docs/scale.md).",
	); !ok {
		return err
	}
	if err := serveSettings(fs, env, *configFile); err != nil {
		return usageErrorf("ferry serve: %v", err)
	}
	if fs.NArg() > 0 || mf.retention < 1 {
		return usageErrorf("ferry serve: takes no arguments; --retention must be at least 1")
	}
	if err := serve(ctx, env, mf); err != nil {
		return fmt.Errorf("ferry serve: %w", err)
	}
	sayStopped(ctx, env, "ferry serve", "in its database")
	return nil
}

func serve(ctx context.Context, env Env, mf *masterFlags) error {
	lm, err := startMaster(ctx, env, "ferry serve", mf, newLogger(env, mf.verbose))
	if err != nil {
		return err
	}
	defer func() { _ = lm.Close() }()
	fmt.Fprintf(env.Stdout, "ferry master listening on %s\n", lm.base)
	if lm.url != lm.base {
		fmt.Fprintf(env.Stdout, "and on your tailnet at %s\n", lm.url)
	}
	lm.printDatabase(env)
	if err := printLogin(ctx, env, lm.st, lm.url); err != nil {
		return err
	}
	return lm.serve(ctx)
}

// machineTakenError is ferry up's refusal of a machine another token owns:
// two lines, the second saying what to do.
type machineTakenError struct{ err error }

func (e machineTakenError) Error() string {
	return e.err.Error() + ", which ferry up did not issue (a 'ferry connect' token?).\n" +
		"If no daemon uses it any more, revoke it ('ferry token revoke --db DSN ID'), or give ferry up another --state directory.\n"
}

func (e machineTakenError) Unwrap() error { return e.err }

// historyQuotaUsage documents --history-quota (ferry connect, ferry up).
const historyQuotaUsage = "keep at most `MIB` of old file contents per session for undo and rewind (oldest changes dropped first)"

// historyTotalUsage documents --history-total (ferry connect, ferry up).
const historyTotalUsage = "keep at most `MIB` of file history for all sessions together; past it the least recently written sessions' histories are dropped whole, never one open in this client (0: no total bound)"

// maxHistoryTotalMiB bounds --history-total (1 PiB; more would overflow
// nothing, but is surely a typo).
const maxHistoryTotalMiB = 1 << 30

// checkHistoryTotal refuses what --history-total cannot mean and returns
// the client's Config.HistoryTotal (bytes; < 0 for no bound).
func checkHistoryTotal(mib int64) (int64, error) {
	switch {
	case mib < 0:
		return 0, fmt.Errorf("--history-total %d: must be 0 (no total bound) or a positive number of MiB", mib)
	case mib > maxHistoryTotalMiB:
		return 0, fmt.Errorf("--history-total %d: at most %d MiB", mib, maxHistoryTotalMiB)
	case mib == 0:
		return -1, nil
	}
	return mib << 20, nil
}

// Usage of the artifact snapshot flags (ferry connect, ferry up).
const (
	snapshotTotalUsage    = "keep at most `MIB` of artifact snapshots per workspace, so a download gives the version the agent made; past it the least recently registered go first, and their downloads serve the file as it is then, marked changed (0: no snapshots)"
	snapshotMaxFileUsage  = "snapshot artifacts of at most `MIB`; a bigger one downloads as it is then"
	snapshotsPerFileUsage = "keep the snapshots of at most `N` versions of each file"
)

// maxSnapshotsPerFile bounds --snapshots-per-file.
const maxSnapshotsPerFile = 1000

// checkSnapshots refuses what the snapshot flags cannot mean and returns
// the client's Config.SnapshotMaxFile, SnapshotsPerPath and SnapshotTotal
// (< 0: no snapshots).
func checkSnapshots(totalMiB, maxFileMiB int64, perFile int) (maxFile int64, perPath int, total int64, err error) {
	switch {
	case totalMiB < 0 || totalMiB > maxHistoryTotalMiB:
		return 0, 0, 0, fmt.Errorf("--snapshot-total %d: must be 0 (no snapshots) up to %d MiB", totalMiB, maxHistoryTotalMiB)
	case maxFileMiB < 1 || maxFileMiB > maxHistoryTotalMiB:
		return 0, 0, 0, fmt.Errorf("--snapshot-max-file %d: must be 1 up to %d MiB", maxFileMiB, maxHistoryTotalMiB)
	case perFile < 1 || perFile > maxSnapshotsPerFile:
		return 0, 0, 0, fmt.Errorf("--snapshots-per-file %d: must be 1 up to %d", perFile, maxSnapshotsPerFile)
	case totalMiB == 0:
		return -1, -1, -1, nil
	}
	return maxFileMiB << 20, perFile, totalMiB << 20, nil
}

// clientFlags are the flags of the client ferry connect and ferry up run.
type clientFlags struct {
	workspaces, agents          stringList
	stateDir, name              string
	historyMiB, historyTotalMiB int64
	permTimeout                 *time.Duration
	snapTotalMiB, snapFileMiB   int64
	snapsPerFile                int
	// checked by check: the client's snapshot quotas
	snapMaxFile, snapTotal int64
	snapPerPath            int
	fetchURLs              bool
	// forgeTokenFile and forgeHosts: pull requests of isolated sessions.
	forgeTokenFile string
	forgeHosts     forgeHosts
	// tune changes ferry's own agent's configuration (ferry acp: rules,
	// provider, the editor's registry).
	tune []func(*builtin.Config)
}

func (f *clientFlags) register(fs *flag.FlagSet, stateUsage string) {
	fs.Var(&f.workspaces, "workspace", "a workspace `DIR` to serve (repeatable; default the current directory)")
	fs.StringVar(&f.stateDir, "state", "", stateUsage)
	fs.Int64Var(&f.historyMiB, "history-quota", filehistory.DefaultQuota>>20, historyQuotaUsage)
	fs.Int64Var(&f.historyTotalMiB, "history-total", client.DefaultHistoryTotal>>20, historyTotalUsage)
	fs.Int64Var(&f.snapTotalMiB, "snapshot-total", client.DefaultSnapshotTotal>>20, snapshotTotalUsage)
	fs.Int64Var(&f.snapFileMiB, "snapshot-max-file", client.DefaultSnapshotMaxFile>>20, snapshotMaxFileUsage)
	fs.IntVar(&f.snapsPerFile, "snapshots-per-file", client.DefaultSnapshotsPerPath, snapshotsPerFileUsage)
	fs.StringVar(&f.name, "name", "", "the machine's `NAME` shown in the UI (default the host name)")
	fs.Var(&f.agents, "agent", agentUsage)
	f.permTimeout = permissionTimeoutFlag(fs)
	fs.BoolVar(&f.fetchURLs, "fetch-attachment-urls", false,
		"fetch https URLs a prompt attaches (never from loopback or private addresses; see docs/attachments.md)")
	fs.StringVar(&f.forgeTokenFile, "forge-token-file", "",
		"a `FILE` holding the GitHub token isolated sessions open pull requests with (default $"+ForgeTokenVar+"); it goes to the forge only, never to the master")
	fs.Var(&f.forgeHosts, "forge-host", "a self-hosted forge of isolated sessions' remotes, `KIND=HOST` (github for GitHub Enterprise, gitlab, gitea, bitbucket; repeatable)")
}

// check refuses what the flags cannot mean; every error is a usage error.
func (f *clientFlags) check() (historyTotal int64, err error) {
	if err := checkPermissionTimeout(*f.permTimeout); err != nil {
		return 0, usageErrorf("%w", err)
	}
	if historyTotal, err = checkHistoryTotal(f.historyTotalMiB); err != nil {
		return 0, usageErrorf("%w", err)
	}
	if f.snapMaxFile, f.snapPerPath, f.snapTotal, err = checkSnapshots(f.snapTotalMiB, f.snapFileMiB, f.snapsPerFile); err != nil {
		return 0, usageErrorf("%w", err)
	}
	return historyTotal, nil
}

// clientConfig is the client start-up of ferry connect and ferry up: it
// resolves the agents, the workspaces and the state directory and builds
// the adapters, giving the client's Config but its master URL and token.
func (f *clientFlags) clientConfig(env Env, log *slog.Logger, historyTotal int64, cmd string) (client.Config, error) {
	specs, err := agentSpecs(env, f.agents)
	if err != nil {
		return client.Config{}, usageErrorf("%w", err)
	}
	workspaces := f.workspaces
	if len(workspaces) == 0 {
		workspaces = stringList{"."}
	}
	state, err := clientStateDir(env, f.stateDir)
	if err != nil {
		return client.Config{}, err
	}
	ads, err := liveAdapters(env, log, specs, state, cmd, f.tune...)
	if err != nil {
		return client.Config{}, usageErrorf("%w", err)
	}
	token, source, err := forgeToken(env, f.forgeTokenFile)
	if err != nil {
		return client.Config{}, err
	}
	return client.Config{
		ForgeToken: token, ForgeTokenSource: source, Forge: forge.Config{Hosts: f.forgeHosts},
		Workspaces: workspaces, StateDir: state, MachineName: f.name, Logger: log, Adapters: ads,
		PermissionTimeout: *f.permTimeout, HistoryQuota: f.historyMiB << 20, HistoryTotal: historyTotal,
		SnapshotMaxFile: f.snapMaxFile, SnapshotsPerPath: f.snapPerPath, SnapshotTotal: f.snapTotal,
		FetchAttachmentURLs: f.fetchURLs,
	}, nil
}

// runClient runs c until ctx is done, turning a refusal into what to do.
func runClient(ctx context.Context, c *client.Client) error {
	err := c.Run(ctx)
	if err == nil {
		return nil
	}
	if hint := refusalHint(err, c.Machine().ID); hint != "" {
		return errors.New(hint)
	}
	return err
}

func runConnect(ctx context.Context, env Env, args []string) error {
	fs := flag.NewFlagSet("ferry connect", flag.ContinueOnError)
	masterURL := fs.String("master", "", "the master's `URL`, e.g. https://ferry.example.com")
	token := fs.String("token", "", "client `TOKEN` from 'ferry token create' (visible to other local users: prefer $FERRY_TOKEN or --token-file)")
	tokenFile := fs.String("token-file", "", "read the client token from `FILE` (mode 0600)")
	var cf clientFlags
	cf.register(fs, "keep the machine id and the outbox in `DIR` (default $XDG_STATE_HOME/ferry/client)")
	verbose := fs.Bool("verbose", false, "log every message")
	if ok, err := parseFlags(fs, env, args,
		"Usage: ferry connect --master URL [--token-file FILE] [--workspace DIR]... [--agent SPEC]...",
		"\nRuns the daemon beside your workspaces: it dials out to the master (it opens",
		"no port), runs the agents and answers the @ file picker. The client token",
		"comes from $FERRY_TOKEN or --token-file (--token works too, but every local",
		"user can read it in the process list). It exits non-zero when the master",
		"refuses the token or the machine, saying what to do.",
	); !ok {
		return err
	}
	if err := connect(ctx, env, fs, &cf, *masterURL, *token, *tokenFile, *verbose); err != nil {
		return fmt.Errorf("ferry connect: %w", err)
	}
	sayStopped(ctx, env, "ferry connect", "on the master")
	return nil
}

func connect(ctx context.Context, env Env, fs *flag.FlagSet, cf *clientFlags, masterURL, token, tokenFile string, verbose bool) error {
	switch {
	case fs.NArg() > 0:
		return usageErrorf("unexpected argument %q", fs.Arg(0))
	case masterURL == "":
		return usageErrorf("--master URL is required")
	}
	historyTotal, err := cf.check()
	if err != nil {
		return err
	}
	secret, err := connectToken(env, token, tokenFile)
	switch {
	case err != nil:
		return usageErrorf("%w", err)
	case secret == "":
		return usageErrorf("a client token is required in $FERRY_TOKEN or --token-file: create one with 'ferry token create' on the master")
	}
	warnPlainMaster(env, masterURL)
	log := newLogger(env, verbose)
	cfg, err := cf.clientConfig(env, log, historyTotal, "ferry connect")
	if err != nil {
		return err
	}
	available, notAvailable := agentLines(cfg.Adapters)
	log.Info("offering agents", "agents", available)
	for _, l := range notAvailable {
		fmt.Fprintln(env.Stderr, l)
	}
	cfg.MasterURL, cfg.Token = masterURL, secret
	c, err := client.New(cfg)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	return runClient(ctx, c)
}

func runUp(ctx context.Context, env Env, args []string) error {
	fs := flag.NewFlagSet("ferry up", flag.ContinueOnError)
	var mf masterFlags
	mf.register(fs)
	var cf clientFlags
	cf.register(fs, "the client's state `DIR` (default $XDG_STATE_HOME/ferry/client)")
	if ok, err := parseFlags(fs, env, args,
		"Usage: ferry up [--addr 127.0.0.1:7860] [--workspace DIR]... [--agent SPEC]...",
		"\nThe quick start: the master and a client for this machine in one process,",
		"with the database under your data directory. Prints a one-time login URL.",
	); !ok {
		return err
	}
	if fs.NArg() > 0 || mf.retention < 1 {
		return usageErrorf("ferry up: takes no arguments; --retention must be at least 1")
	}
	if err := up(ctx, env, &mf, &cf); err != nil {
		return fmt.Errorf("ferry up: %w", err)
	}
	sayStopped(ctx, env, "ferry up", "in its database")
	return nil
}

// sayStopped tells the user, when a signal (Ctrl-C, SIGTERM) ended cmd,
// that it stopped on purpose and that the sessions (kept where) outlive
// it: a silent exit reads as a crash, and as lost work.
func sayStopped(ctx context.Context, env Env, cmd, where string) {
	if ctx.Err() == nil {
		return
	}
	why := ""
	// signal.NotifyContext's cause names the signal (and Is
	// context.Canceled, so the text tells it from a plain cancel).
	if c := context.Cause(ctx); c != nil && c.Error() != context.Canceled.Error() {
		why = " (" + c.Error() + ")"
	}
	fmt.Fprintf(env.Stdout, "%s stopped%s. Sessions are kept %s: run %s again to go on with them.\n", cmd, why, where, cmd)
}

// up is serve and connect in one process: the master from startMaster, the
// client from clientConfig, with a token that lives as long as the process.
func up(ctx context.Context, env Env, mf *masterFlags, cf *clientFlags) error {
	log := newLogger(env, mf.verbose)
	sys, err := startUp(ctx, env, mf, cf, "ferry up", log)
	if err != nil {
		return err
	}
	defer sys.Close()
	cfg, lm := sys.cfg, sys.lm
	shown := make([]string, len(cfg.Workspaces))
	for i, w := range cfg.Workspaces {
		if abs, err := filepath.Abs(w); err == nil {
			w = abs
		}
		shown[i] = w
	}
	available, notAvailable := agentLines(cfg.Adapters)
	fmt.Fprintf(env.Stdout, "ferry is up on %s, serving %s\nagents: %s\n", lm.url, strings.Join(shown, ", "), available)
	for _, l := range notAvailable {
		fmt.Fprintln(env.Stdout, l)
	}
	lm.printDatabase(env)
	if err := printLogin(ctx, env, lm.st, lm.url); err != nil {
		return err
	}
	return sys.run(ctx)
}

// upSystem is a master and a client for this machine in one process
// (ferry up, ferry acp), bound but not serving yet.
type upSystem struct {
	lm  *liveMaster
	c   *client.Client
	cfg client.Config
	// closers run in order by Close: the client, its token, the master.
	closers []func()
}

// startUp starts what up runs: the master from startMaster, the client
// from clientConfig, with a client token that lives as long as the
// process; cmd is the command the user ran. Close releases it all.
func startUp(ctx context.Context, env Env, mf *masterFlags, cf *clientFlags, cmd string, log *slog.Logger) (_ *upSystem, err error) {
	historyTotal, err := cf.check()
	if err != nil {
		return nil, err
	}
	cfg, err := cf.clientConfig(env, log, historyTotal, cmd)
	if err != nil {
		return nil, err
	}
	lm, err := startMaster(ctx, env, cmd, mf, log)
	if err != nil {
		return nil, err
	}
	sys := &upSystem{lm: lm}
	defer func() {
		if err != nil {
			sys.Close()
		}
	}()
	sys.closers = append(sys.closers, func() { _ = lm.Close() })
	// The in-process client authenticates like any other, with a token that
	// lives as long as this process (see uptoken.go for what a crash leaves).
	secret, tok, err := auth.Issue(ctx, lm.st, store.TokenClient, upTokenName, 0)
	if err != nil {
		return nil, err
	}
	sys.closers = append([]func(){func() {
		if err := lm.st.RevokeToken(context.Background(), tok.ID); err == nil || errors.Is(err, store.ErrNotFound) {
			forgetUpToken(cfg.StateDir, tok.ID)
		}
	}}, sys.closers...)
	cfg.MasterURL, cfg.Token = lm.base, secret
	// Over TLS, it dials the listener on this machine and trusts only
	// the certificate served, whatever name the URL has.
	cfg.HTTPClient = lm.reach.localClient()
	c, err := client.New(cfg)
	if err != nil {
		return nil, err
	}
	sys.closers = append([]func(){func() { _ = c.Close() }}, sys.closers...)
	// client.New holds the state directory's lock: no other process serves
	// this machine, so what an earlier up left owning it can be taken back.
	revoked, err := reclaim(ctx, lm.st, cfg.StateDir, c.Machine().ID, tok)
	if err != nil {
		if errors.Is(err, errMachineTaken) {
			return nil, machineTakenError{err}
		}
		return nil, fmt.Errorf("take over the machine: %w", err)
	}
	if len(revoked) > 0 {
		log.Info("revoked the client token of an earlier "+cmd+" that did not stop cleanly", "tokens", strings.Join(revoked, ","), "machine", c.Machine().ID)
	}
	sys.c, sys.cfg = c, cfg
	return sys, nil
}

// Close stops the client, revokes its token and closes the master.
func (u *upSystem) Close() {
	for _, c := range u.closers {
		c()
	}
	u.closers = nil
}

// run serves the master and runs the client until ctx is done. A client
// that stops on a refusal takes the master down with it: up without its
// machine is not what was asked for.
func (u *upSystem) run(ctx context.Context) error {
	srvCtx, stopSrv := context.WithCancel(ctx)
	defer stopSrv()
	clientDone := make(chan error, 1)
	go func() {
		err := runClient(ctx, u.c)
		if err != nil {
			stopSrv()
		}
		clientDone <- err
	}()
	err := u.lm.serve(srvCtx)
	if cErr := <-clientDone; cErr != nil {
		err = cErr
	}
	return err
}

func runToken(ctx context.Context, env Env, args []string) error {
	fs := flag.NewFlagSet("ferry token", flag.ContinueOnError)
	db := fs.String("db", "", "the master's database: a SQLite file path or a postgres:// `DSN`")
	kind := fs.String("kind", store.TokenClient, "for create: client (for ferry connect), ui (a browser) or login (a one-time login URL)")
	name := fs.String("name", "", "for create: a `NAME` to recognise the token by")
	ttl := fs.Duration("ttl", 0, "for create: how long the token is valid (0: until revoked; login tokens: 15m)")
	var machines stringList
	fs.Var(&machines, "machine", "for create: let a ui or login token see only the machine `ID` (repeatable; default every machine)")
	qr := fs.Bool("qr", false, "for create --kind login: also print the login URL as a QR code, for a phone's camera")
	masterURL := fs.String("master", "", "for create --kind login: the master's `URL` the printed login URL points at (default http://"+DefaultAddr+", the default --addr of ferry up and ferry serve)")
	if ok, err := parseFlags(fs, env, args,
		"Usage: ferry token create [--kind client|ui|login] [--name NAME] [--ttl D] [--machine ID]... [--master URL] [--qr] [--db DSN]",
		"       ferry token list [--db DSN]",
		"       ferry token revoke [--db DSN] ID",
		"\nManages the master's tokens. Secrets are printed once and stored hashed.",
		"A ui or login token with --machine sees only those machines and their",
		"sessions; the UI token a login URL turns into keeps the login token's machines.",
		"A login token is printed with its login URL, on the master --master names.",
	); !ok {
		return err
	}
	if fs.NArg() == 0 {
		return usageErrorf("ferry token: say create, list or revoke")
	}
	verb, rest := fs.Arg(0), fs.Args()[1:]
	// Flags may also follow the verb.
	if err := fs.Parse(rest); err != nil {
		return exitWith(ExitUsage)
	}
	rest = fs.Args()
	switch verb {
	case "create", "list":
		if len(rest) > 0 {
			return usageErrorf("ferry token %s: unexpected argument %q", verb, rest[0])
		}
	case "revoke":
		if len(rest) != 1 {
			return usageErrorf("ferry token revoke: give one token ID (see 'ferry token list')")
		}
	default:
		return usageErrorf("ferry token: unknown verb %q: say create, list or revoke", verb)
	}
	if verb == "create" {
		switch *kind {
		case store.TokenClient, store.TokenUI:
		case store.TokenLogin:
			if *ttl == 0 {
				*ttl = loginTTL
			}
		default:
			return usageErrorf("ferry token create: --kind must be client, ui or login, not %q", *kind)
		}
		if *ttl < 0 {
			return usageErrorf("ferry token create: --ttl must not be negative")
		}
		if len(machines) > 0 && *kind == store.TokenClient {
			return usageErrorf("ferry token create: --machine limits what a ui or login token sees; a client token cannot have it")
		}
		if slices.Contains(machines, "") {
			return usageErrorf("ferry token create: --machine needs a machine ID (see the UI's machine list)")
		}
		if *qr && *kind != store.TokenLogin {
			return usageErrorf("ferry token create: --qr draws a login URL; a %s token has none (add --kind login)", *kind)
		}
		if *masterURL != "" && *kind != store.TokenLogin {
			return usageErrorf("ferry token create: --master is where a login URL points; a %s token has none", *kind)
		}
		if *masterURL != "" {
			u, err := url.Parse(*masterURL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
				return usageErrorf("ferry token create: --master must be the master's http:// or https:// URL, e.g. http://%s, not %q", DefaultAddr, *masterURL)
			}
		}
	}
	use := storeRead
	if verb == "create" {
		use = storeCreate
	}
	opened, err := openStore(ctx, env, *db, use)
	if err != nil {
		return fmt.Errorf("ferry token %s: %w", verb, err)
	}
	st := opened.Store
	defer func() { _ = st.Close() }()
	if opened.isNew {
		fmt.Fprintf(env.Stderr, "note: started a new database %s, which no master has used yet; if yours runs as another user or with another $HOME, pass --db with its database (it prints it at start)\n", opened.path)
	}
	switch verb {
	case "create":
		base, which := strings.TrimRight(*masterURL, "/"), ""
		if *kind == store.TokenLogin {
			if base == "" {
				base, which = "http://"+DefaultAddr, "the default address, not checked; pass --master URL to name and check another"
			} else if which, err = checkMasterUses(ctx, st, base, opened.path); err != nil {
				return fmt.Errorf("ferry token create: %w", err)
			}
		}
		secret, tok, err := auth.Issue(ctx, st, *kind, *name, *ttl, auth.WithMachines(machines...))
		if err != nil {
			return fmt.Errorf("ferry token create: %w", err)
		}
		fmt.Fprintln(env.Stdout, secret)
		if tok.Kind == store.TokenLogin {
			// The URL holds the secret, so it goes to stdout (stderr is
			// redacted); the note says which master it is for.
			fmt.Fprintf(env.Stdout, "%s/login?token=%s\n", base, secret)
			if *qr {
				if err := printQR(env.Stdout, base+"/login?token="+secret); err != nil {
					return fmt.Errorf("ferry token create: %w", err)
				}
			}
			fmt.Fprintf(env.Stderr, "the login URL above is for the master at %s (%s); it works once\n", base, which)
		}
		fmt.Fprintf(env.Stderr, "token %s (%s) created, %s; the secret above is shown only once\n", tok.ID, tok.Kind, scope(tok))
	case "list":
		toks, err := st.ListTokens(ctx)
		if err != nil {
			return fmt.Errorf("ferry token list: %w", err)
		}
		now := time.Now()
		// A UI token's device is the name the master gave it at sign-in
		// (from the browser's User-Agent, in ferry's words), then the
		// labels its browser gave when it turned notifications on.
		subs, err := st.PushSubscriptions(ctx, now)
		if err != nil {
			return fmt.Errorf("ferry token list: %w", err)
		}
		devices := map[string][]string{}
		for _, p := range subs {
			if p.Label != "" && !slices.Contains(devices[p.OwnerID], p.Label) {
				devices[p.OwnerID] = append(devices[p.OwnerID], p.Label)
			}
		}
		for _, t := range toks {
			exp, state := "never", "active"
			if !t.ExpiresAt.IsZero() {
				exp = t.ExpiresAt.UTC().Format(time.RFC3339)
				if !now.Before(t.ExpiresAt) {
					state = "expired"
				}
			}
			device := ""
			if t.Kind == store.TokenUI {
				device = "device: -\t"
				d := devices[t.ID]
				if t.Device != "" && !slices.Contains(d, t.Device) {
					d = append([]string{t.Device}, d...)
				}
				if len(d) > 0 {
					device = "device: " + strings.Join(d, ", ") + "\t"
				}
			}
			fmt.Fprintf(env.Stdout, "%s\t%s\t%s\tcreated %s\texpires %s\t%s\t%s%s\n",
				t.ID, t.Kind, t.Name, t.CreatedAt.UTC().Format(time.RFC3339), exp, state, device, scope(t))
		}
	case "revoke":
		if err := st.RevokeToken(ctx, rest[0]); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("ferry token revoke: no token %q", rest[0])
			}
			return fmt.Errorf("ferry token revoke: %w", err)
		}
		fmt.Fprintf(env.Stderr, "token %s revoked\n", rest[0])
	}
	return nil
}

// checkMasterUses checks that the master at base uses the database st (at
// path, for the message): a UI token made here for a minute must open its
// push key. A login URL made in another database would only be refused, so
// that is an error; a master that cannot be reached from here leaves the
// URL unchecked, and checked says so.
func checkMasterUses(ctx context.Context, st store.Store, base, path string) (checked string, err error) {
	where := "the database --db names"
	if path != "" {
		where = "the database " + path
	}
	secret, probe, err := auth.Issue(ctx, st, store.TokenUI, "ferry token create: master check", time.Minute)
	if err != nil {
		return "", fmt.Errorf("check the master: %w", err)
	}
	defer func() { _ = st.RevokeToken(context.Background(), probe.ID) }()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/push/key", nil)
	if err != nil {
		return "", fmt.Errorf("--master %s: %w", base, err)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		// Not reachable from here (not started yet, or only through a
		// proxy elsewhere): say the URL is unchecked rather than refuse.
		return fmt.Sprintf("not checked: could not reach it from here: %v", errors.Unwrap(err)), nil
	}
	_ = res.Body.Close()
	switch res.StatusCode {
	case http.StatusOK:
		return "checked: it uses " + where, nil
	case http.StatusUnauthorized:
		return "", fmt.Errorf("the master at %s does not use %s, so its login URL would be refused: pass --db with the database that master uses (it prints it at start)", base, where)
	}
	return fmt.Sprintf("not checked: it answered %s (is it a ferry master?)", res.Status), nil
}

// scope says which machines a token may see, for people.
func scope(t store.Token) string {
	switch {
	case t.Kind == store.TokenClient:
		return "machines: -" // a client token serves machines, it does not see them
	case len(t.Machines) == 0:
		return "machines: all"
	}
	return "machines: " + strings.Join(t.Machines, ",")
}
