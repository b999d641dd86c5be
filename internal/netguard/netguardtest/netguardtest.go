// Package netguardtest gives tests of code behind netguard a resolver
// with a fixed table (no real DNS: names that "resolve" to private
// addresses without leaving the machine) and a loopback server that
// counts the connections it got, so a test can prove a refusal came
// before any connection.
package netguardtest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
)

// Lookup is a netguard.Policy Lookup answering from hosts (name →
// address); any other name is not found.
func Lookup(hosts map[string]string) func(context.Context, string) ([]netip.Addr, error) {
	table := make(map[string]netip.Addr, len(hosts))
	for h, a := range hosts {
		table[h] = netip.MustParseAddr(a)
	}
	return func(_ context.Context, host string) ([]netip.Addr, error) {
		if a, ok := table[host]; ok {
			return []netip.Addr{a}, nil
		}
		return nil, fmt.Errorf("lookup %s: no such host", host)
	}
}

// CountingServer is a loopback test server for h that counts the
// connections reaching it; it is closed with t.
func CountingServer(t testing.TB, h http.Handler) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			n.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &n
}
