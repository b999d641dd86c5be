package tools

import (
	"errors"
	"fmt"
)

// Error codes of the file tools. 2, 3 and 9 are the specification's; the
// rest are ferry's. docs/tools.md has the table; each message tells the
// agent what to do next.
const (
	// CodeInvalidInput: the input does not match the tool's schema.
	CodeInvalidInput = 1
	// CodeNotRead: the file was never read in this session, or only in part.
	CodeNotRead = 2
	// CodeStale: the file changed since it was read.
	CodeStale = 3
	// CodeNotFound: no such file or directory.
	CodeNotFound = 4
	// CodeOutside: the path leaves the workspace and the allowed roots.
	CodeOutside = 5
	// CodeNotRegular: a device, FIFO, socket or other special file.
	CodeNotRegular = 6
	// CodeIsDirectory: a directory where a file was wanted.
	CodeIsDirectory = 7
	// CodeTooLarge: over the token gate (MaxFileReadTokenExceededError).
	CodeTooLarge = 8
	// CodeAmbiguous: old_string matches more than once without replace_all.
	CodeAmbiguous = 9
	// CodeNoMatch: old_string is not in the file.
	CodeNoMatch = 10
	// CodeNoChange: new_string equals old_string, or the content is unchanged.
	CodeNoChange = 11
	// CodePermission: the operating system refused (read-only file or folder).
	CodePermission = 12
	// CodeEncoding: the file's bytes cannot be edited safely as text.
	CodeEncoding = 13
	// CodeBadPages: an invalid or too large PDF page range, or pages missing
	// where they are required.
	CodeBadPages = 14
	// CodeDenied: the user, a permission rule or the mode refused the call.
	CodeDenied = 15
	// CodeExists: Edit with an empty old_string on a file that has content.
	CodeExists = 16
	// CodeBadPattern: an invalid glob or regular expression.
	CodeBadPattern = 17
	// CodeTimeout: a command ran past its timeout and was stopped.
	CodeTimeout = 18
	// CodeHardLinked: the file has other hard links, which may lead out of
	// the workspace; Write and Edit refuse it rather than write through.
	CodeHardLinked = 19
	// CodeMCP: an MCP server's tool reported an error, or its server could
	// not be reached, refused the call or exited.
	CodeMCP = 20
	// CodeEditor: the editor the session's files or terminals are lent by
	// (ferry acp) failed a read, a write or a command.
	CodeEditor = 21
	// CodeOverlap: a MultiEdit edit matches text an earlier edit of the
	// same call replaced or inserted.
	CodeOverlap = 22
	// CodeNoCell: NotebookEdit names a cell the notebook does not have.
	CodeNoCell = 23
	// CodeWeb: WebFetch could not get the page: the host is not public,
	// a redirect is not followed, the server failed or answered an HTTP
	// error, or the model call answering the question failed.
	CodeWeb = 24
	// CodeInternal: the tool failed for a reason of its own (logged, not shown).
	CodeInternal = 99
)

// Error is a tool failure the agent sees.
type Error struct {
	Code    int
	Message string
	// Err is the cause, kept for logs and errors.Is; never shown to the agent.
	Err error
}

func (e *Error) Error() string { return fmt.Sprintf("code %d: %s", e.Code, e.Message) }

// Unwrap exposes the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches another *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Errorf builds an *Error.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// wrap keeps err as e's cause (for logs and errors.Is) and returns e.
func (e *Error) wrap(err error) *Error {
	e.Err = err
	return e
}

// CodeOf returns the code of err: its *Error's, or CodeInternal.
func CodeOf(err error) int {
	var te *Error
	if errors.As(err, &te) {
		return te.Code
	}
	return CodeInternal
}

// AgentMessage is the text the agent gets for err: the *Error's message, or
// a fixed sentence for internal errors (whose text may hold details that
// are none of the agent's business).
func AgentMessage(err error) string {
	var te *Error
	if errors.As(err, &te) {
		return fmt.Sprintf("Error (code %d): %s", te.Code, te.Message)
	}
	return fmt.Sprintf("Error (code %d): the tool failed unexpectedly; try again, or use another approach.", CodeInternal)
}
