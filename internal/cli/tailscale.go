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
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/tailnet"
)

// ferry serve --tailscale and ferry up --tailscale: the master joins the
// user's tailnet as a node of its own and serves there over HTTPS
// (internal/tailnet, docs/reach.md), with an HTTP server of its own
// (serveTailnet) beside the --addr one, which stays, on loopback by
// default: ferry up's own client, ferry token and a browser on this
// machine use it.

// tailscaleControlEnv names another control server than Tailscale's: the
// tests' (and a self-hosted one). Not a flag: nobody needs it by accident.
const tailscaleControlEnv = "FERRY_TAILSCALE_CONTROL_URL"

// tailscaleAuthKeyEnvs hold the auth key: TS_AUTHKEY, as tsnet and the
// tailscale CLI read it, and its other spelling.
var tailscaleAuthKeyEnvs = []string{"TS_AUTHKEY", "TS_AUTH_KEY"}

// tailscaleFlags are the flags of ferry serve and ferry up for the tailnet.
type tailscaleFlags struct {
	on, funnel bool
	hostname   string
}

func (f *tailscaleFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.on, "tailscale", false,
		"also serve on your tailnet, as its own node, over HTTPS at https://NAME.TAILNET.ts.net (auth key from $TS_AUTHKEY, else a login URL is printed; see docs/reach.md)")
	fs.StringVar(&f.hostname, "tailscale-hostname", tailnet.DefaultHostname, "with --tailscale, the node's `NAME` on the tailnet")
	fs.BoolVar(&f.funnel, "tailscale-funnel", false,
		"with --tailscale, publish ferry on the internet too (Tailscale Funnel): anyone can reach its login page")
}

// start joins the tailnet when --tailscale says so and returns the
// tailnet's listener, the URL people use there, and what closes the node;
// without --tailscale, a nil listener, no URL and a no-op close.
func (f *tailscaleFlags) start(ctx context.Context, env Env, log *slog.Logger) (net.Listener, string, func() error, error) {
	noop := func() error { return nil }
	if !f.on {
		if f.funnel || f.hostname != tailnet.DefaultHostname {
			return nil, "", noop, usageErrorf("--tailscale-funnel and --tailscale-hostname need --tailscale")
		}
		return nil, "", noop, nil
	}
	dir, err := dataDir(env)
	if err != nil {
		return nil, "", noop, err
	}
	var authKey string
	for _, k := range tailscaleAuthKeyEnvs {
		if v := strings.TrimSpace(env.Getenv(k)); v != "" && authKey == "" {
			authKey = v
		}
		// The agents ferry starts inherit its environment: a key there
		// would let one add machines to the tailnet.
		_ = os.Unsetenv(k)
	}
	var once sync.Once
	n, err := tailnet.Start(ctx, tailnet.Config{
		Dir:        filepath.Join(dir, "tailscale"),
		Hostname:   f.hostname,
		AuthKey:    authKey,
		ControlURL: env.Getenv(tailscaleControlEnv),
		Funnel:     f.funnel,
		Log:        log,
		LoginURL: func(u string) {
			once.Do(func() { fmt.Fprintf(env.Stdout, "To add ferry to your tailnet, open: %s\n", u) })
		},
	})
	if err != nil {
		var te *tailnet.Error
		if errors.As(err, &te) && te.Code == tailnet.CodeBadHostname {
			return nil, "", noop, usageErrorf("--tailscale-hostname: %w", err)
		}
		return nil, "", noop, fmt.Errorf("--tailscale: %w", err)
	}
	if n.Public {
		fmt.Fprintf(env.Stderr, "WARNING: --tailscale-funnel: %s is PUBLIC ON THE INTERNET, not only on your tailnet.\n"+
			"Anyone can reach ferry's login page there; only a login link or token lets them in. Drop --tailscale-funnel to keep it private.\n", n.URL)
	}
	log.Info("serving on the tailnet", "url", n.URL, "public", n.Public)
	return tailnetListener{n.Listener, n.TLSConfig}, n.URL, n.Close, nil
}

// tailnetListener is the tailnet's listener, its connections before TLS.
type tailnetListener struct {
	net.Listener
	tls *tls.Config
}

// serveTailnet serves m on ln, the tailnet's listener, with the limits of
// the --addr server (newHTTPServer) and TLS outermost, so that the master
// sees the request's TLS (Secure cookies, origin checks). The returned
// stop shuts it down within drain, once serveHTTP has drained m.
func serveTailnet(ln net.Listener, m *master.Master, log *slog.Logger, drain time.Duration) (stop func()) {
	tl, ok := ln.(tailnetListener)
	if !ok {
		return func() {}
	}
	srv, lim := newHTTPServer(m.Handler(), log)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(tls.NewListener(lim.Listen(tl.Listener), tl.tls)); !errors.Is(err, http.ErrServerClosed) {
			log.Error("the tailnet listener stopped", "err", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), drain)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
		<-done
	}
}
