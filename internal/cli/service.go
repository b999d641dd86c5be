package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/ferry-dev/ferry/internal/service"
)

// serviceUsage is the help of ferry service.
var serviceUsage = []string{
	"Usage: ferry service install [--dry-run] [--no-enable] [--name N] [--token T] [--init systemd|launchd] [--] up|serve|connect [FLAGS]",
	"       ferry service status [--name N] [--init systemd|launchd]",
	"       ferry service uninstall [--name N] [--init systemd|launchd]",
	"\nRuns ferry as a service of your user that starts at login and restarts when",
	"it fails: a systemd user unit on Linux, a launchd agent on macOS. The",
	"command after install and its flags are what the service runs. A client",
	"token for connect is never put on its command line: give it to install with",
	"$FERRY_TOKEN (or --token), and it is written to a file only you can read.",
	"--dry-run prints the files and commands and writes nothing.",
}

// serviceFlags are ferry service's own flags.
type serviceFlags struct {
	dryRun, noEnable bool
	name, token      string
	init             string
}

func (f *serviceFlags) define(fs *flag.FlagSet) {
	fs.BoolVar(&f.dryRun, "dry-run", false, "install: print the files and the commands, write and run nothing")
	fs.BoolVar(&f.noEnable, "no-enable", false, "install: write the files but do not enable or start the service (prints the commands that would)")
	fs.StringVar(&f.name, "name", service.DefaultName, "the service's `NAME`, to run more than one")
	fs.StringVar(&f.token, "token", "", "install: connect's client `TOKEN`, written to a 0600 file (visible to other local users while install runs: prefer $FERRY_TOKEN)")
	fs.StringVar(&f.init, "init", string(service.ForOS(runtime.GOOS)), "the service manager: systemd or launchd (default this system's)")
}

// splitServiceArgs splits install's arguments into its own flags and the
// service's command line: at "--", else at the first argument that is not
// one of install's flags or their values.
func splitServiceArgs(fs *flag.FlagSet, args []string) (own, svc []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return args[:i], args[i+1:]
		}
		if len(a) < 2 || a[0] != '-' {
			return args[:i], args[i:]
		}
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if f := fs.Lookup(name); f != nil {
			if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !bf.IsBoolFlag() {
				i++ // its value
			}
		}
	}
	return args, nil
}

func runService(ctx context.Context, env Env, args []string) error {
	fs := flag.NewFlagSet("ferry service", flag.ContinueOnError)
	var f serviceFlags
	f.define(fs)
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if ok, err := parseFlags(fs, env, args, serviceUsage...); !ok {
			return err
		}
		return usageErrorf("ferry service: say install, status or uninstall")
	}
	verb := args[0]
	own, svcArgs := args[1:], []string(nil)
	if verb == "install" {
		own, svcArgs = splitServiceArgs(fs, own)
	}
	if ok, err := parseFlags(fs, env, own, serviceUsage...); !ok {
		return err
	}
	switch verb {
	case "install":
	case "status", "uninstall":
		if fs.NArg() > 0 {
			return usageErrorf("ferry service %s: unexpected argument %q", verb, fs.Arg(0))
		}
	default:
		return usageErrorf("ferry service: unknown verb %q: say install, status or uninstall", verb)
	}
	spec, err := serviceSpec(env, &f, verb, svcArgs)
	if err != nil {
		return err
	}
	plan, err := service.Make(spec)
	if err != nil {
		var ce *CodeError
		if errors.As(err, &ce) {
			return err
		}
		return &CodeError{Code: ExitUsage, Err: fmt.Errorf("ferry service %s: %w", verb, err)}
	}
	switch verb {
	case "install":
		return serviceInstall(ctx, env, &f, plan)
	case "status":
		return serviceStatus(ctx, env, plan)
	default:
		return serviceUninstall(ctx, env, plan)
	}
}

// serviceSpec gathers what the service needs from the flags and the
// environment. status and uninstall need only its name and paths, so they
// give a placeholder command.
func serviceSpec(env Env, f *serviceFlags, verb string, svcArgs []string) (service.Spec, error) {
	home := env.Getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return service.Spec{}, fmt.Errorf("ferry service: no home folder: set HOME: %w", err)
		}
		home = h
	}
	spec := service.Spec{
		Init: service.Init(f.init), Name: f.name, Home: home,
		ConfigHome: env.Getenv("XDG_CONFIG_HOME"), Path: env.Getenv("PATH"), UID: os.Getuid(),
		Binary: "/ferry", Args: []string{"up"},
	}
	if spec.Init == "" {
		return spec, usageErrorf("ferry service: ferry knows no service manager on %s: pass --init systemd or --init launchd to write one anyway", runtime.GOOS)
	}
	if verb != "install" {
		return spec, nil
	}
	if err := service.CheckArgs(svcArgs); err != nil {
		return spec, usageErrorf("ferry service install: %w", err)
	}
	spec.Args = svcArgs
	if svcArgs[0] == "connect" {
		tok, err := connectToken(env, f.token, "")
		if err != nil {
			return spec, usageErrorf("ferry service install: %w", err)
		}
		spec.Token = tok
		if tok != "" && hasFlag(svcArgs[1:], "token-file") {
			return spec, usageErrorf("ferry service install: a token was given to install ($FERRY_TOKEN or --token) and connect has --token-file: give it one way")
		}
		if tok == "" && !hasFlag(svcArgs[1:], "token-file") {
			return spec, usageErrorf("ferry service install: connect needs its client token: give it in $FERRY_TOKEN (or --token) to install, or put --token-file FILE in connect's flags")
		}
	} else if f.token != "" {
		return spec, usageErrorf("ferry service install: --token: %w, not ferry %s", service.ErrTokenCommand, svcArgs[0])
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return spec, fmt.Errorf("ferry service install: find this ferry binary: %w", err)
	}
	spec.Binary = exe
	if tmp := filepath.Clean(os.TempDir()) + string(filepath.Separator); strings.HasPrefix(exe, tmp) {
		// go run builds into a temporary folder that is gone at the next boot.
		fmt.Fprintf(env.Stderr, "warning: this ferry is %s, in a temporary folder; the service runs that file: install ferry somewhere lasting (go install) and run that one's service install\n", exe)
	}
	return spec, nil
}

// hasFlag reports whether args hold the flag name (-name, --name, with or
// without =value).
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		n, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && n == name {
			return true
		}
	}
	return false
}

// manager is the program that runs a plan's commands (systemctl,
// launchctl).
func manager(p *service.Plan) string {
	if p.Init == service.Launchd {
		return "launchctl"
	}
	return "systemctl"
}

// byHand is the commands of cmds as lines to run by hand.
func byHand(cmds ...[][]string) string {
	var b strings.Builder
	for _, list := range cmds {
		for _, c := range list {
			b.WriteString("\n    " + strings.Join(quoteAll(c), " "))
		}
	}
	return b.String()
}

// quoteAll shell-quotes what needs it, for a command the user copies.
func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t'\"\\$`;&|<>()*?[]#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return out
}

func serviceInstall(ctx context.Context, env Env, f *serviceFlags, p *service.Plan) error {
	steps := [][][]string{p.Reload, p.Enable}
	if f.dryRun {
		fmt.Fprintf(env.Stdout, "ferry service install --dry-run: nothing written. It would write:\n")
		for _, file := range p.Files {
			if file.Secret {
				fmt.Fprintf(env.Stdout, "\n== %s (mode %04o): the token, not shown\n", file.Path, file.Mode)
				continue
			}
			fmt.Fprintf(env.Stdout, "\n== %s (mode %04o)\n%s", file.Path, file.Mode, file.Content)
		}
		fmt.Fprintf(env.Stdout, "\nand run:%s\n", byHand(steps...))
		return nil
	}
	run, err := lookPathEnv(env)(manager(p))
	if err != nil && !f.noEnable {
		return fmt.Errorf("ferry service install: %s is not on PATH, so the service cannot be enabled here; nothing written. "+
			"Pass --no-enable to write the files and enable it by hand with:%s", manager(p), byHand(steps...))
	}
	if err := p.Write(); err != nil {
		return fmt.Errorf("ferry service install: %w", err)
	}
	for _, file := range p.Files {
		fmt.Fprintf(env.Stdout, "wrote %s (mode %04o)\n", file.Path, file.Mode)
	}
	if f.noEnable {
		fmt.Fprintf(env.Stdout, "not enabled (--no-enable): to start it now and at every login, run:%s\n", byHand(steps...))
		return nil
	}
	// A service loaded before is unloaded first, so the new file is read
	// (launchctl bootstrap refuses a loaded label); its absence is fine.
	for _, c := range p.Unload {
		_ = runManager(ctx, env, run, c, true)
	}
	for _, list := range steps {
		for _, c := range list {
			if err := runManager(ctx, env, run, c, false); err != nil {
				return fmt.Errorf("ferry service install: the files are written but %w; fix that and run:%s", err, byHand(steps...))
			}
		}
	}
	fmt.Fprintf(env.Stdout, "ferry %s runs as the service %s and restarts when it fails: see 'ferry service status'\n", p.Command, p.Name)
	if p.Init == service.Systemd {
		fmt.Fprintf(env.Stdout, "To start it at boot, before you log in: loginctl enable-linger %s\n", quoteAll([]string{env.Getenv("USER")})[0])
	}
	return nil
}

// runManager runs the manager's command c with the manager at path run,
// its output to ferry's.
func runManager(ctx context.Context, env Env, run string, c []string, quiet bool) error {
	cmd := exec.CommandContext(ctx, run, c[1:]...) //nolint:gosec // the plan's own command
	if !quiet {
		cmd.Stdout, cmd.Stderr = env.Stdout, env.Stderr
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s failed: %w", strings.Join(c, " "), err)
	}
	return nil
}

// installed reports whether p's unit file is there.
func installed(p *service.Plan) (bool, error) {
	_, err := os.Stat(p.UnitPath)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}

func serviceStatus(ctx context.Context, env Env, p *service.Plan) error {
	ok, err := installed(p)
	if err != nil {
		return fmt.Errorf("ferry service status: %w", err)
	}
	if !ok {
		return fmt.Errorf("ferry service status: no service %s is installed (no %s): install it with 'ferry service install -- up'", p.Name, p.UnitPath)
	}
	fmt.Fprintf(env.Stdout, "installed: %s\n", p.UnitPath)
	run, err := lookPathEnv(env)(manager(p))
	if err != nil {
		return fmt.Errorf("ferry service status: %s is not on PATH, so ferry cannot ask whether %s runs", manager(p), p.Name)
	}
	cmd := exec.CommandContext(ctx, run, p.Status[1:]...) //nolint:gosec // the plan's own command
	cmd.Stdout, cmd.Stderr = env.Stdout, env.Stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return exitWith(ee.ExitCode()) // the manager said why (not running)
		}
		return fmt.Errorf("ferry service status: %w", err)
	}
	return nil
}

func serviceUninstall(ctx context.Context, env Env, p *service.Plan) error {
	ok, err := installed(p)
	if err != nil {
		return fmt.Errorf("ferry service uninstall: %w", err)
	}
	if !ok {
		return fmt.Errorf("ferry service uninstall: no service %s is installed (no %s)", p.Name, p.UnitPath)
	}
	run, err := lookPathEnv(env)(manager(p))
	if err != nil {
		return fmt.Errorf("ferry service uninstall: %s is not on PATH, so ferry cannot stop %s; nothing removed. By hand:%s\n    rm -f %s",
			manager(p), p.Name, byHand(p.Disable), strings.Join(quoteAll([]string{p.UnitPath, p.SecretPath}), " "))
	}
	for _, c := range p.Disable {
		if err := runManager(ctx, env, run, c, false); err != nil {
			return fmt.Errorf("ferry service uninstall: %w; nothing removed", err)
		}
	}
	removed, err := p.Remove()
	for _, r := range removed {
		fmt.Fprintf(env.Stdout, "removed %s\n", r)
	}
	if err != nil {
		return fmt.Errorf("ferry service uninstall: %w", err)
	}
	for _, c := range p.Reload {
		if err := runManager(ctx, env, run, c, false); err != nil {
			return fmt.Errorf("ferry service uninstall: %w", err)
		}
	}
	fmt.Fprintf(env.Stdout, "service %s stopped and removed\n", p.Name)
	return nil
}
