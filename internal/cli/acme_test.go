package cli_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/binarytest"
	"github.com/ferry-dev/ferry/internal/certfile/certtest"
	"github.com/ferry-dev/ferry/internal/cli"
	"github.com/ferry-dev/ferry/internal/privatetest"
)

// pebbleInstall is how .ci/run installs pebble (and its DNS server).
const pebbleInstall = "GOBIN=${TMPDIR:-/tmp}/ferry-ci-pebble-v2.10.3 go install github.com/letsencrypt/pebble/v2/cmd/pebble@v2.10.3 " +
	"github.com/letsencrypt/pebble/v2/cmd/pebble-challtestsrv@v2.10.3, then FERRY_TEST_PEBBLE=${TMPDIR:-/tmp}/ferry-ci-pebble-v2.10.3/pebble"

// pebbleValidity is the lifetime of pebble's certificates here: autocert
// renews at a third of it left, so within the test.
const pebbleValidity = 24 // seconds

// freePort returns a loopback port nothing listens on (for a moment).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port
}

// acmeCA is a real pebble on loopback, with pebble-challtestsrv as the DNS
// server of both pebble and ferry: every name resolves to 127.0.0.1.
type acmeCA struct {
	dir      string // the directory URL
	rootFile string // the test CA that signs pebble's own HTTPS certificate
	dns      string // the DNS server, HOST:PORT
	mgmt     string // pebble's management API, https://HOST:PORT
	roots    *x509.CertPool
	pebble   *exec.Cmd
	pebbleDn chan struct{}
}

// startPebble starts pebble validating TLS-ALPN-01 on tlsPort and HTTP-01
// on httpPort, or skips (fails with FERRY_REQUIRE_PEBBLE=1) without it.
func startPebble(t *testing.T, tlsPort, httpPort int) *acmeCA {
	t.Helper()
	bin := os.Getenv("FERRY_TEST_PEBBLE")
	if bin == "" {
		if os.Getenv("FERRY_REQUIRE_PEBBLE") == "1" {
			t.Fatalf("FERRY_REQUIRE_PEBBLE=1 but FERRY_TEST_PEBBLE is not set: %s", pebbleInstall)
		}
		t.Skipf("set FERRY_TEST_PEBBLE to a pebble binary to test ACME: %s", pebbleInstall)
	}
	chall := filepath.Join(filepath.Dir(bin), "pebble-challtestsrv")
	dir := t.TempDir()
	ca := certtest.NewCA(t, "pebble's HTTPS test CA")
	certPath, keyPath := ca.Issue(t, []string{"127.0.0.1", "localhost"}, time.Time{}, time.Time{}).Write(t, dir)
	rootFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(rootFile, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	dns := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	run := func(name string, args []string, env ...string) (*exec.Cmd, chan struct{}) {
		cmd := exec.Command(name, args...) //nolint:gosec // the test's own binaries
		cmd.Env = append(os.Environ(), env...)
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-done
			if t.Failed() {
				t.Logf("%s output:\n%s", filepath.Base(name), out.String())
			}
		})
		return cmd, done
	}
	run(chall, []string{"-dnsserver", dns, "-defaultIPv4", "127.0.0.1", "-defaultIPv6", "",
		"-http01", "", "-https01", "", "-doh", "", "-tlsalpn01", "", "-management", fmt.Sprintf("127.0.0.1:%d", freePort(t))})
	listen, mgmt := fmt.Sprintf("127.0.0.1:%d", freePort(t)), fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg := map[string]any{"pebble": map[string]any{
		"listenAddress": listen, "managementListenAddress": mgmt,
		"certificate": certPath, "privateKey": keyPath,
		"httpPort": httpPort, "tlsPort": tlsPort,
		"ocspResponderURL": "", "externalAccountBindingRequired": false,
		"domainBlocklist": []string{"blocked.test"},
		"retryAfter":      map[string]int{"authz": 1, "order": 1},
		"profiles":        map[string]any{"default": map[string]any{"description": "short-lived, renewed within the test", "validityPeriod": pebbleValidity}},
	}}
	b, _ := json.Marshal(cfg)
	cfgPath := filepath.Join(dir, "pebble.json")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	p := &acmeCA{dir: "https://" + listen + "/dir", rootFile: rootFile, dns: dns, mgmt: "https://" + mgmt}
	p.pebble, p.pebbleDn = run(bin, []string{"-config", cfgPath, "-dnsserver", dns},
		"PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0", "PEBBLE_AUTHZREUSE=0")
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}}}
	var root []byte
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if res, err := hc.Get(p.mgmt + "/roots/0"); err == nil {
			root, _ = io.ReadAll(res.Body)
			_ = res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("pebble did not start")
		}
	}
	p.roots = x509.NewCertPool()
	if !p.roots.AppendCertsFromPEM(root) {
		t.Fatalf("pebble's root: %q", root)
	}
	return p
}

// acmeArgs are the flags of ferry with this CA, answering HTTP-01 on
// httpAddr.
func (p *acmeCA) acmeArgs(domain, httpAddr string) []string {
	return []string{"--acme", domain, "--acme-ca", p.dir, "--acme-ca-root", p.rootFile, "--acme-email", "ops@ferry.test",
		"--acme-http-addr", httpAddr}
}

// TestACMEPebble: `ferry up --acme` against a real pebble obtains its
// certificate before serving (pebble validates TLS-ALPN-01 on ferry's own
// loopback listener; HTTP-01 is off), serves it, caches it privately, renews it before it
// expires without a restart, and, when the CA is gone, keeps serving the
// working certificate and warns with the time left.
func TestACMEPebble(t *testing.T) {
	t.Parallel()
	bin := binarytest.Build(t)
	port, httpPort := freePort(t), freePort(t)
	p := startPebble(t, port, httpPort)
	loginRE := regexp.MustCompile(`(https://ferry\.test:\d+)/login\?token=ferry_login_\S+`)
	data := t.TempDir()
	args := append([]string{"up", "--addr", fmt.Sprintf("127.0.0.1:%d", port), "--db", filepath.Join(data, "ferry.db"), "--workspace", t.TempDir(), "--agent", "echo"},
		// HTTP-01 off: pebble can only validate TLS-ALPN-01, on ferry's
		// own listener.
		p.acmeArgs("ferry.test", "off")...)
	up := startStopProc(t, bin, []string{"FERRY_ACME_RESOLVER=" + p.dns}, loginRE, args...)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	first := servedLeaf(t, addr, "ferry.test", p.roots) // verified against pebble's root
	if !strings.Contains(first.Issuer.CommonName, "Pebble") || first.DNSNames[0] != "ferry.test" {
		t.Fatalf("served %v issued by %q, want ferry.test from pebble", first.DNSNames, first.Issuer.CommonName)
	}
	res, err := clientTo(addr, p.roots).Get(loginRE.FindStringSubmatch(up.out.String())[1] + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Strict-Transport-Security") == "" {
		t.Fatalf("/healthz: %s %v", res.Status, res.Header)
	}
	// The cache, beside the database: the account key and the
	// certificate, private to the user.
	cache := filepath.Join(data, "acme")
	if files := privatetest.Tree(t, cache); files < 2 {
		t.Fatalf("the ACME cache %s: %d files, want the account key and a certificate", cache, files)
	}

	// Renewed before it expires (a third of its life left), no restart.
	var renewed *x509.Certificate
	for deadline := time.Now().Add(time.Duration(pebbleValidity) * time.Second); ; time.Sleep(200 * time.Millisecond) {
		renewed = servedLeaf(t, addr, "ferry.test", p.roots)
		if renewed.SerialNumber.Cmp(first.SerialNumber) != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not renewed by %s (expires %s): %q", time.Now(), first.NotAfter, up.errb.String())
		}
	}
	if !renewed.NotAfter.After(first.NotAfter) {
		t.Fatalf("renewed to %s, first %s", renewed.NotAfter, first.NotAfter)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(up.errb.String(), "renewed the ACME certificate"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the renewal is not logged: %q", up.errb.String())
		}
	}

	// The CA goes away: the renewal fails, the working certificate stays
	// and a warning says how long it has left.
	_ = p.pebble.Process.Kill()
	<-p.pebbleDn
	for deadline := renewed.NotAfter; !strings.Contains(up.errb.String(), "was not renewed in time"); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no warning of the failed renewal: %q", up.errb.String())
		}
	}
	if !regexp.MustCompile(`was not renewed in time.*left="0 days left \(\d+s, until `).MatchString(up.errb.String()) {
		t.Errorf("the warning does not give the time left: %q", up.errb.String())
	}
	if got := servedLeaf(t, addr, "ferry.test", p.roots); got.SerialNumber.Cmp(renewed.SerialNumber) != 0 {
		t.Fatalf("serving %s after the failed renewal, want the working %s", got.SerialNumber, renewed.SerialNumber)
	}
	if code, _ := up.term(t); code != 0 {
		t.Fatalf("up exited %d: %q", code, up.errb.String())
	}
}

// TestACMERefusals: a CA that refuses is a clear error before ferry
// serves: a directory URL with no directory, a CA whose certificate is
// not trusted, and pebble refusing the domain.
func TestACMERefusals(t *testing.T) {
	t.Parallel()
	bin := binarytest.Build(t)
	port, httpPort := freePort(t), freePort(t)
	p := startPebble(t, port, httpPort)
	env := []string{"FERRY_ACME_RESOLVER=" + p.dns}
	base := []string{"serve", "--addr", fmt.Sprintf("127.0.0.1:%d", port), "--db", filepath.Join(t.TempDir(), "ferry.db")}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no directory", []string{"--acme", "ferry.test", "--acme-ca", strings.TrimSuffix(p.dir, "/dir") + "/nothing", "--acme-ca-root", p.rootFile},
			"no ACME directory there"},
		{"untrusted CA", []string{"--acme", "ferry.test", "--acme-ca", p.dir}, "give its root with --acme-ca-root FILE [acme_ca_unreachable]"},
		{"refused domain", p.acmeArgs("blocked.test", fmt.Sprintf("127.0.0.1:%d", httpPort)), "--acme blocked.test: the CA " + p.dir + " issued no certificate"},
	}
	for _, c := range cases {
		code, errOut := ferryFails(t, bin, env, append(base, c.args...)...)
		if code != cli.ExitError || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want %q", c.name, code, errOut, c.want)
		}
	}
	// The port is free again: nothing was left listening.
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatalf("the port is still taken: %v", err)
	}
	_ = ln.Close()
}
