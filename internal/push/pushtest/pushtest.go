// Package pushtest is a stand-in Web Push service on loopback for tests:
// it speaks the wire format a real one does (RFC 8030 POST, RFC 8291
// aes128gcm body, RFC 8292 VAPID authorization), checks the VAPID JWT
// (ES256 signature against the k= key, aud = the endpoint's origin, exp
// in the future and at most 24 h away, sub present) and decrypts the body
// with the subscriber's private key and auth secret. Its checks are
// written here from the RFCs, independently of the sender under test.
package pushtest

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Subscriber is a browser's side of a subscription: its endpoint on the
// Server and the keys its notifications are encrypted to.
type Subscriber struct {
	Endpoint string
	// P256dh and Auth are what the browser hands the application server.
	P256dh, Auth []byte
	priv         *ecdh.PrivateKey
}

// B64 is b in base64url without padding, as PushSubscription.toJSON has it.
func B64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// PrivateKey is the subscriber's private key (32 bytes), for a browser
// test that hands it to something else that decrypts.
func (s *Subscriber) PrivateKey() []byte { return s.priv.Bytes() }

// Message is one notification the Server accepted.
type Message struct {
	Endpoint string
	// Payload is the decrypted body.
	Payload []byte
	TTL     string
	Urgency string
	Topic   string
	// Sub and Aud are the VAPID JWT's claims; Key its k= public key.
	Sub, Aud string
	Exp      time.Time
	Key      []byte
}

// Reply is what the Server answers one request to an endpoint: a status
// (0: 201), a Retry-After value, and an optional wait before answering
// (until the request's context ends, when Block). Close answers nothing
// and closes the connection (the sender sees a network error).
type Reply struct {
	Status     int
	RetryAfter string
	Delay      time.Duration
	Block      bool
	Close      bool
}

// Server is the stand-in push service. Besides the endpoints, GET
// /messages lists what it accepted (for a browser script).
type Server struct {
	*httptest.Server
	t testing.TB

	mu       sync.Mutex
	subs     map[string]*Subscriber // by path
	replies  map[string][]Reply     // scripted answers, by path
	got      []Message
	attempts map[string][]time.Time // every request, by path
	errs     []error
	changed  chan struct{}
	unblock  chan struct{}
}

// New starts a Server, closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{t: t, subs: map[string]*Subscriber{}, replies: map[string][]Reply{},
		attempts: map[string][]time.Time{}, changed: make(chan struct{}), unblock: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		s.mu.Lock()
		select {
		case <-s.unblock:
		default:
			close(s.unblock)
		}
		s.mu.Unlock()
		s.Close()
	})
	return s
}

// Subscribe makes a new subscriber with fresh keys and an endpoint here.
func (s *Server) Subscribe() *Subscriber {
	priv, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		s.t.Fatal(err)
	}
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	id := make([]byte, 12)
	_, _ = rand.Read(id)
	path := "/push/" + B64(id)
	sub := &Subscriber{Endpoint: s.URL + path, P256dh: priv.PublicKey().Bytes(), Auth: auth, priv: priv}
	s.mu.Lock()
	s.subs[path] = sub
	s.mu.Unlock()
	return sub
}

// Script queues the replies to sub's next requests, in order; after
// them every request gets 201.
func (s *Server) Script(sub *Subscriber, r ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := pathOf(sub.Endpoint)
	s.replies[p] = append(s.replies[p], r...)
}

// Unblock ends every blocked reply.
func (s *Server) Unblock() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.unblock:
	default:
		close(s.unblock)
	}
}

// Messages returns what was accepted so far, in order.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.got...)
}

// Attempts returns when each request to sub arrived.
func (s *Server) Attempts(sub *Subscriber) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.attempts[pathOf(sub.Endpoint)]...)
}

// Errors returns what the Server found wrong with the requests it got.
func (s *Server) Errors() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.errs...)
}

// Wait waits until cond holds over the accepted messages, failing the
// test after d (and on any request the Server found wrong).
func (s *Server) Wait(d time.Duration, cond func([]Message) bool) []Message {
	s.t.Helper()
	deadline := time.After(d)
	for {
		s.mu.Lock()
		got, errs, ch := append([]Message(nil), s.got...), s.errs, s.changed
		s.mu.Unlock()
		if len(errs) > 0 {
			s.t.Fatalf("the push service refused a request: %v", errs)
		}
		if cond(got) {
			return got
		}
		select {
		case <-ch:
		case <-deadline:
			s.t.Fatalf("push service: condition not met after %v; got %d messages", d, len(got))
		}
	}
}

func pathOf(endpoint string) string {
	i := strings.Index(endpoint, "/push/")
	if i < 0 {
		return endpoint
	}
	return endpoint[i:]
}

func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) fail(w http.ResponseWriter, status int, err error) {
	s.mu.Lock()
	s.errs = append(s.errs, err)
	s.notify()
	s.mu.Unlock()
	http.Error(w, err.Error(), status)
}

// serveMessages answers GET /messages: what was accepted so far, the
// payloads as text, for a test process other than the Go test's (a
// browser script).
func (s *Server) serveMessages(w http.ResponseWriter) {
	type out struct {
		Endpoint string `json:"endpoint"`
		Payload  string `json:"payload"`
		Urgency  string `json:"urgency"`
	}
	list := []out{}
	for _, m := range s.Messages() {
		list = append(list, out{m.Endpoint, string(m.Payload), m.Urgency})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/messages" {
		s.serveMessages(w)
		return
	}
	s.mu.Lock()
	sub := s.subs[r.URL.Path]
	s.attempts[r.URL.Path] = append(s.attempts[r.URL.Path], time.Now())
	var reply Reply
	if q := s.replies[r.URL.Path]; len(q) > 0 {
		reply, s.replies[r.URL.Path] = q[0], q[1:]
	}
	unblock := s.unblock
	s.notify()
	s.mu.Unlock()
	if r.Method != http.MethodPost {
		s.fail(w, http.StatusMethodNotAllowed, fmt.Errorf("method %s, want POST", r.Method))
		return
	}
	if sub == nil {
		http.Error(w, "no such subscription", http.StatusNotFound)
		return
	}
	if reply.Close {
		if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = c.Close()
		}
		return
	}
	if reply.Block {
		select {
		case <-r.Context().Done():
		case <-unblock:
		}
		return
	}
	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if reply.Status != 0 && reply.Status/100 != 2 {
		if reply.RetryAfter != "" {
			w.Header().Set("Retry-After", reply.RetryAfter)
		}
		w.WriteHeader(reply.Status)
		return
	}
	msg, err := s.check(r, sub)
	if err != nil {
		s.fail(w, http.StatusBadRequest, err)
		return
	}
	s.mu.Lock()
	s.got = append(s.got, msg)
	s.notify()
	s.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
}

// check verifies one request and decrypts it.
func (s *Server) check(r *http.Request, sub *Subscriber) (Message, error) {
	msg := Message{Endpoint: sub.Endpoint, TTL: r.Header.Get("TTL"), Urgency: r.Header.Get("Urgency"), Topic: r.Header.Get("Topic")}
	if msg.TTL == "" {
		return msg, errors.New("no TTL header")
	}
	if ce := r.Header.Get("Content-Encoding"); ce != "aes128gcm" {
		return msg, fmt.Errorf("Content-Encoding %q, want aes128gcm", ce)
	}
	claims, key, err := VerifyVAPID(r.Header.Get("Authorization"), sub.Endpoint, time.Now())
	if err != nil {
		return msg, err
	}
	msg.Sub, msg.Aud, msg.Exp, msg.Key = claims.Sub, claims.Aud, time.Unix(claims.Exp, 0), key
	body, err := io.ReadAll(io.LimitReader(r.Body, 8192))
	if err != nil {
		return msg, err
	}
	msg.Payload, err = Decrypt(body, sub.priv, sub.Auth)
	return msg, err
}

// Claims are a VAPID JWT's claims.
type Claims struct {
	Aud string `json:"aud"`
	Exp int64  `json:"exp"`
	Sub string `json:"sub"`
}

// VerifyVAPID checks an Authorization header "vapid t=JWT, k=KEY" (RFC
// 8292) for endpoint at now and returns the JWT's claims and the key.
func VerifyVAPID(header, endpoint string, now time.Time) (Claims, []byte, error) {
	var c Claims
	rest, ok := strings.CutPrefix(header, "vapid ")
	if !ok {
		return c, nil, fmt.Errorf("authorization %q is not vapid", header)
	}
	params := map[string]string{}
	for part := range strings.SplitSeq(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok {
			params[k] = v
		}
	}
	key, err := base64.RawURLEncoding.DecodeString(params["k"])
	if err != nil {
		return c, nil, fmt.Errorf("vapid k: %w", err)
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), key)
	if err != nil {
		return c, nil, fmt.Errorf("vapid k is not a P-256 point: %w", err)
	}
	parts := strings.Split(params["t"], ".")
	if len(parts) != 3 {
		return c, nil, errors.New("vapid t is not a JWT")
	}
	var hdr struct {
		Alg string `json:"alg"`
		Typ string `json:"typ"`
	}
	if err := decodeJSON(parts[0], &hdr); err != nil {
		return c, nil, fmt.Errorf("JWT header: %w", err)
	}
	if hdr.Alg != "ES256" {
		return c, nil, fmt.Errorf("JWT header alg %q, want ES256", hdr.Alg)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return c, nil, errors.New("JWT signature is not 64 bytes of base64url")
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return c, nil, errors.New("JWT signature does not verify against k")
	}
	if err := decodeJSON(parts[1], &c); err != nil {
		return c, nil, fmt.Errorf("JWT claims: %w", err)
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return c, nil, fmt.Errorf("endpoint: %w", err)
	}
	want := u.Scheme + "://" + u.Host
	switch exp := time.Unix(c.Exp, 0); {
	case c.Aud != want:
		return c, nil, fmt.Errorf("JWT aud %q, want %q", c.Aud, want)
	case !exp.After(now):
		return c, nil, fmt.Errorf("JWT expired at %v", exp)
	case exp.After(now.Add(24 * time.Hour)):
		return c, nil, fmt.Errorf("JWT exp %v is more than 24 h away", exp)
	case !strings.HasPrefix(c.Sub, "mailto:") && !strings.HasPrefix(c.Sub, "https:"):
		return c, nil, fmt.Errorf("JWT sub %q is not a mailto: or https: contact", c.Sub)
	}
	return c, key, nil
}

func decodeJSON(part string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// Decrypt opens an aes128gcm body (RFC 8188 framing, RFC 8291 keys) with
// the subscriber's private key and auth secret. It accepts one record.
func Decrypt(body []byte, priv *ecdh.PrivateKey, auth []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("aes128gcm body shorter than its header")
	}
	salt, rs, idlen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if idlen != 65 || len(body) < 21+idlen {
		return nil, fmt.Errorf("aes128gcm keyid of %d bytes, want the 65-byte sender key", idlen)
	}
	asPub, ct := body[21:21+idlen], body[21+idlen:]
	if rs < 18 || len(ct) > int(rs) {
		return nil, fmt.Errorf("aes128gcm: %d bytes of ciphertext in records of %d: want one record", len(ct), rs)
	}
	peer, err := ecdh.P256().NewPublicKey(asPub)
	if err != nil {
		return nil, fmt.Errorf("sender key: %w", err)
	}
	shared, err := priv.ECDH(peer)
	if err != nil {
		return nil, err
	}
	keyInfo := "WebPush: info\x00" + string(priv.PublicKey().Bytes()) + string(asPub)
	prkKey, err := hkdf.Extract(sha256.New, shared, auth)
	if err != nil {
		return nil, err
	}
	ikm, err := hkdf.Expand(sha256.New, prkKey, keyInfo, 32)
	if err != nil {
		return nil, err
	}
	prk, err := hkdf.Extract(sha256.New, ikm, salt)
	if err != nil {
		return nil, err
	}
	cek, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, err
	}
	nonce, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, nonce, ct, nil)
	if err != nil {
		return nil, fmt.Errorf("aes128gcm: %w", err)
	}
	// Padding: the last record ends with 0x02 then zeros.
	i := len(plain) - 1
	for i >= 0 && plain[i] == 0 {
		i--
	}
	if i < 0 || plain[i] != 2 {
		return nil, errors.New("aes128gcm: the record does not end with the last-record delimiter")
	}
	return plain[:i], nil
}
