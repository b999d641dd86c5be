package cli_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/binarytest"
	"github.com/ferry-dev/ferry/internal/certfile/certtest"
	"github.com/ferry-dev/ferry/internal/cli"
	"github.com/ferry-dev/ferry/internal/master/mastertest"
	"github.com/ferry-dev/ferry/protocol"
)

// clientTo is an HTTPS client that reaches every name at addr (a loopback
// HOST:PORT) and trusts roots only.
func clientTo(addr string, roots *x509.CertPool) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
		TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
	}}
}

// servedLeaf is the certificate addr serves for name, verified with roots.
func servedLeaf(t *testing.T, addr, name string, roots *x509.CertPool) *x509.Certificate {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: name, RootCAs: roots, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("handshake with %s as %s: %v", addr, name, err)
	}
	defer func() { _ = c.Close() }()
	return c.ConnectionState().PeerCertificates[0]
}

// TestTLSUpBinary: the real `ferry up --tls-cert --tls-key` serves HTTPS
// under the certificate's name (a name this machine does not resolve; its
// own client reaches it anyway): /healthz and every answer send HSTS, a
// login sets a Secure HttpOnly cookie, the UI WebSocket signs in with it
// and sees up's machine online, and replaced files are served from the
// next handshake on, without a restart.
func TestTLSUpBinary(t *testing.T) {
	t.Parallel()
	bin := binarytest.Build(t)
	ca := certtest.NewCA(t, "ferry test CA")
	certPath, keyPath := ca.Issue(t, []string{"ferry.test"}, time.Time{}, time.Time{}).Write(t, t.TempDir())
	loginRE := regexp.MustCompile(`(https://ferry\.test:(\d+))/login\?token=ferry_login_\S+`)
	up := startStopProc(t, bin, nil, loginRE, "up", "--addr", "127.0.0.1:0", "--tls-cert", certPath, "--tls-key", keyPath,
		"--workspace", t.TempDir(), "--agent", "echo")
	m := loginRE.FindStringSubmatch(up.out.String())
	base, addr := m[1], "127.0.0.1:"+m[2]
	if !strings.Contains(up.out.String(), "ferry is up on "+base+", serving") {
		t.Errorf("up does not say it is up on %s: %q", base, up.out.String())
	}
	if strings.Contains(up.errb.String(), "plain HTTP") {
		t.Errorf("the plain-HTTP warning over TLS: %q", up.errb.String())
	}
	hc := clientTo(addr, ca.Pool())
	res, err := hc.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Strict-Transport-Security") != "max-age=31536000" || res.TLS.Version < tls.VersionTLS12 {
		t.Fatalf("/healthz over HTTPS: %s, HSTS %q", res.Status, res.Header.Get("Strict-Transport-Security"))
	}
	// TLS 1.1 is refused.
	if c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "ferry.test", RootCAs: ca.Pool(), MaxVersion: tls.VersionTLS11}); err == nil { //nolint:gosec // checking that the server refuses it
		_ = c.Close()
		t.Fatal("a TLS 1.1 handshake was accepted")
	}
	b, err := mastertest.LoginWithClient(context.Background(), hc, m[0], nil)
	if err != nil {
		t.Fatalf("login over HTTPS: %v", err)
	}
	if !b.Cookie.Secure || !b.Cookie.HttpOnly {
		t.Fatalf("the session cookie over HTTPS: %+v, want Secure and HttpOnly", b.Cookie)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	opts := b.DialOptions()
	opts.HTTPClient = hc
	conn, resp, err := websocket.Dial(ctx, strings.Replace(base, "https", "wss", 1)+"/v1/ui", opts)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		t.Fatalf("ui over wss with the cookie: %v", err)
	}
	t.Cleanup(func() { _ = conn.CloseNow() })
	conn.SetReadLimit(protocol.MaxMessageBytes)
	ui := &uiConn{t: t, ctx: ctx, conn: conn}
	if mc := ui.machine(); !mc.Online { // up's own client came in over TLS
		t.Fatalf("machine %+v", mc)
	}

	// Renewal: the files are replaced; a new handshake sees the new pair.
	first := servedLeaf(t, addr, "ferry.test", ca.Pool())
	next := ca.Issue(t, []string{"ferry.test"}, time.Time{}, time.Time{})
	for _, f := range []struct {
		path string
		data []byte
	}{{keyPath, next.KeyPEM}, {certPath, next.CertPEM}} {
		tmp := f.path + ".new"
		if err := os.WriteFile(tmp, f.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, f.path); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got := servedLeaf(t, addr, "ferry.test", ca.Pool())
		if got.SerialNumber.Cmp(next.Cert.SerialNumber) == 0 {
			break
		}
		if got.SerialNumber.Cmp(first.SerialNumber) != 0 || time.Now().After(deadline) {
			t.Fatalf("serving serial %s, want the renewed %s", got.SerialNumber, next.Cert.SerialNumber)
		}
	}
	// The session and its client survive the reload.
	if mc := ui.machine(); !mc.Online {
		t.Fatalf("after the reload: machine %+v", mc)
	}
}

// TestTLSServeWildcardURL: on a wildcard address (0.0.0.0) ferry serve
// prints the certificate's DNS name, and no plain-HTTP warning.
func TestTLSServeWildcardURL(t *testing.T) {
	t.Parallel()
	ca := certtest.NewCA(t, "ferry test CA")
	certPath, keyPath := ca.Issue(t, []string{"ferry.test"}, time.Time{}, time.Time{}).Write(t, t.TempDir())
	out, errb := &syncBuffer{}, &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	env := map[string]string{"FERRY_TLS_CERT": certPath, "FERRY_TLS_KEY": keyPath} // from the environment, as every flag
	go func() {
		done <- cli.Run(ctx, cli.Env{Stdout: out, Stderr: errb, Getenv: func(k string) string { return env[k] }},
			[]string{"serve", "--addr", "0.0.0.0:0", "--db", filepath.Join(t.TempDir(), "ferry.db")})
	}()
	re := regexp.MustCompile(`ferry master listening on https://ferry\.test:(\d+)\n`)
	for deadline := time.Now().Add(30 * time.Second); !re.MatchString(out.String()); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no https URL with the certificate's name: %q %q", out.String(), errb.String())
		}
	}
	port := re.FindStringSubmatch(out.String())[1]
	if leaf := servedLeaf(t, "127.0.0.1:"+port, "ferry.test", ca.Pool()); leaf.DNSNames[0] != "ferry.test" {
		t.Fatalf("served %v", leaf.DNSNames)
	}
	cancel()
	if code := <-done; code != cli.ExitOK {
		t.Fatalf("serve exited %d: %s", code, errb.String())
	}
	if strings.Contains(errb.String(), "WARNING") {
		t.Fatalf("a warning over TLS: %q", errb.String())
	}
}

// ferryFails runs the binary with args and env, which must fail before
// serving anything: it returns the exit code and stderr.
func ferryFails(t *testing.T, bin string, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_STATE_HOME="+filepath.Join(dir, "state"), "HOME="+dir), env...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("ferry %s: %v (want a failure): %q %q", strings.Join(args, " "), err, out.String(), errb.String())
	}
	if strings.Contains(out.String(), "login?token=") || strings.Contains(out.String(), "ferry is up") {
		t.Fatalf("ferry %s served before failing: %q", strings.Join(args, " "), out.String())
	}
	return cmd.ProcessState.ExitCode(), errb.String()
}

// TestTLSBadInput: every bad TLS or ACME setting is refused before
// anything serves, with an error naming what to fix.
func TestTLSBadInput(t *testing.T) {
	t.Parallel()
	bin := binarytest.Build(t)
	ca := certtest.NewCA(t, "ferry test CA")
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := ca.Issue(t, []string{"ferry.test"}, time.Time{}, time.Time{})
	other := ca.Issue(t, []string{"ferry.test"}, time.Time{}, time.Time{})
	expired := ca.Issue(t, []string{"ferry.test"}, time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour))
	early := ca.Issue(t, []string{"ferry.test"}, time.Now().Add(time.Hour), time.Now().Add(48*time.Hour))
	cert, key := write("cert.pem", good.CertPEM), write("key.pem", good.KeyPEM)
	missing := filepath.Join(dir, "missing.pem")
	cases := []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"missing cert", nil, []string{"--tls-cert", missing, "--tls-key", key}, cli.ExitError, "--tls-cert: certificate " + missing + ": cannot be read: no such file or directory [cert_unreadable]"},
		{"missing key", nil, []string{"--tls-cert", cert, "--tls-key", missing}, cli.ExitError, "--tls-key: private key " + missing + ": cannot be read"},
		{"cert not a file", nil, []string{"--tls-cert", dir, "--tls-key", key}, cli.ExitError, "not a regular file [cert_unreadable]"},
		{"swapped", nil, []string{"--tls-cert", key, "--tls-key", cert}, cli.ExitError, "are the certificate and the key swapped? [cert_invalid]"},
		{"key of another cert", nil, []string{"--tls-cert", cert, "--tls-key", write("other-key.pem", other.KeyPEM)}, cli.ExitError, "--tls-key: private key " + filepath.Join(dir, "other-key.pem") + ": is not the private key of the certificate"},
		{"expired", nil, []string{"--tls-cert", write("expired.pem", expired.CertPEM), "--tls-key", write("expired-key.pem", expired.KeyPEM)}, cli.ExitError, "expired on"},
		{"not yet valid", nil, []string{"--tls-cert", write("early.pem", early.CertPEM), "--tls-key", write("early-key.pem", early.KeyPEM)}, cli.ExitError, "is not valid until"},
		{"cert alone", nil, []string{"--tls-cert", cert}, cli.ExitUsage, "--tls-cert and --tls-key go together"},
		{"key alone", nil, []string{"--tls-key", key}, cli.ExitUsage, "--tls-cert and --tls-key go together"},
		{"acme and cert", nil, []string{"--acme", "ferry.test", "--tls-cert", cert, "--tls-key", key}, cli.ExitUsage, "give --acme, or --tls-cert and --tls-key, not both"},
		{"acme setting alone", nil, []string{"--acme-email", "a@b.test"}, cli.ExitUsage, "--acme-email is a setting of --acme"},
		{"acme no dot", nil, []string{"--acme", "ferry"}, cli.ExitUsage, "not a full DNS name"},
		{"acme wildcard", nil, []string{"--acme", "*.ferry.test"}, cli.ExitUsage, "a wildcard needs the DNS-01 challenge"},
		{"acme IP", nil, []string{"--acme", "127.0.0.1"}, cli.ExitUsage, "an IP address"},
		{"acme URL", nil, []string{"--acme", "https://ferry.test/"}, cli.ExitUsage, "without a scheme"},
		{"acme bad label", nil, []string{"--acme", "fer_ry.test"}, cli.ExitUsage, `holds '_'`},
		{"acme non-ASCII", nil, []string{"--acme", "fähre.test"}, cli.ExitUsage, "xn--"},
		{"acme plain CA", nil, []string{"--acme", "ferry.test", "--acme-ca", "http://127.0.0.1:1/dir"}, cli.ExitUsage, "want the https:// URL"},
		{"acme bad email", nil, []string{"--acme", "ferry.test", "--acme-email", "me"}, cli.ExitUsage, "want one address"},
		// A DNS server that does not answer (nothing listens there): the
		// domain does not resolve.
		{"acme unresolved", []string{"FERRY_ACME_RESOLVER=127.0.0.1:1"}, []string{"--acme", "ferry.test"}, cli.ExitError, "--acme ferry.test: does not resolve here"},
	}
	for _, c := range cases {
		for _, cmd := range []string{"up", "serve"} {
			args := append([]string{cmd, "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "ferry.db")}, c.args...)
			if cmd == "up" {
				args = append(args, "--workspace", dir, "--agent", "echo")
			}
			code, errOut := ferryFails(t, bin, c.env, args...)
			if code != c.code || !strings.Contains(errOut, c.want) {
				t.Errorf("%s (%s): exit %d, stderr %q; want %d with %q", c.name, cmd, code, errOut, c.code, c.want)
			}
		}
	}
}
