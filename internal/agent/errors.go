package agent

import (
	"errors"
	"fmt"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/protocol"
)

// Stable codes of the agent.error events the agent emits and of the *Error
// values Run and Compact return.
const (
	CodeProviderRateLimited = protocol.AgentCodeProviderRateLimited
	CodeProviderOverloaded  = protocol.AgentCodeProviderOverloaded
	CodeProviderServer      = protocol.AgentCodeProviderServer
	CodeProviderAuth        = protocol.AgentCodeProviderAuth
	CodeProviderBadRequest  = protocol.AgentCodeProviderBadRequest
	CodeProviderStream      = protocol.AgentCodeProviderStream
	CodeProviderNetwork     = protocol.AgentCodeProviderNetwork
	// CodeBadRequest: the prompt itself is unusable (a bad permission rule
	// in config_overrides, an invalid json_schema, an unknown mode).
	CodeBadRequest = protocol.AgentCodeBadRequest
	// CodeStructuredOutput: the final answer did not validate against the
	// prompt's json_schema, even after one retry.
	CodeStructuredOutput = protocol.AgentCodeStructuredOutput
	// CodeBusy: a turn or a compaction is already running.
	CodeBusy = protocol.AgentCodeBusy
	// CodeInternal: the agent failed for a reason of its own (logged).
	CodeInternal = protocol.AgentCodeInternal
)

// Error is a coded failure of the agent. Message is safe to show to the
// user (it never holds provider bodies, keys or internal error text); Err is
// the cause, for the log.
type Error struct {
	Code      string
	Message   string
	Retryable bool
	Err       error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("agent: %s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("agent: %s: %s", e.Code, e.Message)
}

// Unwrap exposes the cause.
func (e *Error) Unwrap() error { return e.Err }

// ErrBusy is returned when a turn or a compaction already runs.
var ErrBusy = &Error{Code: CodeBusy, Message: "the session is busy with another turn or a compaction"}

// ProviderError maps a provider failure to the agent's coded error (also
// for the model list, which the builtin adapter reads).
func ProviderError(err error) *Error {
	var le *llm.Error
	if !errors.As(err, &le) {
		return &Error{Code: CodeInternal, Message: "the model call failed unexpectedly", Err: err}
	}
	code := CodeInternal
	switch le.Kind {
	case llm.KindRateLimited:
		code = CodeProviderRateLimited
	case llm.KindOverloaded:
		code = CodeProviderOverloaded
	case llm.KindServer:
		code = CodeProviderServer
	case llm.KindAuth:
		code = CodeProviderAuth
	case llm.KindBadRequest:
		code = CodeProviderBadRequest
	case llm.KindStream:
		code = CodeProviderStream
	case llm.KindNetwork:
		code = CodeProviderNetwork
	}
	msg := le.Message
	if msg == "" {
		msg = "the model provider failed"
	}
	if le.Status != 0 {
		msg = fmt.Sprintf("%s (HTTP %d)", msg, le.Status)
	}
	if le.RetryAfter > 0 {
		msg = fmt.Sprintf("%s; retry after %s", msg, le.RetryAfter)
	}
	return &Error{Code: code, Message: msg, Retryable: le.Retryable(), Err: err}
}
