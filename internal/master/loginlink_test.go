package master_test

import (
	"context"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// askLoginLink sends ui.login_link.create on ui and returns the answer.
func askLoginLink(t *testing.T, ui *peer) *protocol.LoginLink {
	t.Helper()
	req := ui.send(protocol.New(protocol.TypeLoginLinkCreate, &protocol.LoginLinkCreate{}))
	m := ui.next(protocol.TypeLoginLink)
	if m.ParentID != req.MessageID {
		t.Fatalf("master.login_link answers %s, want %s", m.ParentID, req.MessageID)
	}
	return m.Payload.(*protocol.LoginLink)
}

// postLogin posts a login link's token as the login page's form does and
// returns the HTTP status.
func postLogin(t *testing.T, e *env, link string) int {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, e.srv.URL+"/login",
		strings.NewReader(url.Values{"token": {u.Query().Get("token")}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestLoginLinkSignsAnotherDeviceIn: issue 33 item 4. A UI asks for a login
// link; it points at the origin the UI reached (no public URL set), works
// once, within ten minutes, and `ferry token list` names where it came from.
func TestLoginLinkSignsAnotherDeviceIn(t *testing.T) {
	e := newEnv(t, master.Config{})
	ui := e.dialUI("desktop")
	before := time.Now()
	link := askLoginLink(t, ui)
	if !strings.HasPrefix(link.URL, e.srv.URL+"/login?token=ferry_login_") {
		t.Errorf("link %q is not on the master's origin %s", link.URL, e.srv.URL)
	}
	if !link.Loopback {
		t.Errorf("a link on %s is not flagged loopback", e.srv.URL)
	}
	exp, err := time.Parse(time.RFC3339, link.ExpiresAt)
	if err != nil || exp.Before(before.Add(master.LoginLinkTTL-time.Minute)) || exp.After(time.Now().Add(master.LoginLinkTTL+time.Second)) {
		t.Errorf("expires_at %q (%v), want about %s from now", link.ExpiresAt, err, master.LoginLinkTTL)
	}
	toks, err := e.st.ListTokens(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(toks, func(tk store.Token) bool { return tk.Kind == store.TokenLogin })
	if i < 0 || !strings.Contains(toks[i].Name, "Open on your phone") || len(toks[i].Machines) != 0 {
		t.Fatalf("login token %+v", toks)
	}
	if code := postLogin(t, e, link.URL); code != http.StatusOK {
		t.Fatalf("signing in with the link: HTTP %d", code)
	}
	if code := postLogin(t, e, link.URL); code == http.StatusOK {
		t.Error("the link signed in twice")
	}
	// Each ask is a fresh link.
	if again := askLoginLink(t, ui); again.URL == link.URL {
		t.Error("a second ask gave the same link")
	}
	// A page asking in a loop is stopped at five a minute, with nothing
	// stored for the refused asks.
	for range 3 {
		askLoginLink(t, ui)
	}
	req := ui.send(protocol.New(protocol.TypeLoginLinkCreate, &protocol.LoginLinkCreate{}))
	ui.expectError(req.MessageID, protocol.CodeBusy, "")
	// Five issued, the first used up by the sign-in above.
	if toks, _ = e.st.ListTokens(testCtx(t)); countKind(toks, store.TokenLogin) != 4 {
		t.Errorf("%d login tokens left after 6 asks and one sign-in, want 4", countKind(toks, store.TokenLogin))
	}
	// Another page (connection) has its own allowance.
	askLoginLink(t, e.dialUI("another page"))
}

func countKind(toks []store.Token, kind string) int {
	n := 0
	for _, tk := range toks {
		if tk.Kind == kind {
			n++
		}
	}
	return n
}

// TestLoginLinkKeepsTheScope: a UI whose token sees one machine gets a
// link that sees that machine only, never more than the UI itself.
func TestLoginLinkKeepsTheScope(t *testing.T) {
	e := newEnv(t, master.Config{})
	secret, _, err := auth.Issue(testCtx(t), e.st, store.TokenUI, "phone", time.Hour, auth.WithMachines("m-b", "m-a"))
	if err != nil {
		t.Fatal(err)
	}
	askLoginLink(t, e.dialUIToken(secret, "scoped"))
	toks, err := e.st.ListTokens(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(toks, func(tk store.Token) bool { return tk.Kind == store.TokenLogin })
	if i < 0 || !slices.Equal(toks[i].Machines, []string{"m-a", "m-b"}) {
		t.Fatalf("the link's token sees %v, want [m-a m-b]", toks)
	}
}

// TestLoginLinkBase: the link's origin is the public URL when another
// device can reach it; a loopback public URL gives way to the origin the
// UI came through (a trusted proxy's host); a bad public URL stops New.
func TestLoginLinkBase(t *testing.T) {
	t.Run("public", func(t *testing.T) {
		e := newEnv(t, master.Config{PublicURL: "https://laptop.tail1234.ts.net/"})
		link := askLoginLink(t, e.dialUI("desktop"))
		if !strings.HasPrefix(link.URL, "https://laptop.tail1234.ts.net/login?token=") || link.Loopback {
			t.Errorf("link %+v, want one on the public URL", link)
		}
		// The CLI learns its URL once it listens, after New.
		if err := e.m.SetPublicURL("https://ferry.example.org:8443"); err != nil {
			t.Fatal(err)
		}
		if err := e.m.SetPublicURL("not a url"); err == nil {
			t.Error("SetPublicURL took a bad URL")
		}
		if link := askLoginLink(t, e.dialUI("desktop")); !strings.HasPrefix(link.URL, "https://ferry.example.org:8443/login?token=") {
			t.Errorf("after SetPublicURL: %+v", link)
		}
	})
	t.Run("loopback public URL, proxied UI", func(t *testing.T) {
		e := newEnv(t, master.Config{PublicURL: "http://127.0.0.1:7860", TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
		h := bearer(e.ui)
		h.Set("X-Forwarded-Proto", "https")
		h.Set("X-Forwarded-Host", "ferry.example.com")
		h.Set("X-Forwarded-For", "203.0.113.7")
		p, _, _, err := dial(t, e.wsURL("/v1/ui"), h)
		if err != nil {
			t.Fatal(err)
		}
		p.name, p.skip, p.skipStatus = "proxied", []string{protocol.TypeMachineStatus}, true
		link := askLoginLink(t, p)
		if !strings.HasPrefix(link.URL, "https://ferry.example.com/login?token=") || link.Loopback {
			t.Errorf("link %+v, want one on the proxy's origin", link)
		}
	})
	for _, bad := range []string{"ftp://x", "https://", "https://x/?a=1", "laptop:7860", "https://u:p@x"} {
		if _, err := master.New(context.Background(), master.Config{Store: newStore(t, t.TempDir()+"/f.db"), PublicURL: bad}); err == nil || !strings.Contains(err.Error(), "PublicURL") {
			t.Errorf("PublicURL %q: err %v", bad, err)
		}
	}
}
