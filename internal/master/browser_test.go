package master_test

import (
	"context"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

var (
	formTokenRE = regexp.MustCompile(`name="token" value="([^"]+)"`)
	keyShareRE  = regexp.MustCompile(`data-key="([^"]+)"`)
)

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// browser is what one browser holds after a login: the cookie and the key
// share its page stored in localStorage.
type browser struct {
	cookie *http.Cookie
	key    string
}

// httpAnswer is a response, its body read and closed.
type httpAnswer struct {
	StatusCode int
	Header     http.Header
	cookies    []*http.Cookie
}

func (a httpAnswer) Cookies() []*http.Cookie { return a.cookies }

// do sends a request to the master and returns the answer with its body.
func (e *env) do(method, path string, h http.Header, form url.Values) (httpAnswer, string) {
	e.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(testCtx(e.t), method, e.srv.URL+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return httpAnswer{resp.StatusCode, resp.Header, resp.Cookies()}, string(b)
}

func sessionCookie(resp httpAnswer) *http.Cookie {
	for _, c := range resp.Cookies() {
		if strings.HasPrefix(c.Name, master.CookieName+"_") {
			return c
		}
	}
	return nil
}

// openLogin GETs the login URL as a browser would (site is its
// Sec-Fetch-Site) and returns the page.
func (e *env) openLogin(login, site string, h http.Header) (httpAnswer, string) {
	e.t.Helper()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Accept", "text/html")
	if site != "" {
		h.Set("Sec-Fetch-Site", site)
	}
	return e.do(http.MethodGet, "/login?token="+url.QueryEscape(login), h, nil)
}

// postLogin submits the login page's form from origin.
func (e *env) postLogin(token, origin string, h http.Header) (httpAnswer, string) {
	e.t.Helper()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Origin", origin)
	h.Set("Sec-Fetch-Site", "same-origin")
	return e.do(http.MethodPost, "/login", h, url.Values{"token": {token}})
}

// login runs a whole browser login with a fresh login token.
func (e *env) login(opts ...auth.IssueOption) browser {
	e.t.Helper()
	secret, _, err := auth.Issue(testCtx(e.t), e.st, store.TokenLogin, "login URL", auth.LoginTTL, opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	resp, page := e.openLogin(secret, "none", nil)
	m := formTokenRE.FindStringSubmatch(page)
	if resp.StatusCode != http.StatusOK || m == nil || m[1] != secret || sessionCookie(resp) != nil {
		e.t.Fatalf("login page: HTTP %d, cookie %v:\n%s", resp.StatusCode, sessionCookie(resp), page)
	}
	resp, page = e.postLogin(m[1], e.srv.URL, nil)
	c, k := sessionCookie(resp), keyShareRE.FindStringSubmatch(page)
	if resp.StatusCode != http.StatusOK || c == nil || k == nil {
		e.t.Fatalf("login POST: HTTP %d, cookie %v:\n%s", resp.StatusCode, c, page)
	}
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure {
		e.t.Fatalf("session cookie %+v, want HttpOnly, SameSite=Strict, Path=/, not Secure over plain HTTP", c)
	}
	return browser{cookie: c, key: k[1]}
}

// dialBrowser opens /v1/ui as the UI page does: the cookie, the key share
// as a subprotocol, the page's Origin.
func (e *env) dialBrowser(cookie *http.Cookie, key string, h http.Header) (*peer, int, error) {
	e.t.Helper()
	if h == nil {
		h = http.Header{"Origin": {e.srv.URL}}
	}
	h.Set("Cookie", cookie.Name+"="+cookie.Value)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, e.wsURL("/v1/ui"), &websocket.DialOptions{HTTPHeader: h, Subprotocols: []string{master.UIProtocol, key}})
	status := 0
	if resp != nil {
		status = resp.StatusCode
		if resp.Body != nil {
			_ = resp.Body.Close()
		}
	}
	if err != nil {
		return nil, status, err
	}
	if ws.Subprotocol() != master.UIProtocol {
		e.t.Errorf("negotiated subprotocol %q, want %q (the key share is never echoed)", ws.Subprotocol(), master.UIProtocol)
	}
	ws.SetReadLimit(-1)
	p := &peer{t: e.t, ws: ws, name: "browser"}
	e.t.Cleanup(func() { _ = ws.CloseNow() })
	return p, status, nil
}

func (e *env) mustDialBrowserNoSync(b browser) *peer {
	e.t.Helper()
	p, status, err := e.dialBrowser(b.cookie, b.key, nil)
	if err != nil {
		e.t.Fatalf("dial with the cookie and its key share: HTTP %d %v", status, err)
	}
	return p
}

// mustDialBrowser dials and checks the connection answers.
func (e *env) mustDialBrowser(b browser) *peer {
	e.t.Helper()
	p := e.mustDialBrowserNoSync(b)
	p.sync()
	return p
}

// TestCookieAloneOpensNothing: issue 16 item 3. A local server on another
// port receives the session cookie; replayed with any headers, by any
// client, at every endpoint that looks at the cookie, it opens nothing, and
// no endpoint hands out the key share for it.
func TestCookieAloneOpensNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	b := e.login()
	e.mustDialBrowser(b) // the pair works
	ck := b.cookie.Name + "=" + b.cookie.Value
	ui := e.wsURL("/v1/ui")
	forged := map[string]http.Header{
		"cookie only":               {"Cookie": {ck}},
		"same Origin":               {"Cookie": {ck}, "Origin": {e.srv.URL}},
		"same Origin, fetch hints":  {"Cookie": {ck}, "Origin": {e.srv.URL}, "Sec-Fetch-Site": {"same-origin"}, "Sec-Fetch-Mode": {"websocket"}, "Referer": {e.srv.URL + "/"}},
		"UI subprotocol, no key":    {"Cookie": {ck}, "Origin": {e.srv.URL}, "Sec-WebSocket-Protocol": {master.UIProtocol}},
		"cookie as the key share":   {"Cookie": {ck}, "Origin": {e.srv.URL}, "Sec-WebSocket-Protocol": {master.UIProtocol + ", " + b.cookie.Value}},
		"cookie as a bearer token":  {"Authorization": {"Bearer " + b.cookie.Value}, "Origin": {e.srv.URL}},
		"forwarded from a proxy":    {"Cookie": {ck}, "Origin": {"https://ferry.example.com"}, "X-Forwarded-Proto": {"https"}, "X-Forwarded-Host": {"ferry.example.com"}, "X-Forwarded-For": {"127.0.0.1"}},
		"key share as a bearer":     {"Authorization": {"Bearer " + b.key}},
		"key share, no cookie":      {"Origin": {e.srv.URL}, "Sec-WebSocket-Protocol": {master.UIProtocol + ", " + b.key}},
		"key share, foreign Origin": {"Cookie": {ck}, "Origin": {"http://127.0.0.1:1"}, "Sec-WebSocket-Protocol": {master.UIProtocol + ", " + b.key}},
	}
	for name, h := range forged {
		t.Run("v1/ui: "+name, func(t *testing.T) { refused(t, ui, h, http.StatusUnauthorized) })
	}
	// Downloads: the cookie without a link of its own owner is refused.
	for name, path := range map[string]string{
		"no link":        "/v1/artifacts/x",
		"malformed link": "/v1/artifacts/ferry_dl_x",
		"unknown link":   "/v1/artifacts/ferry_dl_" + strings.Repeat("A", 43),
	} {
		resp, body := e.do(http.MethodGet, path, http.Header{"Cookie": {ck}, "Origin": {e.srv.URL}}, nil)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, protocol.CodeUnauthorized) {
			t.Errorf("download, %s: HTTP %d %s, want 401", name, resp.StatusCode, body)
		}
	}
	// No page hands the key share out for the cookie.
	for _, req := range []struct{ method, path string }{
		{http.MethodGet, "/"}, {http.MethodGet, "/login"}, {http.MethodGet, "/login?token="},
		{http.MethodPost, "/login"}, {http.MethodGet, "/healthz"}, {http.MethodGet, "/v1/ui"},
	} {
		var form url.Values
		if req.method == http.MethodPost {
			form = url.Values{"token": {""}}
		}
		_, body := e.do(req.method, req.path, http.Header{"Cookie": {ck}, "Origin": {e.srv.URL}, "Sec-Fetch-Site": {"same-origin"}}, form)
		if strings.Contains(body, b.key) || strings.Contains(body, "ferry_uikey_") {
			t.Errorf("%s %s hands out a key share for the cookie", req.method, req.path)
		}
	}
}

// TestSharesOfTwoLoginsDoNotMix: the cookie of one login with the key share
// of another is refused both ways; each pair works.
func TestSharesOfTwoLoginsDoNotMix(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	b1, b2 := e.login(), e.login()
	if b1.key == b2.key || b1.cookie.Value == b2.cookie.Value {
		t.Fatal("two logins got the same shares")
	}
	for name, pair := range map[string]browser{
		"cookie 1, key 2": {b1.cookie, b2.key},
		"cookie 2, key 1": {b2.cookie, b1.key},
	} {
		if _, status, err := e.dialBrowser(pair.cookie, pair.key, nil); err == nil || status != http.StatusUnauthorized {
			t.Errorf("%s: HTTP %d (%v), want 401", name, status, err)
		}
	}
	e.mustDialBrowser(b1)
	e.mustDialBrowser(b2)
	// Without the Origin of the page the pair is refused too.
	if _, status, err := e.dialBrowser(b1.cookie, b1.key, http.Header{}); err == nil || status != http.StatusUnauthorized {
		t.Errorf("no Origin: HTTP %d (%v), want 401", status, err)
	}
	// The shares are of a real UI token: revoking it ends the pair.
	toks, err := e.st.ListTokens(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range toks {
		if tok.Kind == store.TokenUI && tok.Name == "login URL" {
			if err := e.st.RevokeToken(testCtx(t), tok.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, status, err := e.dialBrowser(b1.cookie, b1.key, nil); err == nil || status != http.StatusUnauthorized {
		t.Errorf("revoked: HTTP %d (%v), want 401", status, err)
	}
}

// TestBearerUITokenStillWorks: a UI token given whole (ferry token create
// --kind ui) is a bearer token for non-browser clients, as before.
func TestBearerUITokenStillWorks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	e.dialUI("bearer UI")
}

// TestDownloadWithTheCookie: a browser downloads by navigating to the link
// with its cookie; only the cookie share of the link's owner opens it.
func TestDownloadWithTheCookie(t *testing.T) {
	t.Parallel()
	e, _, c, info, l := downloadSetup(t, master.Config{})
	own, _, err := master.SplitUISecret(e.ui) // the link's owner is e.ui
	if err != nil {
		t.Fatal(err)
	}
	other := e.login()
	for name, cookie := range map[string]string{
		"another login's cookie": other.cookie.Value,
		"the whole UI token":     e.ui,
		"a forged share":         "ferry_uicookie_" + strings.Repeat("A", 43),
	} {
		resp, body := e.do(http.MethodGet, l.DownloadURL, http.Header{"Cookie": {other.cookie.Name + "=" + cookie}}, nil)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: HTTP %d %s, want 401", name, resp.StatusCode, body)
		}
	}
	res := e.download(testCtx(t), l.DownloadURL, http.Header{"Cookie": {other.cookie.Name + "=" + own}})
	_, id := c.answerRead(3)
	c.next(protocol.TypeArtifactRange)
	c.sendChunk(id, 0, []byte("a,b"))
	c.end(info.ID, id, nil)
	if r := <-res; r.err != nil || r.resp.StatusCode != http.StatusOK || string(r.body) != "a,b" {
		t.Fatalf("download with the owner's cookie: %v %v %q", r.err, r.resp, r.body)
	}
}

// TestTrustedProxy: X-Forwarded-Proto: https makes the cookie Secure, and
// the origin checks use the forwarded scheme and host, only when the peer
// is a configured proxy.
func TestTrustedProxy(t *testing.T) {
	t.Parallel()
	const public = "https://ferry.example.com"
	fwd := func() http.Header {
		return http.Header{"X-Forwarded-Proto": {"https"}, "X-Forwarded-Host": {"ferry.example.com"}, "X-Forwarded-For": {"203.0.113.7"}}
	}
	t.Run("trusted", func(t *testing.T) {
		e := newEnv(t, master.Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
		login, _, err := auth.Issue(testCtx(t), e.st, store.TokenLogin, "login URL", auth.LoginTTL)
		if err != nil {
			t.Fatal(err)
		}
		// The browser's Origin is the public one; the plain one is foreign.
		if resp, _ := e.postLogin(login, e.srv.URL, fwd()); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("login posted from the proxy's inside origin: HTTP %d, want 403", resp.StatusCode)
		}
		resp, page := e.postLogin(login, public, fwd())
		c, k := sessionCookie(resp), keyShareRE.FindStringSubmatch(page)
		if resp.StatusCode != http.StatusOK || c == nil || k == nil || !c.Secure {
			t.Fatalf("login through the proxy: HTTP %d, cookie %+v, want a Secure cookie", resp.StatusCode, c)
		}
		h := fwd()
		h.Set("Origin", public)
		p, status, err := e.dialBrowser(c, k[1], h)
		if err != nil {
			t.Fatalf("dial through the proxy: HTTP %d %v", status, err)
		}
		p.sync()
		h = fwd()
		h.Set("Origin", "http://ferry.example.com") // the scheme counts
		if _, status, err := e.dialBrowser(c, k[1], h); err == nil || status != http.StatusUnauthorized {
			t.Fatalf("plain-HTTP Origin through an HTTPS proxy: HTTP %d (%v), want 401", status, err)
		}
	})
	t.Run("untrusted", func(t *testing.T) {
		e := newEnv(t, master.Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}})
		login, _, err := auth.Issue(testCtx(t), e.st, store.TokenLogin, "login URL", auth.LoginTTL)
		if err != nil {
			t.Fatal(err)
		}
		// Forwarded headers from a peer nobody trusts are ignored: the
		// public Origin is foreign, and the cookie is not Secure.
		if resp, _ := e.postLogin(login, public, fwd()); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("forged forwarded origin: HTTP %d, want 403", resp.StatusCode)
		}
		resp, _ := e.postLogin(login, e.srv.URL, fwd())
		if c := sessionCookie(resp); resp.StatusCode != http.StatusOK || c == nil || c.Secure {
			t.Fatalf("forged X-Forwarded-Proto: HTTP %d, cookie %+v, want one that is not Secure", resp.StatusCode, c)
		}
	})
}

// TestLoginCSRF: a login link opened from another site asks before it
// signs in, and replaces the session only on the confirmed POST; a GET of
// the link (a link preview) does not use it; a form posted from another
// origin is refused.
func TestLoginCSRF(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	mine := e.login()
	e.mustDialBrowser(mine)
	theirs, _, err := auth.Issue(testCtx(t), e.st, store.TokenLogin, "planted", auth.LoginTTL)
	if err != nil {
		t.Fatal(err)
	}
	stillValid := func(what string) {
		t.Helper()
		if _, err := auth.Verify(testCtx(t), e.st, theirs, store.TokenLogin); err != nil {
			t.Fatalf("%s used up the login token: %v", what, err)
		}
	}
	// A link preview, then the browser following a link from another site
	// (cross-site; same-site is another port of this host; none at all is
	// an old browser or a bot), with the session cookie or without.
	for _, site := range []string{"", "cross-site", "same-site"} {
		for _, h := range []http.Header{nil, {"Cookie": {mine.cookie.Name + "=" + mine.cookie.Value}}} {
			resp, page := e.openLogin(theirs, site, h)
			if resp.StatusCode != http.StatusOK || sessionCookie(resp) != nil || strings.Contains(page, `data-auto`) ||
				!strings.Contains(page, "Sign in to ferry?") || !strings.Contains(page, `id="replace"`) {
				t.Fatalf("Sec-Fetch-Site %q: HTTP %d, cookie %v; want a page that asks:\n%s", site, resp.StatusCode, sessionCookie(resp), page)
			}
			if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'sha256-") {
				t.Fatalf("login page CSP %q", csp)
			}
			stillValid("opening the link from another site")
		}
	}
	// A form on another site posting the token straight to /login.
	for _, origin := range []string{"https://evil.example", "http://127.0.0.1:1", "null", ""} {
		resp, _ := e.postLogin(theirs, origin, http.Header{"Cookie": {mine.cookie.Name + "=" + mine.cookie.Value}})
		if resp.StatusCode != http.StatusForbidden || sessionCookie(resp) != nil {
			t.Fatalf("login posted from %q: HTTP %d, cookie %v; want 403 and none", origin, resp.StatusCode, sessionCookie(resp))
		}
		stillValid("a cross-origin POST")
	}
	e.mustDialBrowser(mine) // the session is untouched
	// The person confirms on the page (its form posts from ferry's origin):
	// now, and only now, the session is replaced.
	resp, page := e.postLogin(theirs, e.srv.URL, http.Header{"Cookie": {mine.cookie.Name + "=" + mine.cookie.Value}})
	c, k := sessionCookie(resp), keyShareRE.FindStringSubmatch(page)
	if resp.StatusCode != http.StatusOK || c == nil || k == nil || c.Value == mine.cookie.Value {
		t.Fatalf("confirmed login: HTTP %d, cookie %v", resp.StatusCode, c)
	}
	e.mustDialBrowser(browser{c, k[1]})
	if _, err := auth.Verify(testCtx(t), e.st, theirs, store.TokenLogin); err == nil {
		t.Fatal("the confirmed login did not use up the token")
	}
	// Opened by the person (typed, a terminal, ferry's sign-in form), the
	// page submits itself.
	for _, site := range []string{"none", "same-origin"} {
		fresh, _, err := auth.Issue(testCtx(t), e.st, store.TokenLogin, "typed", auth.LoginTTL)
		if err != nil {
			t.Fatal(err)
		}
		resp, page := e.openLogin(fresh, site, nil)
		if resp.StatusCode != http.StatusOK || !strings.Contains(page, `data-auto="1"`) {
			t.Fatalf("Sec-Fetch-Site %q: HTTP %d, want a page that submits itself:\n%s", site, resp.StatusCode, page)
		}
	}
}

// TestLoginPages: the link works once; a used or bad link gets the page
// that says what to do (or JSON for a non-browser), nothing echoed back.
func TestLoginPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	login, _, err := auth.Issue(testCtx(t), e.st, store.TokenLogin, "login URL", auth.LoginTTL)
	if err != nil {
		t.Fatal(err)
	}
	// Fetching the page twice uses nothing.
	for range 2 {
		if resp, _ := e.openLogin(login, "none", nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("login page: HTTP %d", resp.StatusCode)
		}
	}
	if resp, _ := e.postLogin(login, e.srv.URL, nil); resp.StatusCode != http.StatusOK || sessionCookie(resp) == nil {
		t.Fatalf("login: HTTP %d", resp.StatusCode)
	}
	// The login URL works once: the page, and the POST, now refuse it.
	resp, body := e.do(http.MethodGet, "/login?token="+login, nil, nil)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, protocol.CodeUnauthorized) {
		t.Fatalf("second login, no browser: HTTP %d %s, want 401 JSON", resp.StatusCode, body)
	}
	if resp, body := e.postLogin(login, e.srv.URL, nil); resp.StatusCode != http.StatusUnauthorized || sessionCookie(resp) != nil ||
		!strings.Contains(body, "ferry token create --kind login") {
		t.Fatalf("second POST: HTTP %d %s", resp.StatusCode, body)
	}
	// A browser that opens a used link gets a page saying what to do.
	resp, body = e.openLogin(login+"<script>", "none", nil)
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(body, "ferry token create --kind login") || strings.Contains(body, "<script") ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("used link in a browser: HTTP %d %q %q:\n%s", resp.StatusCode, resp.Header.Get("Content-Type"),
			resp.Header.Get("Content-Security-Policy"), body)
	}
}

// TestLoginPagesStyled: every page the master renders itself (the login
// page, a login link that does not work) looks like the UI: its header
// with the app's icon and the master's style sheet (light and dark),
// under a policy that allows that sheet and no inline style.
func TestLoginPagesStyled(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	login, _, err := auth.Issue(testCtx(t), e.st, store.TokenLogin, "login URL", auth.LoginTTL)
	if err != nil {
		t.Fatal(err)
	}
	const styleSheet = "/login.css" // master.LoginStylePath
	check := func(what string, h http.Header, page string) {
		t.Helper()
		csp := h.Get("Content-Security-Policy")
		if !strings.Contains(csp, "style-src 'self'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: policy %q, want the master's style sheet and no inline style", what, csp)
		}
		if !strings.Contains(page, `<link rel="stylesheet" href="`+styleSheet+`">`) ||
			strings.Contains(page, "<style") || strings.Contains(page, "style=") {
			t.Errorf("%s: want the style sheet and no inline style:\n%s", what, page)
		}
		if !strings.Contains(page, `<header class="topbar">`) || !strings.Contains(page, `<img class="logo"`) {
			t.Errorf("%s: no header with the app's icon:\n%s", what, page)
		}
	}
	for _, site := range []string{"none", "cross-site"} {
		resp, page := e.openLogin(login, site, nil)
		check("login page ("+site+")", resp.Header, page)
	}
	resp, page := e.openLogin("ferry_login_doesnotwork", "none", nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a bad link: HTTP %d", resp.StatusCode)
	}
	check("a link that does not work", resp.Header, page)
	resp, css := e.do(http.MethodGet, styleSheet, nil, nil)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/css") ||
		resp.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(css, "prefers-color-scheme:dark") {
		t.Fatalf("%s: HTTP %d %q:\n%s", styleSheet, resp.StatusCode, resp.Header.Get("Content-Type"), css)
	}
}
