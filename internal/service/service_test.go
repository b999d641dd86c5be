package service_test

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/exectest"
	"github.com/ferry-dev/ferry/internal/service"
)

func spec(init service.Init, args ...string) service.Spec {
	return service.Spec{Init: init, Binary: "/opt/ferry bin/ferry", Args: args, Path: "/usr/bin:/bin", Home: "/home/ann", UID: 501}
}

// TestServiceSystemdUnit: the unit runs the given command with its flags
// quoted for systemd (a space, a %, a $ reach ferry as given), restarts on
// failure, reads the token from its environment file, and starts at login.
func TestServiceSystemdUnit(t *testing.T) {
	s := spec(service.Systemd, "connect", "--master", "https://m.example", "--workspace", "/home/ann/my code", "--label", "50% $HOME")
	s.Token = "ferry_client_secret"
	p, err := service.Make(s)
	if err != nil {
		t.Fatal(err)
	}
	if p.UnitPath != "/home/ann/.config/systemd/user/ferry.service" {
		t.Errorf("unit path %s", p.UnitPath)
	}
	unit := p.Files[0].Content
	for _, want := range []string{
		"\n[Service]\n",
		`ExecStart="/opt/ferry bin/ferry" connect --master https://m.example --workspace "/home/ann/my code" --label "50%% $$HOME"` + "\n",
		"\nEnvironmentFile=-/home/ann/.config/ferry/ferry.env\n",
		"\nEnvironment=PATH=/usr/bin:/bin\n",
		"\nRestart=on-failure\n",
		"\n[Install]\nWantedBy=default.target\n",
	} {
		if !strings.Contains(unit, want) {
			t.Errorf("unit lacks %q:\n%s", want, unit)
		}
	}
	if strings.Contains(unit, "ferry_client_secret") {
		t.Errorf("the token is in the unit:\n%s", unit)
	}
	if len(p.Files) != 2 || p.Files[1].Path != "/home/ann/.config/ferry/ferry.env" || p.Files[1].Mode != 0o600 ||
		!p.Files[1].Secret || p.Files[1].Content != "FERRY_TOKEN=ferry_client_secret\n" {
		t.Errorf("token file: %+v", p.Files[1:])
	}
	s.ConfigHome = "/tmp/xdg"
	s.Name = "work"
	if p, _ = service.Make(s); p.UnitPath != "/tmp/xdg/systemd/user/work.service" || p.SecretPath != "/tmp/xdg/ferry/work.env" {
		t.Errorf("with XDG_CONFIG_HOME and --name: %s %s", p.UnitPath, p.SecretPath)
	}
	if got := strings.Join(p.Enable[0], " "); got != "systemctl --user enable work.service" {
		t.Errorf("enable: %s", got)
	}
}

// TestServiceSystemdVerify: systemd's own checker accepts the unit.
func TestServiceSystemdVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed (apt-get install systemd)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "ferry")
	exectest.WriteScript(t, bin, "#!/bin/sh\n")
	s := spec(service.Systemd, "up", "--addr", "127.0.0.1:7860", "--workspace", dir+"/a b")
	s.Binary, s.Home = bin, dir
	p, err := service.Make(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", "--man=no", p.UnitPath).CombinedOutput()
	if err != nil || strings.Contains(string(out), p.Name+".service:") {
		t.Errorf("systemd-analyze verify: %v\n%s\n%s", err, out, p.Files[0].Content)
	}
}

// TestServiceLaunchdPlist: the agent runs the command, restarts it when it
// fails (KeepAlive on an unsuccessful exit), escapes XML, and gives a
// token as --token-file, never as an argument.
func TestServiceLaunchdPlist(t *testing.T) {
	s := spec(service.Launchd, "connect", "--master", "https://m.example/?a=1&b=<2>")
	s.Token = "ferry_client_secret"
	p, err := service.Make(s)
	if err != nil {
		t.Fatal(err)
	}
	if p.UnitPath != "/home/ann/Library/LaunchAgents/dev.ferry.plist" {
		t.Errorf("plist path %s", p.UnitPath)
	}
	plist := p.Files[0].Content
	tokenFile := "/home/ann/Library/Application Support/ferry/ferry.token"
	for _, want := range []string{
		"<key>Label</key>\n\t<string>dev.ferry</string>",
		"<string>/opt/ferry bin/ferry</string>\n\t\t<string>connect</string>\n\t\t<string>--token-file</string>\n\t\t<string>" + tokenFile + "</string>\n\t\t<string>--master</string>\n\t\t<string>https://m.example/?a=1&amp;b=&lt;2&gt;</string>\n\t</array>",
		"<key>KeepAlive</key>\n\t<dict>\n\t\t<key>SuccessfulExit</key>\n\t\t<false/>",
		"<key>RunAtLoad</key>\n\t<true/>",
		"<key>PATH</key>\n\t\t<string>/usr/bin:/bin</string>",
	} {
		if !strings.Contains(plist, want) {
			t.Errorf("plist lacks %q:\n%s", want, plist)
		}
	}
	if strings.Contains(plist, "secret") {
		t.Errorf("the token is in the plist")
	}
	if len(p.Files) != 2 || p.Files[1].Path != tokenFile || p.Files[1].Mode != 0o600 || p.Files[1].Content != "ferry_client_secret\n" {
		t.Errorf("token file: %+v", p.Files[1:])
	}
	if got := strings.Join(p.Enable[0], " "); got != "launchctl bootstrap gui/501 /home/ann/Library/LaunchAgents/dev.ferry.plist" {
		t.Errorf("enable: %s", got)
	}
	if plutil, err := exec.LookPath("plutil"); err == nil { // macOS
		f := filepath.Join(t.TempDir(), "x.plist")
		_ = os.WriteFile(f, []byte(plist), 0o600)
		if out, err := exec.Command(plutil, "-lint", f).CombinedOutput(); err != nil {
			t.Errorf("plutil -lint: %v %s", err, out)
		}
	}
}

// TestServiceRefuses: a command other than up, serve or connect, a token
// in the service's flags (every spelling), a token for a command that
// takes none, a bad name, a newline in an argument.
func TestServiceRefuses(t *testing.T) {
	for _, c := range []struct {
		s    service.Spec
		want error
	}{
		{spec(service.Systemd), service.ErrCommand},
		{spec(service.Systemd, "run", "hi"), service.ErrCommand},
		{spec(service.Systemd, "--addr", "x"), service.ErrCommand},
		{spec(service.Systemd, "connect", "--token", "t"), service.ErrTokenInArgs},
		{spec(service.Launchd, "connect", "-token=t"), service.ErrTokenInArgs},
		{spec(service.Systemd, "connect", "--master", "m", "--token=t"), service.ErrTokenInArgs},
		{spec(service.Systemd, "up", "--workspace", "a\nExecStartPre=/bin/evil"), service.ErrUnquotable},
		{func() service.Spec { s := spec(service.Systemd, "up"); s.Token = "t"; return s }(), service.ErrTokenCommand},
		{func() service.Spec { s := spec(service.Systemd, "up"); s.Name = "../x"; return s }(), service.ErrName},
		{func() service.Spec { s := spec(service.Systemd, "up"); s.Name = "a b"; return s }(), service.ErrName},
	} {
		if _, err := service.Make(c.s); !errors.Is(err, c.want) {
			t.Errorf("%v name %q: err %v, want %v", c.s.Args, c.s.Name, err, c.want)
		}
	}
	// After "--" the words are not ferry's flags (a script agent's own).
	if err := service.CheckArgs([]string{"up", "--agent", "script:x", "--", "--token"}); err != nil {
		t.Errorf("after --: %v", err)
	}
}

// TestServiceWriteRemove: Write creates the folders, the token file 0600
// in a 0700 folder even over an older, wider file; Remove deletes both.
func TestServiceWriteRemove(t *testing.T) {
	home := t.TempDir()
	s := spec(service.Systemd, "connect", "--master", "https://m")
	s.Home, s.Token = home, "ferry_client_x"
	p, err := service.Make(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(p.SecretPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.SecretPath, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.Write(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p.SecretPath)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(p.SecretPath); string(b) != "FERRY_TOKEN=ferry_client_x\n" {
		t.Errorf("token file holds %q", b)
	}
	if fi, _ := os.Stat(p.UnitPath); fi.Mode().Perm() != 0o644 {
		t.Errorf("unit mode %v", fi.Mode())
	}
	removed, err := p.Remove()
	if err != nil || len(removed) != 2 {
		t.Fatalf("removed %v: %v", removed, err)
	}
	for _, f := range []string{p.UnitPath, p.SecretPath} {
		if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still there: %v", f, err)
		}
	}
}
