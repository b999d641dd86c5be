package cli

import (
	"bytes"
	"net"
	"strings"
	"testing"
)

func TestIsLoopbackHost(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST.": true, "app.localhost": true,
		"127.0.0.1": true, "127.1.2.3": true, "::1": true, "[::1]": true, "::ffff:127.0.0.1": true,
		"": false, "0.0.0.0": false, "::": false, "10.0.0.1": false, "192.0.2.1": false,
		"example.com": false, "localhost.example.com": false, "127.0.0.1.nip.io": false,
	} {
		if got := isLoopbackHost(host); got != want {
			t.Errorf("isLoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}

// TestPlainMasterWarning: connect warns when its token would travel in
// the clear to another machine, and only then (issue 16 item 9).
func TestPlainMasterWarning(t *testing.T) {
	t.Parallel()
	for url, warn := range map[string]bool{
		"http://192.0.2.1:7860":      true,
		"ws://ferry.example.com":     true,
		"HTTP://ferry.example.com/x": true,
		"http://[2001:db8::1]:7860":  true,
		"http://127.0.0.1:7860":      false,
		"http://localhost:7860":      false,
		"ws://[::1]:7860":            false,
		"https://ferry.example.com":  false,
		"wss://192.0.2.1":            false,
	} {
		var b bytes.Buffer
		warnPlainMaster(Env{Stderr: &b}, url)
		if got := strings.Contains(b.String(), "WARNING") && strings.Contains(b.String(), "https://"); got != warn {
			t.Errorf("--master %s: warning %q, want one: %v", url, b.String(), warn)
		}
	}
}

// TestPlainListenerWarning: serve and up warn when they listen beyond
// loopback (ferry itself speaks plain HTTP), and only then.
func TestPlainListenerWarning(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		ip   net.IP
		warn bool
	}{
		{net.IPv4zero, true}, {net.IPv6unspecified, true}, {net.ParseIP("192.0.2.1"), true},
		{net.ParseIP("127.0.0.1"), false}, {net.IPv6loopback, false},
	} {
		var b bytes.Buffer
		warnPlainListener(Env{Stderr: &b}, "ferry serve", &net.TCPAddr{IP: c.ip, Port: 7860})
		if got := strings.Contains(b.String(), "WARNING") && strings.Contains(b.String(), "TLS"); got != c.warn {
			t.Errorf("listening on %v: warning %q, want one: %v", c.ip, b.String(), c.warn)
		}
	}
}
