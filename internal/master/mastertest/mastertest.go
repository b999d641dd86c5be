// Package mastertest signs tests in to a master the way a browser does:
// it opens the login link, posts the login page's form from the master's
// origin, and keeps the session cookie and the key share the answer holds,
// so that a test can open /v1/ui with both, as the UI page does.
package mastertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/master"
)

// Browser is what a browser holds after a login.
type Browser struct {
	// Origin is the master's origin, scheme://host.
	Origin string
	// Cookie is the session cookie (HttpOnly, holding the cookie share).
	Cookie *http.Cookie
	// Key is the key share the login page stored in localStorage.
	Key string
}

var (
	formToken = regexp.MustCompile(`name="token" value="([^"]+)"`)
	keyShare  = regexp.MustCompile(`data-key="([^"]+)"`)
)

// Login signs in with loginURL (http://host:port/login?token=…), as a
// person who opened the link themselves.
func Login(ctx context.Context, loginURL string) (Browser, error) {
	return LoginWith(ctx, loginURL, nil)
}

// LoginWith is Login with extra headers on both requests (a User-Agent,
// say).
func LoginWith(ctx context.Context, loginURL string, extra http.Header) (Browser, error) {
	return LoginVia(ctx, http.DefaultClient, loginURL, extra)
}

// LoginVia is LoginWith over client (one that dials a tailnet, say, or
// trusts a test CA).
func LoginVia(ctx context.Context, client *http.Client, loginURL string, extra http.Header) (Browser, error) {
	u, err := url.Parse(loginURL)
	if err != nil {
		return Browser{}, fmt.Errorf("mastertest: login URL: %w", err)
	}
	b := Browser{Origin: u.Scheme + "://" + u.Host}
	page, _, err := do(ctx, client, http.MethodGet, loginURL, withExtra(http.Header{"Accept": {"text/html"}, "Sec-Fetch-Site": {"none"}}, extra), nil)
	if err != nil {
		return b, err
	}
	m := formToken.FindStringSubmatch(page)
	if m == nil {
		return b, errors.New("mastertest: the login page has no form")
	}
	page, cookies, err := do(ctx, client, http.MethodPost, b.Origin+"/login",
		withExtra(http.Header{"Origin": {b.Origin}, "Sec-Fetch-Site": {"same-origin"}, "Content-Type": {"application/x-www-form-urlencoded"}}, extra),
		strings.NewReader(url.Values{"token": {m[1]}}.Encode()))
	if err != nil {
		return b, err
	}
	for _, c := range cookies {
		if strings.HasPrefix(c.Name, master.CookieName+"_") { // named per master
			b.Cookie = c
		}
	}
	k := keyShare.FindStringSubmatch(page)
	if b.Cookie == nil || k == nil {
		return b, errors.New("mastertest: the login answer holds no cookie or no key share")
	}
	b.Key = k[1]
	return b, nil
}

func withExtra(h, extra http.Header) http.Header {
	for k, v := range extra {
		h[k] = v
	}
	return h
}

// DialOptions open /v1/ui as the UI page does: cookie, Origin, and the key
// share offered as a subprotocol.
func (b Browser) DialOptions() *websocket.DialOptions {
	return &websocket.DialOptions{
		HTTPHeader:   http.Header{"Cookie": {b.Cookie.Name + "=" + b.Cookie.Value}, "Origin": {b.Origin}},
		Subprotocols: []string{master.UIProtocol, b.Key},
	}
}

// do sends a request and returns the body of its 200 answer and the
// cookies it sets.
func do(ctx context.Context, client *http.Client, method, u string, h http.Header, body io.Reader) (string, []*http.Cookie, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return "", nil, err
	}
	req.Header = h
	resp, err := client.Do(req)
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", nil, fmt.Errorf("mastertest: %s %s: HTTP %d", method, req.URL.Path, resp.StatusCode)
	}
	return string(b), resp.Cookies(), nil
}
