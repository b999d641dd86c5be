package worktree

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Bounds of Diff's patches.
const (
	MaxFilePatch  = 256 << 10
	MaxTotalPatch = 4 << 20
)

// FileDiff is one file's change in a Diff.
type FileDiff struct {
	Path string `json:"path"`
	// OldPath is a renamed or copied file's former path.
	OldPath string `json:"old_path,omitempty"`
	// Status: added, modified, deleted, renamed, copied or typechange.
	Status  string `json:"status"`
	Added   int    `json:"added"`
	Deleted int    `json:"deleted"`
	Binary  bool   `json:"binary,omitempty"`
	// Patch is the unified diff (empty for a binary file), cut at
	// MaxFilePatch (and when the whole diff passed MaxTotalPatch), which
	// Truncated reports.
	Patch     string `json:"patch,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

// Counts is a branch's size against its base.
type Counts struct {
	Added, Deleted int
	Files          int
	// Ahead is the branch's commits that the base has not, Behind the
	// base's that the branch has not.
	Ahead, Behind int
	// Uncommitted reports changes not committed yet.
	Uncommitted bool
}

// snapshot is the tree of everything in the worktree now, committed or
// not, untracked files included (ignored ones not), made through an index
// of its own so that the worktree's index is left as it was.
func (w *Worktree) snapshot(ctx context.Context) (string, error) {
	if err := w.present(); err != nil {
		return "", err
	}
	f, err := os.CreateTemp("", "ferry-worktree-index-*")
	if err != nil {
		return "", newError(CodeGitFailed, "cannot make a temporary index", err)
	}
	idx := f.Name()
	_ = f.Close()
	_ = os.Remove(idx) // git makes it; an empty file is not an index
	defer func() { _ = os.Remove(idx); _ = os.Remove(idx + ".lock") }()
	env := []string{"GIT_INDEX_FILE=" + idx}
	for _, args := range [][]string{{"read-tree", "HEAD"}, {"add", "-A"}} {
		if _, err := (gitCmd{dir: w.Path, args: args, env: env}).output(ctx); err != nil {
			return "", err
		}
	}
	out, err := gitCmd{dir: w.Path, args: []string{"write-tree"}, env: env}.output(ctx)
	return strings.TrimSpace(out), err
}

// mergeBase is where the branch left its base.
func (w *Worktree) mergeBase(ctx context.Context) (string, error) {
	out, err := git(ctx, w.Path, "merge-base", "refs/heads/"+w.Base, "HEAD")
	if err != nil {
		if ok, _ := w.Repo.branchExists(ctx, w.Base); !ok {
			return "", newError(CodeBaseNotFound, fmt.Sprintf("the base branch %q is gone: recreate it", w.Base), err)
		}
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// Diff is the branch's whole change against where it left its base,
// committed and uncommitted (untracked files included), file by file in
// git's order.
func (w *Worktree) Diff(ctx context.Context) ([]FileDiff, error) {
	return w.diff(ctx, true)
}

func (w *Worktree) diff(ctx context.Context, patches bool) ([]FileDiff, error) {
	tree, err := w.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	mb, err := w.mergeBase(ctx)
	if err != nil {
		return nil, err
	}
	raw, err := git(ctx, w.Path, "diff-tree", "-r", "-z", "-M", "--raw", "--numstat", mb, tree)
	if err != nil {
		return nil, err
	}
	files, err := parseRawNumstat(raw)
	if err != nil || !patches || len(files) == 0 {
		return files, err
	}
	res, cut, err := gitCmd{dir: w.Path, args: []string{"diff-tree", "-r", "-p", "-M", "--no-color", "--full-index", mb, tree}, limit: MaxTotalPatch}.run(ctx)
	if err != nil {
		return nil, wrapRun(err, []string{"diff-tree"})
	}
	if res.code != 0 {
		return nil, gitFailed([]string{"diff-tree"}, res)
	}
	parts := splitPatch(string(res.out))
	for i := range files {
		if i >= len(parts) {
			files[i].Truncated = cut
			continue
		}
		p := parts[i]
		if i == len(parts)-1 && cut {
			files[i].Truncated = true
		}
		if files[i].Binary {
			continue
		}
		if len(p) > MaxFilePatch {
			p = p[:MaxFilePatch]
			if j := strings.LastIndexByte(p, '\n'); j > 0 {
				p = p[:j+1]
			}
			files[i].Truncated = true
		}
		files[i].Patch = p
	}
	return files, nil
}

// splitPatch cuts a patch at each file's "diff --git" header; git prints
// them in the same order as the raw and numstat lines of the same diff.
func splitPatch(s string) []string {
	var parts []string
	for s != "" {
		next := strings.Index(s[1:], "\ndiff --git ")
		if next < 0 {
			parts = append(parts, s)
			break
		}
		parts = append(parts, s[:next+2])
		s = s[next+2:]
	}
	return parts
}

var statusNames = map[byte]string{'A': "added", 'M': "modified", 'D': "deleted", 'R': "renamed", 'C': "copied", 'T': "typechange"}

// parseRawNumstat reads `diff-tree -z --raw --numstat`: the raw records,
// then the numstat ones, one of each per file in the same order.
func parseRawNumstat(out string) ([]FileDiff, error) {
	f := splitZ(out)
	var files []FileDiff
	i := 0
	for i < len(f) && strings.HasPrefix(f[i], ":") {
		meta := strings.Fields(f[i])
		if len(meta) < 5 || i+1 >= len(f) {
			return nil, newError(CodeGitFailed, "cannot read git diff-tree's output", nil)
		}
		st := meta[4][0]
		fd := FileDiff{Status: statusNames[st]}
		if fd.Status == "" {
			fd.Status = "modified"
		}
		if st == 'R' || st == 'C' {
			if i+2 >= len(f) {
				return nil, newError(CodeGitFailed, "cannot read git diff-tree's output", nil)
			}
			fd.OldPath, fd.Path = f[i+1], f[i+2]
			i += 3
		} else {
			fd.Path = f[i+1]
			i += 2
		}
		files = append(files, fd)
	}
	// numstat: "A\tD\tpath" or, for a rename, "A\tD\t" then old, new.
	for n := 0; n < len(files) && i < len(f); n++ {
		cols := strings.SplitN(f[i], "\t", 3)
		if len(cols) < 3 {
			return nil, newError(CodeGitFailed, "cannot read git diff-tree's numstat", nil)
		}
		if cols[0] == "-" && cols[1] == "-" {
			files[n].Binary = true
		} else {
			files[n].Added, _ = strconv.Atoi(cols[0])
			files[n].Deleted, _ = strconv.Atoi(cols[1])
		}
		i++
		if cols[2] == "" {
			i += 2
		}
	}
	return files, nil
}

// Counts is the branch's total +/- against its base (uncommitted changes
// included, as Diff) and how far ahead and behind it is.
func (w *Worktree) Counts(ctx context.Context) (Counts, error) {
	files, err := w.diff(ctx, false)
	if err != nil {
		return Counts{}, err
	}
	var c Counts
	for _, f := range files {
		c.Added += f.Added
		c.Deleted += f.Deleted
	}
	c.Files = len(files)
	if c.Ahead, c.Behind, err = w.aheadBehind(ctx); err != nil {
		return Counts{}, err
	}
	d, err := dirty(ctx, w.Path)
	if err != nil {
		return Counts{}, err
	}
	c.Uncommitted = len(d) > 0
	return c, nil
}
