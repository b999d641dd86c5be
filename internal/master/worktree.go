package master

// Isolated sessions (issue 34) on the master's side: the isolation a
// session was started with is kept in its snapshot and sent again with
// every control.session.open (the worktree's name once the client made
// it); SessionInfo.worktree follows session.opened,
// session.worktree.status and session.worktree.shipped; control.worktree.*
// go to the client like control.history.*; and archiving or deleting an
// isolated session has its client remove the worktree first.

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

func cloneWorktree(w *protocol.Worktree) *protocol.Worktree {
	if w == nil {
		return nil
	}
	c := *w
	if w.Shipped != nil {
		sh := *w.Shipped
		c.Shipped = &sh
	}
	return &c
}

// isolation is the frame's isolation for the control.session.open sent
// ahead of its message (nil: not isolated).
func (f *controlFrame) isolation() *protocol.Isolation {
	if f.Isolation == "" {
		return nil
	}
	var iso protocol.Isolation
	if err := json.Unmarshal([]byte(f.Isolation), &iso); err != nil {
		return nil
	}
	return &iso
}

// storedExtras are the worktree and usage totals a stored snapshot holds
// (session lists read the rows, not the live state).
func storedExtras(snapshot []byte) (*protocol.Worktree, *protocol.UsageTotals) {
	if len(snapshot) == 0 {
		return nil, nil
	}
	var snap struct {
		Session struct {
			Worktree *protocol.Worktree    `json:"worktree"`
			Usage    *protocol.UsageTotals `json:"usage"`
		} `json:"session"`
	}
	if json.Unmarshal(snapshot, &snap) != nil {
		return nil, nil
	}
	return snap.Session.Worktree, snap.Session.Usage
}

// dropFailedSession deletes a session whose isolated open the client
// refused: it never ran, and a refused start leaves nothing behind.
func (m *Master) dropFailedSession(s *session) {
	ctx := context.WithoutCancel(m.ctx)
	if err := m.st.DeleteSession(ctx, s.id); err != nil && !errors.Is(err, store.ErrNotFound) {
		m.log.Error("delete a session whose isolated open failed", "session", s.id, "err", err)
		return
	}
	m.forgetSession(s.id)
}

// errUnshipped refuses to archive or delete an isolated session whose
// worktree has work that is nowhere else.
var errUnshipped = &protocol.Error{Code: protocol.CodeUnshippedChanges, Field: "payload.discard",
	Message: "the session's worktree has unshipped changes (commits not in its base, or uncommitted files): ship them first, or set discard to drop them"}

// releaseWorktree is what archiving or deleting an isolated session does
// first: refuse when its worktree has unshipped changes and discard is
// not set, refuse when its machine is offline (machine_offline: the
// worktree cannot be removed now), else have the client remove it (the
// branch too when deleteBranch) and wait for the answer. A session that
// is not isolated, never got a worktree, or whose worktree is missing
// needs nothing. The worktree is then reported missing.
func (m *Master) releaseWorktree(ctx context.Context, s *session, discard, deleteBranch bool) *protocol.Error {
	s.mu.Lock()
	w := cloneWorktree(s.worktree)
	s.mu.Unlock()
	if w == nil || w.Missing {
		return nil
	}
	if w.Unshipped && !discard {
		return errUnshipped
	}
	if _, online := m.presence.online(s.machineID); !online {
		return &protocol.Error{Code: protocol.CodeMachineOffline, Field: "session_id",
			Message: "the session's machine is offline, so its worktree cannot be removed now: retry when the machine is back (the session is kept)"}
	}
	rm := protocol.New(protocol.TypeWorktreeRemove, &protocol.WorktreeRemove{KeepBranch: !deleteBranch})
	rm.SessionID = s.id
	replies, unsub, err := m.askClient(s, rm)
	if err != nil {
		return m.wireError(err, "subscribe to reply")
	}
	defer unsub()
	timer := time.NewTimer(openTimeout)
	defer timer.Stop()
	select {
	case b := <-replies:
		r, err := protocol.Decode(b)
		if err != nil {
			return m.wireError(err, "decode the client's answer")
		}
		if e, ok := r.Payload.(*protocol.Error); ok {
			// not_found: the client has no such session open and could
			// not open it (its worktree is gone): nothing to remove.
			if e.Code != protocol.CodeNotFound && e.Code != protocol.CodeWorktreeMissing {
				return e
			}
		}
	case <-timer.C:
		return &protocol.Error{Code: protocol.CodeMachineOffline, Field: "session_id",
			Message: "the session's machine did not remove the worktree in time; the session is kept"}
	case <-ctx.Done():
		return m.wireError(ctx.Err(), "remove worktree")
	case <-m.sweepStop: // shutting down: the session is kept
		return m.wireError(errClosing, "remove worktree")
	}
	s.mu.Lock()
	if s.worktree != nil {
		s.worktree.Missing, s.worktree.Unshipped = true, false
		s.changed = true
	}
	s.mu.Unlock()
	return nil
}

// isolated reports whether the session was started isolated.
func (s *session) isolated() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.isolation != nil || s.worktree != nil
}

// worktreeGone refuses what needs an isolated session's worktree once it
// is missing (removed by an archive, or by hand): re-opening the session
// would make nothing again silently. The session stays readable.
func (s *session) worktreeGone() *protocol.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.worktree; w != nil && w.Missing {
		return &protocol.Error{Code: protocol.CodeWorktreeMissing, Field: "session_id",
			Message: "the session's worktree is gone (archived, or its folder removed); its branch " + w.Branch + " may still hold the work: start a new session to go on"}
	}
	return nil
}

// dropEmptyWorktree has the client remove the worktree (and branch) of an
// isolated session deleted because it was never prompted: nothing of the
// agent's is in it. It runs in the background; when the machine is
// offline the worktree stays until removed by hand (ferry worktree
// remove) — logged.
func (m *Master) dropEmptyWorktree(s *session) {
	if s == nil || !s.isolated() {
		return
	}
	m.goBG(func() {
		if e := m.releaseWorktree(m.ctx, s, true, true); e != nil {
			m.log.Warn("the worktree of a deleted empty session stays on its machine", "session", s.id, "code", e.Code, "err", e.Message)
		}
	})
}

// addTurnUsageLocked adds an ended turn's last agent.usage to the
// session's totals. A turn that a master restart cut between its usage
// and its end is counted only if it reported usage again after.
func (s *session) addTurnUsageLocked(turnID string) {
	u, ok := s.turnUsage[turnID]
	if !ok {
		return
	}
	delete(s.turnUsage, turnID)
	s.usage.Turns++
	s.usage.InputTokens += u.InputTokens
	s.usage.OutputTokens += u.OutputTokens
	s.usage.CacheReadTokens += u.CacheReadTokens
	s.usage.CacheCreationTokens += u.CacheCreationTokens
	s.usage.CostUSD += u.CostUSD
}

// askClient sends msg (a control message of session s) to the session's
// client and returns the channel its first reply arrives on, raw, and
// what stops listening. Used by the waits that need the client's answer
// before they answer the UI: a session's open, a worktree's removal.
func (m *Master) askClient(s *session, msg *protocol.Message) (<-chan []byte, func(), error) {
	replies := make(chan []byte, 1)
	unsub, err := m.br.Subscribe(replyTopic(msg.MessageID), func(b []byte) {
		select {
		case replies <- b:
		default:
		}
	})
	if err != nil {
		return nil, nil, err
	}
	m.toClient(s, msg, replyTopic(msg.MessageID))
	return replies, unsub, nil
}
