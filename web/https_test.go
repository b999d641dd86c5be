package web_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/certfile/certtest"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/sqlite"
	"github.com/ferry-dev/ferry/web"
)

// httpsHost is the name the browser test reaches ferry at over HTTPS. Not
// localhost: a browser treats http://localhost as secure already, so only
// another name shows what HTTPS brings. Chromium maps it to 127.0.0.1
// (--host-resolver-rules); nothing resolves it elsewhere.
const httpsHost = "ferry.test"

const certutilHelp = "certutil is missing: apt-get install -y libnss3-tools (the HTTPS browser test trusts its own CA in an NSS database)"

// testCA makes a CA and a server certificate for host signed by it; it
// returns the CA's PEM and the server's key pair.
func testCA(t *testing.T, host string) (caPEM []byte, leaf tls.Certificate) {
	t.Helper()
	ca := certtest.NewCA(t, "ferry test CA")
	l := ca.Issue(t, []string{host}, time.Time{}, time.Time{})
	pair, err := tls.X509KeyPair(l.CertPEM, l.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return ca.PEM, pair
}

// trustCA makes an NSS database under home (where Chromium on Linux reads
// the user's trusted roots: $HOME/.pki/nssdb) that trusts caPEM to name
// servers. Trusting the CA, not ignoring certificate errors: under
// --ignore-certificate-errors Chromium registers no service worker.
func trustCA(t *testing.T, certutil, home string, caPEM []byte) {
	t.Helper()
	db := filepath.Join(home, ".pki", "nssdb")
	if err := os.MkdirAll(db, 0o700); err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(home, "ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-d", "sql:" + db, "-N", "--empty-password"},
		{"-d", "sql:" + db, "-A", "-t", "C,,", "-n", "ferry test CA", "-i", caFile},
	} {
		if out, err := exec.Command(certutil, args...).CombinedOutput(); err != nil { //nolint:gosec // the test's own arguments
			t.Fatalf("certutil %v: %v\n%s", args, err, out)
		}
	}
}

// serveOn serves h on a new loopback listener (over TLS when cert is not
// nil) until the test ends, and returns its port.
func serveOn(t *testing.T, h http.Handler, cert *tls.Certificate) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cert != nil {
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12})
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// TestBrowserHTTPS: issue 33's browser test. The master's handler (with
// the embedded UI) served over HTTPS under a name that is not localhost,
// with the test's own CA trusted by Chromium through an NSS database: a
// login signs in with a Secure cookie, the service worker registers and
// controls the page, the manifest parses, and Chromium reports no
// installability error. The same handler over plain HTTP under that name is
// the control: no secure context, no service worker (web/e2e/https.mjs).
func TestBrowserHTTPS(t *testing.T) {
	node, chromium := browserDeps(t)
	certutil, err := exec.LookPath("certutil")
	if err != nil {
		if os.Getenv("FERRY_REQUIRE_BROWSER") != "" {
			t.Fatal(certutilHelp)
		}
		t.Skip(certutilHelp)
	}
	dir := t.TempDir()
	caPEM, leaf := testCA(t, httpsHost)
	home := filepath.Join(dir, "browser-home")
	trustCA(t, certutil, home, caPEM)

	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "ferry.db"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := master.New(ctx, master.Config{Store: st, UI: web.Handler()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = m.Shutdown(sctx)
		_ = st.Close()
	})
	httpsPort := serveOn(t, m.Handler(), &leaf)
	httpPort := serveOn(t, m.Handler(), nil)
	secure := "https://" + httpsHost + ":" + httpsPort
	login, _, err := auth.Issue(ctx, st, store.TokenLogin, "https browser test", auth.LoginTTL)
	if err != nil {
		t.Fatal(err)
	}
	runScript(t, node, "https.mjs", map[string]any{
		"https": secure, "http": "http://" + httpsHost + ":" + httpPort, "login": secure + "/login?token=" + login,
		"host": httpsHost, "home": home, "profile": filepath.Join(dir, "profile"), "chromium": chromium, "screenshots": shotsDir(t, dir),
	})
}
