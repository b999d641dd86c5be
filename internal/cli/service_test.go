package cli_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/exectest"
)

// serviceEnv is a home, a config folder and a PATH for ferry service; bin
// holds the fake systemctl/launchctl when a test puts one there.
type serviceEnv struct {
	home, config, bin, calls string
	vars                     map[string]string
}

func newServiceEnv(t *testing.T) *serviceEnv {
	t.Helper()
	d := t.TempDir()
	e := &serviceEnv{home: filepath.Join(d, "home"), config: filepath.Join(d, "xdg"), bin: filepath.Join(d, "bin"), calls: filepath.Join(d, "calls")}
	for _, dir := range []string{e.home, e.bin} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// PATH has only bin: no systemctl unless a test writes one.
	e.vars = map[string]string{"HOME": e.home, "XDG_CONFIG_HOME": e.config, "PATH": e.bin, "USER": "ann"}
	return e
}

// fakeManager puts a systemctl (or launchctl) on PATH that records its
// arguments, one call a line, and exits with code.
func (e *serviceEnv) fakeManager(t *testing.T, name string, code int) {
	t.Helper()
	script := "#!/bin/sh\necho \"$*\" >> '" + e.calls + "'\nexit " + string(rune('0'+code)) + "\n"
	exectest.WriteScript(t, filepath.Join(e.bin, name), script)
}

func (e *serviceEnv) callLog(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(e.calls)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

// files lists what is under the test's home and config folders.
func (e *serviceEnv) files(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, root := range []string{e.home, e.config} {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				out = append(out, p)
			}
			return nil
		})
	}
	return out
}

// TestServiceInstallDryRun: --dry-run prints each format's file and the
// commands that would enable it, shows the token file by name only, and
// writes nothing.
func TestServiceInstallDryRun(t *testing.T) {
	t.Parallel()
	e := newServiceEnv(t)
	e.vars["FERRY_TOKEN"] = "ferry_client_sekrit"
	code, out, errOut := runEnv(t, e.vars, "service", "install", "--dry-run", "--init", "systemd", "--", "connect", "--master", "https://m.example")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"nothing written",
		"== " + e.config + "/systemd/user/ferry.service (mode 0644)\n",
		" connect --master https://m.example\n",
		"\nRestart=on-failure\n",
		"EnvironmentFile=-" + e.config + "/ferry/ferry.env\n",
		"== " + e.config + "/ferry/ferry.env (mode 0600): the token, not shown\n",
		"\n    systemctl --user daemon-reload\n    systemctl --user enable ferry.service\n    systemctl --user restart ferry.service\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("systemd dry run lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = runEnv(t, e.vars, "service", "install", "--dry-run", "--init", "launchd", "--name", "work", "up", "--addr", "127.0.0.1:7861")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"== " + e.home + "/Library/LaunchAgents/dev.ferry.work.plist (mode 0644)\n",
		"<string>up</string>\n\t\t<string>--addr</string>\n\t\t<string>127.0.0.1:7861</string>",
		"<key>SuccessfulExit</key>",
		"launchctl bootstrap gui/",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("launchd dry run lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out+errOut, "sekrit") {
		t.Error("a dry run printed the token")
	}
	if f := e.files(t); len(f) != 0 {
		t.Errorf("a dry run wrote %v", f)
	}
}

// TestServiceInstallNoEnable installs the systemd unit into a temporary
// XDG_CONFIG_HOME without enabling it: the unit and the 0600 token file
// are there, nothing was run, and the output says what to run by hand.
func TestServiceInstallNoEnable(t *testing.T) {
	t.Parallel()
	e := newServiceEnv(t)
	e.fakeManager(t, "systemctl", 0)
	e.vars["FERRY_TOKEN"] = "ferry_client_sekrit"
	code, out, errOut := runEnv(t, e.vars, "service", "install", "--no-enable", "--init", "systemd", "connect", "--master", "https://m.example")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	unit := filepath.Join(e.config, "systemd", "user", "ferry.service")
	b, err := os.ReadFile(unit)
	if err != nil || !strings.Contains(string(b), " connect --master https://m.example\n") || strings.Contains(string(b), "sekrit") {
		t.Fatalf("unit: %v\n%s", err, b)
	}
	envFile := filepath.Join(e.config, "ferry", "ferry.env")
	fi, err := os.Stat(envFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(envFile); string(b) != "FERRY_TOKEN=ferry_client_sekrit\n" {
		t.Errorf("token file holds %q", b)
	}
	if !strings.Contains(out, "not enabled (--no-enable)") || !strings.Contains(out, "systemctl --user enable ferry.service") {
		t.Errorf("no by-hand commands:\n%s", out)
	}
	if calls := e.callLog(t); calls != "" {
		t.Errorf("--no-enable ran systemctl: %s", calls)
	}
}

// TestServiceInstallEnables: with systemctl on PATH, install writes the
// unit and reloads, enables and (re)starts it; uninstall stops it,
// removes both files and reloads.
func TestServiceInstallEnables(t *testing.T) {
	t.Parallel()
	e := newServiceEnv(t)
	e.fakeManager(t, "systemctl", 0)
	code, out, errOut := runEnv(t, e.vars, "service", "install", "--init", "systemd", "--name", "lab", "up", "--addr", "127.0.0.1:7862")
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	want := "--user daemon-reload\n--user enable lab.service\n--user restart lab.service\n"
	if got := e.callLog(t); got != want {
		t.Errorf("systemctl calls:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(out, "loginctl enable-linger ann") {
		t.Errorf("install does not say how to start at boot:\n%s", out)
	}
	code, out, errOut = runEnv(t, e.vars, "service", "status", "--init", "systemd", "--name", "lab")
	if code != 0 || !strings.Contains(e.callLog(t), "--user status --no-pager lab.service\n") {
		t.Errorf("status: exit %d %s %s", code, out, errOut)
	}
	code, out, errOut = runEnv(t, e.vars, "service", "uninstall", "--init", "systemd", "--name", "lab")
	if code != 0 || !strings.Contains(out, "removed "+filepath.Join(e.config, "systemd", "user", "lab.service")) {
		t.Fatalf("uninstall: exit %d %s %s", code, out, errOut)
	}
	if !strings.HasSuffix(e.callLog(t), "--user disable --now lab.service\n--user daemon-reload\n") {
		t.Errorf("uninstall calls:\n%s", e.callLog(t))
	}
	if f := e.files(t); len(f) != 0 {
		t.Errorf("left behind: %v", f)
	}
}

// TestServiceWithoutSystemctl: with no systemctl on PATH, install refuses
// before writing (naming --no-enable and the commands), status and
// uninstall say so clearly and remove nothing.
func TestServiceWithoutSystemctl(t *testing.T) {
	t.Parallel()
	e := newServiceEnv(t)
	code, _, errOut := runEnv(t, e.vars, "service", "install", "--init", "systemd", "up")
	if code != 1 || !strings.Contains(errOut, "systemctl is not on PATH") || !strings.Contains(errOut, "nothing written") ||
		!strings.Contains(errOut, "--no-enable") || !strings.Contains(errOut, "systemctl --user enable ferry.service") {
		t.Errorf("install: exit %d: %s", code, errOut)
	}
	if f := e.files(t); len(f) != 0 {
		t.Errorf("a refused install wrote %v", f)
	}
	code, _, errOut = runEnv(t, e.vars, "service", "status", "--init", "systemd")
	if code != 1 || !strings.Contains(errOut, "no service ferry is installed") {
		t.Errorf("status before install: exit %d: %s", code, errOut)
	}
	if code, _, errOut = runEnv(t, e.vars, "service", "install", "--no-enable", "--init", "systemd", "up"); code != 0 {
		t.Fatalf("install --no-enable: %s", errOut)
	}
	code, out, errOut := runEnv(t, e.vars, "service", "status", "--init", "systemd")
	if code != 1 || !strings.Contains(out, "installed: ") || !strings.Contains(errOut, "systemctl is not on PATH, so ferry cannot ask whether ferry runs") {
		t.Errorf("status: exit %d: %s %s", code, out, errOut)
	}
	before := e.files(t)
	code, _, errOut = runEnv(t, e.vars, "service", "uninstall", "--init", "systemd")
	if code != 1 || !strings.Contains(errOut, "systemctl is not on PATH") || !strings.Contains(errOut, "nothing removed") ||
		!strings.Contains(errOut, "systemctl --user disable --now ferry.service") || !strings.Contains(errOut, "rm -f ") {
		t.Errorf("uninstall: exit %d: %s", code, errOut)
	}
	if after := e.files(t); len(after) != len(before) {
		t.Errorf("a refused uninstall removed files: %v -> %v", before, after)
	}
}

// TestServiceInstallRefusesTokens: a token on the service's command line,
// in any spelling, is refused with the way to give it instead; connect
// without any token is refused; nothing is written.
func TestServiceInstallRefusesTokens(t *testing.T) {
	t.Parallel()
	e := newServiceEnv(t)
	e.fakeManager(t, "systemctl", 0)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"connect", "--master", "https://m", "--token", "ferry_client_x"}, "a token on the service's command line is visible to every local user"},
		{[]string{"--", "connect", "-token=ferry_client_x"}, "[service_token_in_args]"},
		{[]string{"connect", "--master", "https://m"}, "connect needs its client token"},
		{[]string{"--token", "ferry_client_x", "up"}, "only ferry connect takes a token"},
		{[]string{"run", "hi"}, "the service runs ferry up, serve or connect"},
		{[]string{}, "say which"},
		{[]string{"--name", "../x", "up"}, "[service_name]"},
	} {
		args := append([]string{"service", "install", "--init", "systemd"}, c.args...)
		code, out, errOut := runEnv(t, e.vars, args...)
		if code != 2 || !strings.Contains(errOut, c.want) || strings.Contains(out+errOut, "ferry_client_x") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %q", c.args, code, out, errOut, c.want)
		}
	}
	if f := e.files(t); len(f) != 0 {
		t.Errorf("refused installs wrote %v", f)
	}
	if calls := e.callLog(t); calls != "" {
		t.Errorf("refused installs ran systemctl: %s", calls)
	}
}
