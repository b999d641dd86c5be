package tools

import (
	"context"
	_ "embed" // bash.md is the tool's description
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
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
//   - With Env.Shell (an editor's terminal, ferry acp) the same command
//     runs there instead, with the same timeout, cancel and result text;
//     the output is what the terminal kept (its end), capped the same way.
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

var bashSchema = sync.OnceValue(inputSchema[BashInput]) // built on first use, not at start-up

// InputSchema implements Tool.
func (Bash) InputSchema() json.RawMessage { return bashSchema() }

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
	if env.Shell != nil {
		return runShell(ctx, env.Shell, dir, in.Command, timeout)
	}

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
