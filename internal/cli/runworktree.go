package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ferry-dev/ferry/internal/ship"
	"github.com/ferry-dev/ferry/internal/worktree"
)

// runIsolation is ferry run --worktree: the worktree the turn runs in and
// what to commit after it.
type runIsolation struct {
	wt       *worktree.Worktree
	root     string // the workspace inside the worktree
	noCommit bool
	prompt   string
}

// openRunWorktree finds the worktree ferry/NAME of the repository root is
// in, or makes it (from base, then running its .ferry/setup), and says
// where it is on standard error.
func openRunWorktree(ctx context.Context, env Env, getenv func(string) string, root, name, base string, setupTimeout time.Duration) (*runIsolation, error) {
	fail := func(err error) (*runIsolation, error) {
		return nil, fmt.Errorf("ferry run: --worktree %s: %w", name, err)
	}
	repo, err := worktree.Open(ctx, root)
	if err != nil {
		return fail(err)
	}
	wtRoot, err := worktreesRoot(getenv, "")
	if err != nil {
		return fail(err)
	}
	wt, err := repo.Find(ctx, wtRoot, name)
	created := false
	switch {
	case worktree.HasCode(err, worktree.CodeNotFound):
		if wt, err = repo.Create(ctx, worktree.Options{Name: name, Base: base, Root: wtRoot}); err != nil {
			return fail(err)
		}
		created = true
	case err != nil:
		return fail(err)
	case wt.Missing:
		return fail(fmt.Errorf("its folder %s was removed; its branch %s is kept: delete the branch (git branch -D %s) or use another name", wt.Path, wt.Branch, wt.Branch))
	case base != "" && base != wt.Base:
		return nil, usageErrorf("ferry run: --worktree %s exists and started from %s, not --base %s: drop --base, or use another name", name, wt.Base, base)
	}
	verb := "reusing"
	if created {
		verb = "created"
	}
	fmt.Fprintf(env.Stderr, "ferry run: %s worktree %s (branch %s, from %s)\n", verb, wt.Path, wt.Branch, wt.Base)
	if created {
		if ran, err := wt.Setup(ctx, env.Stderr, setupTimeout); err != nil {
			// Reused later, a half set-up worktree would run the next
			// turn without its setup: it goes, and the repository is as
			// it was.
			return fail(undoCreate(ctx, wt, err))
		} else if ran {
			fmt.Fprintf(env.Stderr, "ferry run: %s done\n", worktree.SetupScript)
		}
	}
	// The same folder of the repository, in the worktree.
	rel, err := filepath.Rel(repo.Top, root)
	if err != nil || strings.HasPrefix(rel, "..") {
		rel = "."
	}
	in := filepath.Join(wt.Path, rel)
	if fi, err := os.Stat(in); err != nil || !fi.IsDir() {
		err := usageErrorf("ferry run: --workspace %s: the folder %s is not in branch %s (is it untracked?): pick a folder the branch has", root, rel, wt.Branch)
		if created {
			err = undoCreate(ctx, wt, err)
		}
		return nil, err
	}
	return &runIsolation{wt: wt, root: in}, nil
}

// undoCreate removes a worktree ferry run has just made and cannot use
// (its setup failed, …), with its branch, so that the repository is as
// it was and the next run does not reuse it half made; it returns why.
func undoCreate(ctx context.Context, wt *worktree.Worktree, why error) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := wt.Remove(rctx, false); err != nil {
		return fmt.Errorf("%w; removing the new worktree %s failed too: %w", why, wt.Path, err)
	}
	return fmt.Errorf("%w; the new worktree was removed", why)
}

// runWorktreeResult is what ferry run --worktree adds to its json result.
type runWorktreeResult struct {
	Worktree string `json:"worktree"`
	Branch   string `json:"branch"`
	Base     string `json:"base"`
	Path     string `json:"worktree_path"`
	// Commit is the commit the turn's changes went into ("" when none
	// was made: no change, --no-commit, a failed turn).
	Commit string `json:"commit,omitempty"`
}

// commit commits what the turn changed (unless --no-commit or the turn
// failed: then the prompt and answer are kept for the next commit's
// message, see proposal) and says so on standard error. It runs before
// the result is written, which carries the commit. A nil receiver (no
// --worktree) does nothing.
func (iso *runIsolation) commit(ctx context.Context, env Env, final string, failed bool) (*runWorktreeResult, error) {
	if iso == nil {
		return nil, nil
	}
	wt := iso.wt
	r := &runWorktreeResult{Worktree: wt.Name, Branch: wt.Branch, Base: wt.Base, Path: wt.Path}
	if failed || iso.noCommit {
		if err := saveProposal(wt, iso.prompt, final); err != nil {
			fmt.Fprintf(env.Stderr, "ferry run: cannot keep the prompt for the commit message: %v\n", err)
		}
		if failed {
			fmt.Fprintf(env.Stderr, "ferry run: the turn failed; what it changed is left uncommitted in %s (branch %s)\n", wt.Path, wt.Branch)
		} else {
			fmt.Fprintf(env.Stderr, "ferry run: --no-commit: changes left uncommitted in %s (branch %s)\n", wt.Path, wt.Branch)
		}
		return r, nil
	}
	// Changes earlier runs left uncommitted go into this commit too: so
	// do their prompts.
	prompts, _ := loadProposal(wt)
	sha, err := wt.Commit(ctx, ship.ProposeMessage(append(prompts.Prompts, iso.prompt), final))
	switch {
	case worktree.HasCode(err, worktree.CodeNothingToCommit):
		fmt.Fprintf(env.Stderr, "ferry run: no file changed; nothing committed on %s (%s)\n", wt.Branch, wt.Path)
		return r, nil
	case err != nil:
		return r, fmt.Errorf("commit on %s: %w", wt.Branch, err)
	}
	clearProposal(wt)
	r.Commit = sha
	fmt.Fprintf(env.Stderr, "ferry run: committed %s on %s (%s)\n", sha[:min(len(sha), 12)], wt.Branch, wt.Path)
	return r, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}
