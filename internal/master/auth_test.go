package master_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// refused dials and checks the upgrade is refused with status and, for 401,
// the JSON body with code unauthorized.
// refused dials and checks the upgrade is refused with status and, for 401,
// the JSON body with code unauthorized.
func refused(t *testing.T, url string, h http.Header, status int) {
	t.Helper()
	p, got, body, err := dial(t, url, h)
	if err == nil {
		_ = p.ws.CloseNow()
		t.Fatalf("the upgrade succeeded, want HTTP %d", status)
	}
	if got != status {
		t.Fatalf("HTTP %d (%v), want %d", got, err, status)
	}
	if status != http.StatusUnauthorized {
		return
	}
	var e protocol.Error
	if err := json.Unmarshal(body, &e); err != nil || e.Code != protocol.CodeUnauthorized {
		t.Fatalf("401 body %q (%v), want code unauthorized", body, err)
	}
}

func TestAuthFailures(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ctx := testCtx(t)
	revoked, revokedTok, err := auth.Issue(ctx, e.st, store.TokenClient, "old", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.RevokeToken(ctx, revokedTok.ID); err != nil {
		t.Fatal(err)
	}
	// An expired UI token, stored as auth would have stored it.
	expired := "ferry_ui_" + strings.Repeat("B", 43)
	if err := e.st.CreateToken(ctx, store.Token{ID: "exp", Kind: store.TokenUI, Name: "x", Hash: auth.Hash(expired),
		CreatedAt: time.Now().Add(-2 * time.Hour), ExpiresAt: time.Now().Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	client, ui := e.wsURL("/v1/client"), e.wsURL("/v1/ui")
	for name, c := range map[string]struct {
		url string
		h   http.Header
	}{
		"client without token":     {client, nil},
		"client with bad token":    {client, bearer("ferry_client_nonsense")},
		"client with unknown":      {client, bearer("ferry_client_" + strings.Repeat("A", 43))},
		"client with a UI token":   {client, bearer(e.ui)},
		"client with revoked":      {client, bearer(revoked)},
		"client with basic auth":   {client, http.Header{"Authorization": {"Basic " + e.client}}},
		"ui without token":         {ui, nil},
		"ui with a client token":   {ui, bearer(e.client)},
		"ui with expired token":    {ui, bearer(expired)},
		"ui cookie without origin": {ui, http.Header{"Cookie": {e.m.SessionCookie() + "=" + e.ui}}},
		"ui cookie, foreign origin": {ui, http.Header{"Cookie": {e.m.SessionCookie() + "=" + e.ui},
			"Origin": {"https://evil.example"}}},
		// A whole UI token in the cookie is not a browser credential
		// (browser_test.go has the cookie's own cases).
		"ui cookie holding a token, same origin": {ui, http.Header{"Cookie": {e.m.SessionCookie() + "=" + e.ui},
			"Origin": {e.srv.URL}}},
		"ui cookie with bad token": {ui, http.Header{"Cookie": {e.m.SessionCookie() + "=ferry_ui_x"},
			"Origin": {e.srv.URL}}},
	} {
		t.Run(name, func(t *testing.T) { refused(t, c.url, c.h, http.StatusUnauthorized) })
	}
	// A bearer UI with a foreign Origin passes our check but not
	// coder/websocket's own origin check.
	t.Run("ui bearer, foreign origin", func(t *testing.T) {
		h := bearer(e.ui)
		h.Set("Origin", "https://evil.example")
		refused(t, ui, h, http.StatusForbidden)
	})
}

func TestHealthz(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	resp, err := http.Get(e.srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz: HTTP %d", resp.StatusCode)
	}
}

// TestRevokedTokenClosesOpenConnections: authentication holds for a
// connection's life. Revoking the UI's token closes the UI's connection
// with an unauthorized error; the client's connection (another token) stays.
func TestRevokedTokenClosesOpenConnections(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{RevokeCheck: 50 * time.Millisecond})
	ui := e.dialUI("ui")
	cl := e.dialClient()
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
	got, err := ui.waitClosed()
	if !isClosed(err) {
		t.Fatalf("the UI connection did not close: %v", err)
	}
	var unauthorized bool
	for _, m := range got {
		if pe, ok := m.Payload.(*protocol.Error); ok && pe.Code == protocol.CodeUnauthorized {
			unauthorized = true
		}
	}
	if !unauthorized {
		t.Errorf("closed without an unauthorized error; got %d messages", len(got))
	}
	// The client's token is still valid: its connection still answers.
	cl.send(protocol.New(protocol.TypeCapabilities, testCaps("m-still-here")))
	if _, status, _, err := dial(t, e.wsURL("/v1/ui"), bearer(e.ui)); err == nil || status != http.StatusUnauthorized {
		t.Fatalf("a revoked UI token could still connect (status %d)", status)
	}
}
