package web_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/exectest"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/fake"
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
		if strings.HasPrefix(rel, ".ferry/") { // the workspace's setup and test scripts
			exectest.WriteScript(t, p, content)
			continue
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

// checkout is what a test keeps of the user's checkout: every file's
// hash (the .git folder aside) and git's status.
type checkout struct {
	files  map[string]string
	status string
}

func readCheckout(t *testing.T, repo string) checkout {
	t.Helper()
	c := checkout{files: map[string]string{}}
	err := filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repo, p)
		sum := sha256.Sum256(b)
		c.files[filepath.ToSlash(rel)] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c.status = gitRun(t, repo, "status", "--porcelain=v1", "--untracked-files=all")
	return c
}

// differs lists what differs between two checkouts, but for the paths in skip.
func (c checkout) differs(o checkout, skip ...string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range skip {
		seen[s] = true
	}
	for p, h := range c.files {
		if !seen[p] && o.files[p] != h {
			out = append(out, p)
		}
	}
	for p := range o.files {
		if _, ok := c.files[p]; !ok && !seen[p] {
			out = append(out, p+" (new)")
		}
	}
	if c.status != o.status {
		out = append(out, fmt.Sprintf("git status: %q, was %q", o.status, c.status))
	}
	sort.Strings(out)
	return out
}

// greetModel answers every turn of ferry's agent the same way, whatever
// the order the sessions ask in: read src/greet.txt, edit it, say so (the
// step is the number of the agent's answers so far in the request). A
// turn asked to resolve merge conflicts reads the file and writes both
// sides' intent into it.
func greetModel(t *testing.T) *fake.Server {
	srv := fake.New(t)
	usage := llm.Usage{InputTokens: 1500, OutputTokens: 90}
	srv.Route(func(r fake.Request) (fake.Reply, bool) {
		if r.IsTitle() || r.CountTokens() || len(r.ToolNames()) == 0 {
			return fake.Reply{}, false
		}
		step, resolve := 0, false
		for _, m := range r.Messages() {
			if b, _ := json.Marshal(m["content"]); m["role"] == "user" && strings.Contains(string(b), "Resolve the merge conflicts in: src/greet.txt") {
				step, resolve = 0, true // count this turn's answers only
			}
			if m["role"] == "assistant" {
				step++
			}
		}
		read := fake.Reply{Text: []string{"Reading the greeting."}, Usage: usage,
			ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "src/greet.txt"}}}}
		switch {
		case step == 0:
			return read, true
		case step == 1 && resolve:
			return fake.Reply{Usage: usage, ToolCalls: []fake.ToolCall{{Name: "Write",
				Input: map[string]any{"file_path": "src/greet.txt", "content": "hello there, world\n"}}}}, true
		case step == 1:
			return fake.Reply{Usage: usage, ToolCalls: []fake.ToolCall{{Name: "Edit",
				Input: map[string]any{"file_path": "src/greet.txt", "old_string": "hello", "new_string": "hello, world", "artifact": false}}}}, true
		case resolve:
			return fake.Reply{Text: []string{"Resolved: the greeting keeps both sides."}, Usage: usage}, true
		default:
			return fake.Reply{Text: []string{"The greeting now says hello, world."}, Usage: usage}, true
		}
	})
	return srv
}

// TestBrowserWorktree: issue 34's phone test. In headless Chromium on a
// 390×844 phone against a real `ferry up` on a real git repository (made
// here with real git; ferry's agent on a fake model edits a file): the
// new-session form offers "Isolated"; the session runs on its own branch
// (its .ferry/setup output shown) and its edit stays out of the user's
// checkout; the list shows the branch with +1 −1; Changes shows the diff;
// Ship squash-merges it, and real git says the base branch has the change
// while the user's own uncommitted and untracked work is as it was. Then
// on a desktop, a best of 2 (the isolated choice remembered) and its
// compare view: tests run in one copy, the other archived after the
// unshipped confirmation, its worktree gone and its branch kept. axe
// audits every new view; the screenshots go to -screenshots
// (docs/screenshots/worktree-*.png). web/e2e/worktree.mjs.
func TestBrowserWorktree(t *testing.T) {
	node, chromium := browserDeps(t)
	needGit(t)
	dir := t.TempDir()
	repo := gitRepo(t, dir, "project", map[string]string{
		"README.md":     "# project\n",
		"src/greet.txt": "hello\n",
		"src/keep.txt":  "not touched\n",
		".ferry/setup":  "#!/bin/sh\necho \"installing the project's tools\"\necho done\n",
		".ferry/test":   "#!/bin/sh\ngrep -q 'hello, world' src/greet.txt && echo 'greeting ok'\n",
	})
	// A remote to push to: a bare repository beside it.
	bare := filepath.Join(dir, "remote.git")
	gitRun(t, dir, "init", "-q", "--bare", bare)
	gitRun(t, repo, "remote", "add", "origin", bare)
	// The user's own work in progress: an uncommitted change and a new file.
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("# project\n\nmy notes, not committed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "todo.txt"), []byte("untracked\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := readCheckout(t, repo)
	srv := greetModel(t)
	env := upEnv(dir, srv.URL())
	db := filepath.Join(dir, "ferry.db")
	_, login := ferryUp(t, env, "--db", db, "--workspace", repo, "--agent", "builtin")
	base := strings.SplitN(login, "/login", 2)[0]

	var mu sync.Mutex
	fail := func(w http.ResponseWriter, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		t.Error(msg)
		http.Error(w, msg, http.StatusConflict)
	}
	ctl := http.NewServeMux()
	// /untouched: the agent's edit is in its worktree, not in the checkout.
	ctl.HandleFunc("POST /untouched", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if d := before.differs(readCheckout(t, repo)); len(d) > 0 {
			fail(w, "the user's checkout changed before any ship: %v", d)
			return
		}
		_, _ = w.Write([]byte("untouched"))
	})
	// /shipped?branch=B: main has the change in one squash commit; the
	// checkout (on main) has it too, and the user's work is as it was.
	ctl.HandleFunc("POST /shipped", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if got := gitRun(t, repo, "show", "main:src/greet.txt"); got != "hello, world\n" {
			fail(w, "main's src/greet.txt is %q after the squash-merge", got)
			return
		}
		if n := strings.TrimSpace(gitRun(t, repo, "rev-list", "--count", "main")); n != "2" {
			fail(w, "main has %s commits, want 2 (one squash commit on the first)", n)
			return
		}
		if parents := strings.Fields(gitRun(t, repo, "log", "-1", "--format=%P", "main")); len(parents) != 1 {
			fail(w, "main's new commit has parents %v: not a squash", parents)
			return
		}
		after := readCheckout(t, repo)
		if d := before.differs(after, "src/greet.txt"); len(d) > 1 || len(d) == 1 && !strings.HasPrefix(d[0], "git status") {
			fail(w, "the user's checkout changed beyond the merged file: %v", d)
			return
		}
		if !strings.Contains(after.status, " M README.md") || !strings.Contains(after.status, "?? todo.txt") || strings.Contains(after.status, "greet") {
			fail(w, "git status of the checkout after the ship: %q", after.status)
			return
		}
		b, err := os.ReadFile(filepath.Join(repo, "README.md"))
		if err != nil || !strings.Contains(string(b), "my notes, not committed") {
			fail(w, "README.md lost the user's uncommitted change: %q %v", b, err)
			return
		}
		branch := r.URL.Query().Get("branch")
		if !strings.Contains(gitRun(t, repo, "branch", "--list", branch), branch) {
			fail(w, "the branch %s is gone after shipping", branch)
			return
		}
		// Pushed: the remote has the branch at the branch's commit.
		local := gitRun(t, repo, "rev-parse", "refs/heads/"+branch)
		if remote := gitRun(t, bare, "for-each-ref", "--format=%(objectname)", "refs/heads/"+branch); remote != local {
			fail(w, "the remote has %s at %q, the repository at %q", branch, remote, local)
			return
		}
		_, _ = w.Write([]byte(gitRun(t, repo, "log", "--oneline", "main")))
	})
	// /archived?branch=B: the archived copy's worktree is gone, its branch kept.
	ctl.HandleFunc("POST /archived", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		branch := r.URL.Query().Get("branch")
		list := gitRun(t, repo, "worktree", "list", "--porcelain")
		if strings.Contains(list, "refs/heads/"+branch+"\n") {
			fail(w, "the archived session's worktree is still there: %s", list)
			return
		}
		if !strings.Contains(gitRun(t, repo, "branch", "--list", branch), branch) {
			fail(w, "the archived session's branch %s was deleted; it should stay unless asked", branch)
			return
		}
		_, _ = w.Write([]byte(list))
	})
	// /diverge: main moves on in the user's checkout (a commit of theirs
	// to src/greet.txt), so that the next ship of a copy conflicts.
	ctl.HandleFunc("POST /diverge", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if err := os.WriteFile(filepath.Join(repo, "src", "greet.txt"), []byte("hi there\n"), 0o644); err != nil {
			fail(w, "%v", err)
			return
		}
		gitRun(t, repo, "commit", "-q", "-m", "Greet differently", "--", "src/greet.txt")
		_, _ = w.Write([]byte(gitRun(t, repo, "log", "--oneline", "main")))
	})
	// /resolved: main has the agent's resolution, squashed; the user's
	// uncommitted and untracked work is still there.
	ctl.HandleFunc("POST /resolved", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if got := gitRun(t, repo, "show", "main:src/greet.txt"); got != "hello there, world\n" {
			fail(w, "main's src/greet.txt is %q after the resolved ship", got)
			return
		}
		st := gitRun(t, repo, "status", "--porcelain=v1", "--untracked-files=all")
		if st != before.status {
			fail(w, "git status of the checkout after the resolved ship: %q, was %q", st, before.status)
			return
		}
		_, _ = w.Write([]byte(gitRun(t, repo, "log", "--oneline", "main")))
	})
	// /deleted?branch=B: a deleted session's worktree and (asked) branch are gone.
	ctl.HandleFunc("POST /deleted", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		branch := r.URL.Query().Get("branch")
		if list := gitRun(t, repo, "worktree", "list", "--porcelain"); strings.Contains(list, "refs/heads/"+branch+"\n") {
			fail(w, "the deleted session's worktree is still there: %s", list)
			return
		}
		if b := gitRun(t, repo, "branch", "--list", branch); strings.TrimSpace(b) != "" {
			fail(w, "the deleted session's branch %s is still there, though asked to go", branch)
			return
		}
		_, _ = w.Write([]byte(gitRun(t, repo, "branch", "--list")))
	})
	// /models: the models the agent's turns asked the provider for.
	ctl.HandleFunc("POST /models", func(w http.ResponseWriter, _ *http.Request) {
		seen := map[string]bool{}
		list := []string{}
		for _, r := range srv.ModelRequests() {
			if m := r.Model(); m != "" && !seen[m] {
				seen[m] = true
				list = append(list, m)
			}
		}
		_ = json.NewEncoder(w).Encode(list)
	})
	runScriptWithin(t, 300*time.Second, node, "worktree.mjs", map[string]any{"base": base, "login": login,
		"control": serveControl(t, ctl), "chromium": chromium, "screenshots": shotsDir(t, dir)})
}
