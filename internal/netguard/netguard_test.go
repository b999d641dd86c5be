package netguard_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/ferry-dev/ferry/internal/netguard"
	"github.com/ferry-dev/ferry/internal/netguard/netguardtest"
)

func TestPublicAddr(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"8.8.8.8": true, "2606:4700::1111": true, "93.184.216.34": true,
		"127.0.0.1": false, "::1": false, "10.0.0.1": false, "172.16.5.4": false, "192.168.1.1": false,
		"169.254.169.254": false, "fe80::1": false, "fc00::1": false, "0.0.0.0": false, "::": false,
		"224.0.0.1": false, "ff02::1": false, "::ffff:10.0.0.1": false, "100.64.0.1": false,
		"255.255.255.255": false, "64:ff9b::a00:1": false,
	} {
		if got := netguard.PublicAddr(netip.MustParseAddr(s)); got != want {
			t.Errorf("PublicAddr(%s) = %v, want %v", s, got, want)
		}
	}
}

// A name that resolves to a private address is refused before any
// connection, with no real DNS: the resolver seam answers.
func TestNameResolvingPrivateRefused(t *testing.T) {
	t.Parallel()
	srv, conns := netguardtest.CountingServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	var asked atomic.Int32
	p := netguard.Policy{Schemes: []string{"http"}, Lookup: func(_ context.Context, host string) ([]netip.Addr, error) {
		asked.Add(1)
		switch host {
		case "intranet.example":
			return []netip.Addr{netip.MustParseAddr("10.0.0.1")}, nil
		case "loop.example":
			return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, nil
		}
		return nil, errors.New("no such host")
	}}
	c := p.Client()
	for _, u := range []string{"http://intranet.example:" + port + "/", "http://loop.example:" + port + "/", srv.URL + "/", "http://[::ffff:127.0.0.1]:" + port + "/"} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
		resp, err := c.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			t.Fatalf("%s: fetched", u)
		}
		if !errors.Is(err, netguard.ErrForbiddenAddr) {
			t.Errorf("%s: %v, want ErrForbiddenAddr", u, err)
		}
	}
	if asked.Load() != 2 {
		t.Errorf("the resolver was asked %d times, want 2 (IP literals are not resolved)", asked.Load())
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("%d connections reached the server", n)
	}
}

// A redirect is checked like the first request: to a private address it
// is refused before connecting, to another scheme not followed.
func TestRedirectRechecked(t *testing.T) {
	t.Parallel()
	private, conns := netguardtest.CountingServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	_, privPort, _ := net.SplitHostPort(private.Listener.Addr().String())
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-private":
			http.Redirect(w, r, "http://inside.example:"+privPort+"/", http.StatusFound)
		case "/to-ftp":
			http.Redirect(w, r, "ftp://files.example/", http.StatusFound)
		}
	}))
	t.Cleanup(front.Close)
	frontAddr := netip.MustParseAddrPort(front.Listener.Addr().String())
	p := netguard.Policy{
		Schemes: []string{"http"},
		// Only the front server's loopback port stands for "public" here.
		Allow: func(a netip.Addr) bool { return a.IsLoopback() },
		Lookup: func(_ context.Context, host string) ([]netip.Addr, error) {
			if host == "inside.example" {
				return []netip.Addr{netip.MustParseAddr("192.168.1.10")}, nil
			}
			return nil, errors.New("no such host")
		},
	}
	c := p.Client()
	get := func(path string) error {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+frontAddr.String()+path, nil)
		resp, err := c.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	if err := get("/to-private"); !errors.Is(err, netguard.ErrForbiddenAddr) {
		t.Errorf("redirect to a private address: %v, want ErrForbiddenAddr", err)
	}
	if err := get("/to-ftp"); !errors.Is(err, netguard.ErrRedirect) {
		t.Errorf("redirect to ftp: %v, want ErrRedirect", err)
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("%d connections reached the private server", n)
	}
}
