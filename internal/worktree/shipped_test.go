package worktree_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/worktree"
)

// TestWorktreeShippedTwice: once a squash (or a merge commit) has brought
// the branch's change into the base, merging again is nothing_to_merge
// (not an empty commit on the base), and the worktree has nothing
// unshipped although its commits are not in the base; a new change is
// unshipped again.
func TestWorktreeShippedTwice(t *testing.T) {
	t.Parallel()
	for _, first := range []worktree.Strategy{worktree.Squash, worktree.MergeCommit} {
		t.Run(first.String(), func(t *testing.T) {
			t.Parallel()
			dir := newRepo(t)
			r := open(t, dir)
			wt := create(t, r, t.TempDir(), worktree.Options{Name: "twice"})
			commitIn(t, wt, "a.txt", "one\ntwo\nthree\nfour\n")
			if _, err := wt.Merge(ctx(t), first, ""); err != nil {
				t.Fatal(err)
			}
			if u, err := wt.HasUnshipped(ctx(t)); err != nil || u {
				t.Fatalf("after the merge: unshipped %v, %v", u, err)
			}
			before := state(t, dir)
			for _, again := range []worktree.Strategy{worktree.Squash, worktree.MergeCommit} {
				_, err := wt.Merge(ctx(t), again, "")
				if e := wantCode(t, err, worktree.CodeNothingToMerge); first == worktree.Squash && !strings.Contains(e.Message, "already") {
					t.Fatalf("%s again: %q", again, e.Message)
				}
			}
			if after := state(t, dir); after != before {
				t.Fatal("merging again changed the repository")
			}
			// The base moving on with other files keeps it shipped.
			write(t, dir+"/other.txt", "other\n")
			run(t, dir, "add", "other.txt")
			run(t, dir, "commit", "-q", "-m", "other")
			if u, err := wt.HasUnshipped(ctx(t)); err != nil || u {
				t.Fatalf("after the base moved: unshipped %v, %v", u, err)
			}
			commitIn(t, wt, "b.txt", "new\n")
			if u, err := wt.HasUnshipped(ctx(t)); err != nil || !u {
				t.Fatalf("a new commit: unshipped %v, %v", u, err)
			}
		})
	}
}

// TestWorktreeCommitRefusesMarkers: a commit while an update from the
// base left files with git's conflict markers is refused, naming them,
// with nothing changed (git add -A would have concluded the merge with
// the markers in); once they are resolved it concludes the merge.
func TestWorktreeCommitRefusesMarkers(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	wt := create(t, r, t.TempDir(), worktree.Options{Name: "markers"})
	commitIn(t, wt, "a.txt", "one\nTWO from the branch\nthree\n")
	commitIn(t, wt, "src/b.go", "package src // branch\n")
	write(t, filepath.Join(dir, "a.txt"), "one\nTWO from main\nthree\n")
	write(t, filepath.Join(dir, "src", "b.go"), "package src // main\n")
	run(t, dir, "commit", "-q", "-am", "main edits")
	_, err := wt.UpdateFromBase(ctx(t))
	wantCode(t, err, worktree.CodeMergeConflict)
	// The agent resolves b.go only, and makes a new file.
	write(t, filepath.Join(wt.Path, "src", "b.go"), "package src // both\n")
	write(t, filepath.Join(wt.Path, "new.txt"), "new\n")
	before := state(t, dir) + state(t, wt.Path)
	_, err = wt.Commit(ctx(t), "resolve")
	if e := wantCode(t, err, worktree.CodeMergeConflict); !slices.Equal(e.Files, []string{"a.txt"}) {
		t.Fatalf("files %v", e.Files)
	}
	if after := state(t, dir) + state(t, wt.Path); after != before {
		t.Fatal("a refused commit changed something")
	}
	write(t, filepath.Join(wt.Path, "a.txt"), "one\nTWO from both\nthree\n")
	if _, err := wt.Commit(ctx(t), "resolve"); err != nil {
		t.Fatal(err)
	}
	if parents := strings.Fields(run(t, wt.Path, "log", "-1", "--format=%P")); len(parents) != 2 {
		t.Fatalf("the resolution is not a merge commit: %v", parents)
	}
}
