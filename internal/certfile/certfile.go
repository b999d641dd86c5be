// Package certfile serves a TLS certificate and its private key from PEM
// files, and picks up a new pair when the files change, so that renewing
// the certificate needs no restart.
//
// Guarantees:
//
//   - Load refuses, with an *Error naming the file, what is wrong and a
//     code: a file that cannot be read, a certificate file with no PEM
//     certificate, a key file with no PEM private key, a key that does not
//     belong to the certificate, a certificate that has expired or is not
//     valid yet.
//   - A Reloader only ever serves a pair that passed Load. On a handshake,
//     at most every Interval, it compares the files' sizes and modification
//     times with the pair it serves; a changed pair that passes Load is
//     served from then on, one that fails is not: the working pair stays,
//     and why is logged once per change of the files, with the days the
//     working certificate has left.
package certfile

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
)

// Codes of Error.
const (
	CodeCertUnreadable  = "cert_unreadable"    // the certificate file cannot be read
	CodeKeyUnreadable   = "key_unreadable"     // the key file cannot be read
	CodeCertInvalid     = "cert_invalid"       // no PEM certificate, or one that does not parse
	CodeKeyInvalid      = "key_invalid"        // no PEM private key, or one that does not parse
	CodeKeyMismatch     = "key_mismatch"       // the key is not the certificate's
	CodeCertExpired     = "cert_expired"       // the certificate's NotAfter has passed
	CodeCertNotYetValid = "cert_not_yet_valid" // the certificate's NotBefore is still to come
)

// Error is why a certificate and key pair cannot be served.
type Error struct {
	// Code is one of the codes above.
	Code string
	// Key is set when the key file is at fault, else the certificate
	// file is.
	Key bool
	// File is the path of the file at fault.
	File string
	// Reason says what is wrong and what to do, for people.
	Reason string
	// Err is the underlying error, if any.
	Err error
}

func (e *Error) Error() string {
	what := "certificate"
	if e.Key {
		what = "private key"
	}
	return fmt.Sprintf("%s %s: %s [%s]", what, e.File, e.Reason, e.Code)
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches another *Error with the same code, so that callers can write
// errors.Is(err, &certfile.Error{Code: certfile.CodeKeyMismatch}).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// maxFile bounds what Load reads of each file: a chain of a few
// certificates is a few KiB.
const maxFile = 1 << 20

// Load reads and checks the PEM pair at now: the certificate file holds the
// leaf first, then any intermediates; the key file holds its private key
// (PKCS #8, PKCS #1 or SEC 1). The returned certificate has Leaf set.
func Load(certPath, keyPath string, now time.Time) (*tls.Certificate, error) {
	certPEM, err := readFile(certPath)
	if err != nil {
		return nil, &Error{Code: CodeCertUnreadable, File: certPath, Reason: "cannot be read: " + reason(err), Err: err}
	}
	keyPEM, err := readFile(keyPath)
	if err != nil {
		return nil, &Error{Code: CodeKeyUnreadable, Key: true, File: keyPath, Reason: "cannot be read: " + reason(err), Err: err}
	}
	certDER, certHasKey := blocks(certPEM, "CERTIFICATE")
	if len(certDER) == 0 {
		why := "holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
		if certHasKey {
			why += "; it holds a private key: are the certificate and the key swapped?"
		}
		return nil, &Error{Code: CodeCertInvalid, File: certPath, Reason: why}
	}
	leaf, err := x509.ParseCertificate(certDER[0])
	if err != nil {
		return nil, &Error{Code: CodeCertInvalid, File: certPath, Reason: "its first certificate does not parse: " + err.Error(), Err: err}
	}
	key, err := privateKey(keyPEM)
	if err != nil {
		return nil, &Error{Code: CodeKeyInvalid, Key: true, File: keyPath, Reason: err.Error(), Err: err}
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(leaf.PublicKey) {
		return nil, &Error{Code: CodeKeyMismatch, Key: true, File: keyPath,
			Reason: fmt.Sprintf("is not the private key of the certificate %s (%s): give the key made with that certificate", certPath, Describe(leaf))}
	}
	switch {
	case now.After(leaf.NotAfter):
		return nil, &Error{Code: CodeCertExpired, File: certPath,
			Reason: fmt.Sprintf("expired on %s (%s): renew it, or use --acme to have ferry renew one", leaf.NotAfter.UTC().Format(time.RFC3339), Describe(leaf))}
	case now.Before(leaf.NotBefore):
		return nil, &Error{Code: CodeCertNotYetValid, File: certPath,
			Reason: fmt.Sprintf("is not valid until %s (%s): check this machine's clock, or wait", leaf.NotBefore.UTC().Format(time.RFC3339), Describe(leaf))}
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, &Error{Code: CodeKeyInvalid, Key: true, File: keyPath, Reason: err.Error(), Err: err}
	}
	pair.Leaf = leaf
	return &pair, nil
}

// readFile reads at most maxFile bytes of path.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path) //nolint:gosec // the operator names the file
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFile {
		return nil, fmt.Errorf("larger than %d bytes: not a PEM certificate or key", maxFile)
	}
	return b, nil
}

// reason is err without the path os.PathError repeats.
func reason(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// blocks returns the DER of the PEM blocks of type typ in data, and
// whether data holds a private key too.
func blocks(data []byte, typ string) (der [][]byte, hasKey bool) {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return der, hasKey
		}
		if b.Type == typ {
			der = append(der, b.Bytes)
		}
		if strings.HasSuffix(b.Type, "PRIVATE KEY") {
			hasKey = true
		}
	}
}

// privateKey parses the first PEM private key of data.
func privateKey(data []byte) (crypto.Signer, error) {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil, errors.New("holds no PEM private key (-----BEGIN PRIVATE KEY-----)")
		}
		if !strings.HasSuffix(b.Type, "PRIVATE KEY") {
			continue // a combined file: the key may follow its certificates
		}
		if k, err := x509.ParsePKCS8PrivateKey(b.Bytes); err == nil {
			s, ok := k.(crypto.Signer)
			if !ok {
				return nil, fmt.Errorf("a %T private key cannot sign", k)
			}
			return s, nil
		}
		if k, err := x509.ParsePKCS1PrivateKey(b.Bytes); err == nil {
			return k, nil
		}
		k, err := x509.ParseECPrivateKey(b.Bytes)
		if err != nil {
			return nil, errors.New("its private key does not parse as PKCS #8, PKCS #1 or SEC 1")
		}
		return k, nil
	}
}

// Describe names a certificate for people: its names and its issuer.
func Describe(leaf *x509.Certificate) string {
	names := leaf.DNSNames
	for _, ip := range leaf.IPAddresses {
		names = append(names, ip.String())
	}
	if len(names) == 0 {
		names = []string{leaf.Subject.CommonName}
	}
	return fmt.Sprintf("for %s, issued by %s", strings.Join(names, ", "), leaf.Issuer.CommonName)
}

// Left says how long leaf has left at now, in days, and when it expires.
func Left(leaf *x509.Certificate, now time.Time) string {
	d := leaf.NotAfter.Sub(now)
	exp := leaf.NotAfter.UTC().Format(time.RFC3339)
	switch {
	case d <= 0:
		return "expired on " + exp
	case d < 24*time.Hour:
		return fmt.Sprintf("0 days left (%s, until %s)", d.Round(time.Second), exp)
	}
	return fmt.Sprintf("%d days left (until %s)", int(d/(24*time.Hour)), exp)
}

// DefaultInterval is how often a Reloader looks at its files, at most.
const DefaultInterval = 2 * time.Second

// Reloader serves the pair of two files, reloaded when they change.
type Reloader struct {
	certPath, keyPath string
	log               *slog.Logger
	// Interval is how often the files are looked at, at most (on a
	// handshake); set it before the first handshake.
	Interval time.Duration
	now      func() time.Time

	mu      sync.Mutex
	cur     *tls.Certificate
	tried   stamp // the files as they were at the last load, served or not
	checked time.Time
}

// stamp is what tells a file changed: its size and modification time.
type stamp struct {
	certSize, keySize int64
	certMod, keyMod   time.Time
}

// stampOf stats both files; zero when either cannot be.
func stampOf(certPath, keyPath string) stamp {
	c, err := os.Stat(certPath)
	if err != nil {
		return stamp{}
	}
	k, err := os.Stat(keyPath)
	if err != nil {
		return stamp{}
	}
	return stamp{certSize: c.Size(), keySize: k.Size(), certMod: c.ModTime(), keyMod: k.ModTime()}
}

// New loads the pair (see Load) and returns a Reloader serving it; log
// (nil: slog.Default) receives what reloads do.
func New(certPath, keyPath string, log *slog.Logger) (*Reloader, error) {
	if log == nil {
		log = slog.Default()
	}
	r := &Reloader{certPath: certPath, keyPath: keyPath, log: log, Interval: DefaultInterval, now: time.Now}
	st := stampOf(certPath, keyPath)
	cur, err := Load(certPath, keyPath, r.now())
	if err != nil {
		return nil, err
	}
	r.cur, r.tried, r.checked = cur, st, r.now()
	return r, nil
}

// GetCertificate is tls.Config's GetCertificate: the pair served now,
// reloaded first when the files changed.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.Certificate(), nil
}

// Certificate returns the pair served now (Leaf set), reloaded first when
// the files changed since it was loaded and Interval has passed since the
// last look.
func (r *Reloader) Certificate() *tls.Certificate {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if now.Sub(r.checked) < r.Interval {
		return r.cur
	}
	r.checked = now
	// A file that cannot be stat'ed stamps zero: logged once, like a
	// change.
	st := stampOf(r.certPath, r.keyPath)
	if st == r.tried {
		return r.cur
	}
	r.tried = st
	next, err := Load(r.certPath, r.keyPath, now)
	if err != nil {
		r.log.Warn("the certificate files changed, but the new pair cannot be served: still serving the one loaded before",
			"error", err, "served", Describe(r.cur.Leaf), "left", Left(r.cur.Leaf, now))
		return r.cur
	}
	r.cur = next
	r.log.Info("serving the renewed certificate", "cert", r.certPath, "served", Describe(next.Leaf), "left", Left(next.Leaf, now))
	return r.cur
}
