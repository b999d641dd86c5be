package master

// How a browser authenticates. A browser sends the cookies of 127.0.0.1 to
// every port of that host, so any local server (a dev server the agent
// started, say) receives ferry's cookie: a cookie alone must open nothing.
// So a browser's UI token is split in two shares at login:
//
//   - the cookie share, in the HttpOnly session cookie (named per master:
//     cookie.go), derived from
//     the token's stored hash (so a download request, which a browser makes
//     by navigating and so cannot add a header to, can be checked against
//     the download link's owner);
//   - the key share, the token's random bytes XOR the cookie share, which
//     the login page writes into localStorage. Storage is per origin
//     (scheme, host and port), so no other local server can read it. The UI
//     sends it as a WebSocket subprotocol, the one header a page may set on
//     an upgrade.
//
// Either share alone says nothing about the token; together they are it.
// Only the login exchange hands the key share out, on the response to the
// POST that consumes the one-time login token.

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/forwarded"
	dl "github.com/ferry-dev/ferry/internal/master/download"
	"github.com/ferry-dev/ferry/internal/store"
)

// UIProtocol is the WebSocket subprotocol a browser UI offers, beside its
// key share; the master selects it.
const UIProtocol = "ferry.ui"

// Prefixes of the two shares of a browser's UI token and of the token.
const (
	cookieSharePrefix = "ferry_uicookie_"
	keySharePrefix    = "ferry_uikey_"
	uiSecretPrefix    = "ferry_ui_"
	shareBytes        = 32
)

// errNotBrowser means a request carries no valid browser credential.
var errNotBrowser = errors.New("master: no valid browser credential")

// cookieShare is the cookie share of the UI token whose stored hash is hash.
func cookieShare(hash []byte) [shareBytes]byte {
	return sha256.Sum256(append([]byte("ferry ui cookie share v1\x00"), hash...))
}

// SplitUISecret splits a UI token's secret into the value of the session
// cookie and the key share the login page stores in the browser.
func SplitUISecret(secret string) (cookie, key string, err error) {
	raw, ok := decodeShare(secret, uiSecretPrefix)
	if !ok {
		return "", "", errors.New("master: not a UI token secret")
	}
	c := cookieShare(auth.Hash(secret))
	var k [shareBytes]byte
	subtle.XORBytes(k[:], raw, c[:])
	return cookieSharePrefix + base64.RawURLEncoding.EncodeToString(c[:]),
		keySharePrefix + base64.RawURLEncoding.EncodeToString(k[:]), nil
}

// joinUISecret is the UI token secret of a cookie share and a key share.
func joinUISecret(cookie, key string) (string, bool) {
	c, ok1 := decodeShare(cookie, cookieSharePrefix)
	k, ok2 := decodeShare(key, keySharePrefix)
	if !ok1 || !ok2 {
		return "", false
	}
	var raw [shareBytes]byte
	subtle.XORBytes(raw[:], c, k)
	return uiSecretPrefix + base64.RawURLEncoding.EncodeToString(raw[:]), true
}

func decodeShare(s, prefix string) ([]byte, bool) {
	enc, ok := strings.CutPrefix(s, prefix)
	if !ok || len(enc) != (shareBytes*8+5)/6 {
		return nil, false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(enc)
	return b, err == nil && len(b) == shareBytes
}

// view is how the browser made r.
func (m *Master) view(r *http.Request) forwarded.View {
	return forwarded.Proxies(m.cfg.TrustedProxies).Of(r)
}

// remote is the client's address for logs: the proxy's client when a
// trusted proxy forwarded the request.
func (m *Master) remote(r *http.Request) string {
	if v := m.view(r); v.Proxied && v.Client.IsValid() {
		return v.Client.String()
	}
	return r.RemoteAddr
}

// browserSecret returns the UI token secret of a browser's upgrade to
// /v1/ui: the cookie share, the key share offered as a subprotocol, and an
// Origin naming the request's own origin. ok is false when anything is
// missing; whether the secret is valid is for auth.Verify to say.
func (m *Master) browserSecret(r *http.Request) (string, bool) {
	ck, _, ok := m.sessionCookie(r)
	if !ok || !m.view(r).SameOrigin(r.Header.Get("Origin")) {
		return "", false
	}
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); strings.HasPrefix(p, keySharePrefix) {
				return joinUISecret(ck, p)
			}
		}
	}
	return "", false
}

// acceptOptions are the upgrade's options: the UI subprotocol, and the
// browser's host as an allowed Origin when a trusted proxy forwarded it
// (coder/websocket compares the Origin with the Host header, which a proxy
// may have rewritten).
func (m *Master) acceptOptions(r *http.Request) *websocket.AcceptOptions {
	o := &websocket.AcceptOptions{Subprotocols: []string{UIProtocol}}
	if v := m.view(r); v.Proxied && !strings.EqualFold(v.Host, r.Host) {
		o.OriginPatterns = []string{escapePattern(v.Host)}
	}
	return o
}

// escapePattern quotes what path.Match would read as a pattern ([ of an
// IPv6 host, say).
func escapePattern(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	if _, err := path.Match(b.String(), s); err != nil {
		return "" // never matches anything but the empty host
	}
	return b.String()
}

// downloadOwner returns the UI token a download request's cookie logs in
// as: the owner of the download link in the path, provided the cookie is
// that owner's cookie share and the owner is valid. Anything else is
// errNotBrowser (401), including a link that does not exist: without it
// the cookie share cannot be checked against anything.
func (m *Master) downloadOwner(ctx context.Context, r *http.Request) (store.Token, error) {
	ck, _, ok := m.sessionCookie(r)
	if !ok {
		return store.Token{}, errNotBrowser
	}
	share, ok := decodeShare(ck, cookieSharePrefix)
	link := r.PathValue("token")
	if !ok || !dl.WellFormedToken(link) {
		return store.Token{}, errNotBrowser
	}
	dl, err := m.st.DownloadTokenByHash(ctx, auth.Hash(link))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Token{}, errNotBrowser
	case err != nil:
		return store.Token{}, err
	}
	// Only reached with a real download link, which only an authenticated
	// UI connection is ever given.
	toks, err := m.st.ListTokens(ctx)
	if err != nil {
		return store.Token{}, err
	}
	for _, tok := range toks {
		if tok.ID != dl.OwnerID {
			continue
		}
		want := cookieShare(tok.Hash)
		if tok.Kind == store.TokenUI && (tok.ExpiresAt.IsZero() || time.Now().Before(tok.ExpiresAt)) &&
			subtle.ConstantTimeCompare(share, want[:]) == 1 {
			return tok, nil
		}
		break
	}
	return store.Token{}, errNotBrowser
}
