package cli

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHTTPServerLimits: the server ferry serve and up run has header and
// idle timeouts and a header cap, and refuses headers over the cap with
// 431 while a browser's ordinary load of cookies passes.
func TestHTTPServerLimits(t *testing.T) {
	t.Parallel()
	srv, lim := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }), slog.New(slog.DiscardHandler))
	if srv.ReadHeaderTimeout != readHeaderTimeout || srv.ReadHeaderTimeout <= 0 || srv.IdleTimeout != idleTimeout || srv.IdleTimeout <= 0 ||
		srv.MaxHeaderBytes != maxHeaderBytes || srv.ReadTimeout != 0 || srv.WriteTimeout != 0 || srv.ErrorLog == nil {
		t.Fatalf("server limits %+v", srv)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lim.Listen(ln)) }()
	t.Cleanup(func() { _ = srv.Close() })
	for _, c := range []struct {
		cookie int
		want   int
	}{
		{16 << 10, http.StatusOK},
		{maxHeaderBytes + 8<<10, http.StatusRequestHeaderFieldsTooLarge},
	} {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: x\r\nCookie: a=%s\r\n\r\n", strings.Repeat("x", c.cookie)); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%d bytes of cookie: %v", c.cookie, err)
		}
		_ = resp.Body.Close()
		_ = conn.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%d bytes of cookie: %s, want %d", c.cookie, resp.Status, c.want)
		}
	}
}
