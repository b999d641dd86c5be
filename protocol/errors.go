package protocol

import "fmt"

// Error codes carried by the error message and returned by Decode. Each code
// is stable; docs/protocol.md lists what each means and what the sender
// should do.
const (
	// CodeMalformedJSON: the bytes are not one JSON object.
	CodeMalformedJSON = "malformed_json"
	// CodeMessageTooLarge: the message is over MaxMessageBytes.
	CodeMessageTooLarge = "message_too_large"
	// CodeUnknownType: the type is not a message of this protocol version.
	CodeUnknownType = "unknown_type"
	// CodeMissingField: a required field is absent (or null).
	CodeMissingField = "missing_field"
	// CodeWrongType: a field has the wrong JSON type (string for number, …).
	CodeWrongType = "wrong_type"
	// CodeInvalidValue: a field has the right type but a value outside its
	// enum, range, length, pattern or format, or breaks a cross-field rule.
	CodeInvalidValue = "invalid_value"
	// CodeWrongDirection: the sender may not send this type (a UI sending
	// agent.* events, a client sending control.*).
	CodeWrongDirection = "wrong_direction"
	// CodeUnsupported: the receiving client lacks the capability the message
	// needs (see Capabilities.Check).
	CodeUnsupported = "unsupported"
	// CodeUnauthorized: the connection's credentials are missing, wrong or
	// revoked.
	CodeUnauthorized = "unauthorized"
	// CodeNotFound: the session, machine, workspace or adapter named does
	// not exist (or is not visible to the sender).
	CodeNotFound = "not_found"
	// CodeClientOffline: the session's client did not come back within the
	// grace period; the message was not delivered.
	CodeClientOffline = "client_offline"
	// CodeInteractionSettled: the interaction was already answered, timed
	// out or cancelled; the first answer won.
	CodeInteractionSettled = "interaction_settled"
	// CodeBusy: the session already runs a turn, or the receiver already
	// handles as many transfers (downloads, uploads) as it takes at once;
	// try again later (an HTTP answer says when, in Retry-After).
	CodeBusy = "busy"
	// CodeSlowConsumer: the peer did not read fast enough and is dropped;
	// it may reconnect and resume.
	CodeSlowConsumer = "slow_consumer"
	// CodeInternal: the receiver failed for a reason of its own; the details
	// stay in its log and never travel on the wire.
	CodeInternal = "internal"
)

// Error is a coded protocol error. It is both a Go error and the payload of
// the "error" message.
type Error struct {
	// Code is one of the error codes below.
	Code string `json:"code" jsonschema:"minLength=1"`
	// Message says what is wrong, for people.
	Message string `json:"message"`
	// Field is the path of the offending field, e.g. "payload.query_id".
	Field string `json:"field,omitempty"`
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", e.Code, e.Field, e.Message)
	}
	return e.Code + ": " + e.Message
}

// Is matches another *Error with the same code, so callers can write
// errors.Is(err, protocol.ErrMissingField).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Field == "" || t.Field == e.Field)
}

// Sentinels for errors.Is.
var (
	ErrMalformedJSON      = &Error{Code: CodeMalformedJSON}
	ErrMessageTooLarge    = &Error{Code: CodeMessageTooLarge}
	ErrUnknownType        = &Error{Code: CodeUnknownType}
	ErrMissingField       = &Error{Code: CodeMissingField}
	ErrWrongType          = &Error{Code: CodeWrongType}
	ErrInvalidValue       = &Error{Code: CodeInvalidValue}
	ErrWrongDirection     = &Error{Code: CodeWrongDirection}
	ErrUnsupported        = &Error{Code: CodeUnsupported}
	ErrInternal           = &Error{Code: CodeInternal}
	ErrUnauthorized       = &Error{Code: CodeUnauthorized}
	ErrNotFound           = &Error{Code: CodeNotFound}
	ErrClientOffline      = &Error{Code: CodeClientOffline}
	ErrInteractionSettled = &Error{Code: CodeInteractionSettled}
	ErrBusy               = &Error{Code: CodeBusy}
	ErrSlowConsumer       = &Error{Code: CodeSlowConsumer}
)

// ErrorCodes lists every code with its one-line meaning; docs/protocol.md is
// tested against it.
var ErrorCodes = map[string]string{
	CodeMalformedJSON:      "the message is not one JSON object",
	CodeMessageTooLarge:    "the message is larger than the limit",
	CodeUnknownType:        "the type is not a message of this protocol version",
	CodeMissingField:       "a required field is absent or null",
	CodeWrongType:          "a field has the wrong JSON type",
	CodeInvalidValue:       "a field's value is outside its enum, range, length, pattern or format",
	CodeWrongDirection:     "the sender's role may not send this type",
	CodeUnsupported:        "the client lacks the capability the message needs",
	CodeInternal:           "the receiver failed; details stay in its log",
	CodeUnauthorized:       "the credentials are missing, wrong or revoked",
	CodeNotFound:           "the session, machine, workspace or adapter named does not exist for the sender",
	CodeClientOffline:      "the session's client stayed away past the grace period; nothing was delivered",
	CodeInteractionSettled: "the interaction was already settled; the first answer won",
	CodeBusy:               "the session already runs a turn, or too many downloads or uploads run at once; try again later",
	CodeSlowConsumer:       "the peer read too slowly and is disconnected; reconnect and resume",
}

func errorf(code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}
