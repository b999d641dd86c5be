// Package cli is ferry's command line: it parses the subcommand and its flags
// and hands off to the package that does the work. It writes only to the
// writers it is given and returns an exit code, so it is tested in-process.
//
// A command returns an error; Run alone prints it and chooses the exit
// code (a *CodeError carries one other than ExitError).
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/ferry-dev/ferry/internal/redact"
	"github.com/ferry-dev/ferry/internal/version"
	"github.com/ferry-dev/ferry/protocol"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
)

// Env is what a command may touch of the outside world.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Getenv reads the environment (os.Getenv in main).
	Getenv func(string) string
}

// CodeError is a command's failure with its exit code. Run prints Err as
// the line the user reads; a nil Err means the command has said all there
// is to say already (a bad flag, which the flag package reports).
type CodeError struct {
	Code int
	Err  error
}

func (e *CodeError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *CodeError) Unwrap() error { return e.Err }

// usageErrorf is a bad-usage failure (exit code 2) reading format.
func usageErrorf(format string, a ...any) error {
	return &CodeError{Code: ExitUsage, Err: fmt.Errorf(format, a...)}
}

// exitWith is a failure with code that prints nothing more.
func exitWith(code int) error { return &CodeError{Code: code} }

// report prints err (one line, or the lines it holds) and returns the exit
// code it means: the one place a command's failure reaches the user.
func report(w io.Writer, err error) int {
	if err == nil {
		return ExitOK
	}
	code := ExitError
	var ce *CodeError
	if errors.As(err, &ce) {
		code = ce.Code
		if ce.Err == nil {
			return code
		}
	}
	msg := err.Error()
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	_, _ = io.WriteString(w, msg)
	return code
}

type command struct {
	summary string
	run     func(ctx context.Context, env Env, args []string) error
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"version":  {"print the version and the protocol version", runVersion},
		"help":     {"show help for ferry or one of its commands", runHelp},
		"mcp":      {"serve the file tools to an MCP client over stdio", runMCP},
		"search":   {"rank files by fuzzy match, as the @ picker does", runSearch},
		"serve":    {"run the master that browsers and machines connect to", runServe},
		"connect":  {"run the daemon beside your workspaces, connected to a master", runConnect},
		"up":       {"the quick start: master and client in one process", runUp},
		"token":    {"create, list or revoke the master's tokens", runToken},
		"run":      {"run an agent on one prompt, headless (ferry's own by default)", runRun},
		"undo":     {"put back the files a ferry run (or a session) changed", runUndo},
		"service":  {"run ferry up, serve or connect as a service that survives a reboot", runService},
		"ship":     {"commit, merge, push or open a pull request of a worktree's branch", runShip},
		"acp":      {"serve ferry's agent to an editor over ACP (Zed, JetBrains, Neovim, acpx) on stdio", runACP},
		"worktree": {"list or remove the git worktrees of ferry run --worktree (or a client's)", runWorktree},
	}
}

// Run runs ferry with args (without the program name) and returns the exit
// code.
func Run(ctx context.Context, env Env, args []string) int {
	// Nothing ferry means to show lands on stderr with a credential in it
	// (a token create or a login URL goes to stdout): redact all of it.
	env.Stderr = redact.NewWriter(env.Stderr)
	return report(env.Stderr, run(ctx, env, args))
}

func run(ctx context.Context, env Env, args []string) error {
	if len(args) == 0 {
		var b strings.Builder
		usage(&b)
		return &CodeError{Code: ExitUsage, Err: errors.New(b.String())}
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		name = "help"
	case "-v", "-version", "--version":
		name = "version"
	}
	cmd, ok := commands[name]
	if !ok {
		var b strings.Builder
		fmt.Fprintf(&b, "ferry: unknown command %q\n\n", args[0])
		usage(&b)
		return &CodeError{Code: ExitUsage, Err: errors.New(b.String())}
	}
	return cmd.run(ctx, env, args[1:])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "ferry drives the AI coding agents on your machines from any browser.")
	fmt.Fprintln(w, "\nUsage:\n  ferry <command> [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'ferry help <command>' for a command's flags.")
}

func runHelp(_ context.Context, env Env, args []string) error {
	if len(args) == 0 {
		usage(env.Stdout)
		return nil
	}
	cmd, ok := commands[args[0]]
	if !ok {
		return usageErrorf("ferry help: unknown command %q", args[0])
	}
	if args[0] == "help" || args[0] == "version" {
		fmt.Fprintf(env.Stdout, "ferry %s: %s\n", args[0], cmd.summary)
		return nil
	}
	return cmd.run(context.Background(), env, []string{"-h"})
}

func runVersion(_ context.Context, env Env, args []string) error {
	if len(args) > 0 {
		return usageErrorf("ferry version: takes no arguments, got %s", strings.Join(args, " "))
	}
	fmt.Fprintf(env.Stdout, "ferry %s\nprotocol %d (file-reference tokens v%d)\n%s %s/%s\n",
		version.String(), protocol.Version, protocol.TokenSyntaxVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}

// flagSetSeen, when set (by a test, before any parallel test runs), is
// given every command's flag set, so a test can check each flag's help.
var flagSetSeen func(*flag.FlagSet)

// parseFlags parses a command's flags; usage is printed above the flag list
// on -h. ok is false when the command must stop and return err: nil after
// -h, a silent usage failure after a bad flag (the flag package said why).
func parseFlags(fs *flag.FlagSet, env Env, args []string, usage ...string) (ok bool, err error) {
	if flagSetSeen != nil {
		flagSetSeen(fs)
	}
	fs.SetOutput(env.Stderr)
	restore := explainNumbers(fs)
	defer restore()
	fs.Usage = func() {
		restore() // the help names each flag's value type from its own Value
		for _, l := range usage {
			fmt.Fprintln(env.Stderr, l)
		}
		fmt.Fprintln(env.Stderr, "\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(flagsFirst(fs, args)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return false, nil
		}
		return false, exitWith(ExitUsage)
	}
	return true, nil
}

// numberFlag wraps the Value of a duration or number flag while it is
// parsed, so that a bad value says which flag, what was given and an example
// of a good one, where the flag package says only "parse error".
type numberFlag struct {
	flag.Value
	name, kind, example string
}

func (n numberFlag) Set(s string) error {
	if err := n.Value.Set(s); err != nil {
		return fmt.Errorf("want %s, e.g. --%s %s", n.kind, n.name, n.example)
	}
	return nil
}

// explainNumbers wraps every duration and number flag of fs in a
// numberFlag (for a value set from the command line, the environment or a
// configuration file alike) and returns what puts them back. Restoring
// twice is harmless.
func explainNumbers(fs *flag.FlagSet) (restore func()) {
	var undo []func()
	fs.VisitAll(func(f *flag.Flag) {
		g, ok := f.Value.(flag.Getter)
		if !ok {
			return
		}
		var kind, example string
		switch g.Get().(type) {
		case time.Duration:
			kind, example = "a duration such as 90s, 10m or 1h30m", "10m"
			if d, err := time.ParseDuration(f.DefValue); err == nil && d > 0 {
				example = shortDuration(d)
			}
		case int, int64, uint, uint64:
			kind, example = "a whole number", "1"
			if f.DefValue != "0" {
				example = f.DefValue
			}
		case float64:
			kind, example = "a number", "1.5"
		default:
			return
		}
		orig := f.Value
		f.Value = numberFlag{Value: orig, name: f.Name, kind: kind, example: example}
		undo = append(undo, func() { f.Value = orig })
	})
	return func() {
		for _, u := range undo {
			u()
		}
		undo = nil
	}
}

// shortDuration writes d as people do: 10m, not 10m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// flagsFirst moves the flags in args before the other arguments, so a flag
// after the prompt (ferry run "hi" --output-format json) is parsed rather
// than taken as prompt text; the flag package stops at the first non-flag.
// "--" still ends the flags: what follows it stays an argument, as typed.
// A flag's value is the next argument unless the flag is boolean or is
// written --name=value; an unknown flag stays a flag, so Parse names it.
func flagsFirst(fs *flag.FlagSet, args []string) []string {
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			rest = append(rest, a) // "-" alone is an argument (standard input)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
			continue
		}
		if i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	if len(rest) == 0 {
		return flags
	}
	return append(append(flags, "--"), rest...)
}
