package claudecode

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"

	"github.com/ferry-dev/ferry/internal/vfs"
)

// Claude Code writes files with its own tools, so ferry records their
// changes after the fact, for undo (adapter.History):
//
//   - before: the file as ferry's PreToolUse hook saw it (raw bytes, read
//     through the session's confined vfs), unless the call's result says
//     Claude Code replaced something else (its originalFile differs: the
//     file changed between the hook and the write, e.g. while a permission
//     was asked), in which case originalFile is what was replaced. A call
//     whose result says it created the file had no before.
//   - after: the file as it is when Claude Code reports the call finished.
//
// What cannot be captured: Bash commands and other tools that change files
// (only Write, Edit, MultiEdit and NotebookEdit are recorded), files outside
// the workspace, files over maxHistoryFile, and a change someone else makes
// between the write and ferry reading the result (it would be recorded as
// the agent's).

// maxHistoryFile bounds a file read to record a change.
const maxHistoryFile = 64 << 20

// maxSnapshots bounds the snapshots waiting for their call's result.
const maxSnapshots = 64

// recordedTools are the Claude Code tools whose changes are recorded.
var recordedTools = map[string]bool{"Write": true, "Edit": true, "MultiEdit": true, "NotebookEdit": true}

// snapshot is a file as a call's PreToolUse hook saw it.
type snapshot struct {
	path    string // canonical
	data    []byte
	existed bool
}

// snapshotBefore keeps the file a recorded tool is about to change.
func (s *session) snapshotBefore(tool string, input json.RawMessage, toolUseID string) {
	if s.history == nil || !recordedTools[tool] || toolUseID == "" {
		return
	}
	var in toolArgs
	if json.Unmarshal(input, &in) != nil {
		return
	}
	name := in.FilePath
	if name == "" {
		name = in.NotebookPath
	}
	if name == "" {
		return
	}
	path, data, existed, ok := s.readWhole(name)
	if !ok {
		return
	}
	s.mu.Lock()
	if len(s.before) >= maxSnapshots {
		// Calls that never reported a result (an interrupted turn): their
		// snapshots are of no use any more.
		clear(s.before)
	}
	s.before[toolUseID] = snapshot{path: path, data: data, existed: existed}
	s.mu.Unlock()
}

// recordChange records a finished call's change (ok: it succeeded).
func (s *session) recordChange(ctx context.Context, toolUseID, tool string, ok bool, r *toolUseResult) {
	if s.history == nil {
		return
	}
	s.mu.Lock()
	snap, had := s.before[toolUseID]
	delete(s.before, toolUseID)
	s.mu.Unlock()
	if !had || !ok {
		return
	}
	before, existed := snap.data, snap.existed
	switch {
	case r != nil && r.Type == "create":
		before, existed = nil, false
	case r != nil && r.OriginalFile != nil && *r.OriginalFile != string(snap.data):
		before, existed = []byte(*r.OriginalFile), true
	}
	_, after, exists, readOK := s.readWhole(snap.path)
	if !readOK || !exists {
		return
	}
	if existed && string(before) == string(after) {
		return // nothing changed
	}
	if err := s.history.Record(context.WithoutCancel(ctx), toolUseID, tool, snap.path, before, existed, after); err != nil {
		s.log.Warn("claudecode: cannot record a file change for undo", "tool_use_id", toolUseID, "err", err)
	}
}

// readWhole reads a workspace file through the confined vfs: its canonical
// path, content, whether it exists; ok false when it cannot or should not
// be read (outside the workspace, not regular, too large).
func (s *session) readWhole(name string) (path string, data []byte, exists, ok bool) {
	p, err := s.fs.Resolve(name)
	if err != nil {
		return "", nil, false, false
	}
	f, err := s.fs.Open(p)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, vfs.ErrNotExist) {
		return p, nil, false, true
	}
	if err != nil {
		return "", nil, false, false
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, maxHistoryFile+1))
	if err != nil || len(b) > maxHistoryFile {
		return "", nil, false, false
	}
	return p, b, true, true
}
