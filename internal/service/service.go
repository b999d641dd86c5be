// Package service makes ferry survive a reboot: it renders a systemd user
// unit (Linux) or a launchd agent (macOS) that runs `ferry up`, `serve` or
// `connect` and restarts it when it fails, and says which files to write
// and which commands enable, query and remove it.
//
// Guarantees: rendering is pure (text/template, any OS can render either
// format, so both are tested everywhere); the service's command is one of
// up, serve and connect, and a token is never on its command line (a
// --token flag in the arguments is refused; a token given to install goes
// to a file only its owner can read (mode 0600; a folder it creates 0700) which the
// unit reads); every argument is quoted for the format, so a space, a quote
// or a % in a flag reaches ferry as it was given.
package service

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"text/template"

	"github.com/ferry-dev/ferry/internal/lazyregexp"
)

// Init names a service manager.
type Init string

// The service managers ferry installs into.
const (
	Systemd Init = "systemd" // Linux: a user unit, systemctl --user
	Launchd Init = "launchd" // macOS: a LaunchAgent, launchctl
)

// DefaultName is the service's name unless --name says otherwise.
const DefaultName = "ferry"

// Errors a caller checks with errors.Is; each message carries its code.
var (
	ErrCommand      = errors.New("the service runs ferry up, serve or connect [service_command]")
	ErrTokenInArgs  = errors.New("a token on the service's command line is visible to every local user (ps); give it to install with --token or $FERRY_TOKEN, which writes it to a 0600 file the service reads [service_token_in_args]")
	ErrName         = errors.New("a service name is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit [service_name]")
	ErrTokenCommand = errors.New("only ferry connect takes a token [service_token_command]")
	ErrUnquotable   = errors.New("an argument with a newline or NUL cannot be written into a service file [service_arg]")
)

// Spec is what to install.
type Spec struct {
	Init Init
	Name string // DefaultName when empty
	// Binary is the absolute path of the ferry to run.
	Binary string
	// Args are ferry's arguments: up, serve or connect, then its flags.
	Args []string
	// Token is connect's client token, written to a 0600 file ("": none).
	Token string
	// Path is the PATH the service runs with: a user service does not get
	// the login shell's, and ferry up looks agents (claude) up on it.
	Path string
	// Home is the user's home folder; ConfigHome is $XDG_CONFIG_HOME
	// (Home/.config when empty).
	Home, ConfigHome string
	// UID is the user's id, for launchctl's gui/UID domain.
	UID int
}

// File is one file a plan writes.
type File struct {
	Path    string
	Mode    fs.FileMode
	Content string
	// Secret files are shown by name only, never with their content.
	Secret bool
}

// Plan is what installing, querying and removing one service takes.
type Plan struct {
	Init     Init
	Name     string
	UnitPath string // the unit or plist
	// SecretPath is the file the service reads its token from (the
	// environment file for systemd), whether or not this plan writes it.
	SecretPath string
	Files      []File // the unit first
	// Enable, Status and Disable are the commands that start the service
	// now and at every login, show it, and stop and disable it. Reload
	// makes the manager re-read its files (systemd) after a write or a
	// removal; empty where none is needed.
	Enable, Disable, Reload [][]string
	// Unload is run before Enable, its failure ignored: it unloads a
	// service loaded before so the new file is read.
	Unload [][]string
	Status []string
	// Command is the ferry command the service runs (up, serve, connect).
	Command string
}

var nameRE = lazyregexp.New(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// CheckArgs checks the service's ferry arguments: a known command first,
// and no --token anywhere (a token file is fine).
func CheckArgs(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: say which, e.g. ferry service install -- up --addr 127.0.0.1:7860", ErrCommand)
	}
	switch args[0] {
	case "up", "serve", "connect":
	default:
		return fmt.Errorf("%w, not %q", ErrCommand, args[0])
	}
	for _, a := range args[1:] {
		if a == "--" {
			break // what follows is not ferry's flags
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && name == "token" {
			return fmt.Errorf("--token: %w", ErrTokenInArgs) // not a: it may hold the token
		}
		if strings.ContainsAny(a, "\n\x00") {
			return fmt.Errorf("%q: %w", a, ErrUnquotable)
		}
	}
	return nil
}

// Make checks s and returns its plan: nothing is written.
func Make(s Spec) (*Plan, error) {
	if s.Name == "" {
		s.Name = DefaultName
	}
	if !nameRE.MatchString(s.Name) {
		return nil, fmt.Errorf("--name %q: %w", s.Name, ErrName)
	}
	if err := CheckArgs(s.Args); err != nil {
		return nil, err
	}
	if strings.ContainsAny(s.Binary+s.Path+s.Home+s.ConfigHome, "\n\x00") {
		return nil, ErrUnquotable
	}
	if s.Token != "" && s.Args[0] != "connect" {
		return nil, fmt.Errorf("%w, not ferry %s", ErrTokenCommand, s.Args[0])
	}
	if strings.ContainsAny(s.Token, " \t\r\n\x00\"'\\$%") {
		return nil, errors.New("the token has characters no ferry token has: check what you pasted [service_token]")
	}
	if !filepath.IsAbs(s.Binary) || !filepath.IsAbs(s.Home) {
		return nil, fmt.Errorf("the ferry binary %q and the home folder %q must be absolute paths", s.Binary, s.Home)
	}
	switch s.Init {
	case Systemd:
		return systemdPlan(s)
	case Launchd:
		return launchdPlan(s)
	}
	return nil, fmt.Errorf("unknown service manager %q: want systemd or launchd", s.Init)
}

// ForOS is the service manager of a GOOS, "" where ferry has none.
func ForOS(goos string) Init {
	switch goos {
	case "linux":
		return Systemd
	case "darwin":
		return Launchd
	}
	return ""
}

// systemdTmpl is parsed on first use, not at every ferry start (issue 37).
var systemdTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("unit").Parse(`# Written by 'ferry service install'; remove with 'ferry service uninstall'.
[Unit]
Description=ferry {{.Command}} ({{.Name}})
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
ExecStart={{.ExecStart}}
# Variables for ferry (FERRY_TOKEN, a model provider's key): one NAME=value
# a line, in a file only you can read. The leading '-' lets it be absent.
EnvironmentFile=-{{.EnvFile}}
Environment={{.PathEnv}}
Restart=on-failure
RestartSec=5

[Install]
WantedBy=default.target
`))
})

func systemdPlan(s Spec) (*Plan, error) {
	config := s.ConfigHome
	if config == "" {
		config = filepath.Join(s.Home, ".config")
	}
	unit := filepath.Join(config, "systemd", "user", s.Name+".service")
	envFile := filepath.Join(config, "ferry", s.Name+".env")
	exec := make([]string, 0, len(s.Args)+1)
	for _, a := range append([]string{s.Binary}, s.Args...) {
		exec = append(exec, systemdQuote(a))
	}
	var b bytes.Buffer
	err := systemdTmpl().Execute(&b, map[string]string{
		"Command":   s.Args[0],
		"Name":      s.Name,
		"ExecStart": strings.Join(exec, " "),
		"EnvFile":   systemdEscape(envFile),
		"PathEnv":   systemdQuote("PATH=" + s.Path),
	})
	if err != nil {
		return nil, fmt.Errorf("render the unit: %w", err)
	}
	p := &Plan{Init: Systemd, Command: s.Args[0], Name: s.Name, UnitPath: unit, SecretPath: envFile, Files: []File{{Path: unit, Mode: 0o644, Content: b.String()}}}
	if s.Token != "" {
		p.Files = append(p.Files, File{Path: envFile, Mode: 0o600, Secret: true, Content: "FERRY_TOKEN=" + s.Token + "\n"})
	}
	svc := s.Name + ".service"
	p.Reload = [][]string{{"systemctl", "--user", "daemon-reload"}}
	// enable, then restart: a reinstall's new flags take effect now.
	p.Enable = [][]string{{"systemctl", "--user", "enable", svc}, {"systemctl", "--user", "restart", svc}}
	p.Disable = [][]string{{"systemctl", "--user", "disable", "--now", svc}}
	p.Status = []string{"systemctl", "--user", "status", "--no-pager", svc}
	return p, nil
}

// systemdEscape escapes what systemd expands in a value: % specifiers.
func systemdEscape(s string) string { return strings.ReplaceAll(s, "%", "%%") }

// systemdQuote is one word of a systemd command line: double-quoted (with
// C escapes) when it holds a space, a quote or a backslash, and with %
// and $ doubled so systemd expands neither specifiers nor variables.
func systemdQuote(s string) string {
	s = strings.ReplaceAll(systemdEscape(s), "$", "$$")
	if s != "" && !strings.ContainsAny(s, " \t\"'\\;") {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}

// launchdTmpl is parsed on first use, not at every ferry start.
var launchdTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("plist").Funcs(template.FuncMap{"x": xmlEscape}).Parse(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- Written by 'ferry service install'; remove with 'ferry service uninstall'. -->
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>{{x .Label}}</string>
	<key>ProgramArguments</key>
	<array>
{{- range .Args}}
		<string>{{x .}}</string>
{{- end}}
	</array>
	<key>EnvironmentVariables</key>
	<dict>
		<key>PATH</key>
		<string>{{x .Path}}</string>
	</dict>
	<key>RunAtLoad</key>
	<true/>
	<!-- Restart when ferry fails, not when it was stopped cleanly. -->
	<key>KeepAlive</key>
	<dict>
		<key>SuccessfulExit</key>
		<false/>
	</dict>
	<key>ThrottleInterval</key>
	<integer>5</integer>
	<key>StandardOutPath</key>
	<string>{{x .Log}}</string>
	<key>StandardErrorPath</key>
	<string>{{x .Log}}</string>
</dict>
</plist>
`))
})

// Label is the launchd label of a service name: dev.ferry for the default.
func Label(name string) string {
	if name == DefaultName {
		return "dev.ferry"
	}
	return "dev.ferry." + name
}

func launchdPlan(s Spec) (*Plan, error) {
	label := Label(s.Name)
	plist := filepath.Join(s.Home, "Library", "LaunchAgents", label+".plist")
	args := append([]string{s.Binary}, s.Args...)
	tokenFile := filepath.Join(s.Home, "Library", "Application Support", "ferry", s.Name+".token")
	var files []File
	if s.Token != "" {
		// launchd has no environment file: connect reads --token-file.
		args = append([]string{s.Binary, s.Args[0], "--token-file", tokenFile}, s.Args[1:]...)
		files = append(files, File{Path: tokenFile, Mode: 0o600, Secret: true, Content: s.Token + "\n"})
	}
	var b bytes.Buffer
	err := launchdTmpl().Execute(&b, map[string]any{
		"Label": label,
		"Args":  args,
		"Path":  s.Path,
		"Log":   filepath.Join(s.Home, "Library", "Logs", label+".log"),
	})
	if err != nil {
		return nil, fmt.Errorf("render the plist: %w", err)
	}
	domain := "gui/" + strconv.Itoa(s.UID)
	return &Plan{
		Init: Launchd, Command: s.Args[0], Name: s.Name, UnitPath: plist, SecretPath: tokenFile,
		Files:   append([]File{{Path: plist, Mode: 0o644, Content: b.String()}}, files...),
		Unload:  [][]string{{"launchctl", "bootout", domain + "/" + label}},
		Enable:  [][]string{{"launchctl", "bootstrap", domain, plist}},
		Disable: [][]string{{"launchctl", "bootout", domain + "/" + label}},
		Status:  []string{"launchctl", "print", domain + "/" + label},
	}, nil
}

func xmlEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&quot;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Write writes the plan's files: folders as needed (a secret's folder
// 0700), each file whole through a temporary file and a rename, so a
// failure leaves no half-written unit, and with its mode even when it
// existed with another.
func (p *Plan) Write() error {
	for _, f := range p.Files {
		dirMode := fs.FileMode(0o755)
		if f.Secret {
			dirMode = 0o700
		}
		dir := filepath.Dir(f.Path)
		if err := os.MkdirAll(dir, dirMode); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
		tmp, err := os.CreateTemp(dir, "."+filepath.Base(f.Path)+".*")
		if err != nil {
			return fmt.Errorf("write %s: %w", f.Path, err)
		}
		_, werr := tmp.WriteString(f.Content)
		cerr := tmp.Chmod(f.Mode)
		if err := errors.Join(werr, cerr, tmp.Close()); err != nil {
			_ = os.Remove(tmp.Name())
			return fmt.Errorf("write %s: %w", f.Path, err)
		}
		if err := os.Rename(tmp.Name(), f.Path); err != nil {
			_ = os.Remove(tmp.Name())
			return fmt.Errorf("write %s: %w", f.Path, err)
		}
	}
	return nil
}

// Remove deletes the unit and the secret file, those that exist, and
// returns the ones it deleted.
func (p *Plan) Remove() ([]string, error) {
	var removed []string
	for _, path := range []string{p.UnitPath, p.SecretPath} {
		err := os.Remove(path)
		switch {
		case err == nil:
			removed = append(removed, path)
		case !errors.Is(err, fs.ErrNotExist):
			return removed, fmt.Errorf("remove %s: %w", path, err)
		}
	}
	return removed, nil
}
