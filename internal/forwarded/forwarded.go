// Package forwarded decides what a request looked like to the browser when
// it came through a TLS-terminating reverse proxy: the scheme, the host and
// the client's address.
//
// Guarantees:
//
//   - X-Forwarded-Proto, X-Forwarded-Host and X-Forwarded-For are believed
//     only from a peer whose address (RemoteAddr) lies in one of the
//     configured prefixes. From any other peer, and with no prefix
//     configured, they are ignored: the request's own TLS state, Host and
//     RemoteAddr rule.
//   - Of a list-valued header, the last entry counts (the one the trusted
//     peer itself set or appended); a client cannot prepend its way in.
//     X-Forwarded-For is walked from the right past trusted proxies, so the
//     client address is the first one no trusted proxy vouches for.
//   - A malformed forwarded value is ignored, never half-used.
package forwarded

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Proxies are the address prefixes of trusted reverse proxies. As a
// flag.Value it is repeatable and takes a CIDR or a single address.
type Proxies []netip.Prefix

// String implements flag.Value.
func (p *Proxies) String() string {
	if p == nil {
		return ""
	}
	s := make([]string, len(*p))
	for i, pr := range *p {
		s[i] = pr.String()
	}
	return strings.Join(s, ",")
}

// Set implements flag.Value: a CIDR ("10.0.0.0/8") or an address ("::1").
func (p *Proxies) Set(v string) error {
	pr, err := ParsePrefix(v)
	if err != nil {
		return err
	}
	*p = append(*p, pr)
	return nil
}

// ParsePrefix parses a CIDR or a single address (a /32 or /128).
func ParsePrefix(v string) (netip.Prefix, error) {
	v = strings.TrimSpace(v)
	if strings.Contains(v, "/") {
		pr, err := netip.ParsePrefix(v)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("forwarded: %q is not a CIDR prefix like 127.0.0.1/32: %w", v, err)
		}
		return pr.Masked(), nil
	}
	a, err := netip.ParseAddr(v)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("forwarded: %q is neither an address nor a CIDR prefix: %w", v, err)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// trusts reports whether a lies in one of the prefixes.
func (p Proxies) trusts(a netip.Addr) bool {
	a = a.Unmap()
	for _, pr := range p {
		if pr.Contains(a) {
			return true
		}
	}
	return false
}

// View is a request as the browser made it.
type View struct {
	// Scheme is "https" or "http"; SchemeKnown is false when neither TLS
	// nor a trusted proxy says which (a proxy nobody configured may have
	// terminated TLS).
	Scheme      string
	SchemeKnown bool
	// Host is the host (and port) the browser addressed.
	Host string
	// Client is the client's address; invalid when RemoteAddr is not an
	// IP address (a test's pipe, say).
	Client netip.Addr
	// Proxied is true when the request came from a trusted proxy.
	Proxied bool
}

// Secure reports whether the browser reached us over HTTPS.
func (v View) Secure() bool { return v.Scheme == "https" }

// Origin is the request's origin as the browser names it in the Origin
// header: scheme://host.
func (v View) Origin() string { return v.Scheme + "://" + v.Host }

// SameOrigin reports whether origin (an Origin header's value) is the
// request's own: the host always, the scheme too when it is known.
func (v View) SameOrigin(origin string) bool {
	scheme, host, ok := strings.Cut(origin, "://")
	if !ok || host == "" || strings.ContainsAny(host, "/?#@") {
		return false
	}
	if !strings.EqualFold(host, v.Host) {
		return false
	}
	return !v.SchemeKnown || strings.EqualFold(scheme, v.Scheme)
}

// Of returns how the browser made r, believing forwarded headers only from
// the proxies p.
func (p Proxies) Of(r *http.Request) View {
	v := View{Scheme: "http", Host: r.Host}
	if r.TLS != nil {
		v.Scheme, v.SchemeKnown = "https", true
	}
	peer := remoteAddr(r.RemoteAddr)
	v.Client = peer
	if !peer.IsValid() || !p.trusts(peer) {
		return v
	}
	v.Proxied = true
	switch strings.ToLower(last(r.Header.Values("X-Forwarded-Proto"))) {
	case "https":
		v.Scheme, v.SchemeKnown = "https", true
	case "http":
		v.Scheme, v.SchemeKnown = "http", true
	}
	if h := last(r.Header.Values("X-Forwarded-Host")); validHost(h) {
		v.Host = h
	}
	// Right to left: every hop a trusted proxy added is skipped; the first
	// address no trusted proxy vouches for is the client.
	hops := splitList(r.Header.Values("X-Forwarded-For"))
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		v.Client = a.Unmap()
		if !p.trusts(a) {
			break
		}
	}
	return v
}

// remoteAddr parses RemoteAddr ("ip:port" or a bare IP).
func remoteAddr(s string) netip.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap()
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap()
	}
	return netip.Addr{}
}

// last returns the last entry of a possibly repeated, comma-separated header.
func last(values []string) string {
	l := splitList(values)
	if len(l) == 0 {
		return ""
	}
	return strings.TrimSpace(l[len(l)-1])
}

func splitList(values []string) []string {
	var out []string
	for _, v := range values {
		for e := range strings.SplitSeq(v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				out = append(out, e)
			}
		}
	}
	return out
}

// validHost accepts a host[:port] with no path, user info or spaces.
func validHost(h string) bool {
	if h == "" || len(h) > 255 || strings.ContainsAny(h, "/?#@\\ \t") {
		return false
	}
	host := h
	if hh, port, err := net.SplitHostPort(h); err == nil {
		if port == "" {
			return false
		}
		host = hh
	}
	return host != ""
}
