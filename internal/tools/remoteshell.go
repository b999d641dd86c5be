// Bash through a terminal ferry does not own: an editor's (ferry acp).

package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Shell runs Bash's commands in a terminal ferry does not own, such as the
// terminal of the editor a session is attached to (Env.Shell). Bash keeps
// its own input checks, timeout and result format; only the running moves.
type Shell interface {
	// RunShell runs c until it exits or ctx ends (then it is killed with
	// what it started) and returns what the terminal kept of its output.
	RunShell(ctx context.Context, c ShellCommand) (ShellRun, error)
}

// ShellCommand is a command Bash hands to a Shell.
type ShellCommand struct {
	// Path and Args: the shell and its arguments ("-c", the command).
	Path string
	Args []string
	// Dir is the working directory (the workspace root).
	Dir string
	// Env adds to the terminal's environment.
	Env map[string]string
	// OutputLimit is the most output the terminal should keep (its end).
	OutputLimit int
}

// ShellRun is how a command run by a Shell ended.
type ShellRun struct {
	Output string
	// Truncated: the terminal dropped the start of the output.
	Truncated bool
	// ExitCode is nil when a signal ended the command (Signal names it).
	ExitCode *int
	Signal   string
}

// runShell is Bash's call through env.Shell: the same command, directory,
// timeout, cancel and result text as a local run (bash.go), but the
// editor's terminal runs it and shows it to the user.
func runShell(ctx context.Context, sh Shell, dir, command string, timeout time.Duration) (*Result, error) {
	extra := make(map[string]string, len(bashExtraEnv)+len(bashSecretEnv))
	for _, k := range bashSecretEnv {
		// The terminal's environment is the editor's: ferry can only
		// blank the secrets a local run leaves out, not unset them.
		extra[k] = ""
	}
	for _, kv := range bashExtraEnv {
		k, v, _ := strings.Cut(kv, "=")
		extra[k] = v
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	run, err := sh.RunShell(tctx, ShellCommand{Path: shellPath(), Args: []string{"-c", command}, Dir: dir, Env: extra, OutputLimit: BashMaxOutput})
	if ctx.Err() != nil {
		return nil, fmt.Errorf("bash: %w", ctx.Err())
	}
	text := shellOutput(run)
	if errors.Is(tctx.Err(), context.DeadlineExceeded) {
		return nil, &Error{Code: CodeTimeout, Message: fmt.Sprintf(
			"the command timed out after %s (timeout_ms %d; the default is %d, the most %d) and was stopped with every process it started. "+
				"Run long jobs with a larger timeout_ms, or in smaller steps. Output so far:\n%s",
			timeout, timeout.Milliseconds(), BashDefaultTimeout.Milliseconds(), BashMaxTimeout.Milliseconds(), outputText(text))}
	}
	if err != nil {
		return nil, &Error{Code: CodeEditor, Err: err, Message: "the editor's terminal could not run the command (the editor refused it or went away). Try again, or tell the user."}
	}
	return &Result{Blocks: Text(outputText(text) + "\n\n" + shellStatus(run))}, nil
}

// shellOutput is the output as a local run would give it: capped to
// BashMaxOutput (head and tail) whatever the terminal kept, and saying so
// when the terminal dropped the start.
func shellOutput(run ShellRun) string {
	c := newCapture(BashMaxOutput, nil)
	c.write([]byte(run.Output))
	if !run.Truncated {
		return c.String()
	}
	return fmt.Sprintf("… [the start of the output was dropped: the terminal kept its last %d bytes.] …\n\n%s", len(run.Output), c.String())
}

// shellStatus says how the command ended, in exitStatus's words.
func shellStatus(run ShellRun) string {
	switch {
	case run.ExitCode != nil:
		return fmt.Sprintf("Exit code: %d", *run.ExitCode)
	case run.Signal != "":
		if sig := unix.SignalNum(run.Signal); sig != 0 {
			return fmt.Sprintf("Killed by signal %d (%s).", int(sig), sig)
		}
		return fmt.Sprintf("Killed by signal %s.", run.Signal)
	}
	return "Exit code: unknown"
}
