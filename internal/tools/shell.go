// Running the Bash tool's command: the shell, its environment, and
// the stop reasons; the child process itself is a childproc.Stream.

package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/ferry-dev/ferry/internal/childproc"
	"github.com/ferry-dev/ferry/internal/procgroup"
)

// bashDrain bounds how long output is still read once the command's process
// group is gone: a process that left the group (setsid, a daemon) may hold
// the pipe open for ever, and the call must still return.
const bashDrain = 500 * time.Millisecond

// bashReapWait bounds the wait for the shell to be reaped after SIGKILL. Only
// a process stuck in the kernel (a hung NFS mount) takes longer; the call then
// returns and a goroutine reaps it when it can.
const bashReapWait = 5 * time.Second

// bashSecretEnv are the variables a command never sees: the model provider
// keys and ferry's own token are the user's secrets, not the agent's.
var bashSecretEnv = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "FERRY_TOKEN"}

// bashExtraEnv keeps commands from waiting on a person who is not there:
// git would otherwise ask for credentials on the terminal or open an editor.
var bashExtraEnv = []string{"GIT_TERMINAL_PROMPT=0", "GIT_EDITOR=true"}

type stopReason int

const (
	stopNone stopReason = iota
	stopCancelled
	stopTimedOut
)

// bashOutcome is what one run produced.
type bashOutcome struct {
	text   string // the capped output
	status string // "Exit code: N", or the signal that killed the shell
	stop   stopReason
}

// runBash runs command and always stops its whole process group before it
// returns; the error is for failures to run it at all. The child, its pipe
// and the end sequence are childproc.Stream's.
func runBash(ctx context.Context, dir, command string, timeout time.Duration, progress func(string)) (bashOutcome, error) {
	if !procgroup.Supported {
		// Without process groups a command could not be stopped with
		// everything it started: run none.
		return bashOutcome{}, errors.New("bash: the Bash tool needs a Unix system")
	}
	cmd := shellCommand(dir, command)
	capt := newCapture(BashMaxOutput, progress)
	child, err := childproc.StartStream(cmd, capt.readFrom)
	if err != nil {
		if errors.Is(err, childproc.ErrPipe) {
			return bashOutcome{}, fmt.Errorf("bash: output %w", err)
		}
		return bashOutcome{}, fmt.Errorf("bash: start %s: %w", cmd.Path, err)
	}

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	stop := stopNone
	select {
	case <-child.Exited():
	case <-ctx.Done():
		stop = stopCancelled
	case <-timer.C:
		stop = stopTimedOut
	}
	state, reaped := child.End(stop != stopNone, childproc.StreamEnd{Grace: BashKillGrace, ReapWait: bashReapWait, Drain: bashDrain})

	out := bashOutcome{text: capt.String(), stop: stop}
	if reaped {
		out.status = exitStatus(state)
	} else {
		out.status = "The shell could not be reaped after SIGKILL (stuck in the kernel); its exit code is unknown."
	}
	return out, nil
}

// shellCommand prepares `bash -c command` in dir. childproc.StartStream
// runs it in a new session: its own process group (so the whole tree can
// be signalled) and no controlling terminal (so nothing can read from or
// prompt on the user's terminal), with stdin from /dev/null.
func shellCommand(dir, command string) *exec.Cmd {
	cmd := exec.Command(shellPath(), "-c", command) //nolint:gosec // running the agent's command is this tool's purpose; permissions are checked before the call
	cmd.Dir = dir
	cmd.Env = bashEnviron(os.Environ())
	return cmd
}

// exitStatus describes how the shell ended, for the agent.
func exitStatus(ps *os.ProcessState) string {
	if ps == nil {
		return "Exit code: unknown"
	}
	if sig, ok := procgroup.ExitSignal(ps); ok {
		return fmt.Sprintf("Killed by signal %d (%s).", int(sig), sig)
	}
	return fmt.Sprintf("Exit code: %d", ps.ExitCode())
}

var shellPath = sync.OnceValue(func() string {
	for _, sh := range []string{"bash", "sh"} {
		if p, err := exec.LookPath(sh); err == nil {
			return p
		}
	}
	return "/bin/sh"
})

// bashEnviron is environ without the secrets, plus bashExtraEnv.
func bashEnviron(environ []string) []string {
	out := make([]string, 0, len(environ)+len(bashExtraEnv))
next:
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		for _, s := range bashSecretEnv {
			if name == s {
				continue next
			}
		}
		out = append(out, kv)
	}
	return append(out, bashExtraEnv...)
}
