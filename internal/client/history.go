package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/filehistory"
	"github.com/ferry-dev/ferry/internal/vfs"
	"github.com/ferry-dev/ferry/protocol"
)

// This file is the session's file history: every file change its agent
// makes is recorded in a filehistory.Journal under the state directory
// (history/<session>/), bounded by Config.HistoryQuota, and the UI's
// control.history.* messages undo one change, every change to one file, or
// rewind the files (and, for ferry's own agent, the conversation) to before
// a turn. Restores write through the session's own vfs (confined, atomic,
// under the per-file write lock) and are refused, changing nothing, when a
// file changed since the agent's edit, is now reached through a symbolic
// link or is another file than the one the agent left: the error
// (file_changed) names it.

// maxChangesDiffBytes bounds the diffs of one session.history.changes;
// past it the remaining files are listed without a diff.
const maxChangesDiffBytes = 3 << 20

// openHistory opens the session's journal and the vfs restores write
// through; errors leave the session without a history (logged).
func (s *session) openHistory() adapter.History {
	fsys, err := vfs.NewLocal(s.ws.Path)
	if err != nil {
		s.c.log.Error("file history: open the workspace", "session", s.id, "err", err)
		return nil
	}
	j, err := filehistory.OpenJournal(filehistory.JournalDir(s.c.cfg.StateDir, s.id), s.id, fsys.Roots()[0], s.c.cfg.HistoryQuota)
	if err != nil {
		_ = fsys.Close()
		s.c.log.Error("file history: open the journal", "session", s.id, "err", err)
		return nil
	}
	s.hist, s.hfs = j, fsys
	return j
}

// closeHistory releases what openHistory opened.
func (s *session) closeHistory() error {
	var errs []error
	if s.hist != nil {
		errs = append(errs, s.hist.Close())
	}
	if s.hfs != nil {
		errs = append(errs, s.hfs.Close())
	}
	return errors.Join(errs...)
}

// beginTurnHistory marks a turn's start in the journal.
func (s *session) beginTurnHistory(turnID string) {
	if s.hist == nil {
		return
	}
	if err := s.hist.BeginTurn(turnID); err != nil {
		s.c.log.Error("file history: mark the turn", "session", s.id, "err", err)
	}
}

// handleHistory runs a control.history.* message on the session's worker.
func (s *session) handleHistory(m *protocol.Message) {
	if s.hist == nil {
		s.fail(m, protocol.CodeUnsupported, "type", "this session keeps no file history (the client's log says why)")
		return
	}
	if _, isList := m.Payload.(*protocol.HistoryList); isList {
		s.listChanges(m)
		return
	}
	if !s.idleOrRefuse(m, "the session runs a turn; undo or rewind after it ends (or cancel it)") {
		return
	}
	var (
		sel  filehistory.Selection
		done = &protocol.FilesRestored{Files: []protocol.RestoredFile{}}
	)
	switch p := m.Payload.(type) {
	case *protocol.HistoryUndo:
		if p.ToolUseID != "" {
			sel.Call, done.Kind, done.ToolUseID = p.ToolUseID, protocol.RestoreUndo, p.ToolUseID
		} else {
			sel.Rel, done.Kind, done.Path = filepath.ToSlash(filepath.Clean(p.Path)), protocol.RestoreFile, p.Path
		}
	case *protocol.HistoryRewind:
		sel.Turn, done.Kind, done.TurnID = p.TurnID, protocol.RestoreRewind, p.TurnID
	}
	restored, err := s.hist.Restore(s.c.stop, s.hfs, sel)
	if err != nil {
		s.failRestore(m, sel, err)
		return
	}
	for _, r := range restored {
		done.Files = append(done.Files, protocol.RestoredFile{Path: r.Rel, Deleted: r.Deleted})
	}
	if sel.Turn != "" {
		done.Conversation, done.ConversationNote = s.rewindConversation(sel.Turn)
	}
	if err := s.c.emit(s.c.stop, m.Reply(protocol.TypeFilesRestored, done)); err != nil {
		s.c.log.Error("agent.files.restored", "session", s.id, "err", err)
	}
}

// rewindConversation takes the agent's conversation back to before turnID
// where the adapter can, and says what happened.
func (s *session) rewindConversation(turnID string) (outcome, note string) {
	rw, ok := s.sess.(adapter.ConversationRewinder)
	if caps := s.capabilities(); !ok || !caps.RewindConversation {
		return protocol.ConversationNotRewound, fmt.Sprintf("files rewound; the agent's conversation was not: %s keeps its own conversation, which ferry cannot rewind", caps.Name)
	}
	if err := rw.RewindConversation(turnID); err != nil {
		s.c.log.Info("conversation not rewound", "session", s.id, "turn", turnID, "err", err)
		return protocol.ConversationNotRewound, "files rewound; the agent's conversation was not: it no longer holds that turn (compacted, cleared, or cut to fit the saved conversation's size bound)"
	}
	return protocol.ConversationRewound, ""
}

// failRestore answers a refused undo or rewind with a coded error whose
// message names the file at fault.
func (s *session) failRestore(m *protocol.Message, sel filehistory.Selection, err error) {
	field := "payload.tool_use_id"
	switch {
	case sel.Rel != "":
		field = "payload.path"
	case sel.Turn != "":
		field = "payload.turn_id"
	}
	var ce *filehistory.ConflictError
	switch {
	case errors.As(err, &ce) && ce.Later:
		s.fail(m, protocol.CodeFileChanged, field, fmt.Sprintf("%s was changed again by a later edit of the agent; undo that edit first. Nothing was restored.", ce.Rel))
	case errors.As(err, &ce) && (ce.Link || ce.Replaced):
		s.fail(m, protocol.CodeFileChanged, field, ce.Error()+"; nothing was restored. Undo it by hand.")
	case errors.As(err, &ce):
		s.fail(m, protocol.CodeFileChanged, field, fmt.Sprintf("%s changed since the agent's edit; nothing was restored, so the change is kept. Undo it by hand, or put the file back as the agent left it first.", ce.Rel))
	case errors.Is(err, filehistory.ErrUndone):
		s.fail(m, protocol.CodeInvalidValue, field, "that change was undone already")
	case errors.Is(err, filehistory.ErrDropped):
		s.fail(m, protocol.CodeNotFound, field, "that change is no longer kept: the file history's size quota dropped it; nothing was restored")
	case errors.Is(err, filehistory.ErrUnknownTurn):
		s.fail(m, protocol.CodeNotFound, field, "the file history has no such turn")
	case errors.Is(err, filehistory.ErrNoChange):
		s.fail(m, protocol.CodeNotFound, field, "the file history has no change that matches")
	case errors.Is(err, vfs.ErrPermission):
		s.fail(m, protocol.CodeInvalidValue, field, "a file to restore is read-only; nothing was restored")
	default:
		s.failWith(m, "restore files", err)
	}
}

// listChanges answers control.history.list with session.history.changes.
func (s *session) listChanges(m *protocol.Message) {
	files, err := s.hist.Changes(s.hfs)
	if err != nil {
		s.failWith(m, "list the file history", err)
		return
	}
	out := &protocol.HistoryChanges{Files: make([]protocol.ChangedFile, 0, len(files)), Dropped: s.hist.Dropped()}
	budget := maxChangesDiffBytes
	for _, f := range files {
		cf := protocol.ChangedFile{Path: f.Rel, ToolUseIDs: f.Calls, TurnIDs: f.Turns, Created: f.Created, Modified: f.Modified}
		if b, err := json.Marshal(f.Diff); err == nil && len(b) <= budget {
			cf.Diff = f.Diff
			budget -= len(b)
		}
		out.Files = append(out.Files, cf)
	}
	s.c.sendDirect(m.Reply(protocol.TypeHistoryChanges, out))
}
