// Package editorlink holds what an editor attached to a session lends that
// session's agent: its view of files (unsaved buffers included), its
// terminals, and the MCP servers it configured. `ferry acp` registers
// them when an editor (an ACP client) opens or loads a session; ferry's
// agent asks the Registry at each tool call, so a session the editor
// attached after the agent opened it still gets them.
//
// Guarantees: the Registry is safe for concurrent use; a session with
// nothing registered (or whose editor went away: Delete) gets nothing, and
// its agent uses ferry's own tools. What is lent is only ever used for the
// session it was registered for.
package editorlink

import (
	"context"
	"slices"
	"sync"

	"github.com/ferry-dev/ferry/internal/mcpclient"
)

// Files is the editor's file system: ACP's fs/read_text_file and
// fs/write_text_file. Paths are absolute.
type Files interface {
	// ReadTextFile returns the file's text as the editor sees it: its
	// unsaved buffer when the file is open there, else the file on disk.
	// An error wrapping fs.ErrNotExist says the editor has no such file
	// (ACP's resource-not-found): ferry then reads its disk; any other
	// error is reported to the agent (internal/vfs/overlay).
	ReadTextFile(ctx context.Context, path string) (string, error)
	// WriteTextFile replaces the file's text through the editor.
	WriteTextFile(ctx context.Context, path, content string) error
}

// Command is a command to run in an editor terminal (ACP's
// terminal/create).
type Command struct {
	Command string
	Args    []string
	Env     map[string]string
	// Cwd is absolute; "" is the session's workspace.
	Cwd string
	// OutputByteLimit bounds what the terminal keeps (the start is
	// dropped first); 0: the editor's default.
	OutputByteLimit int
}

// Exit is how a terminal's command ended.
type Exit struct {
	// Code is the exit code; nil when a signal ended it.
	Code *int
	// Signal names the signal that ended it ("" when it exited).
	Signal string
}

// Terminals runs commands in the editor's terminals (ACP's terminal/*).
type Terminals interface {
	// Run runs cmd in a new terminal until it exits or ctx ends (then the
	// command is killed), releases the terminal, and returns what the
	// terminal kept of its output; truncated reports that the start was
	// dropped. The tool call it runs for is tools.ToolUseID(ctx).
	Run(ctx context.Context, cmd Command) (output string, truncated bool, exit Exit, err error)
}

// Lent is what an editor lends one session; a nil field is not lent.
type Lent struct {
	Files      Files
	Terminals  Terminals
	MCPServers []mcpclient.Server
}

// Registry maps session IDs to what their editor lends.
type Registry struct {
	mu sync.Mutex
	m  map[string]Lent
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry { return &Registry{m: map[string]Lent{}} }

// Set registers what the editor of sessionID lends, replacing what was.
func (r *Registry) Set(sessionID string, l Lent) {
	l.MCPServers = slices.Clone(l.MCPServers)
	r.mu.Lock()
	r.m[sessionID] = l
	r.mu.Unlock()
}

// Get returns what the editor of sessionID lends; ok is false when nothing
// is registered. A nil Registry lends nothing.
func (r *Registry) Get(sessionID string) (l Lent, ok bool) {
	if r == nil {
		return Lent{}, false
	}
	r.mu.Lock()
	l, ok = r.m[sessionID]
	r.mu.Unlock()
	l.MCPServers = slices.Clone(l.MCPServers)
	return l, ok
}

// Delete forgets sessionID: its agent goes back to ferry's own tools.
func (r *Registry) Delete(sessionID string) {
	r.mu.Lock()
	delete(r.m, sessionID)
	r.mu.Unlock()
}
