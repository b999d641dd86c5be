package client

import (
	"context"

	"github.com/ferry-dev/ferry/internal/ship"
	"github.com/ferry-dev/ferry/protocol"
)

// proposeMessage is what `ferry run --worktree` commits with, shared.
func proposeMessage(prompts []string, answer string) string {
	return ship.ProposeMessage(prompts, answer)
}

// ship answers control.worktree.ship: commit, merge into the base, push,
// pull request (internal/ship), then session.worktree.shipped (stored)
// and the status. A failure answers the step's coded error, preceded by
// session.worktree.conflict for merge_conflict and base_dirty; what was
// done before it (a commit, a merge) shows in the status sent after.
func (s *session) ship(ctx context.Context, m *protocol.Message, p *protocol.WorktreeShip) {
	cfg := s.c.cfg
	res, err := ship.Ship(ctx, s.iso.wt, ship.Options{
		Message: p.Message, Strategy: p.Strategy, Push: p.Push || p.PullRequest, Remote: p.Remote, PullRequest: p.PullRequest,
		Forge: cfg.Forge, Token: cfg.ForgeToken, TokenSource: cfg.ForgeTokenSource, HTTPClient: cfg.ForgeHTTPClient, Logger: s.c.log,
	})
	if err != nil {
		s.conflict(m, err)
		s.c.refuse(nil, m, s.c.wireError("ship", err))
		s.sendStatus(ctx, nil)
		return
	}
	r := protocol.ShipResult{Commit: res.Commit, Strategy: res.Strategy, Merged: res.Merged, MergeCommit: res.MergeCommit,
		Pushed: res.Pushed, Remote: res.Remote, PRURL: res.PRURL, CompareURL: res.CompareURL}
	s.iso.mu.Lock()
	s.iso.b.Shipped = &r
	s.iso.b.ShippedHead = branchHead(ctx, s.iso.wt)
	s.iso.mu.Unlock()
	if err := s.iso.save(s.c); err != nil {
		s.c.log.Error("save worktree binding", "session", s.id, "err", err)
	}
	if err := s.c.emit(s.c.stop, m.Reply(protocol.TypeWorktreeShipped, &protocol.WorktreeShipped{Result: r, Worktree: s.worktreeInfo(ctx)})); err != nil {
		s.c.log.Error("session.worktree.shipped", "session", s.id, "err", err)
	}
	s.sendStatus(ctx, nil)
}
