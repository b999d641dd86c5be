package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/binarytest"
	"github.com/ferry-dev/ferry/internal/exectest"
	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// worktreeGit runs git in dir for a test.
func worktreeGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "GIT_OPTIONAL_LOCKS=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// worktreeRepo is a git repository on main with one commit.
func worktreeRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: apt-get install git")
	}
	dir := filepath.Join(t.TempDir(), "repo")
	worktreeGit(t, t.TempDir(), "init", "-q", "-b", "main", dir)
	worktreeGit(t, dir, "config", "user.name", "Test User")
	worktreeGit(t, dir, "config", "user.email", "test@example.com")
	writeFile(t, filepath.Join(dir, "greet.txt"), "hello world\n")
	writeFile(t, filepath.Join(dir, "README"), "a repository\n")
	worktreeGit(t, dir, "add", "-A")
	worktreeGit(t, dir, "commit", "-q", "-m", "first")
	return dir
}

// checkoutHash hashes every file of the checkout, .git/index included.
func checkoutHash(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if rel == ".git" {
				b, _ := os.ReadFile(filepath.Join(p, "index"))
				h.Write([]byte(".git/index\x00"))
				h.Write(b)
				return fs.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h.Write([]byte(rel + "\x00"))
		h.Write(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestRunWorktreeParallel: two `ferry run --worktree` processes at once on
// one repository, each editing the same file differently, each commit on
// its own branch; the user's checkout stays byte for byte as it was.
func TestRunWorktreeParallel(t *testing.T) {
	t.Parallel()
	bin := binarytest.Build(t)
	dir := worktreeRepo(t)
	before := checkoutHash(t, dir)
	refsBefore := worktreeGit(t, dir, "for-each-ref", "refs/heads/main")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	names := []string{"one", "two"}
	outs := make([]string, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		srv := fake.New(t)
		srv.Script(
			fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "greet.txt"}}}},
			fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": "greet.txt", "old_string": "world", "new_string": "from " + name}}}},
			fake.Reply{Text: []string{"Greeted from " + name + "."}},
		)
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.CommandContext(ctx, bin, "run", "--provider", "anthropic", "--model", "test-model", "--base-url", srv.BaseURL(fake.Anthropic),
				"--workspace", dir, "--worktree", name, "--allow", "Edit", "--no-stdin", "Greet from "+name+"\n\nin greet.txt")
			cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=test-key", "XDG_STATE_HOME="+testStateHome)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			errs[i] = cmd.Run()
			outs[i] = stdout.String() + stderr.String()
		}()
	}
	wg.Wait()
	for i, name := range names {
		if errs[i] != nil {
			t.Fatalf("run %s: %v\n%s", name, errs[i], outs[i])
		}
		branch := "ferry/" + name
		if !strings.Contains(outs[i], branch) || !strings.Contains(outs[i], filepath.Join(testStateHome, "ferry", "worktrees")) {
			t.Fatalf("run %s does not say its branch and worktree:\n%s", name, outs[i])
		}
		if got := worktreeGit(t, dir, "show", branch+":greet.txt"); got != "hello from "+name+"\n" {
			t.Fatalf("%s's greet.txt %q\n%s", branch, got, outs[i])
		}
		if got := worktreeGit(t, dir, "log", "--format=%s|%b", "main.."+branch); got != "Greet from "+name+"|Greeted from "+name+".\n\n" {
			t.Fatalf("%s's commits %q", branch, got)
		}
	}
	if got := checkoutHash(t, dir); got != before {
		t.Fatal("the user's checkout changed")
	}
	if got := worktreeGit(t, dir, "status", "--porcelain"); got != "" {
		t.Fatalf("status %q", got)
	}
	if got := worktreeGit(t, dir, "for-each-ref", "refs/heads/main"); got != refsBefore {
		t.Fatal("main moved")
	}

	// Again in "one", while the user edits the same file in the checkout:
	// the worktree is reused; --no-commit leaves the change there,
	// uncommitted; the user's work is in the way of nothing.
	writeFile(t, filepath.Join(dir, "greet.txt"), "hello world, being edited by the user\n")
	before = checkoutHash(t, dir)
	srv := fake.New(t)
	srv.Script(
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Write", Input: map[string]any{"file_path": "notes.txt", "content": "later\n"}}}},
		fake.Reply{Text: []string{"Noted."}},
	)
	out := ferryRun(t, srv, fake.Anthropic, dir, "", "--worktree", "one", "--no-commit", "--allow", "Write", "write notes")
	if out.code != ExitOK {
		t.Fatalf("exit %d: %s", out.code, out.stderr)
	}
	wtPath := strings.TrimSpace(worktreeGit(t, dir, "worktree", "list", "--porcelain"))
	var one string
	for _, l := range strings.Split(wtPath, "\n") {
		if p, ok := strings.CutPrefix(l, "worktree "); ok && filepath.Base(p) == "one" {
			one = p
		}
	}
	if one == "" {
		t.Fatalf("no worktree one in\n%s", wtPath)
	}
	if got := worktreeGit(t, one, "status", "--porcelain"); got != "?? notes.txt\n" {
		t.Fatalf("worktree one's status %q", got)
	}
	if got := worktreeGit(t, dir, "rev-list", "--count", "main..ferry/one"); got != "1\n" {
		t.Fatalf("%s commits on ferry/one", got)
	}
	if checkoutHash(t, dir) != before || worktreeGit(t, dir, "status", "--porcelain") != " M greet.txt\n" {
		t.Fatal("the user's checkout changed")
	}
}

// TestRunWorktreeBadInput: each bad input is refused with what to do,
// nothing made.
func TestRunWorktreeBadInput(t *testing.T) {
	t.Parallel()
	dir := worktreeRepo(t)
	srv := fake.New(t)
	if err := os.Mkdir(filepath.Join(dir, "untracked"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := checkoutHash(t, dir)
	for _, tc := range []struct {
		dir  string
		args []string
		code int
		want string
	}{
		{t.TempDir(), []string{"--worktree", "x", "hi"}, ExitError, "not_a_git_repository"},
		{dir, []string{"--worktree", "Bad Name", "hi"}, ExitUsage, "bad-name"},
		{dir, []string{"--base", "main", "hi"}, ExitUsage, "--worktree"},
		{dir, []string{"--no-commit", "hi"}, ExitUsage, "--worktree"},
		{dir, []string{"--worktree", "x", "--base", "nope", "hi"}, ExitError, "base_not_found"},
		{filepath.Join(dir, "untracked"), []string{"--worktree", "x", "hi"}, ExitUsage, "not in branch ferry/x"},
	} {
		out := ferryRun(t, srv, fake.Anthropic, tc.dir, "", tc.args...)
		if out.code != tc.code || !strings.Contains(out.stderr, tc.want) {
			t.Fatalf("%v: exit %d, stderr %s", tc.args, out.code, out.stderr)
		}
	}
	if checkoutHash(t, dir) != before || worktreeGit(t, dir, "branch", "--list", "ferry/*") != "" {
		t.Fatal("a refused run changed the repository")
	}
	// A setup that fails: said, with its output, and the new worktree
	// and branch are gone again.
	setup := filepath.Join(dir, ".ferry", "setup")
	if err := os.MkdirAll(filepath.Dir(setup), 0o755); err != nil {
		t.Fatal(err)
	}
	exectest.WriteScript(t, setup, "#!/bin/sh\necho installing\nexit 7\n")
	worktreeGit(t, dir, "add", ".ferry/setup")
	worktreeGit(t, dir, "commit", "-q", "-m", "setup")
	before = checkoutHash(t, dir)
	out := ferryRun(t, srv, fake.Anthropic, dir, "", "--worktree", "set", "hi")
	if out.code != ExitError || !strings.Contains(out.stderr, "installing\n") || !strings.Contains(out.stderr, "exit status 7") || !strings.Contains(out.stderr, "setup_failed") {
		t.Fatalf("failing setup: exit %d, stderr %s", out.code, out.stderr)
	}
	if got := worktreeGit(t, dir, "worktree", "list"); strings.Count(got, "\n") != 1 {
		t.Fatalf("worktrees left:\n%s", got)
	}
	if len(srv.ModelRequests()) != 0 {
		t.Fatal("the model was called")
	}
	if checkoutHash(t, dir) != before || worktreeGit(t, dir, "branch", "--list", "ferry/*") != "" {
		t.Fatal("the repository changed")
	}
}

// TestRunWorktreeJSON: ferry run --worktree's json result names the
// worktree, its branch and base, and the commit the turn made (made
// before the result is written); a --no-commit turn's prompt goes into
// the next commit's message.
func TestRunWorktreeJSON(t *testing.T) {
	t.Parallel()
	dir := worktreeRepo(t)
	edit := func(srv *fake.Server, file, text string) {
		srv.Script(
			fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Write", Input: map[string]any{"file_path": file, "content": text}}}},
			fake.Reply{Text: []string{"Wrote " + file + "."}},
		)
	}
	result := func(out runOut) map[string]any {
		t.Helper()
		lines := strings.Split(strings.TrimSpace(out.stdout), "\n")
		var r map[string]any
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil || r["type"] != "result" {
			t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
		}
		return r
	}

	srv := fake.New(t)
	edit(srv, "a.txt", "a\n")
	out := ferryRun(t, srv, fake.Anthropic, dir, "", "--worktree", "js", "--allow", "Write", "--output-format", "json", "--no-stdin", "write a")
	if out.code != ExitOK {
		t.Fatalf("exit %d: %s", out.code, out.stderr)
	}
	r := result(out)
	head := strings.TrimSpace(worktreeGit(t, dir, "rev-parse", "ferry/js"))
	if r["worktree"] != "js" || r["branch"] != "ferry/js" || r["base"] != "main" || r["commit"] != head || r["is_error"] != false {
		t.Fatalf("result %v, ferry/js at %s", r, head)
	}
	path, _ := r["worktree_path"].(string)
	if got := worktreeGit(t, path, "rev-parse", "--abbrev-ref", "HEAD"); got != "ferry/js\n" {
		t.Fatalf("worktree_path %q is on %q", path, got)
	}

	// --no-commit (stream-json): no commit, the rest said.
	srv = fake.New(t)
	edit(srv, "b.txt", "b\n")
	out = ferryRun(t, srv, fake.Anthropic, dir, "", "--worktree", "js", "--allow", "Write", "--output-format", "stream-json", "--no-commit", "--no-stdin", "write b")
	r = result(out)
	if _, ok := r["commit"]; ok || r["branch"] != "ferry/js" || r["worktree_path"] != path || out.code != ExitOK {
		t.Fatalf("--no-commit result %v (exit %d)", r, out.code)
	}
	// The next commit takes b.txt too, and says so.
	srv = fake.New(t)
	edit(srv, "c.txt", "c\n")
	out = ferryRun(t, srv, fake.Anthropic, dir, "", "--worktree", "js", "--allow", "Write", "--output-format", "json", "--no-stdin", "write c")
	r = result(out)
	head = strings.TrimSpace(worktreeGit(t, dir, "rev-parse", "ferry/js"))
	if r["commit"] != head {
		t.Fatalf("result %v, ferry/js at %s", r, head)
	}
	if got := worktreeGit(t, dir, "log", "-1", "--format=%B", head); got != "write b\n\nWrote c.txt.\n\nPrompts:\n- write b\n- write c\n\n" {
		t.Fatalf("commit message %q", got)
	}
	if got := worktreeGit(t, dir, "show", "--name-only", "--format=", head); got != "b.txt\nc.txt\n" {
		t.Fatalf("commit has %q", got)
	}

	// Without --worktree, none of these fields.
	srv = fake.New(t)
	srv.Script(fake.Reply{Text: []string{"hi"}})
	out = ferryRun(t, srv, fake.Anthropic, t.TempDir(), "", "--output-format", "json", "--no-stdin", "hi")
	r = result(out)
	for _, k := range []string{"worktree", "branch", "base", "worktree_path", "commit"} {
		if _, ok := r[k]; ok {
			t.Fatalf("result without --worktree has %s: %v", k, r)
		}
	}
}
