package client

import (
	"bytes"
	"context"
	"errors"
	"os"

	"github.com/ferry-dev/ferry/internal/worktree"
	"github.com/ferry-dev/ferry/protocol"
)

// handleWorktree runs a control.worktree.* message on the session's
// worker. Steps that change the worktree or its branch wait for no turn
// to run (busy otherwise): the agent must not edit files under a commit,
// merge or removal.
func (s *session) handleWorktree(m *protocol.Message) {
	if s.iso == nil {
		s.fail(m, protocol.CodeNotIsolated, "session_id", "the session is not isolated: it has no worktree")
		return
	}
	ctx := s.c.stop
	switch p := m.Payload.(type) {
	case *protocol.WorktreeStatusRequest:
		s.sendStatus(ctx, m)
	case *protocol.WorktreeDiffRequest:
		s.worktreeDiff(ctx, m)
	case *protocol.WorktreePropose:
		s.propose(m)
	case *protocol.WorktreeShip:
		if s.idleOrRefuse(m, "the session runs a turn; ship after it ends (or cancel it)") && s.present(m) {
			s.ship(ctx, m, p)
		}
	case *protocol.WorktreeUpdate:
		if s.idleOrRefuse(m, "the session runs a turn; update after it ends (or cancel it)") && s.present(m) {
			s.update(ctx, m)
		}
	case *protocol.WorktreeAbortUpdate:
		if s.idleOrRefuse(m, "the session runs a turn") && s.present(m) {
			if err := s.iso.wt.AbortUpdate(ctx); err != nil {
				s.c.refuse(nil, m, s.c.wireError("abort the update", err))
				return
			}
			s.sendStatus(ctx, m)
		}
	case *protocol.WorktreeTest:
		if s.idleOrRefuse(m, "the session runs a turn; test after it ends (or cancel it)") && s.present(m) {
			s.test(ctx, m)
		}
	case *protocol.WorktreeRemove:
		if s.idleOrRefuse(m, "the session runs a turn; cancel it first") {
			s.removeWorktree(ctx, m, p)
		}
	}
}

// present refuses m with worktree_missing when the worktree's folder is
// gone (removed by hand).
func (s *session) present(m *protocol.Message) bool {
	if _, err := os.Stat(s.iso.wt.Path); err != nil {
		s.fail(m, protocol.CodeWorktreeMissing, "", "the worktree's folder "+s.iso.wt.Path+" is gone (removed by hand); its branch "+s.iso.wt.Branch+" is kept")
		return false
	}
	return true
}

// worktreeDiff answers control.worktree.diff: every file of the branch
// against its merge base, the patches bounded so the answer fits.
func (s *session) worktreeDiff(ctx context.Context, m *protocol.Message) {
	if !s.present(m) {
		return
	}
	files, err := s.iso.wt.Diff(ctx)
	if err != nil {
		s.c.refuse(nil, m, s.c.wireError("diff the worktree", err))
		return
	}
	out := &protocol.WorktreeDiff{Files: make([]protocol.BranchFileDiff, 0, len(files)), Counts: s.worktreeInfo(ctx)}
	budget := maxDiffPatchBytes
	for _, f := range files {
		d := protocol.BranchFileDiff{Path: f.Path, OldPath: f.OldPath, Status: diffStatus(f.Status), Added: f.Added, Removed: f.Deleted,
			Binary: f.Binary, Patch: string(bytes.ToValidUTF8([]byte(f.Patch), []byte("\uFFFD"))), Truncated: f.Truncated}
		if len(d.Patch) > budget {
			d.Patch, d.Truncated, out.Truncated = "", true, true
		}
		budget -= len(d.Patch)
		out.Files = append(out.Files, d)
	}
	s.c.sendDirect(m.Reply(protocol.TypeWorktreeDiffAnswer, out))
}

// diffStatus names the git layer's statuses as the protocol does.
func diffStatus(st string) string {
	switch st {
	case "typechange":
		return "type_changed"
	case "added", "modified", "deleted", "renamed", "copied":
		return st
	}
	return "modified"
}

// update answers control.worktree.update: the base merged into the
// worktree, or the files left with conflict markers.
func (s *session) update(ctx context.Context, m *protocol.Message) {
	_, err := s.iso.wt.UpdateFromBase(ctx)
	if err != nil {
		if s.conflict(m, err) {
			s.sendStatus(ctx, nil)
			return
		}
		s.c.refuse(nil, m, s.c.wireError("update from the base", err))
		return
	}
	s.sendStatus(ctx, m)
}

// conflict answers m with session.worktree.conflict when err is a
// merge_conflict or base_dirty naming files, and reports whether it did.
func (s *session) conflict(m *protocol.Message, err error) bool {
	var we *worktree.Error
	if !errors.As(err, &we) || we.Code != worktree.CodeMergeConflict && we.Code != worktree.CodeBaseDirty {
		return false
	}
	files := we.Files
	if files == nil {
		files = []string{}
	}
	s.c.sendDirect(m.Reply(protocol.TypeWorktreeConflict, &protocol.WorktreeConflict{Files: files, Base: s.iso.wt.Base, Code: we.Code}))
	return true
}

// test answers control.worktree.test with session.worktree.tested
// (stored), then the worktree's status.
func (s *session) test(ctx context.Context, m *protocol.Message) {
	out := &tailBuffer{n: protocol.MaxWorktreeOutput}
	ran, err := s.iso.wt.Test(ctx, out, 0)
	res := &protocol.WorktreeTested{Ran: ran, Passed: ran && err == nil, Output: string(bytes.ToValidUTF8(out.b, []byte("\uFFFD")))}
	if ran {
		res.ExitCode = exitCode(err)
	}
	if err != nil && !worktree.HasCode(err, worktree.CodeTestFailed) {
		s.c.refuse(nil, m, s.c.wireError("run .ferry/test", err))
		return
	}
	if err != nil && res.ExitCode == nil {
		// Not run (not executable): its message is the output.
		res.Output += s.c.wireError("run .ferry/test", err).Message
	}
	s.iso.mu.Lock()
	switch {
	case !ran:
		s.iso.b.Test = protocol.TestNone
	case res.Passed:
		s.iso.b.Test = protocol.TestPassed
	default:
		s.iso.b.Test = protocol.TestFailed
	}
	s.iso.mu.Unlock()
	if err := s.iso.save(s.c); err != nil {
		s.c.log.Error("save worktree binding", "session", s.id, "err", err)
	}
	if err := s.c.emit(s.c.stop, m.Reply(protocol.TypeWorktreeTested, res)); err != nil {
		s.c.log.Error("session.worktree.tested", "session", s.id, "err", err)
	}
	s.sendStatus(ctx, nil)
}

// removeWorktree answers control.worktree.remove (the master's, before it
// archives or deletes the session): the worktree goes (the branch too
// unless keep_branch), the session's binding with it, and the session
// closes on this client; a later open of it answers worktree_missing.
func (s *session) removeWorktree(ctx context.Context, m *protocol.Message, p *protocol.WorktreeRemove) {
	wt := s.iso.wt
	if err := wt.Remove(ctx, p.KeepBranch); err != nil {
		s.c.refuse(nil, m, s.c.wireError("remove the worktree", err))
		return
	}
	if err := os.Remove(s.c.bindingPath(s.id)); err != nil && !os.IsNotExist(err) {
		s.c.log.Error("remove worktree binding", "session", s.id, "err", err)
	}
	s.c.sendDirect(m.Reply(protocol.TypeWorktreeRemoved, &protocol.WorktreeRemoved{Branch: wt.Branch, BranchKept: p.KeepBranch}))
	s.c.closeSession(s)
}

// propose answers control.worktree.propose with a commit message made of
// the session's prompts and its agent's last answer.
func (s *session) propose(m *protocol.Message) {
	s.iso.mu.Lock()
	prompts, answer := append([]string(nil), s.iso.b.Prompts...), s.iso.b.Answer
	s.iso.mu.Unlock()
	msg := proposeMessage(prompts, answer)
	if msg == "" {
		msg = "ferry: changes of " + s.iso.wt.Branch
	}
	s.c.sendDirect(m.Reply(protocol.TypeWorktreeProposal, &protocol.WorktreeProposal{Message: msg}))
}

// tailBuffer keeps the last n bytes written to it.
type tailBuffer struct {
	n int
	b []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = keepTail(append(t.b, p...), t.n)
	return len(p), nil
}
