package master

import (
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// LoginLinkTTL is how long a login link from ui.login_link.create works:
// long enough to pick up a phone and point it at the screen, short enough
// that a photo of the screen is soon worth nothing.
const LoginLinkTTL = 10 * time.Minute

// loginLinkBurst links a minute is what one UI connection may ask for: a
// person asks for one and perhaps a few more; a script that asks in a loop
// would fill the store with login tokens (each is a row until it expires).
const loginLinkBurst = 5

// errLoginLinkBusy answers a UI over loginLinkBurst.
var errLoginLinkBusy = &protocol.Error{Code: protocol.CodeBusy,
	Message: "too many login links: at most 5 a minute from one page; use the last one, or wait a minute"}

// loginLinkName is the name `ferry token list` shows for such a token,
// followed by the ID of the UI token that asked for it.
const loginLinkName = "login link from the UI (\"Open on your phone\") of token "

// checkPublicURL checks Config.PublicURL: an http(s) origin, no query or
// fragment. It returns it without a trailing slash.
func checkPublicURL(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("master: Config.PublicURL %q is not an http:// or https:// URL of the master", s)
	}
	return strings.TrimRight(s, "/"), nil
}

// loopbackOrigin reports whether an origin's host is this computer only.
func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// SetPublicURL changes Config.PublicURL: a CLI knows the URL it prints
// only once it listens, after New. It may be called while serving.
func (m *Master) SetPublicURL(u string) error {
	pub, err := checkPublicURL(u)
	if err != nil {
		return err
	}
	m.publicURL.Store(&pub)
	return nil
}

// loginBase is where a login link points: the public URL when it is one
// another device can open, else the origin the UI itself reached (through
// the trusted-proxy view), else the public URL after all.
func (m *Master) loginBase(c *conn) string {
	pub := *m.publicURL.Load()
	switch {
	case pub != "" && !loopbackOrigin(pub):
		return pub
	case c.origin != "":
		return c.origin
	}
	return pub
}

// createLoginLink answers ui.login_link.create: a one-time login token,
// valid LoginLinkTTL, that sees what the asking UI's token sees.
func (m *Master) createLoginLink(c *conn, msg *protocol.Message) {
	if !c.ui.takeLoginLink(time.Now()) {
		c.sendError(msg.MessageID, "", errLoginLinkBusy)
		return
	}
	base := m.loginBase(c)
	if base == "" {
		// A UI over a bearer token that sent no usable Host, with no
		// public URL configured: there is nothing to point the link at.
		c.sendError(msg.MessageID, "", &protocol.Error{Code: protocol.CodeInvalidValue,
			Message: "the master does not know its own URL: start it with a public URL or open the UI in a browser"})
		return
	}
	machines := slices.Sorted(maps.Keys(c.scope)) // none: every machine, as the UI's own
	secret, tok, err := auth.Issue(c.ctx, m.st, store.TokenLogin, loginLinkName+c.token, LoginLinkTTL, auth.WithMachines(machines...))
	if err != nil {
		c.sendError(msg.MessageID, "", m.wireError(err, "login link"))
		return
	}
	c.log.Info("issued a login link", "token", tok.ID, "expires", tok.ExpiresAt)
	c.send(msg.Reply(protocol.TypeLoginLink, &protocol.LoginLink{
		URL:       base + "/login?token=" + url.QueryEscape(secret),
		ExpiresAt: tok.ExpiresAt.UTC().Format(time.RFC3339),
		Loopback:  loopbackOrigin(base),
	}))
}

// takeLoginLink reports whether the UI may have another login link at now
// (at most loginLinkBurst in any minute), and counts it when it may.
func (u *uiSide) takeLoginLink(now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	recent := u.links[:0]
	for _, t := range u.links {
		if now.Sub(t) < time.Minute {
			recent = append(recent, t)
		}
	}
	u.links = recent
	if len(u.links) >= loginLinkBurst {
		return false
	}
	u.links = append(u.links, now)
	return true
}
