package worktree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ferry-dev/ferry/internal/procgroup"
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
// not) with message; nothing_to_commit when nothing changed. The author
// is git's configured one, else ferry <ferry@localhost>. It returns the
// commit's hash.
func (w *Worktree) Commit(ctx context.Context, message string) (string, error) {
	if strings.TrimSpace(message) == "" {
		return "", newError(CodeBadName, "the commit message is empty: give one", nil)
	}
	if err := w.present(); err != nil {
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
// commits its base has not, or uncommitted changes.
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
	return strings.TrimSpace(out) != "0", nil
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
		files := slices.Compact(slices.Sorted(slices.Values(f[1:])))
		return "", &Error{Code: CodeMergeConflict, Message: fmt.Sprintf("%s and %s change the same lines: resolve the conflict in the worktree (merge %s into it), then merge again", w.Branch, w.Base, w.Base), Files: files}
	case res.code != 0 || len(f) == 0:
		return "", gitFailed([]string{"merge-tree"}, res)
	}
	tree := f[0]

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

// SetupScript is the workspace's setup script, run in a new worktree.
const SetupScript = ".ferry/setup"

// DefaultSetupTimeout bounds Setup when timeout is 0.
const DefaultSetupTimeout = 10 * time.Minute

// Setup runs the worktree's .ferry/setup, if it has one (false when not),
// in the worktree, with its output and errors streamed to out; bounded by
// timeout, after which it is killed with everything it started. A
// failure is setup_failed with the exit status.
func (w *Worktree) Setup(ctx context.Context, out io.Writer, timeout time.Duration) (ran bool, err error) {
	script := filepath.Join(w.Path, filepath.FromSlash(SetupScript))
	fi, err := os.Stat(script)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, newError(CodeSetupFailed, "cannot read "+SetupScript, err)
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return false, newError(CodeSetupFailed, fmt.Sprintf("%s is not an executable file: chmod +x it (and commit that)", SetupScript), nil)
	}
	if timeout <= 0 {
		timeout = DefaultSetupTimeout
	}
	if out == nil {
		out = io.Discard
	}
	cmd := exec.Command(script) //nolint:gosec // running the workspace's own setup script is the point
	cmd.Dir = w.Path
	cmd.Env = append(gitEnv(), "FERRY_WORKTREE="+w.Path, "FERRY_REPO="+w.Repo.Top, "FERRY_BRANCH="+w.Branch, "FERRY_BASE="+w.Base)
	// The same writer for both: exec copies them through one pipe, in order.
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 2 * time.Second
	g, err := procgroup.Start(cmd)
	if err != nil {
		return true, newError(CodeSetupFailed, "cannot start "+SetupScript, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err = <-done:
		g.KillTree()
	case <-timer.C:
		g.KillTree()
		err = errors.Join(context.DeadlineExceeded, <-done)
		return true, newError(CodeSetupFailed, fmt.Sprintf("%s ran longer than %s and was stopped: make it faster, or allow it longer", SetupScript, timeout), err)
	case <-ctx.Done():
		g.KillTree()
		err = errors.Join(ctx.Err(), <-done)
		return true, newError(CodeCancelled, SetupScript+" was stopped", err)
	}
	if err != nil {
		status := err.Error()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			status = "exit status " + strconv.Itoa(ee.ExitCode())
			if sig, ok := procgroup.ExitSignal(ee.ProcessState); ok {
				status = "killed by " + sig.String()
			}
		}
		return true, newError(CodeSetupFailed, fmt.Sprintf("%s failed (%s): see its output, fix it, then create the worktree again", SetupScript, status), err)
	}
	return true, nil
}
