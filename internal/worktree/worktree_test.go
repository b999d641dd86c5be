package worktree_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/exectest"
	"github.com/ferry-dev/ferry/internal/gittest"
	"github.com/ferry-dev/ferry/internal/worktree"
)

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: apt-get install git")
	}
}

// run runs git in dir with a clean environment and fails the test on error.
func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitOut(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "GIT_OPTIONAL_LOCKS=0", "GIT_CONFIG_NOSYSTEM=1", "HOME="+os.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newRepo is a repository on branch main with two commits' worth of files.
func newRepo(t *testing.T) string {
	t.Helper()
	needGit(t)
	dir := filepath.Join(t.TempDir(), "repo")
	run(t, t.TempDir(), "init", "-q", "-b", "main", dir)
	run(t, dir, "config", "user.name", "Test User")
	run(t, dir, "config", "user.email", "test@example.com")
	write(t, filepath.Join(dir, "a.txt"), "one\ntwo\nthree\n")
	write(t, filepath.Join(dir, "src", "b.go"), "package src\n")
	write(t, filepath.Join(dir, ".gitignore"), "*.log\n")
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", "first")
	return dir
}

// state is everything a failed step must leave as it was: the refs, the
// status, the worktree list and every byte of the checkout (the index too).
func state(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(run(t, dir, "for-each-ref", "--format=%(refname) %(objectname)"))
	b.WriteString(run(t, dir, "status", "--porcelain=v1", "--untracked-files=all"))
	b.WriteString(run(t, dir, "worktree", "list", "--porcelain"))
	head, _ := gitOut(dir, "symbolic-ref", "-q", "HEAD")
	b.WriteString(head)
	b.WriteString(gittest.Checkout(t, dir))
	return b.String()
}

func wantCode(t *testing.T, err error, code string) *worktree.Error {
	t.Helper()
	var e *worktree.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("want a %s error, got %v", code, err)
	}
	if e.Message == "" {
		t.Fatalf("%s error without a message", code)
	}
	return e
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

func open(t *testing.T, dir string) *worktree.Repo {
	t.Helper()
	r, err := worktree.Open(ctx(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func create(t *testing.T, r *worktree.Repo, root string, o worktree.Options) *worktree.Worktree {
	t.Helper()
	o.Root = root
	wt, err := r.Create(ctx(t), o)
	if err != nil {
		t.Fatal(err)
	}
	return wt
}

func TestWorktreeOpen(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, filepath.Join(dir, "src"))
	if r.Top != dir {
		t.Fatalf("top %s, want %s", r.Top, dir)
	}
	if b, err := r.CurrentBranch(ctx(t)); err != nil || b != "main" {
		t.Fatalf("branch %q %v", b, err)
	}
	if _, err := worktree.Open(ctx(t), t.TempDir()); err == nil {
		t.Fatal("a plain folder opened")
	} else {
		wantCode(t, err, worktree.CodeNotRepo)
	}
	_, err := worktree.Open(ctx(t), filepath.Join(dir, "missing"))
	wantCode(t, err, worktree.CodeNotRepo)

	// Detached HEAD: Open works, the current branch and a Create without
	// a base do not, and nothing changes.
	run(t, dir, "checkout", "-q", "--detach")
	before := state(t, dir)
	_, err = r.CurrentBranch(ctx(t))
	wantCode(t, err, worktree.CodeDetachedHead)
	_, err = r.Create(ctx(t), worktree.Options{Name: "x", Root: t.TempDir()})
	wantCode(t, err, worktree.CodeDetachedHead)
	if after := state(t, dir); after != before {
		t.Fatalf("the repository changed:\n%s\n---\n%s", before, after)
	}
	// With a base it works from a detached HEAD too.
	create(t, r, t.TempDir(), worktree.Options{Name: "x", Base: "main"})
}

func TestWorktreeSanitize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Fix the login bug!":        "fix-the-login-bug",
		"  ":                        "session",
		"../../etc/passwd":          "etc-passwd",
		"Ünïcode — title":           "n-code-title",
		strings.Repeat("abc ", 30):  "abc-abc-abc-abc-abc-abc-abc-abc-abc-abc",
		"ferry/nested --option":     "ferry-nested-option",
		"-leading and trailing-":    "leading-and-trailing",
		"CAPS_and_under_scores 123": "caps-and-under-scores-123",
	} {
		got := worktree.Sanitize(in)
		if got != want || !worktree.ValidName(got) {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWorktreeCreate(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	root := t.TempDir()
	r := open(t, dir)
	checkout := gittest.Checkout(t, dir)

	wt := create(t, r, root, worktree.Options{Title: "Fix the Bug"})
	if wt.Name != "fix-the-bug" || wt.Branch != "ferry/fix-the-bug" || wt.Base != "main" {
		t.Fatalf("worktree %+v", wt)
	}
	if !strings.HasPrefix(wt.Path, filepath.Join(root, r.ID)+string(filepath.Separator)) {
		t.Fatalf("path %s not under %s", wt.Path, root)
	}
	if b, _ := os.ReadFile(filepath.Join(wt.Path, "a.txt")); string(b) != "one\ntwo\nthree\n" {
		t.Fatalf("a.txt in the worktree: %q", b)
	}
	if got := strings.TrimSpace(run(t, wt.Path, "symbolic-ref", "--short", "HEAD")); got != "ferry/fix-the-bug" {
		t.Fatalf("worktree on %s", got)
	}
	// A taken name from a title moves on; an insisted one is refused.
	wt2 := create(t, r, root, worktree.Options{Title: "fix the bug"})
	wt3 := create(t, r, root, worktree.Options{Title: "fix the bug"})
	if wt2.Name != "fix-the-bug-2" || wt3.Name != "fix-the-bug-3" {
		t.Fatalf("names %s %s", wt2.Name, wt3.Name)
	}
	_, err := r.Create(ctx(t), worktree.Options{Name: "fix-the-bug", Root: root})
	wantCode(t, err, worktree.CodeBranchExists)
	// A branch made by hand is taken too.
	run(t, dir, "branch", "ferry/mine")
	_, err = r.Create(ctx(t), worktree.Options{Name: "mine", Root: root})
	wantCode(t, err, worktree.CodeBranchExists)
	if got := create(t, r, root, worktree.Options{Title: "Mine"}); got.Name != "mine-2" {
		t.Fatalf("name %s", got.Name)
	}
	mid := state(t, dir)
	for _, tc := range []struct {
		o    worktree.Options
		code string
	}{
		{worktree.Options{Name: "x", Base: "nope"}, worktree.CodeBaseNotFound},
		{worktree.Options{Name: "x", Base: "a.txt"}, worktree.CodeBaseNotFound},
		{worktree.Options{Name: "Bad Name"}, worktree.CodeBadName},
		{worktree.Options{Name: "../escape"}, worktree.CodeBadName},
		{worktree.Options{Name: "-rf"}, worktree.CodeBadName},
		{worktree.Options{Name: strings.Repeat("a", 41)}, worktree.CodeBadName},
		{worktree.Options{Name: "x", Root: filepath.Join(dir, "inside")}, worktree.CodeBadRoot},
		{worktree.Options{Name: "x", Root: "relative"}, worktree.CodeBadRoot},
	} {
		if tc.o.Root == "" {
			tc.o.Root = root
		}
		_, err := r.Create(ctx(t), tc.o)
		wantCode(t, err, tc.code)
	}
	if after := state(t, dir); after != mid {
		t.Fatalf("a refused Create changed the repository:\n%s\n---\n%s", mid, after)
	}
	// The user's checkout is the same bytes as before (the new branches
	// and worktrees aside).
	if gittest.Checkout(t, dir) != checkout {
		t.Fatal("the user's checkout changed")
	}

	list, err := r.List(ctx(t), root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range list {
		names = append(names, w.Name)
		if w.Missing {
			t.Fatalf("%s reported missing", w.Name)
		}
	}
	if want := []string{"fix-the-bug", "fix-the-bug-2", "fix-the-bug-3", "mine-2"}; !slices.Equal(names, want) {
		t.Fatalf("list %v, want %v", names, want)
	}
	found, err := r.Find(ctx(t), root, "fix-the-bug-2")
	if err != nil || found.Path != wt2.Path || found.Base != "main" {
		t.Fatalf("find %+v %v", found, err)
	}
	_, err = r.Find(ctx(t), root, "nope")
	wantCode(t, err, worktree.CodeNotFound)
}

// TestWorktreeCreateConcurrent: 8 Creates at once on one repository all
// succeed, with distinct branches and folders.
func TestWorktreeCreateConcurrent(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	root := t.TempDir()
	before := state(t, dir)
	const n = 8
	var wg sync.WaitGroup
	wts := make([]*worktree.Worktree, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A Repo each, as separate sessions would have.
			r, err := worktree.Open(ctx(t), dir)
			if err == nil {
				wts[i], err = r.Create(ctx(t), worktree.Options{Title: "same title", Root: root})
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("create %d: %v", i, errs[i])
		}
		if seen[wts[i].Branch] || seen[wts[i].Path] {
			t.Fatalf("%s given twice", wts[i].Branch)
		}
		seen[wts[i].Branch], seen[wts[i].Path] = true, true
	}
	out := run(t, dir, "worktree", "list", "--porcelain")
	if c := strings.Count(out, "branch refs/heads/ferry/same-title"); c != n {
		t.Fatalf("%d ferry worktrees in git's list:\n%s", c, out)
	}
	if !strings.Contains(before, gittest.Checkout(t, dir)) {
		t.Fatal("the user's checkout changed")
	}
}

// TestWorktreeCreateOtherProcessLock: a Create waits out an index or
// worktree lock held by another process rather than failing.
func TestWorktreeCreateOtherProcessLock(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	// git worktree add takes refs/heads/ferry/NAME.lock: hold it a while.
	refLock := filepath.Join(dir, ".git", "refs", "heads", "ferry", "held.lock")
	write(t, refLock, "")
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = os.Remove(refLock)
	}()
	start := time.Now()
	if _, err := r.Create(ctx(t), worktree.Options{Name: "held", Root: t.TempDir()}); err != nil {
		t.Fatalf("create while a lock was held: %v", err)
	}
	// It did wait for the lock (else the test proves nothing).
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("created in %s, while the lock was held for 300ms", d)
	}
}

func TestWorktreeDiffCommitCounts(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	wt := create(t, r, t.TempDir(), worktree.Options{Name: "diff"})
	files, err := wt.Diff(ctx(t))
	if err != nil || len(files) != 0 {
		t.Fatalf("fresh worktree diff %+v %v", files, err)
	}
	_, err = wt.Commit(ctx(t), "nothing")
	wantCode(t, err, worktree.CodeNothingToCommit)

	// One committed change, then uncommitted ones: modified, new
	// (untracked), deleted, binary, renamed, and an ignored file.
	write(t, filepath.Join(wt.Path, "a.txt"), "one\n2\nthree\nfour\n")
	sha, err := wt.Commit(ctx(t), "edit a\n\nbody")
	if err != nil || len(sha) != 40 {
		t.Fatalf("commit %q %v", sha, err)
	}
	if got := run(t, wt.Path, "log", "-1", "--format=%an <%ae>|%s|%b"); got != "Test User <test@example.com>|edit a|body\n\n" {
		t.Fatalf("commit %q", got)
	}
	write(t, filepath.Join(wt.Path, "new.txt"), "fresh\n")
	write(t, filepath.Join(wt.Path, "bin.dat"), "\x00\x01\x02binary")
	write(t, filepath.Join(wt.Path, "debug.log"), "ignored\n")
	if err := os.Remove(filepath.Join(wt.Path, "src", "b.go")); err != nil {
		t.Fatal(err)
	}
	indexBefore, _ := os.ReadFile(filepath.Join(dir, ".git", "worktrees", "diff", "index"))
	files, err = wt.Diff(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]worktree.FileDiff{}
	for _, f := range files {
		got[f.Path] = f
	}
	if len(files) != 4 {
		t.Fatalf("files %+v", files)
	}
	if a := got["a.txt"]; a.Status != "modified" || a.Added != 2 || a.Deleted != 1 || !strings.Contains(a.Patch, "+four") || !strings.HasPrefix(a.Patch, "diff --git a/a.txt b/a.txt") {
		t.Fatalf("a.txt %+v", a)
	}
	if n := got["new.txt"]; n.Status != "added" || n.Added != 1 || !strings.Contains(n.Patch, "+fresh") {
		t.Fatalf("new.txt %+v", n)
	}
	if b := got["src/b.go"]; b.Status != "deleted" || b.Deleted != 1 {
		t.Fatalf("b.go %+v", b)
	}
	if b := got["bin.dat"]; !b.Binary || b.Patch != "" {
		t.Fatalf("bin.dat %+v", b)
	}
	if _, ok := got["debug.log"]; ok {
		t.Fatal("an ignored file is in the diff")
	}
	// Diff leaves the worktree's index alone.
	if indexAfter, _ := os.ReadFile(filepath.Join(dir, ".git", "worktrees", "diff", "index")); !bytes.Equal(indexBefore, indexAfter) {
		t.Fatal("Diff changed the worktree's index")
	}
	c, err := wt.Counts(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if c != (worktree.Counts{Added: 3, Deleted: 2, Files: 4, Ahead: 1, Behind: 0, Uncommitted: true}) {
		t.Fatalf("counts %+v", c)
	}
	// The base moves on: behind 1.
	write(t, filepath.Join(dir, "other.txt"), "x\n")
	run(t, dir, "add", "other.txt")
	run(t, dir, "commit", "-q", "-m", "base moves")
	if c, err = wt.Counts(ctx(t)); err != nil || c.Behind != 1 || c.Ahead != 1 {
		t.Fatalf("counts %+v %v", c, err)
	}
	// The merge base, not the base's tip: other.txt is not in the diff.
	if files, _ = wt.Diff(ctx(t)); len(files) != 4 {
		t.Fatalf("after the base moved: %+v", files)
	}
	// A big file's patch is cut.
	write(t, filepath.Join(wt.Path, "big.txt"), strings.Repeat("a line of text\n", 40000))
	files, err = wt.Diff(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Path == "big.txt" && (!f.Truncated || len(f.Patch) > worktree.MaxFilePatch || f.Added != 40000) {
			t.Fatalf("big.txt truncated=%v len=%d added=%d", f.Truncated, len(f.Patch), f.Added)
		}
	}
}

func TestWorktreeCommitDefaultAuthor(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	run(t, dir, "config", "--unset", "user.name")
	run(t, dir, "config", "--unset", "user.email")
	r := open(t, dir)
	wt := create(t, r, t.TempDir(), worktree.Options{Name: "anon"})
	write(t, filepath.Join(wt.Path, "a.txt"), "changed\n")
	// The test's HOME has no git config, but the runner's HOME may: look
	// at the result only when git had no identity of its own.
	if _, err := gitOut(wt.Path, "config", "--get", "user.email"); err == nil {
		t.Skip("git has a global identity on this machine")
	}
	if _, err := wt.Commit(ctx(t), "anon"); err != nil {
		if out, _ := exec.Command("git", "config", "--global", "--get", "user.email").Output(); len(out) > 0 {
			t.Skip("git has a global identity on this machine")
		}
		t.Fatal(err)
	}
	got := run(t, wt.Path, "log", "-1", "--format=%an <%ae>")
	if out, _ := exec.Command("git", "config", "--global", "--get", "user.email").Output(); len(out) == 0 && got != "ferry <ferry@localhost>\n" {
		t.Fatalf("author %q", got)
	}
}

func TestWorktreeSetup(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	root := t.TempDir()
	wt := create(t, r, root, worktree.Options{Name: "nosetup"})
	if ran, err := wt.Setup(ctx(t), nil, 0); ran || err != nil {
		t.Fatalf("no script: ran=%v %v", ran, err)
	}
	gittest.Write(t, filepath.Join(dir, ".ferry", "setup"), "#!/bin/sh\necho setting up in \"$PWD\"\necho to stderr >&2\nexit ${SETUP_EXIT:-0}\n", 0o755)
	run(t, dir, "add", ".ferry/setup")
	run(t, dir, "commit", "-q", "-m", "setup")
	wt = create(t, r, root, worktree.Options{Name: "withsetup"})
	var out bytes.Buffer
	if ran, err := wt.Setup(ctx(t), &out, 0); !ran || err != nil {
		t.Fatalf("setup: ran=%v %v", ran, err)
	}
	if want := "setting up in " + wt.Path + "\nto stderr\n"; out.String() != want {
		t.Fatalf("setup output %q, want %q", out.String(), want)
	}
	// A failing script: setup_failed with the exit status.
	write(t, filepath.Join(wt.Path, ".ferry", "setup"), "#!/bin/sh\necho failing\nexit 3\n")
	out.Reset()
	_, err := wt.Setup(ctx(t), &out, 0)
	if e := wantCode(t, err, worktree.CodeSetupFailed); !strings.Contains(e.Message, "exit status 3") || out.String() != "failing\n" {
		t.Fatalf("message %q output %q", e.Message, out.String())
	}
	// Too slow: stopped at the timeout, with what it started.
	write(t, filepath.Join(wt.Path, ".ferry", "setup"), "#!/bin/sh\nsleep 30 &\nwait\n")
	start := time.Now()
	_, err = wt.Setup(ctx(t), &out, 300*time.Millisecond)
	if e := wantCode(t, err, worktree.CodeSetupFailed); !strings.Contains(e.Message, "longer than") || time.Since(start) > 10*time.Second {
		t.Fatalf("timeout: %q after %s", e.Message, time.Since(start))
	}
	// Not executable.
	if err := os.Chmod(filepath.Join(wt.Path, ".ferry", "setup"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = wt.Setup(ctx(t), &out, 0)
	if e := wantCode(t, err, worktree.CodeSetupFailed); !strings.Contains(e.Message, "chmod +x") {
		t.Fatalf("message %q", e.Message)
	}
}

// commitIn writes path in wt and commits it there.
func commitIn(t *testing.T, wt *worktree.Worktree, path, content string) {
	t.Helper()
	write(t, filepath.Join(wt.Path, path), content)
	if _, err := wt.Commit(ctx(t), "change "+path); err != nil {
		t.Fatal(err)
	}
}

func TestWorktreeMerge(t *testing.T) {
	t.Parallel()
	for _, s := range []worktree.Strategy{worktree.FastForward, worktree.Squash, worktree.MergeCommit} {
		t.Run(s.String(), func(t *testing.T) {
			t.Parallel()
			dir := newRepo(t)
			r := open(t, dir)
			wt := create(t, r, t.TempDir(), worktree.Options{Name: "m"})
			_, err := wt.Merge(ctx(t), s, "")
			wantCode(t, err, worktree.CodeNothingToMerge)

			commitIn(t, wt, "a.txt", "one\ntwo\nthree\nfour\n")
			write(t, filepath.Join(wt.Path, "loose.txt"), "uncommitted\n")
			_, err = wt.Merge(ctx(t), s, "")
			wantCode(t, err, worktree.CodeUncommitted)
			commitIn(t, wt, "loose.txt", "uncommitted\n")

			// The user's checkout has main checked out and a dirty a.txt,
			// which the merge changes: refused, nothing touched.
			write(t, filepath.Join(dir, "a.txt"), "user's own edit\n")
			write(t, filepath.Join(dir, "unrelated.txt"), "user's new file\n")
			mid := state(t, dir)
			_, err = wt.Merge(ctx(t), s, "")
			if e := wantCode(t, err, worktree.CodeBaseDirty); !slices.Equal(e.Files, []string{"a.txt"}) {
				t.Fatalf("files %v", e.Files)
			}
			if after := state(t, dir); after != mid {
				t.Fatalf("a refused merge changed the repository:\n%s\n---\n%s", mid, after)
			}
			// An untracked file the merge would create clashes too.
			run(t, dir, "checkout", "-q", "--", "a.txt")
			write(t, filepath.Join(dir, "loose.txt"), "user's\n")
			mid = state(t, dir)
			_, err = wt.Merge(ctx(t), s, "")
			if e := wantCode(t, err, worktree.CodeBaseDirty); !slices.Equal(e.Files, []string{"loose.txt"}) {
				t.Fatalf("files %v", e.Files)
			}
			if after := state(t, dir); after != mid {
				t.Fatal("a refused merge changed the repository")
			}
			_ = os.Remove(filepath.Join(dir, "loose.txt"))

			// A dirty file the merge does not touch is fine: the checkout
			// follows and keeps it.
			head, err := wt.Merge(ctx(t), s, "ship it")
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(run(t, dir, "rev-parse", "main")); got != head {
				t.Fatalf("main at %s, Merge said %s", got, head)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "one\ntwo\nthree\nfour\n" {
				t.Fatalf("the checkout did not follow: %q", b)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "unrelated.txt")); string(b) != "user's new file\n" {
				t.Fatal("the user's untracked file changed")
			}
			if st := run(t, dir, "status", "--porcelain"); st != "?? unrelated.txt\n" {
				t.Fatalf("status %q", st)
			}
			parents := strings.Fields(run(t, dir, "log", "-1", "--format=%P", "main"))
			subject := strings.TrimSpace(run(t, dir, "log", "-1", "--format=%s", "main"))
			switch s {
			case worktree.FastForward:
				if head != strings.TrimSpace(run(t, dir, "rev-parse", "ferry/m")) {
					t.Fatal("not a fast-forward")
				}
			case worktree.Squash:
				if len(parents) != 1 || subject != "ship it" {
					t.Fatalf("squash: parents %v subject %q", parents, subject)
				}
			case worktree.MergeCommit:
				if len(parents) != 2 || subject != "ship it" {
					t.Fatalf("merge: parents %v subject %q", parents, subject)
				}
			}
		})
	}
}

// TestWorktreeMergeNoCheckout: with the base checked out nowhere, only
// its ref moves; no checkout is touched.
func TestWorktreeMergeNoCheckout(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	run(t, dir, "branch", "release")
	r := open(t, dir)
	wt := create(t, r, t.TempDir(), worktree.Options{Name: "rel", Base: "release"})
	commitIn(t, wt, "a.txt", "release change\n")
	write(t, filepath.Join(dir, "a.txt"), "dirty in the user's checkout of main\n")
	before := gittest.Checkout(t, dir)
	mainBefore := run(t, dir, "rev-parse", "main")
	head, err := wt.Merge(ctx(t), worktree.Squash, "squashed")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(run(t, dir, "rev-parse", "release")); got != head {
		t.Fatalf("release at %s, want %s", got, head)
	}
	if got := run(t, dir, "show", "release:a.txt"); got != "release change\n" {
		t.Fatalf("release's a.txt %q", got)
	}
	if gittest.Checkout(t, dir) != before || run(t, dir, "rev-parse", "main") != mainBefore {
		t.Fatal("the user's checkout changed")
	}
	// Fast-forward when the base moved on is refused.
	wt2 := create(t, r, t.TempDir(), worktree.Options{Name: "rel2", Base: "release"})
	commitIn(t, wt2, "src/b.go", "package src // changed\n")
	// release moves on under it.
	moved := strings.TrimSpace(run(t, dir, "commit-tree", "release^{tree}", "-p", "release", "-m", "elsewhere"))
	run(t, dir, "update-ref", "refs/heads/release", moved)
	mid := state(t, dir)
	_, err = wt2.Merge(ctx(t), worktree.FastForward, "")
	wantCode(t, err, worktree.CodeNotFastForward)
	if state(t, dir) != mid {
		t.Fatal("a refused merge changed the repository")
	}
}

func TestWorktreeMergeConflict(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	wt := create(t, r, t.TempDir(), worktree.Options{Name: "c"})
	commitIn(t, wt, "a.txt", "one\nTWO from the branch\nthree\n")
	write(t, filepath.Join(dir, "a.txt"), "one\nTWO from main\nthree\n")
	run(t, dir, "commit", "-q", "-am", "main edits")
	before := state(t, dir)
	wtBefore := gittest.Checkout(t, wt.Path)
	branchBefore := run(t, dir, "rev-parse", "ferry/c")
	for _, s := range []worktree.Strategy{worktree.Squash, worktree.MergeCommit} {
		_, err := wt.Merge(ctx(t), s, "")
		if e := wantCode(t, err, worktree.CodeMergeConflict); !slices.Equal(e.Files, []string{"a.txt"}) {
			t.Fatalf("conflict files %v", e.Files)
		}
	}
	if state(t, dir) != before || gittest.Checkout(t, wt.Path) != wtBefore || run(t, dir, "rev-parse", "ferry/c") != branchBefore {
		t.Fatal("a conflicting merge changed something")
	}
}

func TestWorktreePush(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	bare := filepath.Join(t.TempDir(), "remote.git")
	run(t, t.TempDir(), "init", "-q", "--bare", bare)
	run(t, dir, "remote", "add", "origin", bare)
	r := open(t, dir)
	wt := create(t, r, t.TempDir(), worktree.Options{Name: "p"})
	commitIn(t, wt, "a.txt", "pushed\n")
	if err := wt.Push(ctx(t), ""); err != nil {
		t.Fatal(err)
	}
	if got, want := run(t, bare, "rev-parse", "ferry/p"), run(t, dir, "rev-parse", "ferry/p"); got != want {
		t.Fatalf("remote at %s, local %s", got, want)
	}
	// A hook that refuses: push_rejected with its reason; nothing local
	// changes.
	hook := filepath.Join(bare, "hooks", "pre-receive")
	exectest.WriteScript(t, hook, "#!/bin/sh\necho 'branch pushes are closed today' >&2\nexit 1\n")
	commitIn(t, wt, "a.txt", "pushed again\n")
	before := state(t, dir)
	remoteBefore := run(t, bare, "rev-parse", "ferry/p")
	err := wt.Push(ctx(t), "origin")
	if e := wantCode(t, err, worktree.CodePushRejected); !strings.Contains(e.Message, "branch pushes are closed today") || !strings.Contains(e.Message, "pre-receive hook declined") {
		t.Fatalf("message %q", e.Message)
	}
	if state(t, dir) != before || run(t, bare, "rev-parse", "ferry/p") != remoteBefore {
		t.Fatal("a refused push changed something")
	}
	wantCode(t, wt.Push(ctx(t), "nowhere"), worktree.CodeRemoteNotFound)
	wantCode(t, wt.Push(ctx(t), "--mirror"), worktree.CodeRemoteNotFound)
	// A remote that would ask for a password fails at once, no prompt.
	run(t, dir, "remote", "add", "asks", "http://127.0.0.1:1/repo.git")
	err = wt.Push(ctx(t), "asks")
	wantCode(t, err, worktree.CodePushRejected)
}

func TestWorktreeRemoveAndPrune(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	root := t.TempDir()
	clean := create(t, r, root, worktree.Options{Name: "clean"})
	work := create(t, r, root, worktree.Options{Name: "work"})
	loose := create(t, r, root, worktree.Options{Name: "loose"})
	gone := create(t, r, root, worktree.Options{Name: "gone"})
	commitIn(t, work, "a.txt", "committed work\n")
	write(t, filepath.Join(loose.Path, "new.txt"), "uncommitted\n")
	for _, tc := range []struct {
		wt   *worktree.Worktree
		want bool
	}{{clean, false}, {work, true}, {loose, true}} {
		if got, err := tc.wt.HasUnshipped(ctx(t)); err != nil || got != tc.want {
			t.Fatalf("%s: unshipped %v %v", tc.wt.Name, got, err)
		}
	}
	// Removed without its branch; with it.
	if err := clean.Remove(ctx(t), false); err != nil {
		t.Fatal(err)
	}
	if err := work.Remove(ctx(t), true); err != nil {
		t.Fatal(err)
	}
	if err := loose.Remove(ctx(t), false); err != nil {
		t.Fatal(err)
	}
	branches := run(t, dir, "branch", "--list", "ferry/*", "--format=%(refname:short)")
	if branches != "ferry/gone\nferry/work\n" {
		t.Fatalf("branches %q", branches)
	}
	for _, w := range []*worktree.Worktree{clean, work, loose} {
		if _, err := os.Stat(w.Path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s still there: %v", w.Path, err)
		}
	}
	// A folder removed by hand: listed as missing, pruned from git's
	// records and the list.
	if err := os.RemoveAll(gone.Path); err != nil {
		t.Fatal(err)
	}
	list, err := r.List(ctx(t), root)
	if err != nil || len(list) != 1 || list[0].Name != "gone" || !list[0].Missing {
		t.Fatalf("list %+v %v", list, err)
	}
	_, err = gone.Commit(ctx(t), "x")
	wantCode(t, err, worktree.CodeMissing)
	pruned, err := r.Prune(ctx(t), root)
	if err != nil || !slices.Equal(pruned, []string{"gone"}) {
		t.Fatalf("pruned %v %v", pruned, err)
	}
	if out := run(t, dir, "worktree", "list", "--porcelain"); strings.Contains(out, "gone") {
		t.Fatalf("git still lists it:\n%s", out)
	}
	if list, _ := r.List(ctx(t), root); len(list) != 0 {
		t.Fatalf("list after prune %+v", list)
	}
	// A Create cut short by a crash left a worktree without its record:
	// Prune removes it and its branch (no agent worked there).
	cut := create(t, r, root, worktree.Options{Name: "cut"})
	if err := os.Remove(filepath.Join(root, r.ID, ".records", "cut.json")); err != nil {
		t.Fatal(err)
	}
	// A young one may be another process's Create under way: kept.
	if pruned, err = r.Prune(ctx(t), root); err != nil || len(pruned) != 0 {
		t.Fatalf("pruned %v %v", pruned, err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(cut.Path, old, old); err != nil {
		t.Fatal(err)
	}
	if pruned, err = r.Prune(ctx(t), root); err != nil || !slices.Equal(pruned, []string{"cut"}) {
		t.Fatalf("pruned %v %v", pruned, err)
	}
	if _, err := os.Stat(cut.Path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s still there", cut.Path)
	}
	if out := run(t, dir, "branch", "--list", "ferry/cut"); out != "" {
		t.Fatalf("branch left: %q", out)
	}
	// Its name is free again only once its branch is gone.
	if again := create(t, r, root, worktree.Options{Title: "gone"}); again.Name != "gone-2" {
		t.Fatalf("name %s", again.Name)
	}
	if got := run(t, dir, "status", "--porcelain"); got != "" {
		t.Fatalf("status %q", got)
	}
}

func TestWorktreeCancelled(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	c, cancel := context.WithCancel(context.Background())
	cancel()
	before := state(t, dir)
	_, err := r.Create(c, worktree.Options{Name: "x", Root: t.TempDir()})
	wantCode(t, err, worktree.CodeCancelled)
	if state(t, dir) != before {
		t.Fatal("a cancelled Create changed the repository")
	}
}

// TestWorktreeUpdateFromBase: after a merge_conflict, the base is merged
// into the worktree for the agent to resolve; then the merge goes through.
func TestWorktreeUpdateFromBase(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	wt := create(t, r, t.TempDir(), worktree.Options{Name: "u"})
	_, err := wt.UpdateFromBase(ctx(t))
	wantCode(t, err, worktree.CodeNothingToMerge)
	commitIn(t, wt, "a.txt", "one\nTWO from the branch\nthree\n")
	write(t, filepath.Join(dir, "a.txt"), "one\nTWO from main\nthree\n")
	run(t, dir, "commit", "-q", "-am", "main edits")
	_, err = wt.Merge(ctx(t), worktree.Squash, "")
	wantCode(t, err, worktree.CodeMergeConflict)

	before := state(t, dir)
	branchBefore := run(t, dir, "rev-parse", "ferry/u")
	_, err = wt.UpdateFromBase(ctx(t))
	if e := wantCode(t, err, worktree.CodeMergeConflict); !slices.Equal(e.Files, []string{"a.txt"}) {
		t.Fatalf("files %v", e.Files)
	}
	if b, _ := os.ReadFile(filepath.Join(wt.Path, "a.txt")); !strings.Contains(string(b), "<<<<<<<") {
		t.Fatalf("no conflict markers: %q", b)
	}
	if state(t, dir) != before {
		t.Fatal("the user's checkout changed")
	}
	// Abort puts it back; then again, resolved this time.
	if err := wt.AbortUpdate(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if run(t, dir, "rev-parse", "ferry/u") != branchBefore || run(t, wt.Path, "status", "--porcelain") != "" {
		t.Fatal("abort did not restore the worktree")
	}
	_, err = wt.UpdateFromBase(ctx(t))
	wantCode(t, err, worktree.CodeMergeConflict)
	write(t, filepath.Join(wt.Path, "a.txt"), "one\nTWO from both\nthree\n")
	if _, err := wt.Commit(ctx(t), "resolve"); err != nil {
		t.Fatal(err)
	}
	if parents := strings.Fields(run(t, wt.Path, "log", "-1", "--format=%P")); len(parents) != 2 {
		t.Fatalf("the resolution is not a merge commit: %v", parents)
	}
	if _, err := wt.Merge(ctx(t), worktree.FastForward, ""); err != nil {
		t.Fatal(err)
	}
	if got := run(t, dir, "show", "main:a.txt"); got != "one\nTWO from both\nthree\n" {
		t.Fatalf("main's a.txt %q", got)
	}
}

func TestWorktreeTestScript(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	gittest.Write(t, filepath.Join(dir, ".ferry", "test"), "#!/bin/sh\ngrep -q four a.txt || { echo 'a.txt lacks four'; exit 1; }\necho ok\n", 0o755)
	run(t, dir, "add", ".ferry/test")
	run(t, dir, "commit", "-q", "-m", "test")
	r := open(t, dir)
	wt := create(t, r, t.TempDir(), worktree.Options{Name: "t"})
	var out bytes.Buffer
	ran, err := wt.Test(ctx(t), &out, 0)
	if e := wantCode(t, err, worktree.CodeTestFailed); !ran || !strings.Contains(e.Message, "exit status 1") || out.String() != "a.txt lacks four\n" {
		t.Fatalf("ran=%v %q %q", ran, e.Message, out.String())
	}
	write(t, filepath.Join(wt.Path, "a.txt"), "four\n")
	out.Reset()
	if ran, err := wt.Test(ctx(t), &out, 0); !ran || err != nil || out.String() != "ok\n" {
		t.Fatalf("ran=%v %v %q", ran, err, out.String())
	}

	// The agent rewrites the worktree's .ferry/test (and commits it): the
	// base's script runs all the same, never the agent's.
	marker := filepath.Join(t.TempDir(), "ran")
	write(t, filepath.Join(wt.Path, ".ferry", "test"), "#!/bin/sh\ntouch "+marker+"\necho agent\n")
	run(t, wt.Path, "commit", "-q", "-am", "my own test")
	out.Reset()
	if ran, err := wt.Test(ctx(t), &out, 0); !ran || err != nil || out.String() != "ok\n" {
		t.Fatalf("with the worktree's .ferry/test rewritten: ran=%v %v %q, want the base's script", ran, err, out.String())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the worktree's own .ferry/test ran")
	}

	// A base whose script is not executable is refused, saying so; a base
	// without one runs nothing.
	if err := os.Chmod(filepath.Join(dir, ".ferry", "test"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "commit", "-q", "-am", "not executable")
	if ran, err := wt.Test(ctx(t), &out, 0); ran || !strings.Contains(wantCode(t, err, worktree.CodeTestFailed).Message, "chmod +x") {
		t.Fatalf("a base script that is not executable: ran=%v %v", ran, err)
	}
	run(t, dir, "rm", "-q", ".ferry/test")
	run(t, dir, "commit", "-q", "-m", "no test")
	if ran, err := wt.Test(ctx(t), &out, 0); ran || err != nil {
		t.Fatalf("a base without .ferry/test: ran=%v %v, want nothing run", ran, err)
	}
}
