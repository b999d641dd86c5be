package master_test

import (
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/connlimit"
	"github.com/ferry-dev/ferry/internal/master"
)

// TestAuthenticatedConnectionsLeaveTheCaps: a UI's and a client's
// WebSocket, once their token is verified, no longer count against the
// caps on unauthenticated connections (internal/connlimit); a connection
// that has shown no token does.
func TestAuthenticatedConnectionsLeaveTheCaps(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	lim := connlimit.New(connlimit.Config{PerAddr: 100, Total: 100})
	srv := httptest.NewUnstartedServer(e.m.Handler())
	lim.Install(srv.Config)
	srv.Listener = lim.Listen(srv.Listener)
	srv.Start()
	t.Cleanup(srv.Close)
	counted := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(wait); lim.Stats().Unauthenticated != want; {
			if time.Now().After(deadline) {
				t.Fatalf("%d unauthenticated connections counted, want %d", lim.Stats().Unauthenticated, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	ws := "ws" + strings.TrimPrefix(srv.URL, "http")
	for _, c := range []struct{ path, secret string }{{"/v1/ui", e.ui}, {"/v1/client", e.client}} {
		if _, _, _, err := dial(t, ws+c.path, bearer(c.secret)); err != nil {
			t.Fatalf("dial %s: %v", c.path, err)
		}
	}
	counted(0)
	raw, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	counted(1)
}
