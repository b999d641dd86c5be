package attachment

import (
	"crypto/tls"
	"net/netip"
)

// SetDialPolicy replaces the address check and TLS configuration of the
// fetcher's https client, for tests that serve https on loopback.
func (f *Fetcher) SetDialPolicy(allow func(netip.Addr) bool, cfg *tls.Config) {
	f.allowAddr, f.tlsConfig = allow, cfg
}
