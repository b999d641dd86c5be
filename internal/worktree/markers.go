package worktree

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// unresolved is the unmerged paths of the worktree (an UpdateFromBase
// left them) whose file still has git's conflict markers: committing them
// would conclude the merge with the markers in. A file resolved by
// editing it (git add not run) or deleted is not.
func (w *Worktree) unresolved(ctx context.Context) ([]string, error) {
	out, err := git(ctx, w.Path, "diff", "--name-only", "-z", "--diff-filter=U")
	if err != nil {
		return nil, err
	}
	var files []string
	for _, p := range splitZ(out) {
		if p != "" && hasMarkers(filepath.Join(w.Path, filepath.FromSlash(p))) {
			files = append(files, p)
		}
	}
	return files, nil
}

// hasMarkers reports whether the file at path has a line git's merge
// starts or ends a conflict with.
func hasMarkers(path string) bool {
	f, err := os.Open(path) //nolint:gosec // a path git names in the worktree
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		l := sc.Bytes()
		if bytes.HasPrefix(l, []byte("<<<<<<< ")) || bytes.HasPrefix(l, []byte(">>>>>>> ")) {
			return true
		}
	}
	return false
}

// checkResolved refuses (merge_conflict) a commit while unresolved files
// remain.
func (w *Worktree) checkResolved(ctx context.Context) error {
	files, err := w.unresolved(ctx)
	if err != nil {
		return err
	}
	if len(files) > 0 {
		return &Error{Code: CodeMergeConflict, Files: files,
			Message: fmt.Sprintf("the merge of %s into %s is not resolved: remove the conflict markers, then commit again (or abort the update)", w.Base, w.Branch)}
	}
	return nil
}
