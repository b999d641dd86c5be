package agent

import (
	"context"
	"errors"

	"github.com/ferry-dev/ferry/internal/attachment"

	"github.com/ferry-dev/ferry/protocol"
	"github.com/ferry-dev/ferry/protocol/fileref"
)

// The agent's own input and output: it does not import the adapter seam
// (internal/adapter), whose builtin adapter converts to and from these.

// Turn is one prompt to run.
type Turn struct {
	ID string
	// Request is the control.prompt.request, validated; nil runs Prompt
	// as plain text.
	Request *protocol.PromptRequest
	// Prompt is Request's prompt_text parsed against its file references.
	Prompt fileref.Prompt
	// Attachments are Request's context_files, fetched and checked.
	Attachments []attachment.File
}

// Emit sends one agent.* event of the running prompt. It may block while
// the receiver is behind and should fail only when ctx is done.
type Emit func(ctx context.Context, msgType string, payload any) error

// ErrUnknownInteraction is returned by Answer for an interaction nobody
// waits on (answered already, timed out, or its turn ended).
var ErrUnknownInteraction = errors.New("agent: no such open interaction")

// ErrStopping is the cause (context.Cause) of Run's context when the
// prompt is cancelled because ferry is stopping, not by the user: the
// history then says ferry restarted (Config.StopCause names a cause of the
// caller's own that means the same).
var ErrStopping = errors.New("agent: ferry is stopping during this turn")

// stopping reports whether ctx was cancelled because ferry is stopping.
func (a *Agent) stopping(ctx context.Context) bool {
	cause := context.Cause(ctx)
	return errors.Is(cause, ErrStopping) || a.stopCause != nil && errors.Is(cause, a.stopCause)
}
