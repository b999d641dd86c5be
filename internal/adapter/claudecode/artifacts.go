package claudecode

import (
	"encoding/json"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/artifact"
	"github.com/ferry-dev/ferry/internal/runecut"
)

// With SessionConfig.Artifacts on, each Write, Edit, MultiEdit or
// NotebookEdit call whose tool_result is not an error hands over the file
// it names (file_path, or notebook_path): artifact.Register reads its size
// and type from disk when the result arrives, the turn emits
// agent.artifact with the call's tool_use id, and Result.Artifacts lists
// it (once per call that wrote it, in the order the results came). A file
// that cannot be handed over (outside the workspace, a directory, gone,
// hard-linked) is logged and skipped; the call and the turn go on. Files
// changed otherwise (Bash, a subprocess) are not seen.

// notePath remembers the file a recorded tool call names, for its result.
func (t *turn) notePath(b *contentBlock) {
	if !t.s.artifacts || !recordedTools[b.Name] {
		return
	}
	var in toolArgs
	if json.Unmarshal(b.Input, &in) != nil {
		return
	}
	name := in.FilePath
	if name == "" {
		name = in.NotebookPath
	}
	if name != "" {
		t.paths[b.ID] = name
	}
}

// handOver registers and emits the file a finished call wrote (ok: it
// succeeded).
func (t *turn) handOver(toolUseID string, ok bool) {
	name, had := t.paths[toolUseID]
	delete(t.paths, toolUseID)
	if !had || !ok || t.id == "" {
		return
	}
	// The id as agent.tool.started and agent.tool.finished carry it.
	f, err := artifact.Register(t.s.fs, name, runecut.Ellipsis(toolUseID, 256))
	if err != nil {
		t.log.Warn("claudecode: file not handed over as an artifact", "tool_use_id", toolUseID, "err", err)
		return
	}
	t.artifacts = append(t.artifacts, f)
	if t.emit == nil || t.stopped.Load() {
		return
	}
	if err := adapter.EmitArtifact(t.ctx, t.emit, t.id, f); err != nil {
		t.log.Warn("claudecode: agent.artifact not sent", "tool_use_id", toolUseID, "err", err)
	}
}
