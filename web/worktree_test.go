package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/worktree"
	"github.com/ferry-dev/ferry/protocol"
)

// gitRun runs git in dir (a test's repository) and fails the test on error.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com", "GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// needGit skips a test without git, naming the install step.
func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is missing: apt-get install -y git")
	}
}

// gitRepo makes dir/name a repository on branch main holding files,
// committed once, and returns its path.
func gitRepo(t *testing.T, dir, name string, files map[string]string) string {
	t.Helper()
	needGit(t)
	repo := filepath.Join(dir, name)
	gitRun(t, dir, "init", "-q", "-b", "main", repo)
	gitRun(t, repo, "config", "user.name", "Test")
	gitRun(t, repo, "config", "user.email", "test@example.com")
	for rel, content := range files {
		p := filepath.Join(repo, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitRun(t, repo, "add", "-A")
	gitRun(t, repo, "commit", "-q", "-m", "first")
	return repo
}

// branchDiff is a real branch diff in the wire's shape: a worktree of a
// real repository whose files were edited, added, deleted, renamed, made
// binary and left without a final newline, as the client's git layer
// (worktree.Diff) reports it, with removed named as the protocol names it.
func branchDiff(t *testing.T) []protocol.BranchFileDiff {
	t.Helper()
	dir := t.TempDir()
	var long strings.Builder
	for i := range 60 {
		long.WriteString("line " + string(rune('a'+i%26)) + "\n")
	}
	repo := gitRepo(t, dir, "repo", map[string]string{
		"long.txt": long.String(), "gone.txt": "bye\n", "old/name.txt": "kept\nas it was\n",
		"eol.txt": "no\nfinal\n", "img.bin": "\x00\x01\x02", "src/app.go": "package app\n\nfunc A() int { return 1 }\n",
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := worktree.Open(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := r.Create(ctx, worktree.Options{Name: "units", Root: filepath.Join(dir, "worktrees")})
	if err != nil {
		t.Fatal(err)
	}
	edit := func(rel, content string) {
		p := filepath.Join(wt.Path, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit("long.txt", strings.Replace(strings.Replace(long.String(), "line c\n", "line C\nline C2\n", 1), "line x\n", "", 1))
	edit("eol.txt", "no\nfinal\nnewline")
	edit("img.bin", "\x00\x09\x08\x07")
	edit("new/file.ts", "export const x = 1\n")
	edit("src/app.go", "package app\n\nfunc A() int { return 2 }\n")
	if err := os.Remove(filepath.Join(wt.Path, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	gitRun(t, wt.Path, "mv", "old/name.txt", "new/name.txt")
	gitRun(t, wt.Path, "add", "src/app.go")
	gitRun(t, wt.Path, "commit", "-q", "-m", "on the branch")
	files, err := wt.Diff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]protocol.BranchFileDiff, len(files))
	for i, f := range files {
		st := f.Status
		if st == "typechange" {
			st = "type_changed"
		}
		out[i] = protocol.BranchFileDiff{Path: f.Path, OldPath: f.OldPath, Status: st, Added: f.Added, Removed: f.Deleted,
			Binary: f.Binary, Patch: f.Patch, Truncated: f.Truncated}
	}
	if len(out) < 6 {
		t.Fatalf("the branch diff has %d files, want 7: %+v", len(out), out)
	}
	return out
}

// TestWorktreeUnits checks the pure parts of the isolated sessions' UI
// (web/static/js/worktree.js) under Node: the branch line of a session
// row, the per-workspace "isolated" choice, best-of-N start payloads,
// a real branch diff's patches (from real git) parsed into hunks that
// add up to git's own counts, the ship sheet's payload, outcome and help
// for every ship error code the protocol defines, the conflict prompt and
// what discarding unshipped work loses (web/e2e/worktreeunits.mjs).
func TestWorktreeUnits(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("FERRY_REQUIRE_BROWSER") != "" {
			t.Fatal("node is missing: apt-get install -y nodejs")
		}
		t.Skip("node is missing: apt-get install -y nodejs")
	}
	diff := branchDiff(t)
	codes := []string{}
	for _, c := range []string{protocol.CodeBaseDirty, protocol.CodeMergeConflict, protocol.CodePushRejected, protocol.CodeRemoteNotFound,
		protocol.CodeNothingToCommit, protocol.CodeNothingToMerge, protocol.CodeNotFastForward, protocol.CodeUncommitted,
		protocol.CodeWorktreeMissing, protocol.CodeForgeAuth, protocol.CodeForgeError, protocol.CodeNotIsolated,
		protocol.CodeGitFailed, protocol.CodeMachineOffline, protocol.CodeBaseNotFound} {
		if _, ok := protocol.ErrorCodes[c]; !ok {
			t.Fatalf("%s is not a protocol error code", c)
		}
		codes = append(codes, c)
	}
	in := map[string]any{"diff": diff, "ship_codes": codes}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "worktree.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("e2e", "worktreeunits.mjs"), path)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Log(out.String())
}
