// Package tailnettest runs a whole tailnet on loopback for tests: Tailscale's
// own in-process control server (tstest/integration/testcontrol) with a DERP
// relay, and peers (tsnet nodes) that reach a node under test over it.
//
// Guarantees: every packet stays on 127.0.0.1. The control server, DERP and
// STUN answer on loopback; the nodes use no UDP at all (all their traffic
// goes through DERP over TCP: TS_DEBUG_ALWAYS_USE_DERP), probe no port
// mapper (TS_DISABLE_PORTMAPPER) and upload no logs (tests never start
// tsnet's logger; Env adds TS_NO_LOGS_NO_SUPPORT for a child process).
// These knobs are set for the whole test process by StartControl.
//
// testcontrol issues no certificates, so a node's certificate is seeded
// into its state folder (SeedCert) from a CA of the test's own: tsnet then
// serves it through its real certificate store, read-only
// (TS_CERT_SHARE_MODE=ro, so no ACME renewal is tried, and
// TS_DEBUG_ACME_DIRECTORY_URL on a closed loopback port, so a chain to an
// unknown root is accepted as with any non-production ACME server).
package tailnettest

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/certfile/certtest"

	"tailscale.com/envknob"
	"tailscale.com/ipn/store/mem"
	"tailscale.com/net/netns"
	"tailscale.com/tailcfg"
	"tailscale.com/tsnet"
	"tailscale.com/tstest/integration"
	"tailscale.com/tstest/integration/testcontrol"
	"tailscale.com/types/logger"
)

// Domain is the test tailnet's MagicDNS domain: a node named ferry is
// ferry.Domain.
const Domain = "tail-scale.ts.net"

// knobs are the environment of every tailscale node in a test (see the
// package comment).
var knobs = [][2]string{
	{"TS_DEBUG_ALWAYS_USE_DERP", "true"},
	{"TS_DISABLE_PORTMAPPER", "true"},
	{"TS_NO_LOGS_NO_SUPPORT", "true"},
	{"TS_CERT_SHARE_MODE", "ro"},
	{"TS_DEBUG_ACME_DIRECTORY_URL", "http://127.0.0.1:1/directory"},
}

var setKnobs sync.Once

// Env is the environment a child process running a tailscale node under
// test needs (KEY=VALUE), besides the control server's URL.
func Env() []string {
	var env []string
	for _, kv := range knobs {
		env = append(env, kv[0]+"="+kv[1])
	}
	return env
}

// Options shape the control server.
type Options struct {
	// RequireAuthKey, when set, is the only auth key the tailnet accepts.
	RequireAuthKey string
	// RequireAuth makes a node without an auth key log in with a URL
	// (Control.CompleteAuth).
	RequireAuth bool
	// NoHTTPS runs a tailnet without MagicDNS names, so without
	// certificates.
	NoHTTPS bool
}

// Control is a control server, with DERP and STUN, on loopback.
type Control struct {
	// URL is the control server's URL (http://127.0.0.1:PORT).
	URL string
	// Server is testcontrol's server.
	Server *testcontrol.Server
	// CA signs the certificates SeedCert writes.
	CA *certtest.CA
}

// StartControl starts a control server for t (stopped when t ends).
func StartControl(t testing.TB, o Options) *Control {
	t.Helper()
	setKnobs.Do(func() {
		for _, kv := range knobs {
			envknob.Setenv(kv[0], kv[1])
		}
		// As tsnet's own tests: no socket marks (they need privileges
		// and mean nothing on loopback).
		netns.SetEnabled(false)
	})
	derpMap := integration.RunDERPAndSTUN(t, logger.Discard, "127.0.0.1")
	s := &testcontrol.Server{
		DERPMap:        derpMap,
		DNSConfig:      &tailcfg.DNSConfig{Proxied: true},
		RequireAuthKey: o.RequireAuthKey,
		RequireAuth:    o.RequireAuth,
		Logf:           logger.Discard,
	}
	if !o.NoHTTPS {
		s.MagicDNSDomain = Domain
	}
	s.HTTPTestServer = httptest.NewUnstartedServer(s)
	s.HTTPTestServer.Start()
	t.Cleanup(s.HTTPTestServer.Close)
	return &Control{URL: s.HTTPTestServer.URL, Server: s, CA: certtest.NewCA(t, "ferry test tailnet CA")}
}

// Peer starts another node of the tailnet, in memory, logged in with
// authKey, and returns it once it runs.
func (c *Control) Peer(t testing.TB, ctx context.Context, hostname, authKey string) *tsnet.Server {
	t.Helper()
	s := &tsnet.Server{
		Dir:        t.TempDir(),
		Hostname:   hostname,
		Store:      new(mem.Store),
		Ephemeral:  true,
		ControlURL: c.URL,
		AuthKey:    authKey,
		UserLogf:   logger.Discard,
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := s.Up(ctx); err != nil {
		t.Fatalf("peer %s: %v", hostname, err)
	}
	return s
}

// HTTPClient is an HTTP client that goes over the tailnet from peer and
// trusts c's CA.
func (c *Control) HTTPClient(peer *tsnet.Server) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext:     peer.Dial,
			TLSClientConfig: &tls.Config{RootCAs: c.CA.Pool(), MinVersion: tls.VersionTLS12},
		},
		Timeout: 30 * time.Second,
	}
}

// SeedCert writes a certificate for name, signed by c's CA, where a tsnet
// node whose state folder is dir keeps its certificates, as if tsnet had
// got it from Let's Encrypt. It writes the key 0600 and the certificate
// 0644, as tsnet does.
func (c *Control) SeedCert(t testing.TB, dir, name string) {
	t.Helper()
	leaf := c.CA.Issue(t, []string{name}, time.Time{}, time.Time{})
	certs := filepath.Join(dir, "certs")
	if err := os.MkdirAll(certs, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(certs, name+".key"), leaf.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(certs, name+".crt"), leaf.CertPEM, 0o644); err != nil { //nolint:gosec // as tsnet writes it
		t.Fatal(err)
	}
}

// ClosedURL is an http:// URL on loopback where nothing listens: a control
// server that cannot be reached.
func ClosedURL(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return "http://" + addr
}
