package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/binarytest"
	"github.com/ferry-dev/ferry/internal/exectest"
	"github.com/ferry-dev/ferry/internal/forge/forgetest"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/worktree"
)

const shipTestToken = "ghp_shipTEST_0123456789abcdef"

// ferryBin runs the ferry binary with env added to the environment.
func ferryBin(t *testing.T, bin string, env []string, args ...string) runOut {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return runOut{code, stdout.String(), stderr.String()}
}

// bareRemote makes a bare repository and adds it to dir as origin.
func bareRemote(t *testing.T, dir string) string {
	t.Helper()
	bare := filepath.Join(t.TempDir(), "remote.git")
	worktreeGit(t, t.TempDir(), "init", "-q", "--bare", bare)
	worktreeGit(t, dir, "remote", "add", "origin", bare)
	return bare
}

// TestShipBinary: ferry run --worktree, then ferry ship with the real
// binary: a squash merge into the user's checkout, a push of a --no-commit
// run's changes with a proposed message, and a pull request on a stand-in
// GitHub; a wrong token is refused before anything is done.
func TestShipBinary(t *testing.T) {
	t.Parallel()
	bin := binarytest.Build(t)
	dir := worktreeRepo(t)
	bare := bareRemote(t, dir)
	env := []string{"XDG_STATE_HOME=" + t.TempDir(), "ANTHROPIC_API_KEY=test-key", "FERRY_FORGE_TOKEN="}
	run := func(name string, extra ...string) {
		t.Helper()
		srv := fake.New(t)
		srv.Script(
			fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "greet.txt"}}}},
			fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": "greet.txt", "old_string": "hello", "new_string": "hello " + name + " and"}}}},
			fake.Reply{Text: []string{"Greeted " + name + "."}},
		)
		args := append([]string{"run", "--provider", "anthropic", "--model", "test-model", "--base-url", srv.BaseURL(fake.Anthropic),
			"--workspace", dir, "--worktree", name, "--allow", "Edit", "--no-stdin"}, extra...)
		if out := ferryBin(t, bin, env, append(args, "Greet "+name)...); out.code != 0 || !strings.Contains(out.stderr, "ferry/"+name) {
			t.Fatalf("ferry run %s: exit %d\n%s", name, out.code, out.stderr)
		}
	}

	// Squash into main: the user's checkout follows, clean.
	run("a")
	out := ferryBin(t, bin, env, "ship", "--workspace", dir, "a", "--strategy", "squash")
	if out.code != 0 || !strings.Contains(out.stdout, "squash-merged ferry/a into main") {
		t.Fatalf("ship a: exit %d\n%s%s", out.code, out.stdout, out.stderr)
	}
	if got := worktreeGit(t, dir, "log", "-1", "--format=%B", "main"); got != "Greet a\n\nGreeted a.\n\n" {
		t.Fatalf("main's squash commit %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "greet.txt")); string(got) != "hello a and world\n" {
		t.Fatalf("the checkout's greet.txt %q", got)
	}
	if st := worktreeGit(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("the checkout is dirty:\n%s", st)
	}
	// Shipped: removed without --force (its commits are not in main, but
	// their change is).
	if out := ferryBin(t, bin, env, "worktree", "remove", "a", "--workspace", dir); out.code != 0 {
		t.Fatalf("remove a: exit %d\n%s", out.code, out.stderr)
	}

	// A --no-commit run, shipped with the proposed message and pushed,
	// in json.
	run("b", "--no-commit")
	mainBefore := worktreeGit(t, dir, "rev-parse", "main")
	out = ferryBin(t, bin, env, "ship", "b", "--workspace", dir, "--strategy", "none", "--push", "--propose", "--output-format", "json")
	var res map[string]any
	if err := json.Unmarshal([]byte(out.stdout), &res); err != nil || out.code != 0 {
		t.Fatalf("ship b: exit %d, %v\n%s%s", out.code, err, out.stdout, out.stderr)
	}
	head := strings.TrimSpace(worktreeGit(t, dir, "rev-parse", "ferry/b"))
	if res["worktree"] != "b" || res["branch"] != "ferry/b" || res["base"] != "main" || res["commit"] != head || res["strategy"] != "none" ||
		res["merged"] != false || res["pushed"] != true || res["remote"] != "origin" || res["error"] != nil {
		t.Fatalf("ship b: %v (ferry/b at %s)", res, head)
	}
	if got := worktreeGit(t, bare, "rev-parse", "ferry/b"); strings.TrimSpace(got) != head {
		t.Fatal("the remote does not have ferry/b")
	}
	if got := worktreeGit(t, dir, "log", "-1", "--format=%B", head); got != "Greet b\n\nGreeted b.\n\n" {
		t.Fatalf("proposed message %q", got)
	}
	if worktreeGit(t, dir, "rev-parse", "main") != mainBefore {
		t.Fatal("strategy none moved main")
	}

	// A pull request on the stand-in GitHub (a GitHub Enterprise host on
	// loopback; pushes still go to the bare remote).
	srv := forgetest.New(t, shipTestToken)
	worktreeGit(t, dir, "remote", "set-url", "origin", srv.URL+"/acme/widgets.git")
	worktreeGit(t, dir, "config", "url."+bare+".pushInsteadOf", srv.URL+"/acme/widgets.git")
	run("c")
	prEnv := append(env[:len(env):len(env)], "FERRY_FORGE_TOKEN="+shipTestToken)
	out = ferryBin(t, bin, prEnv, "ship", "c", "--workspace", dir, "--strategy", "none", "--pr", "--forge-host", "github=127.0.0.1")
	if out.code != 0 || !strings.Contains(out.stdout, "pull request: "+srv.PullURL("acme", "widgets", 1)+"\n") || !strings.Contains(out.stdout, "pushed ferry/c to origin") {
		t.Fatalf("ship c: exit %d\n%s%s", out.code, out.stdout, out.stderr)
	}
	calls := srv.Calls()
	last := calls[len(calls)-1]
	var body map[string]any
	_ = json.Unmarshal(last.Body, &body)
	if last.Method != http.MethodPost || last.Path != "/api/v3/repos/acme/widgets/pulls" || !last.TokenOK ||
		body["head"] != "ferry/c" || body["base"] != "main" || body["title"] != "Greet c" || body["body"] != "Greeted c." {
		t.Fatalf("pull-request call %s %s %s", last.Method, last.Path, last.Body)
	}

	// A wrong token (from a file): refused before the push; never shown.
	run("d")
	tokFile := filepath.Join(t.TempDir(), "token")
	writeFile(t, tokFile, "ghp_wrongWRONGwrong42\n")
	if err := os.Chmod(tokFile, 0o600); err != nil {
		t.Fatal(err)
	}
	before := checkoutHash(t, dir) + worktreeGit(t, dir, "for-each-ref") + worktreeGit(t, bare, "for-each-ref")
	out = ferryBin(t, bin, env, "ship", "d", "--workspace", dir, "--pr", "--forge-host", "github=127.0.0.1", "--forge-token-file", tokFile)
	if out.code != 1 || !strings.Contains(out.stderr, "[forge_auth]") || strings.Contains(out.stdout+out.stderr, "ghp_wrongWRONGwrong42") {
		t.Fatalf("wrong token: exit %d\n%s%s", out.code, out.stdout, out.stderr)
	}
	if checkoutHash(t, dir)+worktreeGit(t, dir, "for-each-ref")+worktreeGit(t, bare, "for-each-ref") != before || len(srv.Pulls()) != 1 {
		t.Fatal("a refused ship changed the repository or the remote")
	}
}

// shipFixture is a repository with a bare origin and worktrees made with
// the worktree package under the state folder ferry ship reads.
type shipFixture struct {
	dir, bare, state string
	repo             *worktree.Repo
}

func newShipFixture(t *testing.T) *shipFixture {
	t.Helper()
	f := &shipFixture{dir: worktreeRepo(t), state: t.TempDir()}
	f.bare = bareRemote(t, f.dir)
	var err error
	if f.repo, err = worktree.Open(context.Background(), f.dir); err != nil {
		t.Fatal(err)
	}
	return f
}

// worktree makes worktree NAME and writes files in it (committed unless
// commit is false).
func (f *shipFixture) worktree(t *testing.T, name string, commit bool, files map[string]string) *worktree.Worktree {
	t.Helper()
	wt, err := f.repo.Create(context.Background(), worktree.Options{Name: name, Root: filepath.Join(f.state, "ferry", "worktrees")})
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		writeFile(t, filepath.Join(wt.Path, p), c)
	}
	if commit && len(files) > 0 {
		if _, err := wt.Commit(context.Background(), "agent's "+name); err != nil {
			t.Fatal(err)
		}
	}
	return wt
}

// ferry runs ferry in-process with XDG_STATE_HOME at the fixture's state.
func (f *shipFixture) ferry(t *testing.T, env map[string]string, args ...string) runOut {
	t.Helper()
	var stdout, stderr bytes.Buffer
	e := Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string {
		if k == "XDG_STATE_HOME" {
			return f.state
		}
		return env[k]
	}}
	code := Run(context.Background(), e, args)
	return runOut{code, stdout.String(), stderr.String()}
}

func (f *shipFixture) snapshot(t *testing.T, wts ...*worktree.Worktree) string {
	t.Helper()
	s := checkoutHash(t, f.dir) + worktreeGit(t, f.dir, "for-each-ref") + worktreeGit(t, f.bare, "for-each-ref") + worktreeGit(t, f.dir, "worktree", "list")
	for _, wt := range wts {
		s += checkoutHash(t, wt.Path) + worktreeGit(t, wt.Path, "status", "--porcelain")
	}
	return s
}

// TestShipBadInput: every bad flag (exit 2) and every refusal (exit 1,
// with its code) leaves the repository, the worktrees and the remote as
// they were.
func TestShipBadInput(t *testing.T) {
	t.Parallel()
	f := newShipFixture(t)
	dirty := f.worktree(t, "dirty", false, map[string]string{"notes.txt": "notes\n"})
	conflict := f.worktree(t, "conflict", true, map[string]string{"greet.txt": "hello conflict\n"})
	clean := f.worktree(t, "clean", false, nil)
	tokFile := filepath.Join(t.TempDir(), "empty")
	writeFile(t, tokFile, "\n")
	hook := filepath.Join(f.bare, "hooks", "pre-receive")
	exectest.WriteScript(t, hook, "#!/bin/sh\necho 'no pushes today' >&2\nexit 1\n")
	// The user's checkout moves on and has an edit the conflict's merge
	// would touch... after the first cases; see below.
	before := f.snapshot(t, dirty, conflict, clean)
	ws := []string{"--workspace", f.dir}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"ship"}, ExitUsage, "give one worktree NAME"},
		{[]string{"ship", "a", "b"}, ExitUsage, "not 2 arguments"},
		{[]string{"ship", "Bad Name"}, ExitUsage, "bad-name"},
		{[]string{"ship", "dirty", "--strategy", "rebase"}, ExitUsage, "--strategy must be"},
		{[]string{"ship", "dirty", "--strategy", ""}, ExitUsage, "--strategy must be"},
		{[]string{"ship", "dirty", "--message", "m", "--propose"}, ExitUsage, "give one"},
		{[]string{"ship", "dirty", "--message", " "}, ExitUsage, "--message is empty"},
		{[]string{"ship", "dirty", "--message", strings.Repeat("m", 64<<10+1)}, ExitUsage, "over 64 KiB"},
		{[]string{"ship", "dirty", "--remote", "up"}, ExitUsage, "--remote only applies"},
		{[]string{"ship", "dirty", "--forge-token-file", tokFile}, ExitUsage, "only apply with --pr"},
		{[]string{"ship", "dirty", "--pr", "--forge-host", "github"}, ExitUsage, "KIND=HOST"},
		{[]string{"ship", "dirty", "--pr", "--forge-host", "svn=example.com"}, ExitUsage, "use github, gitlab"},
		{[]string{"ship", "dirty", "--pr", "--forge-host", "github=https://example.com/x"}, ExitUsage, "not a host name"},
		{[]string{"ship", "dirty", "--pr", "--forge-token-file", tokFile}, ExitUsage, "is empty"},
		{[]string{"ship", "dirty", "--pr", "--forge-token-file", filepath.Join(t.TempDir(), "none")}, ExitUsage, "no such file"},
		{[]string{"ship", "dirty", "--output-format", "yaml"}, ExitUsage, "text or json"},
		{[]string{"ship", "dirty", "--bogus"}, ExitUsage, ""},
		{[]string{"ship", "nope"}, ExitError, "[worktree_not_found]"},
		{[]string{"ship", "dirty"}, ExitError, "pass --message M, or --propose [invalid_value]"},
		{[]string{"ship", "clean"}, ExitError, "[nothing_to_merge]"},
		{[]string{"ship", "dirty", "--message", "m", "--push", "--remote", "upstream"}, ExitError, "[remote_not_found]"},
		{[]string{"ship", "dirty", "--message", "m", "--pr"}, ExitError, "[forge_error]"},
		{[]string{"ship", "conflict", "--strategy", "ff", "--push", "--remote", "--mirror"}, ExitError, "[remote_not_found]"},
	} {
		args := tc.args
		if len(args) > 1 || tc.code == ExitError {
			args = append(args[:1:1], append(ws, args[1:]...)...)
		}
		out := f.ferry(t, nil, args...)
		if out.code != tc.code || !strings.Contains(out.stderr, tc.want) {
			t.Fatalf("%q: exit %d, stderr %s", tc.args, out.code, out.stderr)
		}
	}
	// Not a repository.
	if out := f.ferry(t, nil, "ship", "--workspace", t.TempDir(), "x"); out.code != ExitError || !strings.Contains(out.stderr, "[not_a_git_repository]") {
		t.Fatalf("not a repository: exit %d, %s", out.code, out.stderr)
	}
	if f.snapshot(t, dirty, conflict, clean) != before {
		t.Fatal("a refused ship changed something")
	}

	// The user's checkout: an uncommitted edit the merge would touch
	// (base_dirty); then committed, a conflict (merge_conflict) that is
	// also said in json, with its file.
	writeFile(t, filepath.Join(f.dir, "greet.txt"), "hello, the user's edit\n")
	before = f.snapshot(t, dirty, conflict, clean)
	if out := f.ferry(t, nil, "ship", "--workspace", f.dir, "conflict"); out.code != ExitError || !strings.Contains(out.stderr, "(greet.txt) [base_dirty]") {
		t.Fatalf("base dirty: exit %d, %s", out.code, out.stderr)
	}
	if f.snapshot(t, dirty, conflict, clean) != before {
		t.Fatal("base_dirty changed something")
	}
	worktreeGit(t, f.dir, "commit", "-q", "-am", "user's edit")
	before = f.snapshot(t, dirty, conflict, clean)
	out := f.ferry(t, nil, "ship", "--workspace", f.dir, "conflict", "--output-format", "json")
	var res struct {
		Worktree string `json:"worktree"`
		Merged   bool   `json:"merged"`
		Error    struct {
			Code  string   `json:"code"`
			Files []string `json:"files"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(out.stdout), &res); err != nil || out.code != ExitError || res.Worktree != "conflict" || res.Merged ||
		res.Error.Code != "merge_conflict" || len(res.Error.Files) != 1 || res.Error.Files[0] != "greet.txt" {
		t.Fatalf("conflict: exit %d, %v, %s %s", out.code, err, out.stdout, out.stderr)
	}
	if f.snapshot(t, dirty, conflict, clean) != before {
		t.Fatal("merge_conflict changed something")
	}

	// A push the remote rejects after the merge: the merge stays and is
	// said, then the error.
	out = f.ferry(t, nil, "ship", "--workspace", f.dir, "dirty", "--message", "ship it", "--strategy", "merge", "--push")
	if out.code != ExitError || !strings.Contains(out.stderr, "no pushes today") || !strings.Contains(out.stderr, "[push_rejected]") ||
		!strings.Contains(out.stdout, "merged ferry/dirty into main") || strings.Contains(out.stdout, "pushed") {
		t.Fatalf("push rejected: exit %d\n%s%s", out.code, out.stdout, out.stderr)
	}
	if worktreeGit(t, f.bare, "for-each-ref") != "" {
		t.Fatal("the remote got a ref")
	}
}

// TestWorktreeCommand: ferry worktree list, remove (refused when
// unshipped unless --force; the branch kept unless --delete-branch; a
// folder removed by hand forgotten) and prune.
func TestWorktreeCommand(t *testing.T) {
	t.Parallel()
	f := newShipFixture(t)
	f.worktree(t, "ahead", true, map[string]string{"greet.txt": "hello ahead\n", "new.txt": "one\ntwo\n"})
	f.worktree(t, "dirty", false, map[string]string{"x.txt": "x\n"})
	f.worktree(t, "same", false, nil)
	gone := f.worktree(t, "gone", false, nil)
	if err := os.RemoveAll(gone.Path); err != nil {
		t.Fatal(err)
	}
	out := f.ferry(t, nil, "worktree", "list", "--workspace", f.dir, "--output-format", "json")
	var rows []worktreeListed
	if err := json.Unmarshal([]byte(out.stdout), &rows); err != nil || out.code != 0 || len(rows) != 4 {
		t.Fatalf("list: exit %d, %v\n%s%s", out.code, err, out.stdout, out.stderr)
	}
	want := map[string]worktreeListed{
		"ahead": {Added: 3, Removed: 1, Files: 2, Ahead: 1, Unshipped: true},
		"dirty": {Added: 1, Files: 1, Uncommitted: true, Unshipped: true},
		"gone":  {Missing: true},
		"same":  {},
	}
	for _, r := range rows {
		w := want[r.Name]
		if r.Branch != "ferry/"+r.Name || r.Base != "main" || r.Added != w.Added || r.Removed != w.Removed || r.Files != w.Files || r.Ahead != w.Ahead ||
			r.Uncommitted != w.Uncommitted || r.Unshipped != w.Unshipped || r.Missing != w.Missing || r.Error != "" {
			t.Fatalf("row %+v, want %+v", r, w)
		}
	}
	out = f.ferry(t, nil, "worktree", "list", "--workspace", f.dir)
	if !strings.Contains(out.stdout, "+3 −1 (2 files)") || !strings.Contains(out.stdout, "↑1 ↓0") || !strings.Contains(out.stdout, "missing") {
		t.Fatalf("list text:\n%s", out.stdout)
	}

	// Bad usage.
	for _, args := range [][]string{{"worktree"}, {"worktree", "frob"}, {"worktree", "remove"}, {"worktree", "remove", "Bad"},
		{"worktree", "list", "x"}, {"worktree", "list", "--force"}, {"worktree", "remove", "same", "--output-format", "json"}} {
		if out := f.ferry(t, nil, args...); out.code != ExitUsage {
			t.Fatalf("%q: exit %d, %s", args, out.code, out.stderr)
		}
	}

	before := f.snapshot(t)
	for _, name := range []string{"ahead", "dirty"} {
		out := f.ferry(t, nil, "worktree", "remove", "--workspace", f.dir, name)
		if out.code != ExitError || !strings.Contains(out.stderr, "[unshipped_changes]") {
			t.Fatalf("remove %s: exit %d, %s", name, out.code, out.stderr)
		}
	}
	if f.snapshot(t) != before {
		t.Fatal("a refused remove changed something")
	}
	if out := f.ferry(t, nil, "worktree", "remove", "--workspace", f.dir, "--force", "ahead"); out.code != 0 || !strings.Contains(out.stdout, "branch ferry/ahead stays") {
		t.Fatalf("remove --force: exit %d, %s", out.code, out.stderr)
	}
	if worktreeGit(t, f.dir, "branch", "--list", "ferry/ahead") == "" {
		t.Fatal("the branch went")
	}
	if out := f.ferry(t, nil, "worktree", "remove", "--workspace", f.dir, "same", "--delete-branch"); out.code != 0 || worktreeGit(t, f.dir, "branch", "--list", "ferry/same") != "" {
		t.Fatalf("remove --delete-branch: exit %d, %s", out.code, out.stderr)
	}
	if out := f.ferry(t, nil, "worktree", "remove", "--workspace", f.dir, "gone"); out.code != 0 {
		t.Fatalf("remove a missing one: exit %d, %s", out.code, out.stderr)
	}
	out = f.ferry(t, nil, "worktree", "list", "--workspace", f.dir, "--output-format", "json")
	rows = nil
	if err := json.Unmarshal([]byte(out.stdout), &rows); err != nil || len(rows) != 1 || rows[0].Name != "dirty" {
		t.Fatalf("left: %s", out.stdout)
	}
	wts := worktreeGit(t, f.dir, "worktree", "list", "--porcelain")
	if strings.Count(wts, "worktree ") != 2 {
		t.Fatalf("git worktree list:\n%s", wts)
	}
	// prune: a folder removed by hand is forgotten.
	dirty, err := f.repo.Find(context.Background(), filepath.Join(f.state, "ferry", "worktrees"), "dirty")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dirty.Path); err != nil {
		t.Fatal(err)
	}
	if out := f.ferry(t, nil, "worktree", "prune", "--workspace", f.dir); out.code != 0 || out.stdout != "pruned dirty\n" {
		t.Fatalf("prune: exit %d, %q %s", out.code, out.stdout, out.stderr)
	}
}

// TestShipProposeCommitted: --propose with nothing uncommitted proposes
// nothing: the squash is named after the branch's commits, not after the
// files; with uncommitted changes and no prompt kept, the files name it.
func TestShipProposeCommitted(t *testing.T) {
	t.Parallel()
	f := newShipFixture(t)
	f.worktree(t, "done", true, map[string]string{"greet.txt": "hello done\n"})
	if out := f.ferry(t, nil, "ship", "--workspace", f.dir, "done", "--propose"); out.code != 0 {
		t.Fatalf("exit %d: %s", out.code, out.stderr)
	}
	if got := worktreeGit(t, f.dir, "log", "-1", "--format=%B", "main"); got != "agent's done\n\n" {
		t.Fatalf("squash message %q", got)
	}
	f.worktree(t, "loose", false, map[string]string{"a.txt": "a\n", "b.txt": "b\nb\n"})
	out := f.ferry(t, nil, "ship", "--workspace", f.dir, "loose", "--propose", "--strategy", "none", "--output-format", "json")
	if out.code != 0 {
		t.Fatalf("exit %d: %s", out.code, out.stderr)
	}
	if got := worktreeGit(t, f.dir, "log", "-1", "--format=%B", "ferry/loose"); got != "Update a.txt and b.txt\n\n- a.txt (added, +1 -0)\n- b.txt (added, +2 -0)\n\n" {
		t.Fatalf("proposed message %q", got)
	}
}
