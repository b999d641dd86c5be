package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Default identity of commits when git's config names none.
const (
	DefaultAuthorName  = "ferry"
	DefaultAuthorEmail = "ferry@localhost"
)

// identity is the -c flags that give git an author when its config
// names none (so that a commit never fails on "Please tell me who you are").
func identity(ctx context.Context, dir string) []string {
	var args []string
	for _, kv := range [][2]string{{"user.name", DefaultAuthorName}, {"user.email", DefaultAuthorEmail}} {
		if out, err := git(ctx, dir, "config", "--get", kv[0]); err != nil || strings.TrimSpace(out) == "" {
			args = append(args, "-c", kv[0]+"="+kv[1])
		}
	}
	return args
}

// dirty is the paths with uncommitted changes in the checkout at dir,
// untracked files included (ignored ones not).
func dirty(ctx context.Context, dir string) ([]string, error) {
	out, err := git(ctx, dir, "status", "--porcelain=v1", "-z", "--untracked-files=all")
	if err != nil {
		return nil, err
	}
	var paths []string
	f := splitZ(out)
	for i := 0; i < len(f); i++ {
		if len(f[i]) < 4 {
			continue
		}
		paths = append(paths, f[i][3:])
		if f[i][0] == 'R' || f[i][0] == 'C' {
			i++ // the rename's source follows
			if i < len(f) {
				paths = append(paths, f[i])
			}
		}
	}
	return paths, nil
}

// Commit commits everything in the worktree (new files too, ignored ones
// not) with message; nothing_to_commit when nothing changed, and
// merge_conflict, naming them, while files an UpdateFromBase left still
// have conflict markers. The author
// is git's configured one, else ferry <ferry@localhost>. It returns the
// commit's hash.
func (w *Worktree) Commit(ctx context.Context, message string) (string, error) {
	if strings.TrimSpace(message) == "" {
		return "", newError(CodeBadName, "the commit message is empty: give one", nil)
	}
	if err := w.present(); err != nil {
		return "", err
	}
	if err := w.checkResolved(ctx); err != nil {
		return "", err
	}
	if res, err := runLocked(ctx, gitCmd{dir: w.Path, args: []string{"add", "-A"}}); err != nil {
		return "", err
	} else if res.code != 0 {
		return "", gitFailed([]string{"add"}, res)
	}
	res, _, err := gitCmd{dir: w.Path, args: []string{"diff", "--cached", "--quiet"}}.run(ctx)
	if err != nil {
		return "", wrapRun(err, []string{"diff"})
	}
	if res.code == 0 {
		return "", newError(CodeNothingToCommit, fmt.Sprintf("nothing to commit in %s: the worktree has no change", w.Path), nil)
	}
	args := append(identity(ctx, w.Path), "commit", "--quiet", "--no-verify", "-F", "-")
	if res, err = runLocked(ctx, gitCmd{dir: w.Path, args: args, stdin: strings.NewReader(message)}); err != nil {
		return "", err
	} else if res.code != 0 {
		return "", gitFailed([]string{"commit"}, res)
	}
	out, err := git(ctx, w.Path, "rev-parse", "HEAD")
	return strings.TrimSpace(out), err
}

func (w *Worktree) present() error {
	if fi, err := os.Stat(w.Path); err != nil || !fi.IsDir() {
		return newError(CodeMissing, fmt.Sprintf("the worktree folder %s is gone: remove the worktree (its branch %s stays) or prune", w.Path, w.Branch), err)
	}
	return nil
}

// Ahead is how many commits the branch has that its base has not, Behind
// the reverse.
func (w *Worktree) aheadBehind(ctx context.Context) (ahead, behind int, err error) {
	out, err := git(ctx, w.Path, "rev-list", "--left-right", "--count", "refs/heads/"+w.Base+"...refs/heads/"+w.Branch)
	if err != nil {
		if ok, _ := w.Repo.branchExists(ctx, w.Base); !ok {
			return 0, 0, newError(CodeBaseNotFound, fmt.Sprintf("the base branch %q is gone: recreate it, or merge by hand", w.Base), err)
		}
		return 0, 0, err
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		return 0, 0, newError(CodeGitFailed, "cannot read git rev-list's count "+strconv.Quote(out), nil)
	}
	behind, _ = strconv.Atoi(f[0])
	ahead, _ = strconv.Atoi(f[1])
	return ahead, behind, nil
}

// HasUnshipped reports whether removing the worktree would lose work:
// uncommitted changes, or commits whose changes its base has not (commits
// a squash merge brought into the base are shipped).
func (w *Worktree) HasUnshipped(ctx context.Context) (bool, error) {
	if w.present() == nil {
		d, err := dirty(ctx, w.Path)
		if err != nil {
			return false, err
		}
		if len(d) > 0 {
			return true, nil
		}
	}
	out, err := git(ctx, w.Repo.Top, "rev-list", "--count", "refs/heads/"+w.Branch, "^refs/heads/"+w.Base)
	if err != nil {
		return false, err
	}
	if strings.TrimSpace(out) == "0" {
		return false, nil
	}
	// Commits a squash brought into the base stay "not in the base":
	// what counts is whether merging them would change it.
	if err := requireGit(ctx, 2, 38, "telling a squashed branch shipped"); err != nil {
		// An older git cannot tell: unshipped, so nothing is lost.
		return true, nil //nolint:nilerr // the answer errs on the safe side
	}
	in, err := w.inBase(ctx, "refs/heads/"+w.Base, "refs/heads/"+w.Branch)
	return !in, err
}

// inBase reports whether merging head into base would leave base's tree
// as it is: base has every change of head already (a squash of it, or
// the same edits). A conflict is not.
func (w *Worktree) inBase(ctx context.Context, base, head string) (bool, error) {
	res, _, err := gitCmd{dir: w.Repo.Top, args: []string{"merge-tree", "--write-tree", "--no-messages", base, head}}.run(ctx)
	if err != nil {
		return false, wrapRun(err, []string{"merge-tree"})
	}
	if res.code != 0 {
		return false, nil
	}
	baseTree, err := git(ctx, w.Repo.Top, "rev-parse", base+"^{tree}")
	if err != nil {
		return false, err
	}
	merged, _, _ := strings.Cut(strings.TrimSpace(string(res.out)), "\n")
	return merged == strings.TrimSpace(baseTree), nil
}

// Strategy is how Merge brings the branch into its base.
type Strategy int

const (
	// FastForward moves the base to the branch; not_fast_forward when
	// the base has commits the branch has not.
	FastForward Strategy = iota
	// Squash makes one commit on the base with the branch's whole change.
	Squash
	// MergeCommit makes a merge commit with both as parents.
	MergeCommit
)

func (s Strategy) String() string {
	switch s {
	case FastForward:
		return "fast-forward"
	case Squash:
		return "squash"
	case MergeCommit:
		return "merge"
	}
	return "strategy(" + strconv.Itoa(int(s)) + ")"
}

// ParseStrategy reads "fast-forward" (or "ff"), "squash" or "merge".
func ParseStrategy(s string) (Strategy, error) {
	switch s {
	case "fast-forward", "ff":
		return FastForward, nil
	case "squash":
		return Squash, nil
	case "merge":
		return MergeCommit, nil
	}
	return 0, newError(CodeBadName, fmt.Sprintf("merge strategy %q: use fast-forward, squash or merge", s), nil)
}

// Merge brings the branch's commits into its base (see the package doc);
// uncommitted changes of the worktree are refused (uncommitted_changes):
// Commit first. message is the commit's for Squash and MergeCommit
// (default: one naming the branch). It returns the base's new commit.
func (w *Worktree) Merge(ctx context.Context, s Strategy, message string) (string, error) {
	if s < FastForward || s > MergeCommit {
		return "", newError(CodeBadName, "unknown merge strategy "+s.String(), nil)
	}
	if err := requireGit(ctx, 2, 38, "merging without a checkout (git merge-tree --write-tree)"); err != nil {
		return "", err
	}
	r := w.Repo
	unlock := r.lock()
	defer unlock()
	if w.present() == nil {
		if d, err := dirty(ctx, w.Path); err != nil {
			return "", err
		} else if len(d) > 0 {
			return "", &Error{Code: CodeUncommitted, Message: fmt.Sprintf("the worktree %s has uncommitted changes: commit them first", w.Name), Files: d}
		}
	}
	ahead, behind, err := w.aheadBehind(ctx)
	if err != nil {
		return "", err
	}
	if ahead == 0 {
		return "", newError(CodeNothingToMerge, fmt.Sprintf("%s has no commit that %s has not: nothing to merge", w.Branch, w.Base), nil)
	}
	if s == FastForward && behind > 0 {
		return "", newError(CodeNotFastForward, fmt.Sprintf("%s has %d commit(s) that %s has not: merge with squash or a merge commit instead", w.Base, behind, w.Branch), nil)
	}
	oldOut, err := git(ctx, r.Top, "rev-parse", "refs/heads/"+w.Base)
	if err != nil {
		return "", err
	}
	old := strings.TrimSpace(oldOut)
	headOut, err := git(ctx, r.Top, "rev-parse", "refs/heads/"+w.Branch)
	if err != nil {
		return "", err
	}
	head := strings.TrimSpace(headOut)

	// The merged tree, computed in the object store alone: a conflict
	// stops here with every ref and checkout as it was.
	res, _, err := gitCmd{dir: r.Top, args: []string{"merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", old, head}}.run(ctx)
	if err != nil {
		return "", wrapRun(err, []string{"merge-tree"})
	}
	f := splitZ(string(res.out))
	switch {
	case res.code == 1 && len(f) > 0:
		files := slices.Compact(slices.Sorted(slices.Values(slices.DeleteFunc(f[1:], func(s string) bool { return s == "" }))))
		return "", &Error{Code: CodeMergeConflict, Message: fmt.Sprintf("%s and %s change the same lines: resolve the conflict in the worktree (merge %s into it), then merge again", w.Branch, w.Base, w.Base), Files: files}
	case res.code != 0 || len(f) == 0:
		return "", gitFailed([]string{"merge-tree"}, res)
	}
	tree := f[0]
	if s != FastForward {
		// A squash leaves the branch's commits out of the base: a second
		// one would be an empty commit.
		baseTree, err := git(ctx, r.Top, "rev-parse", old+"^{tree}")
		if err != nil {
			return "", err
		}
		if tree == strings.TrimSpace(baseTree) {
			return "", newError(CodeNothingToMerge, fmt.Sprintf("%s has every change of %s already (shipped before?): nothing to merge", w.Base, w.Branch), nil)
		}
	}

	var next string
	switch s {
	case FastForward:
		next = head
	default:
		if message == "" {
			message = fmt.Sprintf("Merge branch '%s'", w.Branch)
			if s == Squash {
				message = fmt.Sprintf("Squashed %s", w.Branch)
			}
		}
		args := append(identity(ctx, r.Top), "commit-tree", tree, "-p", old)
		if s == MergeCommit {
			args = append(args, "-p", head)
		}
		out, err := gitCmd{dir: r.Top, args: args, stdin: strings.NewReader(message)}.output(ctx)
		if err != nil {
			return "", err
		}
		next = strings.TrimSpace(out)
	}

	// Where the base is checked out, the checkout follows (when the merge
	// touches none of its uncommitted changes); else only the ref moves.
	live, err := r.gitWorktrees(ctx)
	if err != nil {
		return "", err
	}
	var checkout string
	for _, g := range live {
		if g.branch == "refs/heads/"+w.Base && !g.prunable {
			checkout = g.path
		}
	}
	if checkout == "" {
		res, err := runLocked(ctx, gitCmd{dir: r.Top, args: []string{"update-ref", "-m", "ferry: " + s.String() + " " + w.Branch, "refs/heads/" + w.Base, next, old}})
		if err != nil {
			return "", err
		}
		if res.code != 0 {
			return "", gitFailed([]string{"update-ref"}, res)
		}
		return next, nil
	}
	changedOut, err := git(ctx, r.Top, "diff", "--name-only", "-z", "--no-renames", old, next)
	if err != nil {
		return "", err
	}
	changed := splitZ(changedOut)
	d, err := dirty(ctx, checkout)
	if err != nil {
		return "", err
	}
	var clash []string
	for _, p := range d {
		for _, c := range changed {
			// A dirty folder (an untracked one is reported as dir/)
			// clashes with any change below it.
			if p == c || strings.HasSuffix(p, "/") && strings.HasPrefix(c, p) {
				clash = append(clash, p)
				break
			}
		}
	}
	if len(clash) > 0 {
		return "", &Error{Code: CodeBaseDirty, Message: fmt.Sprintf("the checkout of %s at %s has uncommitted changes the merge would touch: commit or stash them there, then merge again", w.Base, checkout), Files: clash}
	}
	res, err = runLocked(ctx, gitCmd{dir: checkout, args: []string{"merge", "--ff-only", "--quiet", "--no-edit", next}})
	if err != nil {
		return "", err
	}
	if res.code != 0 {
		if strings.Contains(res.stderr, "would be overwritten") {
			return "", &Error{Code: CodeBaseDirty, Message: fmt.Sprintf("the checkout of %s at %s has changes the merge would overwrite: commit or stash them there, then merge again", w.Base, checkout), Err: errors.New(firstLines(res.stderr, 3))}
		}
		return "", gitFailed([]string{"merge"}, res)
	}
	return next, nil
}

// Push pushes the branch to remote ("origin" when empty), setting nothing
// else. No credential prompt is ever shown: a remote that needs one fails.
func (w *Worktree) Push(ctx context.Context, remote string) error {
	if remote == "" {
		remote = "origin"
	}
	r := w.Repo
	if strings.HasPrefix(remote, "-") {
		return newError(CodeRemoteNotFound, fmt.Sprintf("remote %q: name a remote (git remote -v)", remote), nil)
	}
	if _, err := git(ctx, r.Top, "remote", "get-url", "--", remote); err != nil {
		return newError(CodeRemoteNotFound, fmt.Sprintf("the repository has no remote %q: add one (git remote add %s URL)", remote, remote), err)
	}
	ref := "refs/heads/" + w.Branch
	res, _, err := gitCmd{dir: r.Top, args: []string{"push", "--porcelain", "--", remote, ref + ":" + ref}, stdin: strings.NewReader("")}.run(ctx)
	if err != nil {
		return wrapRun(err, []string{"push"})
	}
	if res.code == 0 {
		return nil
	}
	return &Error{Code: CodePushRejected, Message: fmt.Sprintf("%s refused %s: %s", remote, w.Branch, pushReason(string(res.out), res.stderr)), Err: fmt.Errorf("git push: exit status %d", res.code)}
}

// pushReason is git's why, from the porcelain lines ("!\tsrc:dst\t[rejected] (reason)")
// and the remote's own messages.
func pushReason(out, stderr string) string {
	var why []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "!") {
			if f := strings.Split(l, "\t"); len(f) >= 3 {
				why = append(why, strings.TrimSpace(f[2]))
			}
		}
	}
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "remote: ") && strings.TrimSpace(strings.TrimPrefix(l, "remote:")) != "" {
			why = append(why, strings.TrimSpace(strings.TrimPrefix(l, "remote:")))
		}
	}
	if len(why) == 0 {
		return firstLines(stderr, 3)
	}
	return strings.Join(why, "; ")
}

// UpdateFromBase merges the base's new commits into the branch, in the
// worktree, for an agent to resolve a conflict that Merge reported: the
// worktree must have no uncommitted change (uncommitted_changes). On a
// conflict the worktree is left mid-merge, with git's conflict markers in
// the files, which merge_conflict names: resolve them, then Commit
// (which concludes the merge), or AbortUpdate. Nothing else is touched.
// It returns the branch's new commit when the merge went through.
func (w *Worktree) UpdateFromBase(ctx context.Context) (string, error) {
	if err := w.present(); err != nil {
		return "", err
	}
	if d, err := dirty(ctx, w.Path); err != nil {
		return "", err
	} else if len(d) > 0 {
		return "", &Error{Code: CodeUncommitted, Message: fmt.Sprintf("the worktree %s has uncommitted changes: commit them first", w.Name), Files: d}
	}
	_, behind, err := w.aheadBehind(ctx)
	if err != nil {
		return "", err
	}
	if behind == 0 {
		return "", newError(CodeNothingToMerge, fmt.Sprintf("%s has every commit of %s already", w.Branch, w.Base), nil)
	}
	args := append(identity(ctx, w.Path), "merge", "--no-edit", "--no-verify", "--quiet", "-m", fmt.Sprintf("Merge branch '%s' into %s", w.Base, w.Branch), "refs/heads/"+w.Base)
	res, err := runLocked(ctx, gitCmd{dir: w.Path, args: args})
	if err != nil {
		return "", err
	}
	if res.code != 0 {
		out, gerr := git(ctx, w.Path, "diff", "--name-only", "-z", "--diff-filter=U")
		if files := splitZ(out); gerr == nil && len(files) > 0 {
			return "", &Error{Code: CodeMergeConflict, Message: fmt.Sprintf("merging %s into %s conflicts: resolve the marked files in the worktree, then commit (or abort)", w.Base, w.Branch), Files: files}
		}
		return "", gitFailed([]string{"merge"}, res)
	}
	out, err := git(ctx, w.Path, "rev-parse", "HEAD")
	return strings.TrimSpace(out), err
}

// AbortUpdate ends an UpdateFromBase left mid-merge, putting the worktree
// back as it was before it.
func (w *Worktree) AbortUpdate(ctx context.Context) error {
	if err := w.present(); err != nil {
		return err
	}
	res, err := runLocked(ctx, gitCmd{dir: w.Path, args: []string{"merge", "--abort"}})
	if err != nil {
		return err
	}
	if res.code != 0 {
		return gitFailed([]string{"merge", "--abort"}, res)
	}
	return nil
}
