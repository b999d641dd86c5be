// Package auth issues and verifies ferry's tokens: client tokens for
// `ferry connect`, UI tokens behind the browser's session cookie, and
// one-time login tokens that `ferry up` prints as a URL.
//
// Guarantees:
//
//   - A secret is "ferry_<kind>_" followed by 43 characters of unpadded
//     base64url (32 random bytes). Only its SHA-256 is stored, so a leaked
//     database holds no usable credential.
//   - Verify rejects a malformed, unknown, revoked, expired or wrong-kind
//     secret with the one sentinel ErrUnauthorized, so a caller cannot leak
//     which of those it was. A failing store is reported as another error.
//   - ExchangeLogin consumes a login token atomically: of any number of
//     concurrent exchanges of one login secret, at most one succeeds. The
//     UI token it issues sees exactly the machines the login token named.
//   - A machine scope (WithMachines) is only ever given to UI and login
//     tokens; Issue refuses one for a client token.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ferry-dev/ferry/internal/store"
)

// ErrUnauthorized is returned for every secret that does not authenticate.
var ErrUnauthorized = errors.New("auth: unauthorized")

// Lifetimes of the tokens the master issues on its own.
const (
	// LoginTTL is how long a one-time login token stays valid.
	LoginTTL = 15 * time.Minute
	// UITTL is how long the UI token a login exchange issues stays valid.
	UITTL = 30 * 24 * time.Hour
)

const (
	prefix      = "ferry_"
	secretBytes = 32
	// secretChars is the length of the unpadded base64url of secretBytes.
	secretChars = (secretBytes*8 + 5) / 6
)

// now is the clock, replaced by tests of expiry.
var now = time.Now

// IssueOption adjusts a token Issue creates.
type IssueOption func(*store.Token)

// WithMachines limits a UI or login token to the machines ids (a repeated
// ID counts once); without it, or with no ids, the token sees every
// machine. A login token hands its scope on to the UI token that
// ExchangeLogin issues for it.
func WithMachines(ids ...string) IssueOption {
	var scope []string
	for _, id := range ids {
		if !slices.Contains(scope, id) {
			scope = append(scope, id)
		}
	}
	return func(t *store.Token) { t.Machines = scope }
}

// WithDevice names the device (browser) a UI token is made for, in
// ferry's own words: the store refuses anything but short printable ASCII.
func WithDevice(name string) IssueOption {
	return func(t *store.Token) { t.Device = name }
}

// Issue creates a token of kind (store.TokenClient, TokenUI or TokenLogin)
// named name, valid for ttl (0: no expiry), stores its hash and returns the
// secret, which is shown once and never stored.
func Issue(ctx context.Context, st store.Store, kind, name string, ttl time.Duration, opts ...IssueOption) (secret string, tok store.Token, err error) {
	if !validKind(kind) {
		return "", store.Token{}, fmt.Errorf("auth: unknown token kind %q", kind)
	}
	var o store.Token
	for _, opt := range opts {
		opt(&o)
	}
	if kind == store.TokenClient && len(o.Machines) > 0 {
		return "", store.Token{}, errors.New("auth: a client token cannot be limited to machines; only UI and login tokens can")
	}
	// Refused rather than dropped: a scope of only empty IDs would
	// otherwise become no scope, that is every machine.
	if slices.Contains(o.Machines, "") {
		return "", store.Token{}, errors.New("auth: empty machine ID in a token's scope")
	}
	var raw [secretBytes]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", store.Token{}, fmt.Errorf("auth: random secret: %w", err)
	}
	var id [12]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", store.Token{}, fmt.Errorf("auth: random id: %w", err)
	}
	secret = prefix + kind + "_" + base64.RawURLEncoding.EncodeToString(raw[:])
	t := now().UTC()
	tok = store.Token{
		ID:        hex.EncodeToString(id[:]),
		Kind:      kind,
		Name:      name,
		Hash:      Hash(secret),
		CreatedAt: t,
		Machines:  o.Machines,
		Device:    o.Device,
	}
	if ttl > 0 {
		tok.ExpiresAt = t.Add(ttl)
	}
	if err := st.CreateToken(ctx, tok); err != nil {
		return "", store.Token{}, fmt.Errorf("auth: store token: %w", err)
	}
	return secret, tok, nil
}

// Hash is the SHA-256 of a secret, as stored.
func Hash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// Verify returns the token secret authenticates, provided its kind is one of
// kinds (any kind when kinds is empty) and it has not expired.
func Verify(ctx context.Context, st store.Store, secret string, kinds ...string) (store.Token, error) {
	kind, ok := parse(secret)
	if !ok || len(kinds) > 0 && !slices.Contains(kinds, kind) {
		return store.Token{}, ErrUnauthorized
	}
	tok, err := st.TokenByHash(ctx, Hash(secret))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Token{}, ErrUnauthorized
	case err != nil:
		return store.Token{}, fmt.Errorf("auth: look up token: %w", err)
	}
	// The kind in the secret is only a hint for people; the stored kind rules.
	if tok.Kind != kind || !tok.ExpiresAt.IsZero() && !now().Before(tok.ExpiresAt) {
		return store.Token{}, ErrUnauthorized
	}
	return tok, nil
}

// ExchangeLogin consumes the one-time login token loginSecret and issues a UI
// token (valid for UITTL, limited to the login token's machines) in its place.
// opts (WithDevice) apply to the UI token; its machine scope is always the
// login token's.
func ExchangeLogin(ctx context.Context, st store.Store, loginSecret string, opts ...IssueOption) (uiSecret string, err error) {
	kind, ok := parse(loginSecret)
	if !ok || kind != store.TokenLogin {
		return "", ErrUnauthorized
	}
	tok, err := st.TokenByHash(ctx, Hash(loginSecret))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", ErrUnauthorized
	case err != nil:
		return "", fmt.Errorf("auth: look up login token: %w", err)
	}
	if tok.Kind != store.TokenLogin {
		return "", ErrUnauthorized
	}
	// Consume before checking expiry: an expired login token is useless, so
	// it may as well go; and only the caller whose delete succeeds wins.
	switch err := st.ConsumeToken(ctx, tok.ID); {
	case errors.Is(err, store.ErrNotFound):
		return "", ErrUnauthorized
	case err != nil:
		return "", fmt.Errorf("auth: consume login token: %w", err)
	}
	if !tok.ExpiresAt.IsZero() && !now().Before(tok.ExpiresAt) {
		return "", ErrUnauthorized
	}
	uiSecret, _, err = Issue(ctx, st, store.TokenUI, tok.Name, UITTL, append(slices.Clone(opts), WithMachines(tok.Machines...))...)
	if err != nil {
		return "", err
	}
	return uiSecret, nil
}

// parse checks the secret's shape and returns the kind it names.
func parse(secret string) (kind string, ok bool) {
	rest, ok := strings.CutPrefix(secret, prefix)
	if !ok {
		return "", false
	}
	kind, enc, ok := strings.Cut(rest, "_")
	if !ok || !validKind(kind) || len(enc) != secretChars {
		return "", false
	}
	if _, err := base64.RawURLEncoding.Strict().DecodeString(enc); err != nil {
		return "", false
	}
	return kind, true
}

func validKind(kind string) bool {
	return kind == store.TokenClient || kind == store.TokenUI || kind == store.TokenLogin
}
