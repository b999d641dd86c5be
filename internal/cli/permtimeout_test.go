package cli_test

import (
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/cli"
	"github.com/ferry-dev/ferry/protocol"
)

// TestPermissionTimeoutFlag: --permission-timeout on up and connect refuses
// what it cannot mean, and the value given reaches the client: a new
// session reports it as the timeout in force.
func TestPermissionTimeoutFlag(t *testing.T) {
	t.Parallel()
	for _, cmd := range [][]string{{"up"}, {"connect", "--master", "http://127.0.0.1:1", "--token", "t"}} {
		for _, c := range []struct{ val, want string }{
			{"-1s", "must be 0 (wait forever) or positive"},
			{"500ms", "must be at least 1s"},
			{"200h", "at most 168h0m0s"},
			{"soon", `invalid value "soon" for flag -permission-timeout`},
		} {
			args := append(append([]string{}, cmd...), "--permission-timeout", c.val)
			code, _, errOut := run(args...)
			if code != cli.ExitUsage || !strings.Contains(errOut, c.want) {
				t.Errorf("ferry %s: exit %d, stderr %q; want usage error with %q", strings.Join(args, " "), code, errOut, c.want)
			}
		}
	}
	if _, _, errOut := run("help", "up"); !strings.Contains(errOut, "-permission-timeout DURATION") || !strings.Contains(errOut, "(default 10m0s)") {
		t.Errorf("ferry help up does not show the flag and its default: %q", errOut)
	}

	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, 600000},
		{[]string{"--permission-timeout", "90s"}, 90000},
		{[]string{"--permission-timeout", "0"}, 0},
	} {
		u := startUp(t, nil, append([]string{"--workspace", t.TempDir(), "--agent", "echo"}, tc.args...)...)
		c := u.dial(t, u.login(t))
		m := c.machine()
		r := c.request(protocol.New(protocol.TypeSessionStart, &protocol.SessionStart{MachineID: m.ID, WorkspaceID: m.Workspaces[0].ID, Adapter: "echo"}))
		ans, ok := r.Payload.(*protocol.SessionAnswer)
		if !ok {
			t.Fatalf("session start answered %s: %+v", r.Type, r.Payload)
		}
		if st := ans.Session.Settings; st == nil || *st != (protocol.Settings{PermissionTimeoutMS: tc.want}) {
			t.Errorf("ferry up %v: session settings %+v, want permission_timeout_ms %d", tc.args, st, tc.want)
		}
	}
}
