package certfile_test

import (
	"bytes"
	"crypto/tls"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/certfile"
	"github.com/ferry-dev/ferry/internal/certfile/certtest"
)

// TestLoadRefuses: every bad pair is refused with its code, naming the
// file at fault and what to do.
func TestLoadRefuses(t *testing.T) {
	t.Parallel()
	ca := certtest.NewCA(t, "test CA")
	good := ca.Issue(t, []string{"ferry.test"}, time.Time{}, time.Time{})
	other := ca.Issue(t, []string{"other.test"}, time.Time{}, time.Time{})
	expired := ca.Issue(t, []string{"ferry.test"}, time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour))
	early := ca.Issue(t, []string{"ferry.test"}, time.Now().Add(time.Hour), time.Now().Add(48*time.Hour))
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cert, key := write("cert.pem", good.CertPEM), write("key.pem", good.KeyPEM)
	missing := filepath.Join(dir, "missing.pem")
	cases := []struct {
		name, cert, key, code, says string
		keyAtFault                  bool
	}{
		{"missing cert", missing, key, certfile.CodeCertUnreadable, "no such file", false},
		{"missing key", cert, missing, certfile.CodeKeyUnreadable, "no such file", true},
		{"cert is a directory", dir, key, certfile.CodeCertUnreadable, "not a regular file", false},
		{"swapped", key, cert, certfile.CodeCertInvalid, "swapped", false},
		{"cert not PEM", write("junk.pem", []byte("hello")), key, certfile.CodeCertInvalid, "no PEM certificate", false},
		{"key not PEM", cert, write("junkkey.pem", []byte("hello")), certfile.CodeKeyInvalid, "no PEM private key", true},
		{"key of another cert", cert, write("other-key.pem", other.KeyPEM), certfile.CodeKeyMismatch, "is not the private key of the certificate", true},
		{"expired", write("expired.pem", expired.CertPEM), write("expired-key.pem", expired.KeyPEM), certfile.CodeCertExpired, "expired on", false},
		{"not yet valid", write("early.pem", early.CertPEM), write("early-key.pem", early.KeyPEM), certfile.CodeCertNotYetValid, "is not valid until", false},
	}
	for _, c := range cases {
		_, err := certfile.Load(c.cert, c.key, time.Now())
		var ce *certfile.Error
		if !errors.As(err, &ce) || ce.Code != c.code || ce.Key != c.keyAtFault || !strings.Contains(err.Error(), c.says) ||
			!errors.Is(err, &certfile.Error{Code: c.code}) {
			t.Errorf("%s: %v; want code %s (key at fault %v) saying %q", c.name, err, c.code, c.keyAtFault, c.says)
			continue
		}
		file := c.cert
		if c.keyAtFault {
			file = c.key
		}
		if !strings.Contains(err.Error(), file) {
			t.Errorf("%s: %v does not name %s", c.name, err, file)
		}
	}
	pair, err := certfile.Load(cert, key, time.Now())
	if err != nil || pair.Leaf == nil || pair.Leaf.DNSNames[0] != "ferry.test" {
		t.Fatalf("good pair: %v %+v", err, pair)
	}
	// A combined file (certificate then key) serves as both.
	both := write("both.pem", append(append([]byte{}, good.CertPEM...), good.KeyPEM...))
	if _, err := certfile.Load(both, both, time.Now()); err != nil {
		t.Fatalf("combined file: %v", err)
	}
}

// TestReloaderReloads: replaced files are served from the next look on; a
// bad replacement is logged with the days left and the working pair
// stays; a good one after it is served again.
func TestReloaderReloads(t *testing.T) {
	t.Parallel()
	ca := certtest.NewCA(t, "test CA")
	first := ca.Issue(t, []string{"ferry.test"}, time.Time{}, time.Time{})
	dir := t.TempDir()
	certPath, keyPath := first.Write(t, dir)
	var logs bytes.Buffer
	r, err := certfile.New(certPath, keyPath, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	r.Interval = 0
	serial := func() string {
		c, err := r.GetCertificate(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		return c.Leaf.SerialNumber.String()
	}
	if serial() != first.Cert.SerialNumber.String() {
		t.Fatal("not serving the first pair")
	}
	// A key that is not the certificate's: refused, logged, old pair kept.
	second := ca.Issue(t, []string{"ferry.test"}, time.Time{}, time.Time{})
	if err := os.WriteFile(certPath, second.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if serial() != first.Cert.SerialNumber.String() {
		t.Fatal("a mismatched pair was served")
	}
	if s := logs.String(); !strings.Contains(s, "key_mismatch") || !strings.Contains(s, "0 days left") {
		t.Fatalf("the refused reload is not logged with the days left: %q", s)
	}
	n := strings.Count(logs.String(), "cannot be served")
	serial()
	if strings.Count(logs.String(), "cannot be served") != n {
		t.Fatal("the same refused pair is logged twice")
	}
	// The key follows: the new pair is served.
	if err := os.WriteFile(keyPath, second.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if serial() != second.Cert.SerialNumber.String() {
		t.Fatal("the renewed pair is not served")
	}
	// Files removed: the working pair stays.
	if err := os.Remove(keyPath); err != nil {
		t.Fatal(err)
	}
	if serial() != second.Cert.SerialNumber.String() || !strings.Contains(logs.String(), "key_unreadable") {
		t.Fatalf("a removed key: %q", logs.String())
	}
	// Interval bounds how often the files are looked at.
	r.Interval = time.Hour
	third := ca.Issue(t, []string{"ferry.test"}, time.Time{}, time.Time{})
	third.Write(t, dir)
	if serial() != second.Cert.SerialNumber.String() {
		t.Fatal("files looked at within Interval")
	}
}
