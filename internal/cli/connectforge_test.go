package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/cli"
)

// TestConnectForgeFlags: ferry connect takes the forge token of isolated
// sessions from --forge-token-file (refused, naming the flag, when the
// file is unusable) or $FERRY_FORGE_TOKEN, and --forge-host KIND=HOST
// (a bad one is a usage error); the token is never printed.
func TestConnectForgeFlags(t *testing.T) {
	t.Parallel()
	url, _ := refusingMaster(t)
	const secret = "ghp_forgeSecret0123456789"
	env := map[string]string{"FERRY_TOKEN": "ferry_client_env", cli.ForgeTokenVar: secret}
	code, errOut := connect(t, env, "--master", url)
	if code != 1 || strings.Contains(errOut, secret) {
		t.Fatalf("with $%s: exit %d, stderr %q", cli.ForgeTokenVar, code, errOut)
	}
	code, errOut = connect(t, env, "--master", url, "--forge-token-file", tokenFile(t, secret+"\n", 0o600), "--forge-host", "github=git.example.com")
	if code != 1 || strings.Contains(errOut, secret) {
		t.Fatalf("with --forge-token-file: exit %d, stderr %q", code, errOut)
	}
	code, errOut = connect(t, env, "--master", url, "--forge-token-file", filepath.Join(t.TempDir(), "nope"))
	if code == 0 || !strings.Contains(errOut, "--forge-token-file") || !strings.Contains(errOut, "no such file") {
		t.Fatalf("a missing token file: exit %d, stderr %q", code, errOut)
	}
	code, errOut = connect(t, env, "--master", url, "--forge-host", "svn=example.com")
	if code != cli.ExitUsage || !strings.Contains(errOut, "forge kind") {
		t.Fatalf("a bad --forge-host: exit %d, stderr %q", code, errOut)
	}
}
