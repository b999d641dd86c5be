package master_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/store"
)

// jarLogin signs in to e's master as a browser whose cookies are jar:
// the login page, then its form, with the jar sending and keeping cookies
// as a browser does (for a host, whatever the port). It returns the key
// share the answer's page would store in the origin's localStorage.
func jarLogin(t *testing.T, e *env, jar http.CookieJar) string {
	t.Helper()
	secret, _, err := auth.Issue(testCtx(t), e.st, store.TokenLogin, "login URL", auth.LoginTTL)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Jar: jar, CheckRedirect: noRedirect.CheckRedirect}
	req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, e.srv.URL+"/login",
		strings.NewReader(url.Values{"token": {secret}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	k := keyShareRE.FindStringSubmatch(string(b))
	if resp.StatusCode != http.StatusOK || k == nil {
		t.Fatalf("login POST: HTTP %d:\n%s", resp.StatusCode, b)
	}
	return k[1]
}

// jarDial opens /v1/ui as e's page would, with the cookies jar holds for
// e's host and the key share key; it returns the HTTP status (101 when
// the connection opened).
func jarDial(t *testing.T, e *env, jar http.CookieJar, key string) int {
	t.Helper()
	u, _ := url.Parse(e.srv.URL)
	h := http.Header{"Origin": {e.srv.URL}}
	var cookies []string
	for _, c := range jar.Cookies(u) {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	h.Set("Cookie", strings.Join(cookies, "; "))
	ws, resp, err := websocket.Dial(testCtx(t), e.wsURL("/v1/ui"), &websocket.DialOptions{HTTPHeader: h,
		Subprotocols: []string{master.UIProtocol, key}})
	status := 0
	if resp != nil {
		status = resp.StatusCode
		if resp.Body != nil {
			_ = resp.Body.Close()
		}
	}
	if err == nil {
		_ = ws.Close(websocket.StatusNormalClosure, "")
	}
	return status
}

// TestTwoMastersKeepTheirSignIns: issue 32 item 4. A browser sends a
// host's cookies to every port of it, so two masters on two ports of
// 127.0.0.1 share one cookie jar. Signed in to both, each still opens the
// UI with its own key share, also after the first restarts on its
// database, and after the second signs in again.
func TestTwoMastersKeepTheirSignIns(t *testing.T) {
	t.Parallel()
	a, b := newEnv(t, master.Config{}), newEnv(t, master.Config{})
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	keyA := jarLogin(t, a, jar)
	if got := jarDial(t, a, jar, keyA); got != http.StatusSwitchingProtocols {
		t.Fatalf("A alone: HTTP %d, want 101", got)
	}
	keyB := jarLogin(t, b, jar)
	check := func(when string) {
		t.Helper()
		if got := jarDial(t, a, jar, keyA); got != http.StatusSwitchingProtocols {
			t.Errorf("%s: master A answers HTTP %d, want 101: signing in to B signed A out", when, got)
		}
		if got := jarDial(t, b, jar, keyB); got != http.StatusSwitchingProtocols {
			t.Errorf("%s: master B answers HTTP %d, want 101", when, got)
		}
	}
	check("signed in to A, then B")
	a.restart()
	check("A restarted on its database")
	keyB = jarLogin(t, b, jar)
	check("B signed in again")
	u, _ := url.Parse(a.srv.URL)
	names := map[string]bool{}
	for _, c := range jar.Cookies(u) {
		names[c.Name] = true
	}
	if len(names) != 2 {
		t.Errorf("the jar holds cookies %v for 127.0.0.1, want one per master", names)
	}
}

// signInStatus asks POST /v1/signin/status as e's page would, with the
// Cookie header cookie and the key share key ("" for none).
func signInStatus(t *testing.T, e *env, cookie, key string) master.SignInStatus {
	t.Helper()
	h := http.Header{"Origin": {e.srv.URL}}
	if cookie != "" {
		h.Set("Cookie", cookie)
	}
	if key != "" {
		h.Set(master.KeyHeader, key)
	}
	resp, body := e.do(http.MethodPost, "/v1/signin/status", h, nil)
	var st master.SignInStatus
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &st) != nil {
		t.Fatalf("sign-in status: HTTP %d %s", resp.StatusCode, body)
	}
	return st
}

// TestSignInStatusSaysWhy: issue 32 item 4. When a browser is signed
// out, the master says why as far as it knows: no cookie, the key share
// gone, expired, revoked, or replaced by a sign-in elsewhere (another
// sign-in's cookie under this master's name, or another ferry's under the
// old shared name); and only to its own origin.
func TestSignInStatusSaysWhy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	mine, other := e.login(), e.login()
	ck := func(b browser) string { return b.cookie.Name + "=" + b.cookie.Value }
	expiring, _, err := auth.Issue(testCtx(t), e.st, store.TokenUI, "browser", time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	expCookie, expKey, err := master.SplitUISecret(expiring)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	foreign, _, err := master.SplitUISecret("ferry_ui_" + strings.Repeat("Q", 43)) // another ferry's sign-in
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		cookie, key, want string
	}{
		"both shares":                      {ck(mine), mine.key, ""},
		"no cookie":                        {"", mine.key, master.SignInNoCookie},
		"another master's cookie only":     {"ferry_session_0123456789ab=" + mine.cookie.Value, mine.key, master.SignInNoCookie},
		"no key share":                     {ck(mine), "", master.SignInKeyGone},
		"cookie of another live sign-in":   {ck(other), mine.key, master.SignInElsewhere},
		"expired":                          {e.m.SessionCookie() + "=" + expCookie, expKey, master.SignInExpired},
		"expired, key of another":          {e.m.SessionCookie() + "=" + expCookie, mine.key, master.SignInExpired},
		"old shared name, another ferry's": {master.CookieName + "=" + foreign, mine.key, master.SignInElsewhere},
		"old shared name, this master's":   {master.CookieName + "=" + mine.cookie.Value, mine.key, ""},
		"own name wins over the old name":  {ck(mine) + "; " + master.CookieName + "=" + foreign, mine.key, ""},
		"a forged cookie share":            {e.m.SessionCookie() + "=ferry_uicookie_" + strings.Repeat("A", 43), mine.key, master.SignInRevoked},
	} {
		got := signInStatus(t, e, c.cookie, c.key)
		if got.SignedIn != (c.want == "") || got.Reason != c.want || (c.want != "" && got.Message == "") {
			t.Errorf("%s: %+v, want reason %q", name, got, c.want)
		}
	}
	// Revoked: the token is no longer stored.
	toks, err := e.st.ListTokens(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range toks {
		if tok.Kind == store.TokenUI {
			if err := e.st.RevokeToken(testCtx(t), tok.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := signInStatus(t, e, ck(mine), mine.key); got.SignedIn || got.Reason != master.SignInRevoked {
		t.Errorf("revoked: %+v", got)
	}
	// Only the master's own pages may ask.
	resp, body := e.do(http.MethodPost, "/v1/signin/status", http.Header{"Origin": {"http://127.0.0.1:1"}, "Cookie": {ck(mine)}}, nil)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign origin: HTTP %d %s, want 403", resp.StatusCode, body)
	}
}

// TestOldCookieNameMovesOnce: a browser signed in before the cookie was
// named per master still opens the UI with the old name, and the 101
// answer sets the cookie under the master's own name (HttpOnly,
// SameSite=Strict), so the old name is needed once.
func TestOldCookieNameMovesOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	b := e.login()
	ws, resp, err := websocket.Dial(testCtx(t), e.wsURL("/v1/ui"), &websocket.DialOptions{
		HTTPHeader:   http.Header{"Origin": {e.srv.URL}, "Cookie": {master.CookieName + "=" + b.cookie.Value}},
		Subprotocols: []string{master.UIProtocol, b.key}})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		t.Fatalf("dial with the old cookie name: %v", err)
	}
	_ = ws.Close(websocket.StatusNormalClosure, "")
	var moved *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == e.m.SessionCookie() {
			moved = c
		}
	}
	if moved == nil || moved.Value != b.cookie.Value || !moved.HttpOnly || moved.SameSite != http.SameSiteStrictMode || moved.MaxAge <= 0 {
		t.Fatalf("the 101 answer set %v, want the cookie under %s", resp.Cookies(), e.m.SessionCookie())
	}
	// With its own name, nothing is set again.
	ws, resp, err = websocket.Dial(testCtx(t), e.wsURL("/v1/ui"), &websocket.DialOptions{
		HTTPHeader: http.Header{"Origin": {e.srv.URL}, "Cookie": {moved.Name + "=" + moved.Value}}, Subprotocols: []string{master.UIProtocol, b.key}})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	_ = ws.Close(websocket.StatusNormalClosure, "")
	if len(resp.Cookies()) != 0 {
		t.Errorf("the own name's upgrade set %v", resp.Cookies())
	}
}
