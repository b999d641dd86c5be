// Package netguard keeps HTTP requests that ferry makes on someone else's
// say-so (a prompt's attachment URL, the model's WebFetch) out of the
// operator's own network: server-side request forgery.
//
// What it guarantees, for every request of a Policy's Client:
//
//   - No proxy from the environment: a proxy would dial for us, past the
//     address check.
//   - Every host name is resolved first (Policy.Lookup), and only the
//     addresses PublicAddr accepts (Policy.Allow) are dialled; when none
//     is left the request fails with ErrForbiddenAddr before any
//     connection. The dialer checks the address it connects to once more
//     (net.Dialer.Control), whatever name the URL used.
//   - Every redirect is followed only within Policy.Schemes and
//     MaxRedirects (else ErrRedirect), and its host goes through the same
//     resolution and check as the first one's.
package netguard

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"time"
)

// ErrForbiddenAddr is a request to a host that resolved to no address a
// request may reach (loopback, private, link-local, …).
var ErrForbiddenAddr = errors.New("netguard: address not allowed")

// ErrRedirect is a redirect the policy does not follow: another scheme, or
// one too many.
var ErrRedirect = errors.New("netguard: redirect not followed")

// Policy says where a guarded client may connect. The zero Policy allows
// https only, to public addresses, with the system's resolver and TLS.
type Policy struct {
	// Allow decides whether a resolved address may be dialled; nil:
	// PublicAddr. Tests that serve on loopback widen it.
	Allow func(netip.Addr) bool
	// Lookup resolves a host name; nil: the system's resolver. Tests give
	// a fixed answer, so no test needs real DNS.
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	// TLS is the https configuration; nil: the system's.
	TLS *tls.Config
	// Schemes are the URL schemes requests and redirects may use, lower
	// case; nil: https only.
	Schemes []string
	// MaxRedirects bounds the redirects followed; 0: 3.
	MaxRedirects int
}

func (p Policy) allow(a netip.Addr) bool {
	if p.Allow != nil {
		return p.Allow(a.Unmap())
	}
	return PublicAddr(a)
}

func (p Policy) schemes() []string {
	if p.Schemes == nil {
		return []string{"https"}
	}
	return p.Schemes
}

// SchemeAllowed reports whether a URL of scheme may be fetched.
func (p Policy) SchemeAllowed(scheme string) bool {
	return slices.Contains(p.schemes(), strings.ToLower(scheme))
}

// Resolve returns the addresses of host (an IP literal or a name) that the
// policy lets a request dial, or ErrForbiddenAddr when there are none.
func (p Policy) Resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	host = strings.Trim(host, "[]")
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		lookup := p.Lookup
		if lookup == nil {
			lookup = func(ctx context.Context, h string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", h)
			}
		}
		addrs, err = lookup(ctx, host)
		if err != nil {
			return nil, fmt.Errorf("netguard: resolve %s: %w", host, err)
		}
	}
	var ok []netip.Addr
	for _, a := range addrs {
		if p.allow(a.Unmap()) {
			ok = append(ok, a.Unmap())
		}
	}
	if len(ok) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrForbiddenAddr, host)
	}
	return ok, nil
}

// DialContext resolves address's host with the policy and connects to the
// first allowed address that answers; the dialer checks it again.
func (p Policy) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("netguard: %w", err)
	}
	addrs, err := p.Resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	d := &net.Dialer{Timeout: 10 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !p.allow(ap.Addr().Unmap()) {
			return ErrForbiddenAddr
		}
		return nil
	}}
	var first error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("netguard: dial: %w", first)
}

// Client is an http.Client that keeps to the policy (see the package doc).
// The caller bounds each request's time with its context.
func (p Policy) Client() *http.Client {
	tr := &http.Transport{
		Proxy:                  nil, // a proxy would dial for us, past the address check
		DialContext:            p.DialContext,
		TLSClientConfig:        p.TLS,
		TLSHandshakeTimeout:    10 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		ForceAttemptHTTP2:      true,
	}
	maxRedirects := p.MaxRedirects
	if maxRedirects <= 0 {
		maxRedirects = 3
	}
	return &http.Client{Transport: tr, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) > maxRedirects || !p.SchemeAllowed(req.URL.Scheme) || req.URL.User != nil {
			return ErrRedirect
		}
		return nil
	}}
}

// nonPublic are ranges that are not reachable public unicast addresses
// beyond what netip's predicates cover.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64: could reach private IPv4
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("2002::/16"),       // 6to4: embeds any IPv4
	netip.MustParsePrefix("fec0::/10"),       // deprecated site-local
	netip.MustParsePrefix("100::/64"),        // discard
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("::ffff:0:0:0/96"), // IPv4-translated
}

// PublicAddr reports whether a may be dialled on someone else's say-so:
// not loopback, private, link-local, unspecified, multicast or another
// non-public range (an IPv4-mapped address is judged as its IPv4).
func PublicAddr(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}
