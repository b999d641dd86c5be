package master_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

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
