package cli

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"

	"github.com/ferry-dev/ferry/internal/client"
)

// What the live commands say about credentials and exposure: where
// ferry connect takes its token from, and the warnings when a secret would
// be visible to other local users or cross a network in the clear.

// connectToken returns the client token of ferry connect: --token-file,
// else --token, else $FERRY_TOKEN. A token in argv still works but is
// visible to every local user (ps, /proc/PID/cmdline), so it is warned
// about; so is a token file others may read.
func connectToken(env Env, flagToken, tokenFile string) (string, error) {
	switch {
	case tokenFile != "" && flagToken != "":
		return "", errors.New("give the token with --token-file or --token, not both")
	case tokenFile != "":
		return readTokenFile(env, tokenFile)
	case flagToken != "":
		fmt.Fprintln(env.Stderr, "warning: a token given with --token is visible to every user of this machine (ps); "+
			"pass it in $FERRY_TOKEN or --token-file instead")
		return flagToken, nil
	}
	return strings.TrimSpace(env.Getenv("FERRY_TOKEN")), nil
}

// maxTokenFile bounds what --token-file reads: a token is 60 bytes.
const maxTokenFile = 4096

// readTokenFile reads a token file: trimmed, not empty, one line.
func readTokenFile(env Env, path string) (string, error) {
	return readSecretFile(env, "--token-file", path, "put the secret 'ferry token create' printed in it")
}

// readSecretFile reads the file of a secret flag (--token-file,
// --forge-token-file): trimmed, not empty, one line, with a warning when
// other users may read it. Errors name the flag and the file, never what
// it holds; emptyHint says what to put in an empty one.
func readSecretFile(env Env, flagName, path, emptyHint string) (string, error) {
	f, err := os.Open(path) //nolint:gosec // the user names the file
	if err != nil {
		return "", fmt.Errorf("%s: %w", flagName, err)
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("%s: %w", flagName, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s %s: not a regular file", flagName, path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		fmt.Fprintf(env.Stderr, "warning: %s %s can be read by other users (mode %04o): run chmod 600 %s\n", flagName, path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("%s: %w", flagName, err)
	}
	if len(b) > maxTokenFile {
		return "", fmt.Errorf("%s %s: too large to hold a token", flagName, path)
	}
	tok := strings.TrimSpace(string(b))
	switch {
	case tok == "":
		return "", fmt.Errorf("%s %s is empty: %s", flagName, path, emptyHint)
	case strings.ContainsAny(tok, " \t\r\n"):
		return "", fmt.Errorf("%s %s: want one token on one line", flagName, path)
	}
	return tok, nil
}

// isLoopbackHost reports whether host (a name or an address, without a
// port) is this machine only: "localhost" (and names under .localhost,
// which resolvers must keep local, RFC 6761) or a loopback address. Other
// names are not resolved: what they point to can change.
func isLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && ip.Unmap().IsLoopback()
}

// warnPlainListener warns when the master listens beyond loopback: ferry
// serves plain HTTP, so login links, tokens and the session cookie would
// cross the network in the clear unless a TLS-terminating proxy is in
// front.
func warnPlainListener(env Env, cmd string, addr net.Addr) {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || tcp.IP.IsLoopback() {
		return
	}
	fmt.Fprintf(env.Stderr, "WARNING: %s listens on %s, which is reachable from other machines, over plain HTTP (no TLS):\n"+
		"login links, tokens and session cookies can be read and replayed by anyone on the network path.\n"+
		"Listen on 127.0.0.1 and put a TLS-terminating proxy in front (see docs/security.md).\n", cmd, addr)
}

// warnPlainMaster warns when ferry connect would send its token over
// plain http:// or ws:// to a master that is not on this machine.
func warnPlainMaster(env Env, masterURL string) {
	u, err := url.Parse(masterURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "ws") || isLoopbackHost(u.Hostname()) {
		return
	}
	fmt.Fprintf(env.Stderr, "WARNING: --master %s uses %s:// to %s, which is not this machine: the client token and\n"+
		"everything the agents read and write cross the network unencrypted. Use https:// instead.\n", masterURL, u.Scheme, u.Hostname())
}

// refusalHint says what to do about a refusal the client stopped on, or ""
// for any other error.
func refusalHint(err error, machineID string) string {
	switch {
	case errors.Is(err, client.ErrUnauthorized):
		return "the master refused the client token (revoked, unknown or expired). Create a new one on the master with\n" +
			"'ferry token create --kind client' and pass it in $FERRY_TOKEN or --token-file."
	case errors.Is(err, client.ErrMachineTaken):
		return fmt.Sprintf("the master refused machine %s: it is registered with another client token that is still valid.\n"+
			"If that token's daemon is gone, revoke it on the master ('ferry token list', then 'ferry token revoke ID');\n"+
			"to register as a new machine instead, give this daemon its own --state directory.", machineID)
	}
	return ""
}
