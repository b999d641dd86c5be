// Package tools implements the file tools agents touch users' files with:
// Read, Write, Edit, MultiEdit, NotebookEdit, Glob and Grep; ferry's own
// agent adds Bash, WebFetch (webfetch.go: public hosts only, through
// internal/netguard) and TodoWrite. The file tools work on a confined
// vfs.FS and share one read-before-write contract (ReadState):
//
//   - Write, Edit, MultiEdit and NotebookEdit of an existing file need an
//     earlier Read of it in the same session (code 2: for Write and
//     NotebookEdit a full one, for the edits any window), and are refused
//     if the file changed since (code 3,
//     by size, mtime, ctime and content hash: a touch that changes nothing is
//     fine, a change that restores the mtime is caught).
//   - The final staleness check and the atomic rename happen under a per-file
//     lock, after any permission prompt, against what the Read saw: two writers
//     can never both succeed on the same read.
//   - A MultiEdit is all or none: its edits apply in memory, in order, and
//     the file is written once, or not at all when one edit fails.
//   - Every failure is an *Error with a documented numeric code (errors.go)
//     and a message that tells the agent what to do next; nothing is written
//     when a tool fails.
package tools

import (
	"context"
	"encoding/json"

	"github.com/ferry-dev/ferry/internal/vfs"
	"github.com/ferry-dev/ferry/protocol"
)

// Tool is one tool an agent can call.
type Tool interface {
	// Name is what the agent calls it by: "Read", "Write", …
	Name() string
	// Description tells the model what the tool does and how to use it.
	Description() string
	// InputSchema is the JSON Schema of the tool's input object.
	InputSchema() json.RawMessage
	// ReadOnly tools are the ones plan and review modes allow.
	ReadOnly() bool
	// Run executes one call. A failure the agent should see is an *Error;
	// any other error is internal and is reported to the agent as code
	// CodeInternal without its text.
	Run(ctx context.Context, env *Env, input json.RawMessage) (*Result, error)
}

// Env is what a tool call may use. One Env serves one session (or one MCP
// connection): it carries that session's ReadState.
type Env struct {
	FS     vfs.FS
	State  *ReadState
	Limits Limits
	// Tokens counts tokens exactly for Read's second gate stage; nil uses
	// the local BPE tokenizer.
	Tokens TokenCounter
	// Approve is asked before a write, after the change is computed and
	// before the final check; it returns an *Error (CodeDenied) to refuse.
	// Nil approves everything (headless use, MCP).
	Approve func(ctx context.Context, a Approval) error
	// History records a file's previous content before it is overwritten;
	// nil keeps none.
	History FileHistory
	// Progress, when set, receives a running tool's output as it comes
	// (Bash: the command's output, in order; the deltas concatenate to all
	// of it, uncapped, and never split a UTF-8 sequence). It is called from
	// the goroutine reading the output, so a slow hook slows the command.
	Progress func(delta string)
	// Shell, when set, runs Bash's commands instead of a local child
	// process: the terminal of the editor the session is attached to
	// (ferry acp). Nil runs them locally.
	Shell Shell
	// Diagnostics, when set, is asked after a tool changed a text file
	// (Result.Changed with a Path): the language server's errors in that
	// file now, as text for the model ("" when there are none), which
	// Invoke appends to the result (diagnostics.go). It bounds its own
	// wait; an error only leaves the diagnostics out. Nil asks nobody.
	Diagnostics func(ctx context.Context, path string) (string, error)
	// AskModel, when set, makes one separate call to the session's model
	// (no tools, no history): system and prompt, an answer of at most
	// maxTokens, its text returned. The caller counts its usage in the
	// session. WebFetch answers its question with it; nil: WebFetch
	// returns the page text itself.
	AskModel func(ctx context.Context, system, prompt string, maxTokens int) (string, error)
	// Todos, when set, keeps the session's todo list (TodoWrite); nil
	// keeps none (the call still succeeds).
	Todos *TodoList
	// Hidden, when set, reports whether Glob and Grep leave out the file or
	// directory at path (absolute; a link's own path for a link): the
	// permission rules deny reading it, so a search of the directory
	// around it must not read it either. Nil hides nothing.
	Hidden func(path string) bool
}

// Approval describes a write waiting for permission.
type Approval struct {
	Tool string
	// Path is the canonical absolute path; Rel the workspace-relative one.
	Path, Rel string
	IsNew     bool
	Diff      *protocol.FileDiff
}

// FileHistory keeps the content a write replaces, so it can be restored.
type FileHistory interface {
	Track(ctx context.Context, path string, old []byte, existed bool) error
}

// WriteHistory is a FileHistory that also wants the content a tracked
// write left (a session's undo journal records the after-hash with the
// change). Written is called once the write happened; its error cannot
// undo the write and is ignored.
type WriteHistory interface {
	FileHistory
	Written(ctx context.Context, path string, data []byte) error
}

// TokenCounter counts the tokens of a text as the session's model would.
type TokenCounter interface {
	CountTokens(ctx context.Context, text string) (int, error)
}

// Limits are the tunable bounds of the tools, with DefaultLimits.
type Limits struct {
	// MaxReadTokens is the token gate of Read (25,000).
	MaxReadTokens int
	// DefaultReadLines is how many lines Read returns without a limit (2,000).
	DefaultReadLines int
	// MaxLineRunes cuts longer lines in Read's output, with a marker (2,000).
	MaxLineRunes int
	// MaxPDFPagesPerCall is the most pages one Read returns (20).
	MaxPDFPagesPerCall int
	// PDFPagesRequiredAbove: past this many pages, Read needs `pages` (10).
	PDFPagesRequiredAbove int
	// MaxImageDimension bounds the longer side of a returned image (2,000 px).
	MaxImageDimension int
	// MaxNotebookOutputRunes caps each notebook cell's rendered outputs.
	MaxNotebookOutputRunes int
	// MaxGrepResults caps Grep's result lines (and Glob's paths).
	MaxSearchResults int
}

// DefaultLimits returns the documented defaults.
func DefaultLimits() Limits {
	return Limits{
		MaxReadTokens:          25000,
		DefaultReadLines:       2000,
		MaxLineRunes:           2000,
		MaxPDFPagesPerCall:     20,
		PDFPagesRequiredAbove:  10,
		MaxImageDimension:      2000,
		MaxNotebookOutputRunes: 10000,
		MaxSearchResults:       1000,
	}
}

// Block is one piece of a tool result: text, an image or a document.
type Block struct {
	// Type is "text", "image" or "document".
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	// MediaType and Data (base64) for image and document blocks.
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
}

// Result is a successful tool call's output.
type Result struct {
	Blocks []Block
	// Path is the canonical path the call read or wrote, if one.
	Path string
	// Rel is Path relative to its root, for display.
	Rel string
	// Diff is the change a Write or Edit made.
	Diff *protocol.FileDiff
	// Changed is true when the call wrote to the file system.
	Changed bool
}

// Text is a convenience for a one-block text result.
func Text(s string) []Block { return []Block{{Type: "text", Text: s}} }

type toolUseKey struct{}

// WithToolUseID puts the tool-use id of the call into ctx; the one place
// that invokes tools does this, so decorators (artifacts) can read it.
func WithToolUseID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, toolUseKey{}, id)
}

// ToolUseID returns the tool-use id of the running call, or "".
func ToolUseID(ctx context.Context) string {
	id, _ := ctx.Value(toolUseKey{}).(string)
	return id
}

// withDefaults fills the zero fields of l from DefaultLimits, so an Env
// built without Limits still works.
func withDefaults(l Limits) Limits {
	d := DefaultLimits()
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&l.MaxReadTokens, d.MaxReadTokens)
	set(&l.DefaultReadLines, d.DefaultReadLines)
	set(&l.MaxLineRunes, d.MaxLineRunes)
	set(&l.MaxPDFPagesPerCall, d.MaxPDFPagesPerCall)
	set(&l.PDFPagesRequiredAbove, d.PDFPagesRequiredAbove)
	set(&l.MaxImageDimension, d.MaxImageDimension)
	set(&l.MaxNotebookOutputRunes, d.MaxNotebookOutputRunes)
	set(&l.MaxSearchResults, d.MaxSearchResults)
	return l
}
