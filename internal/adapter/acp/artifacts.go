package acp

import (
	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/artifact"
	"github.com/ferry-dev/ferry/internal/runecut"
)

// Artifacts (SessionConfig.Artifacts): the files the agent writes are
// handed over as agent.artifact and listed in the turn's Result.Artifacts.
// ferry sees two kinds of writes: its own fs/write_text_file (registered
// once the write succeeded) and tool calls of kind edit the agent reports
// completed with locations (each location registered when the call
// completes). A file is registered once per tool call: an fs write that
// belongs to a call and that call's completion name the same file.

// handOver registers name, written by tool call callID ("" when no call
// claims the write), as an artifact of ts and emits it. Off, outside a turn
// or for a file Register refuses, nothing happens (a refusal is logged);
// the write itself is never failed. Called on the dispatcher.
func (s *session) handOver(ts *turnState, callID, name string) {
	if !s.artifacts || ts == nil {
		return
	}
	callID = runecut.Prefix(callID, 256)
	f, err := artifact.Register(s.fs, name, callID)
	if err != nil {
		s.log.Info("acp: a written file is not handed over", "path", s.shown(name), "err", err)
		return
	}
	if callID != "" {
		key := callID + "\x00" + f.Path()
		if ts.handed[key] {
			return
		}
		if ts.handed == nil {
			ts.handed = map[string]bool{}
		}
		ts.handed[key] = true
	}
	ts.artifacts = append(ts.artifacts, f)
	if err := adapter.EmitArtifact(ts.ctx, ts.send, ts.id, f); err != nil {
		s.log.Warn("acp: agent.artifact not delivered", "path", f.Path(), "err", err)
	}
}
