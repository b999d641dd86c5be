package forwarded_test

import (
	"crypto/tls"
	"flag"
	"net/http"
	"net/netip"
	"testing"

	"github.com/ferry-dev/ferry/internal/forwarded"
)

func proxies(t *testing.T, cidrs ...string) forwarded.Proxies {
	t.Helper()
	var p forwarded.Proxies
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Var(&p, "trusted-proxy", "")
	var args []string
	for _, c := range cidrs {
		args = append(args, "--trusted-proxy", c)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFlagRefusesNonsense(t *testing.T) {
	for _, v := range []string{"", "10.0.0.0/33", "example.com", "10.0.0.1/8/2", "1.2.3"} {
		var p forwarded.Proxies
		if err := p.Set(v); err == nil {
			t.Errorf("Set(%q) = nil, want an error", v)
		}
	}
	p := proxies(t, "127.0.0.1", "10.1.2.3/8", "::1")
	if got := p.String(); got != "127.0.0.1/32,10.0.0.0/8,::1/128" {
		t.Errorf("String() = %q", got)
	}
}

func TestOf(t *testing.T) {
	trusted := proxies(t, "127.0.0.1/32", "10.0.0.0/8")
	type want struct {
		scheme string
		known  bool
		host   string
		client string
		proxy  bool
	}
	for name, c := range map[string]struct {
		p      forwarded.Proxies
		remote string
		tls    bool
		h      http.Header
		want   want
	}{
		"no proxy configured, headers ignored": {nil, "127.0.0.1:5000", false,
			http.Header{"X-Forwarded-Proto": {"https"}, "X-Forwarded-Host": {"evil.example"}, "X-Forwarded-For": {"1.2.3.4"}},
			want{"http", false, "ferry.test", "127.0.0.1", false}},
		"untrusted peer, headers ignored": {trusted, "192.168.1.9:5000", false,
			http.Header{"X-Forwarded-Proto": {"https"}, "X-Forwarded-Host": {"evil.example"}, "X-Forwarded-For": {"1.2.3.4"}},
			want{"http", false, "ferry.test", "192.168.1.9", false}},
		"direct TLS": {nil, "192.168.1.9:5000", true, nil, want{"https", true, "ferry.test", "192.168.1.9", false}},
		"trusted proxy": {trusted, "127.0.0.1:5000", false,
			http.Header{"X-Forwarded-Proto": {"https"}, "X-Forwarded-Host": {"ferry.example.com"}, "X-Forwarded-For": {"203.0.113.7"}},
			want{"https", true, "ferry.example.com", "203.0.113.7", true}},
		"trusted proxy, client prepended a lie": {trusted, "127.0.0.1:5000", false,
			http.Header{"X-Forwarded-Proto": {"http, https"}, "X-Forwarded-For": {"6.6.6.6, 203.0.113.7, 10.0.0.5"}},
			want{"https", true, "ferry.test", "203.0.113.7", true}},
		"trusted proxy says http": {trusted, "127.0.0.1:5000", false,
			http.Header{"X-Forwarded-Proto": {"http"}}, want{"http", true, "ferry.test", "127.0.0.1", true}},
		"trusted proxy, nonsense": {trusted, "127.0.0.1:5000", false,
			http.Header{"X-Forwarded-Proto": {"gopher"}, "X-Forwarded-Host": {"a/b@c"}, "X-Forwarded-For": {"not-an-ip"}},
			want{"http", false, "ferry.test", "127.0.0.1", true}},
		"mapped IPv4 peer": {trusted, "[::ffff:127.0.0.1]:5000", false,
			http.Header{"X-Forwarded-Proto": {"https"}}, want{"https", true, "ferry.test", "127.0.0.1", true}},
	} {
		t.Run(name, func(t *testing.T) {
			r, err := http.NewRequest(http.MethodGet, "http://ferry.test/v1/ui", nil)
			if err != nil {
				t.Fatal(err)
			}
			r.RemoteAddr = c.remote
			r.Header = c.h
			if r.Header == nil {
				r.Header = http.Header{}
			}
			if c.tls {
				r.TLS = &tls.ConnectionState{}
			}
			v := c.p.Of(r)
			got := want{v.Scheme, v.SchemeKnown, v.Host, v.Client.String(), v.Proxied}
			if got != c.want {
				t.Fatalf("Of = %+v, want %+v", got, c.want)
			}
			if v.Secure() != (c.want.scheme == "https") {
				t.Errorf("Secure() = %v", v.Secure())
			}
		})
	}
}

func TestSameOrigin(t *testing.T) {
	v := forwarded.View{Scheme: "https", SchemeKnown: true, Host: "ferry.example.com", Client: netip.MustParseAddr("1.2.3.4")}
	for origin, want := range map[string]bool{
		"https://ferry.example.com":      true,
		"https://FERRY.example.com":      true,
		"http://ferry.example.com":       false,
		"https://ferry.example.com:8443": false,
		"https://evil.example":           false,
		"https://ferry.example.com@evil": false,
		"null":                           false,
		"":                               false,
	} {
		if got := v.SameOrigin(origin); got != want {
			t.Errorf("SameOrigin(%q) = %v, want %v", origin, got, want)
		}
	}
	// Unknown scheme (a proxy nobody configured): the host decides.
	v.SchemeKnown = false
	v.Scheme = "http"
	if !v.SameOrigin("https://ferry.example.com") || v.SameOrigin("https://evil.example") {
		t.Error("with an unknown scheme the host must decide")
	}
}
