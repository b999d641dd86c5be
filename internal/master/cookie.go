package master

// The session cookie's name, and why a browser's sign-in ended.
//
// Browsers send a host's cookies to every port of it, so two masters on
// 127.0.0.1 (two `ferry up`) would overwrite each other's cookie under
// one name, each sign-in signing the other out. So each master names its
// cookie CookieName + "_" + an id kept in its store (Store.Secret): the
// same across restarts and on every node of a cluster, another for
// another database, whichever port it listens on. The port alone would
// not do: behind a proxy the browser sees another one, and two masters
// may use one port at different times.
//
// A browser signed in before the name was per master holds the cookie
// CookieName: it is accepted when the master's own cookie is absent, and
// an upgrade to /v1/ui it authenticated moves it to the new name (the
// 101 answer sets it), so the old name is used once.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// CookieName is the prefix of every master's session cookie name, and the
// whole name before it was per master (accepted once, see above).
const CookieName = "ferry_session"

// cookieIDName is the store secret that names the session cookie.
const cookieIDName = "ui-cookie-id"

// newCookieName returns the name of the session cookie of the master on
// st, storing its id on first use.
func newCookieName(ctx context.Context, st store.Store) (string, error) {
	fresh := make([]byte, 16)
	if _, err := rand.Read(fresh); err != nil {
		return "", fmt.Errorf("master: cookie id: %w", err)
	}
	id, err := st.Secret(ctx, cookieIDName, fresh)
	if err != nil {
		return "", fmt.Errorf("master: cookie id: %w", err)
	}
	// Hashed: the name goes to every server of the host, the id need not.
	h := sha256.Sum256(append([]byte("ferry session cookie name v1\x00"), id...))
	return CookieName + "_" + hex.EncodeToString(h[:6]), nil
}

// SessionCookie is the name of this master's session cookie.
func (m *Master) SessionCookie() string { return m.cookieName }

// sessionCookie returns the value of r's session cookie: this master's,
// else the one of the old shared name (legacy true); ok is false when
// there is neither.
func (m *Master) sessionCookie(r *http.Request) (value string, legacy, ok bool) {
	if ck, err := r.Cookie(m.cookieName); err == nil {
		return ck.Value, false, true
	}
	if ck, err := r.Cookie(CookieName); err == nil {
		return ck.Value, true, true
	}
	return "", false, false
}

// setSessionCookie sets this master's session cookie to value:
// HttpOnly, SameSite=Strict, and Secure whenever the browser came over
// HTTPS, directly or through a trusted proxy (`ferry up` serves plain
// HTTP on loopback, where a Secure cookie would not come back from every
// browser).
func (m *Master) setSessionCookie(w http.ResponseWriter, r *http.Request, value string, maxAge time.Duration) {
	http.SetCookie(w, &http.Cookie{ //nolint:gosec // Secure is set whenever the browser came over HTTPS
		Name:     m.cookieName,
		Value:    value,
		Path:     "/",
		MaxAge:   int(maxAge / time.Second),
		HttpOnly: true,
		Secure:   m.view(r).Secure(),
		SameSite: http.SameSiteStrictMode,
	})
}

// Why a browser is not signed in (POST /v1/signin/status, "reason").
const (
	SignInNoCookie  = "no_cookie" // no session cookie of this master: never signed in here, or the browser dropped it
	SignInKeyGone   = "key_gone"  // the cookie is there, the key share the page stored is not
	SignInExpired   = "expired"   // the sign-in's token expired
	SignInRevoked   = "revoked"   // the sign-in's token was revoked (it is no longer stored)
	SignInElsewhere = "elsewhere" // another sign-in replaced this browser's cookie
)

// SignInStatus is the answer of POST /v1/signin/status.
type SignInStatus struct {
	SignedIn bool   `json:"signed_in"`
	Reason   string `json:"reason,omitempty"`
	Message  string `json:"message,omitempty"`
}

var signInMessages = map[string]string{
	SignInNoCookie:  "this browser holds no sign-in for this ferry",
	SignInKeyGone:   "this browser's key for the sign-in is gone (its site data was cleared)",
	SignInExpired:   "the sign-in expired",
	SignInRevoked:   "the sign-in was revoked",
	SignInElsewhere: "this browser signed in elsewhere (another ferry on this host, or this one at another address), which replaced this sign-in",
}

// signInStatus says whether r's cookie and key share (KeyHeader) sign in,
// and when not, why, as far as the master knows: the cookie share names
// its token (it is derived from the token's hash), so a cookie whose
// token is gone was revoked, one whose token expired expired, and one of
// a valid token that the key share does not complete was replaced by a
// sign-in elsewhere.
func (m *Master) signInStatus(ctx context.Context, r *http.Request) (SignInStatus, error) {
	no := func(reason string) (SignInStatus, error) {
		return SignInStatus{Reason: reason, Message: signInMessages[reason]}, nil
	}
	value, legacy, ok := m.sessionCookie(r)
	if !ok {
		return no(SignInNoCookie)
	}
	key := r.Header.Get(KeyHeader)
	if key == "" {
		return no(SignInKeyGone)
	}
	if secret, ok := joinUISecret(value, key); ok {
		switch _, err := auth.Verify(ctx, m.st, secret, store.TokenUI); {
		case err == nil:
			return SignInStatus{SignedIn: true}, nil
		case !errors.Is(err, auth.ErrUnauthorized):
			return SignInStatus{}, err
		}
	}
	share, ok := decodeShare(value, cookieSharePrefix)
	if !ok {
		return no(SignInRevoked)
	}
	toks, err := m.st.ListTokens(ctx)
	if err != nil {
		return SignInStatus{}, err
	}
	for _, tok := range toks {
		want := cookieShare(tok.Hash)
		if tok.Kind != store.TokenUI || subtle.ConstantTimeCompare(share, want[:]) != 1 {
			continue
		}
		if !tok.ExpiresAt.IsZero() && !time.Now().Before(tok.ExpiresAt) {
			return no(SignInExpired)
		}
		// A live sign-in whose key share this page does not hold.
		return no(SignInElsewhere)
	}
	if legacy {
		// The old shared name, none of this master's: another ferry on
		// this host set it.
		return no(SignInElsewhere)
	}
	return no(SignInRevoked)
}

// serveSignInStatus answers POST /v1/signin/status from the master's own
// origin (the page's fetch, with the key share in KeyHeader): a browser
// cannot read why its WebSocket upgrade was refused, so the page asks
// here once it finds itself signed out, to tell the user the true reason.
func (m *Master) serveSignInStatus(w http.ResponseWriter, r *http.Request) {
	if !m.view(r).SameOrigin(r.Header.Get("Origin")) {
		httpError(w, http.StatusForbidden, protocol.CodeUnauthorized, "the sign-in status is for the master's own pages")
		return
	}
	st, err := m.signInStatus(r.Context(), r)
	if err != nil {
		m.log.Error("sign-in status", "err", err)
		httpError(w, http.StatusInternalServerError, protocol.CodeInternal, "internal error")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(st)
}
