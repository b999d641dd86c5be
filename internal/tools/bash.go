package tools

import (
	"bytes"
	"context"
	_ "embed" // bash.md is the tool's description
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/internal/childproc"
	"github.com/ferry-dev/ferry/internal/procgroup"
)

//go:embed bash.md
var bashDescription string

// Bash's bounds. The timeout is per call; the output cap is on what the
// agent gets back (progress deltas see everything).
const (
	// BashDefaultTimeout applies when the call gives no timeout_ms.
	BashDefaultTimeout = 2 * time.Minute
	// BashMaxTimeout is the largest timeout_ms a call may ask for.
	BashMaxTimeout = 10 * time.Minute
	// BashMaxOutput caps the output returned to the agent, in bytes: the
	// first and last halves are kept and the middle is elided with a marker.
	BashMaxOutput = 30000
	// BashKillGrace is how long a stopped command's processes get between
	// SIGTERM and SIGKILL.
	BashKillGrace = 2 * time.Second
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

// Bash runs a shell command in the workspace. See bash.md for what the agent
// is told and docs/tools.md for the rules.
//
// Its guarantees:
//   - The command runs as `bash -c` (`sh -c` where there is no bash) with
//     the workspace as its working directory, standard input from
//     /dev/null, and the environment of ferry minus the secrets in
//     bashSecretEnv. Every call is a fresh shell.
//   - It runs in a new session, so in its own process group and without a
//     controlling terminal (nothing can prompt on the user's terminal).
//     When the call ends for any reason, every process left in that group
//     is stopped: SIGTERM, then SIGKILL once they have closed the output or
//     BashKillGrace has passed. A cancelled or timed-out call returns within
//     BashKillGrace plus bashDrain whatever the command does (plus at most
//     bashReapWait for a process stuck in the kernel).
//   - Standard output and error are one interleaved stream. The agent gets
//     at most BashMaxOutput bytes of it (head and tail, the middle elided
//     with a marker saying how much); Env.Progress, when set, gets all of
//     it, in order.
//   - A non-zero exit is a normal result whose text ends with the exit
//     code. An empty command is CodeInvalidInput; a timeout is CodeTimeout
//     naming the limit; a cancelled call returns the context's error.
type Bash struct{}

var _ Tool = Bash{}

// Name implements Tool.
func (Bash) Name() string { return "Bash" }

// Description implements Tool.
func (Bash) Description() string { return bashDescription }

// ReadOnly implements Tool: a command can do anything.
func (Bash) ReadOnly() bool { return false }

var bashSchema = inputSchema[BashInput]()

// InputSchema implements Tool.
func (Bash) InputSchema() json.RawMessage { return bashSchema }

// BashInput is Bash's input object; the agent runtime decodes it too, to
// check the command against the permission rules before the call.
type BashInput struct {
	Command     string `json:"command" jsonschema:"required" jsonschema_description:"The shell command to run, e.g. \"go test ./...\". It runs with bash -c in the workspace root."`
	TimeoutMS   *int64 `json:"timeout_ms,omitempty" jsonschema:"minimum=1,maximum=600000" jsonschema_description:"How long the command may run, in milliseconds (default 120000, at most 600000)."`
	Description string `json:"description,omitempty" jsonschema_description:"A short description of what the command does, in 5 to 10 words, shown to the user."`
}

// Run implements Tool.
func (Bash) Run(ctx context.Context, env *Env, input json.RawMessage) (*Result, error) {
	var in BashInput
	if err := DecodeInput(input, &in); err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.Command) == "" {
		return nil, Errorf(CodeInvalidInput, `invalid input: field "command" is required and may not be empty, e.g. "go test ./..."`)
	}
	if strings.IndexByte(in.Command, 0) >= 0 {
		return nil, Errorf(CodeInvalidInput, `invalid input: field "command" contains a NUL byte, which no shell command can hold`)
	}
	timeout := BashDefaultTimeout
	if in.TimeoutMS != nil {
		ms := *in.TimeoutMS
		if ms < 1 || ms > BashMaxTimeout.Milliseconds() {
			return nil, Errorf(CodeInvalidInput, "invalid input: timeout_ms must be between 1 and %d (10 minutes), got %d", BashMaxTimeout.Milliseconds(), ms)
		}
		timeout = time.Duration(ms) * time.Millisecond
	}
	if env == nil || env.FS == nil || len(env.FS.Roots()) == 0 {
		return nil, errors.New("bash: the environment has no workspace")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir := env.FS.Roots()[0]

	out, err := runBash(ctx, dir, in.Command, timeout, env.Progress)
	if err != nil {
		return nil, err
	}
	switch out.stop {
	case stopCancelled:
		return nil, fmt.Errorf("bash: %w", ctx.Err())
	case stopTimedOut:
		return nil, &Error{Code: CodeTimeout, Message: fmt.Sprintf(
			"the command timed out after %s (timeout_ms %d; the default is %d, the most %d) and was stopped with every process it started. "+
				"Run long jobs with a larger timeout_ms, or in smaller steps. Output so far:\n%s",
			timeout, timeout.Milliseconds(), BashDefaultTimeout.Milliseconds(), BashMaxTimeout.Milliseconds(), outputText(out.text))}
	}
	res := &Result{Blocks: Text(outputText(out.text) + "\n\n" + out.status)}
	return res, nil
}

func outputText(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "(no output)"
	}
	return s
}

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

// capture keeps the head and the tail of a stream within max bytes, and
// passes everything on to progress in order, never splitting a UTF-8
// sequence between two deltas.
type capture struct {
	headCap, tailCap int
	head             []byte
	tail             []byte // the newest bytes after head; trimmed to tailCap
	total            int64
	progress         func(string)
	carry            []byte // an incomplete UTF-8 sequence held back from progress
}

func newCapture(max int, progress func(string)) *capture {
	return &capture{headCap: max / 2, tailCap: max - max/2, progress: progress}
}

// readFrom reads r until EOF or an error (a read deadline ends it too).
func (c *capture) readFrom(r io.Reader) {
	buf := make([]byte, 32*1024)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			c.write(buf[:n])
		}
		if err != nil {
			break
		}
	}
	if c.progress != nil && len(c.carry) > 0 {
		c.send(string(c.carry))
		c.carry = nil
	}
}

// send passes a delta to the progress hook. The hook runs on this reader
// goroutine, where a panic would kill the process rather than fail the
// call: a hook that panics is dropped and the output is still captured.
func (c *capture) send(d string) {
	defer func() {
		if recover() != nil {
			c.progress = nil
		}
	}()
	c.progress(d)
}

func (c *capture) write(p []byte) {
	c.total += int64(len(p))
	if c.progress != nil {
		c.emit(p)
	}
	if room := c.headCap - len(c.head); room > 0 {
		n := min(room, len(p))
		c.head = append(c.head, p[:n]...)
		p = p[n:]
	}
	if len(p) == 0 {
		return
	}
	c.tail = append(c.tail, p...)
	// Trim only when twice the cap, so keeping the tail costs O(1) per byte.
	if len(c.tail) > 2*c.tailCap {
		c.tail = append(c.tail[:0], c.tail[len(c.tail)-c.tailCap:]...)
	}
}

func (c *capture) emit(p []byte) {
	data := p
	if len(c.carry) > 0 {
		data = append(c.carry, p...)
		c.carry = nil
	}
	cut := completeUTF8(data)
	if cut > 0 {
		c.send(string(data[:cut]))
	}
	if cut < len(data) {
		c.carry = append([]byte(nil), data[cut:]...)
	}
}

// completeUTF8 returns the length of the longest prefix of p that does not
// end inside a UTF-8 sequence that more bytes could still complete.
func completeUTF8(p []byte) int {
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				return i
			}
			return len(p)
		}
	}
	return len(p)
}

// String is the captured output: whole when it fits, else the head, a
// marker and the tail, cut at a line end when one is near, else on a
// character boundary.
func (c *capture) String() string {
	tail := c.tail
	if len(tail) > c.tailCap {
		tail = tail[len(tail)-c.tailCap:]
	}
	if c.total <= int64(c.headCap+c.tailCap) {
		return string(c.head) + string(tail)
	}
	head := c.head[:completeUTF8(c.head)]
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	// Whole lines read better: cut at a line end when one is near.
	if i := bytes.LastIndexByte(head, '\n'); i >= len(head)/2 {
		head = head[:i+1]
	}
	if i := bytes.IndexByte(tail, '\n'); i >= 0 && i < len(tail)/2 {
		tail = tail[i+1:]
	}
	elided := c.total - int64(len(head)) - int64(len(tail))
	return fmt.Sprintf("%s\n… [%d bytes of output elided: it was %d bytes; the first %d and the last %d are shown. "+
		"Send long output to a file and Read or Grep it.] …\n\n%s",
		head, elided, c.total, len(head), len(tail), tail)
}
