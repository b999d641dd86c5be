// Package worktree gives a session a git worktree of its own: a checkout
// of a new branch ferry/NAME, outside the repository, that an agent can
// change without touching the user's checkout, and the git steps to review
// and ship it (diff, commit, merge, push) and to clean it up.
//
// Guarantees:
//
//   - Every step runs the machine's real git (`git -C DIR …`) as a child in
//     a session of its own (procgroup), killed with its tree when the
//     context ends, with a clean environment: no GIT_* variable of the
//     caller's, LC_ALL=C, no pager, no terminal or SSH prompt ever, and no
//     optional locks (git status does not rewrite the user's index).
//   - The user's checkout is never written, except by Merge when it has the
//     base branch checked out, and then only as a fast-forward that git
//     itself refuses when it would overwrite a local change; Merge refuses
//     first, with base_dirty naming the files, when a path the merge
//     changes has an uncommitted change there.
//   - Every error is an *Error with a Code (the Code* constants) and a
//     Message saying what to do, wrapping the cause. A step that fails
//     leaves the repository's refs, index and checkouts as they were (a
//     failed Create removes what it had made).
//   - Creates on one repository are serialised in this process; a lock
//     held by another process (index.lock, a ref lock) is retried for a
//     while, and a branch another process took first moves a name made
//     from a title on to the next free one (-2, -3…).
//   - A worktree is recorded under its Root (Root/REPO-ID/.records), so
//     that List and Find know it, its base and its path; a worktree folder
//     removed by hand is reported Missing by List and cleaned from git's
//     records by Prune.
package worktree

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferry-dev/ferry/internal/lazyregexp"
)

// BranchPrefix starts every branch this package makes.
const BranchPrefix = "ferry/"

// MaxName bounds a worktree's name.
const MaxName = 40

// Error codes.
const (
	CodeNotRepo         = "not_a_git_repository"
	CodeDetachedHead    = "detached_head"
	CodeBaseNotFound    = "base_not_found"
	CodeBranchExists    = "branch_exists"
	CodeBadName         = "invalid_name"
	CodeBadRoot         = "invalid_root"
	CodeNotFound        = "worktree_not_found"
	CodeMissing         = "worktree_missing"
	CodeSetupFailed     = "setup_failed"
	CodeTestFailed      = "test_failed"
	CodeNothingToCommit = "nothing_to_commit"
	CodeNothingToMerge  = "nothing_to_merge"
	CodeUncommitted     = "uncommitted_changes"
	CodeBaseDirty       = "base_dirty"
	CodeNotFastForward  = "not_fast_forward"
	CodeMergeConflict   = "merge_conflict"
	CodeRemoteNotFound  = "remote_not_found"
	CodePushRejected    = "push_rejected"
	CodeGitMissing      = "git_not_found"
	CodeGitTooOld       = "git_too_old"
	CodeGitFailed       = "git_failed"
	CodeCancelled       = "cancelled"
)

// Error is every error of this package.
type Error struct {
	Code    string
	Message string
	// Files are the paths the error is about (base_dirty, merge_conflict),
	// relative to the repository's top.
	Files []string
	Err   error
}

func (e *Error) Error() string {
	msg := e.Message
	if len(e.Files) > 0 {
		msg += " (" + strings.Join(e.Files, ", ") + ")"
	}
	return "worktree: " + msg + " [" + e.Code + "]"
}

func (e *Error) Unwrap() error { return e.Err }

func newError(code, msg string, err error) *Error {
	return &Error{Code: code, Message: msg, Err: err}
}

// HasCode reports whether err is an *Error with code.
func HasCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// Repo is the repository a workspace is in, as the checkout that holds it.
type Repo struct {
	// Top is the checkout's top-level folder (the user's checkout).
	Top string
	// CommonDir is the repository's git folder, shared by its worktrees.
	CommonDir string
	// ID names the repository in a Root: the top folder's name and a hash
	// of its git folder.
	ID string
}

// Open finds the repository dir is in.
func Open(ctx context.Context, dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, newError(CodeNotRepo, fmt.Sprintf("%s is not a folder ferry can read", dir), err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		return nil, newError(CodeNotRepo, fmt.Sprintf("%s is not a folder", abs), err)
	}
	res, _, err := gitCmd{dir: abs, args: []string{"rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir"}}.run(ctx)
	if err != nil {
		return nil, wrapRun(err, []string{"rev-parse"})
	}
	lines := strings.Split(strings.TrimSpace(string(res.out)), "\n")
	if res.code != 0 || len(lines) != 2 || lines[0] == "" {
		return nil, &Error{Code: CodeNotRepo, Message: fmt.Sprintf("%s is not in a git repository (or is in a bare one): run git init there, or pick a folder of a repository", abs),
			Err: errors.New(firstLines(res.stderr, 2))}
	}
	top, common := filepath.Clean(lines[0]), filepath.Clean(lines[1])
	sum := sha256.Sum256([]byte(common))
	return &Repo{Top: top, CommonDir: common, ID: sanitize(filepath.Base(top), 24, "repo") + "-" + hex.EncodeToString(sum[:])[:10]}, nil
}

// CurrentBranch is the branch the user's checkout has checked out
// (detached_head when none).
func (r *Repo) CurrentBranch(ctx context.Context) (string, error) {
	res, _, err := gitCmd{dir: r.Top, args: []string{"symbolic-ref", "-q", "--short", "HEAD"}}.run(ctx)
	if err != nil {
		return "", wrapRun(err, []string{"symbolic-ref"})
	}
	if res.code != 0 {
		return "", newError(CodeDetachedHead, fmt.Sprintf("%s has a detached HEAD: check out a branch (git switch BRANCH) or name a base branch", r.Top), nil)
	}
	return strings.TrimSpace(string(res.out)), nil
}

// branchExists reports whether refs/heads/name exists.
func (r *Repo) branchExists(ctx context.Context, name string) (bool, error) {
	res, _, err := gitCmd{dir: r.Top, args: []string{"rev-parse", "--verify", "-q", "refs/heads/" + name + "^{commit}"}}.run(ctx)
	if err != nil {
		return false, wrapRun(err, []string{"rev-parse"})
	}
	return res.code == 0, nil
}

// Options configure Create.
type Options struct {
	// Name is the worktree's name as the caller insists on it (branch
	// ferry/NAME): lower case letters, digits and '-', at most MaxName;
	// branch_exists when it is taken.
	Name string
	// Title, used when Name is empty, is sanitised into a name; a taken
	// one gets -2, -3….
	Title string
	// Base is the branch the new one starts from (default: the user's
	// checkout's current branch).
	Base string
	// Root is the folder worktrees live in (the client's state folder's
	// worktrees/): the worktree is Root/REPO-ID/NAME. It must be absolute
	// and outside the repository.
	Root string
}

// Worktree is one worktree this package made.
type Worktree struct {
	Repo   *Repo  `json:"-"`
	Name   string `json:"name"`
	Branch string `json:"branch"`
	Base   string `json:"base"`
	Path   string `json:"path"`
	// Created is when Create made it.
	Created time.Time `json:"created"`
	// Missing reports (List) that its folder is gone.
	Missing bool `json:"-"`

	record string
}

var nameRE = lazyregexp.New(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// ValidName reports whether name is usable as Options.Name as it is.
func ValidName(name string) bool { return len(name) <= MaxName && nameRE.MatchString(name) }

// Sanitize turns a title into a name: lower case, runs of anything but
// [a-z0-9] become one '-', at most MaxName bytes, "session" when nothing
// is left.
func Sanitize(title string) string { return sanitize(title, MaxName, "session") }

func sanitize(s string, max int, empty string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(s) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(c)
			continue
		}
		dash = true
	}
	out := b.String()
	if len(out) > max {
		out = strings.TrimRight(out[:max], "-")
	}
	if out == "" {
		return empty
	}
	return out
}

// repoLocks serialises the steps that take git's locks, per repository.
var repoLocks sync.Map // CommonDir → *sync.Mutex

func (r *Repo) lock() func() {
	m, _ := repoLocks.LoadOrStore(r.CommonDir, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// lockRetry bounds the retries on a lock another process holds.
const (
	lockRetries = 40
	lockPause   = 50 * time.Millisecond
)

func isLockError(stderr string) bool {
	return strings.Contains(stderr, ".lock") && (strings.Contains(stderr, "File exists") || strings.Contains(stderr, "Unable to create") || strings.Contains(stderr, "cannot lock")) ||
		strings.Contains(stderr, "could not lock")
}

// runLocked runs c, retrying while another process holds one of git's
// lock files.
func runLocked(ctx context.Context, c gitCmd) (gitResult, error) {
	for i := 0; ; i++ {
		res, _, err := c.run(ctx)
		if err != nil {
			return res, wrapRun(err, c.args)
		}
		if res.code == 0 || !isLockError(res.stderr) || i == lockRetries {
			return res, nil
		}
		select {
		case <-ctx.Done():
			return res, wrapRun(ctx.Err(), c.args)
		case <-time.After(lockPause):
		}
	}
}

func (r *Repo) checkRoot(root string) (string, error) {
	if root == "" || !filepath.IsAbs(root) {
		return "", newError(CodeBadRoot, fmt.Sprintf("the worktrees' folder must be an absolute path, not %q", root), nil)
	}
	root = filepath.Clean(root)
	for _, in := range []string{r.Top, r.CommonDir} {
		if rel, err := filepath.Rel(in, root); err == nil && (rel == "." || !strings.HasPrefix(rel, "..")) {
			return "", newError(CodeBadRoot, fmt.Sprintf("the worktrees' folder %s is inside the repository %s: pick one outside it (the client's state folder)", root, in), nil)
		}
	}
	return filepath.Join(root, r.ID), nil
}

// Create makes a new worktree (see Options and the package doc).
func (r *Repo) Create(ctx context.Context, o Options) (*Worktree, error) {
	dir, err := r.checkRoot(o.Root)
	if err != nil {
		return nil, err
	}
	insisted := o.Name != ""
	name := o.Name
	if insisted && !ValidName(name) {
		return nil, newError(CodeBadName, fmt.Sprintf("worktree name %q: use lower case letters, digits and '-', at most %d (e.g. %q)", name, MaxName, Sanitize(name)), nil)
	}
	if !insisted {
		name = Sanitize(o.Title)
	}
	base := o.Base
	if base == "" {
		if base, err = r.CurrentBranch(ctx); err != nil {
			return nil, err
		}
	}
	unlock := r.lock()
	defer unlock()
	if ok, err := r.branchExists(ctx, base); err != nil {
		return nil, err
	} else if !ok {
		return nil, newError(CodeBaseNotFound, fmt.Sprintf("the base branch %q does not exist: name a local branch (git branch --list)", base), nil)
	}
	if err := os.MkdirAll(filepath.Join(dir, recordsDir), 0o700); err != nil {
		return nil, newError(CodeBadRoot, "cannot make the worktrees' folder "+dir, err)
	}
	for n := 1; ; n++ {
		cand := name
		if n > 1 {
			suffix := "-" + strconv.Itoa(n)
			cand = strings.TrimRight(name[:min(len(name), MaxName-len(suffix))], "-") + suffix
		}
		wt, taken, err := r.add(ctx, dir, cand, base)
		if err != nil {
			return nil, err
		}
		if wt != nil {
			return wt, nil
		}
		if insisted {
			return nil, newError(CodeBranchExists, fmt.Sprintf("the branch %s%s (or its worktree folder) already exists: pick another name, or reuse it", BranchPrefix, cand), errors.New(taken))
		}
		if n >= 1000 {
			return nil, newError(CodeBranchExists, fmt.Sprintf("no free name after %s-%d: remove old worktrees", name, n), nil)
		}
	}
}

// add tries one name: the worktree, or nil and why the name is taken.
func (r *Repo) add(ctx context.Context, dir, name, base string) (*Worktree, string, error) {
	branch := BranchPrefix + name
	path := filepath.Join(dir, name)
	rec := recordPath(dir, name)
	if ok, err := r.branchExists(ctx, branch); err != nil {
		return nil, "", err
	} else if ok {
		return nil, "branch " + branch + " exists", nil
	}
	if _, err := os.Lstat(path); err == nil {
		return nil, "folder " + path + " exists", nil
	}
	if _, err := os.Lstat(rec); err == nil {
		return nil, "record " + rec + " exists", nil
	}
	res, err := runLocked(ctx, gitCmd{dir: r.Top, args: []string{"worktree", "add", "--quiet", "-b", branch, path, "refs/heads/" + base}})
	if err == nil && res.code != 0 {
		if strings.Contains(res.stderr, "already exists") {
			// Another process took it between the check and the add.
			r.undoAdd(branch, path, false)
			return nil, firstLines(res.stderr, 1), nil
		}
		err = gitFailed([]string{"worktree", "add"}, res)
	}
	if err != nil {
		r.undoAdd(branch, path, true)
		return nil, "", err
	}
	wt := &Worktree{Repo: r, Name: name, Branch: branch, Base: base, Path: path, Created: time.Now().UTC().Truncate(time.Second), record: rec}
	if err := writeRecord(wt); err != nil {
		r.undoAdd(branch, path, true)
		return nil, "", newError(CodeBadRoot, "cannot record the worktree in "+dir, err)
	}
	return wt, "", nil
}

// undoAdd removes what a failed worktree add made. It runs on a context
// of its own: the caller's may be what ended.
func (r *Repo) undoAdd(branch, path string, ours bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !ours {
		return
	}
	_, _ = runLocked(ctx, gitCmd{dir: r.Top, args: []string{"worktree", "remove", "--force", path}})
	_ = os.RemoveAll(path)
	_, _ = runLocked(ctx, gitCmd{dir: r.Top, args: []string{"worktree", "prune"}})
	_, _ = runLocked(ctx, gitCmd{dir: r.Top, args: []string{"branch", "-D", branch}})
}

const recordsDir = ".records"

func recordPath(dir, name string) string { return filepath.Join(dir, recordsDir, name+".json") }

func writeRecord(wt *Worktree) error {
	b, err := json.MarshalIndent(wt, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(wt.record), ".tmp-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(b); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), wt.record)
}

// Find is the worktree NAME recorded under root (worktree_not_found when
// there is none; its Missing set when its folder is gone).
func (r *Repo) Find(ctx context.Context, root, name string) (*Worktree, error) {
	dir, err := r.checkRoot(root)
	if err != nil {
		return nil, err
	}
	if !ValidName(name) {
		return nil, newError(CodeBadName, fmt.Sprintf("worktree name %q: use lower case letters, digits and '-', at most %d (e.g. %q)", name, MaxName, Sanitize(name)), nil)
	}
	wt, err := r.readRecord(dir, name)
	if err != nil {
		return nil, err
	}
	live, err := r.gitWorktrees(ctx)
	if err != nil {
		return nil, err
	}
	wt.Missing = !present(wt, live)
	return wt, nil
}

func (r *Repo) readRecord(dir, name string) (*Worktree, error) {
	rec := recordPath(dir, name)
	b, err := os.ReadFile(rec) //nolint:gosec // a record under the caller's Root, of a valid name
	if errors.Is(err, os.ErrNotExist) {
		return nil, newError(CodeNotFound, fmt.Sprintf("no worktree %q of %s", name, r.Top), err)
	}
	if err != nil {
		return nil, newError(CodeBadRoot, "cannot read "+rec, err)
	}
	wt := &Worktree{}
	if err := json.Unmarshal(b, wt); err != nil || wt.Name != name || wt.Path != filepath.Join(dir, name) {
		return nil, newError(CodeBadRoot, fmt.Sprintf("the record %s is damaged: remove it", rec), err)
	}
	wt.Repo, wt.record = r, rec
	return wt, nil
}

// List is every worktree recorded under root, by name; Missing marks
// those whose folder is gone (removed by hand).
func (r *Repo) List(ctx context.Context, root string) ([]*Worktree, error) {
	dir, err := r.checkRoot(root)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(filepath.Join(dir, recordsDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, newError(CodeBadRoot, "cannot list "+dir, err)
	}
	live, err := r.gitWorktrees(ctx)
	if err != nil {
		return nil, err
	}
	var out []*Worktree
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !ValidName(name) {
			continue
		}
		wt, err := r.readRecord(dir, name)
		if err != nil {
			return nil, err
		}
		wt.Missing = !present(wt, live)
		out = append(out, wt)
	}
	slices.SortFunc(out, func(a, b *Worktree) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// present reports whether wt's folder exists and git knows it there.
func present(wt *Worktree, live map[string]gitWorktree) bool {
	if fi, err := os.Stat(wt.Path); err != nil || !fi.IsDir() {
		return false
	}
	g, ok := live[wt.Path]
	if !ok {
		if p, err := filepath.EvalSymlinks(wt.Path); err == nil {
			g, ok = live[p]
		}
	}
	return ok && !g.prunable
}

// gitWorktree is one entry of `git worktree list --porcelain`.
type gitWorktree struct {
	path     string
	branch   string // refs/heads/…, "" when detached or bare
	prunable bool
}

// gitWorktrees is git's list of the repository's worktrees, by path
// (symlinks resolved both ways, as git may print either).
func (r *Repo) gitWorktrees(ctx context.Context) (map[string]gitWorktree, error) {
	out, err := git(ctx, r.Top, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return nil, err
	}
	m := map[string]gitWorktree{}
	var cur *gitWorktree
	flush := func() {
		if cur != nil {
			m[cur.path] = *cur
			if p, err := filepath.EvalSymlinks(cur.path); err == nil {
				m[p] = *cur
			}
		}
		cur = nil
	}
	for _, f := range splitZ(out) {
		switch {
		case f == "":
			flush()
		case strings.HasPrefix(f, "worktree "):
			flush()
			cur = &gitWorktree{path: filepath.Clean(strings.TrimPrefix(f, "worktree "))}
		case cur == nil:
		case strings.HasPrefix(f, "branch "):
			cur.branch = strings.TrimPrefix(f, "branch ")
		case strings.HasPrefix(f, "prunable"):
			cur.prunable = true
		}
	}
	flush()
	return m, nil
}

// Prune makes git forget worktrees whose folder is gone and drops their
// records under root (their branches stay). A worktree in root's folder
// with no record is what a Create cut short (a crash) left before it
// returned, so no agent worked in it: Prune removes it (once a few
// minutes old, so as not to race a Create under way), and its branch
// when another branch holds its commit. It returns the names dropped.
func (r *Repo) Prune(ctx context.Context, root string) ([]string, error) {
	dir, err := r.checkRoot(root)
	if err != nil {
		return nil, err
	}
	unlock := r.lock()
	defer unlock()
	orphans, err := r.orphans(ctx, dir)
	if err != nil {
		return nil, err
	}
	for _, g := range orphans {
		if _, err := runLocked(ctx, gitCmd{dir: r.Top, args: []string{"worktree", "remove", "--force", "--force", g.path}}); err != nil {
			return nil, err
		}
		_ = os.RemoveAll(g.path)
		if g.branch == "refs/heads/"+BranchPrefix+filepath.Base(g.path) {
			out, err := git(ctx, r.Top, "for-each-ref", "--format=%(refname)", "--contains", g.branch, "refs/heads/")
			if err != nil {
				return nil, err
			}
			if strings.Count(out, "\n") > 1 {
				_, _ = runLocked(ctx, gitCmd{dir: r.Top, args: []string{"branch", "-D", strings.TrimPrefix(g.branch, "refs/heads/")}})
			}
		}
	}
	if res, err := runLocked(ctx, gitCmd{dir: r.Top, args: []string{"worktree", "prune"}}); err != nil {
		return nil, err
	} else if res.code != 0 {
		return nil, gitFailed([]string{"worktree", "prune"}, res)
	}
	list, err := r.List(ctx, root)
	if err != nil {
		return nil, err
	}
	var gone []string
	for _, wt := range list {
		if wt.Missing {
			if err := os.Remove(wt.record); err != nil && !errors.Is(err, os.ErrNotExist) {
				return gone, newError(CodeBadRoot, "cannot remove "+wt.record, err)
			}
			gone = append(gone, wt.Name)
		}
	}
	for _, g := range orphans {
		gone = append(gone, filepath.Base(g.path))
	}
	slices.Sort(gone)
	return gone, nil
}

// orphanAge is how old a worktree without a record must be for Prune to
// take it for a crash's leftover.
const orphanAge = 2 * time.Minute

// orphans are the worktrees git lists in dir that have no record.
func (r *Repo) orphans(ctx context.Context, dir string) ([]gitWorktree, error) {
	live, err := r.gitWorktrees(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []gitWorktree
	for _, g := range live {
		name := filepath.Base(g.path)
		if filepath.Dir(g.path) != dir || !ValidName(name) || seen[name] {
			continue
		}
		seen[name] = true
		if _, err := os.Lstat(recordPath(dir, name)); !errors.Is(err, os.ErrNotExist) {
			continue
		}
		// A Create of another process may be between its worktree add
		// and its record: leave young ones alone.
		if fi, err := os.Stat(g.path); err == nil && time.Since(fi.ModTime()) < orphanAge {
			continue
		}
		out = append(out, g)
	}
	return out, nil
}

// Remove removes the worktree's folder and git's record of it, and its
// branch unless keepBranch. Uncommitted changes are lost: ask first
// (HasUnshipped).
func (w *Worktree) Remove(ctx context.Context, keepBranch bool) error {
	r := w.Repo
	unlock := r.lock()
	defer unlock()
	if _, err := os.Stat(w.Path); err == nil {
		res, err := runLocked(ctx, gitCmd{dir: r.Top, args: []string{"worktree", "remove", "--force", "--force", w.Path}})
		if err != nil {
			return err
		}
		if res.code != 0 && !strings.Contains(res.stderr, "is not a working tree") {
			return gitFailed([]string{"worktree", "remove"}, res)
		}
		if err := os.RemoveAll(w.Path); err != nil {
			return newError(CodeGitFailed, "cannot remove the folder "+w.Path, err)
		}
	}
	if res, err := runLocked(ctx, gitCmd{dir: r.Top, args: []string{"worktree", "prune"}}); err != nil {
		return err
	} else if res.code != 0 {
		return gitFailed([]string{"worktree", "prune"}, res)
	}
	if !keepBranch {
		if ok, err := r.branchExists(ctx, w.Branch); err != nil {
			return err
		} else if ok {
			res, err := runLocked(ctx, gitCmd{dir: r.Top, args: []string{"branch", "-D", w.Branch}})
			if err != nil {
				return err
			}
			if res.code != 0 {
				return gitFailed([]string{"branch", "-D"}, res)
			}
		}
	}
	if err := os.Remove(w.record); err != nil && !errors.Is(err, os.ErrNotExist) {
		return newError(CodeBadRoot, "cannot remove "+w.record, err)
	}
	w.Missing = true
	return nil
}
