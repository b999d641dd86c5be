package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ferry-dev/ferry/internal/runecut"
	"github.com/ferry-dev/ferry/internal/ship"
	"github.com/ferry-dev/ferry/internal/worktree"
)

// proposal is what ferry run --worktree keeps of the turns whose changes
// it left uncommitted (--no-commit, a failed turn), so that the commit
// that takes those changes (the next ferry run, or ferry ship --propose)
// names them. It lives in the worktree's own git folder
// (.git/worktrees/NAME), not in the checkout, and goes with the worktree.
type proposal struct {
	Prompts []string `json:"prompts"`
	// Answer is the last such turn's final answer.
	Answer string `json:"answer,omitempty"`
}

// Bounds of a kept proposal: the commit message is cut far shorter.
const (
	proposalFile    = "ferry-proposal.json"
	maxKeptPrompts  = 20
	maxKeptPrompt   = 4 << 10
	maxProposalFile = 1 << 20
)

// proposalPath is the proposal's file in the worktree's git folder, read
// from the worktree's .git file ("gitdir: PATH").
func proposalPath(wt *worktree.Worktree) (string, error) {
	b, err := os.ReadFile(filepath.Join(wt.Path, ".git")) //nolint:gosec // the worktree's own .git file
	if err != nil {
		return "", err
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok || dir == "" {
		return "", fmt.Errorf("%s/.git names no git folder", wt.Path)
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(wt.Path, dir)
	}
	return filepath.Join(dir, proposalFile), nil
}

// loadProposal is the kept proposal; empty when there is none.
func loadProposal(wt *worktree.Worktree) (proposal, error) {
	var p proposal
	path, err := proposalPath(wt)
	if err != nil {
		return p, err
	}
	f, err := os.Open(path) //nolint:gosec // in the worktree's git folder
	if errors.Is(err, os.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return p, err
	}
	defer func() { _ = f.Close() }()
	// A file cut at the limit does not decode: an error, not a shorter
	// proposal.
	if err := json.NewDecoder(io.LimitReader(f, maxProposalFile)).Decode(&p); err != nil {
		return proposal{}, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// saveProposal adds a turn's prompt (and its answer, which replaces the
// last one) to the kept proposal.
func saveProposal(wt *worktree.Worktree, prompt, answer string) error {
	p, err := loadProposal(wt)
	if err != nil {
		p = proposal{} // a damaged one is replaced
	}
	if strings.TrimSpace(prompt) != "" {
		p.Prompts = append(p.Prompts, runecut.Prefix(prompt, maxKeptPrompt))
	}
	if len(p.Prompts) > maxKeptPrompts {
		p.Prompts = p.Prompts[len(p.Prompts)-maxKeptPrompts:]
	}
	if strings.TrimSpace(answer) != "" {
		p.Answer = runecut.Prefix(answer, ship.MaxBody)
	}
	path, err := proposalPath(wt)
	if err != nil {
		return err
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// clearProposal drops the kept proposal once its changes are committed.
func clearProposal(wt *worktree.Worktree) {
	if path, err := proposalPath(wt); err == nil {
		_ = os.Remove(path)
	}
}

// proposeMessage is ferry ship --propose's commit message: from the
// prompts ferry run kept, else naming the files the branch changes.
func proposeMessage(ctx context.Context, wt *worktree.Worktree) (string, error) {
	if p, err := loadProposal(wt); err == nil && len(p.Prompts) > 0 {
		return ship.ProposeMessage(p.Prompts, p.Answer), nil
	}
	files, err := wt.Diff(ctx)
	if err != nil {
		return "", err
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f.Path))
	}
	subject := "Update " + wt.Branch
	switch n := len(names); {
	case n == 1:
		subject = "Update " + names[0]
	case n == 2 || n == 3:
		subject = "Update " + strings.Join(names[:n-1], ", ") + " and " + names[n-1]
	case n > 3:
		subject = fmt.Sprintf("Update %s, %s and %d more files", names[0], names[1], n-2)
	}
	var body strings.Builder
	for _, f := range files {
		fmt.Fprintf(&body, "- %s (%s, +%d -%d)\n", f.Path, f.Status, f.Added, f.Deleted)
	}
	return ship.ProposeMessage([]string{subject}, body.String()), nil
}
