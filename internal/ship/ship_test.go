package ship_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/exectest"
	"github.com/ferry-dev/ferry/internal/forge"
	"github.com/ferry-dev/ferry/internal/forge/forgetest"
	"github.com/ferry-dev/ferry/internal/gittest"
	"github.com/ferry-dev/ferry/internal/ship"
	"github.com/ferry-dev/ferry/internal/worktree"
)

const token = "ghp_test_0123456789abcdefTOKEN"

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: apt-get install git")
	}
}

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "GIT_OPTIONAL_LOCKS=0", "GIT_CONFIG_NOSYSTEM=1", "HOME="+os.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func rev(t *testing.T, dir, ref string) string {
	t.Helper()
	return strings.TrimSpace(run(t, dir, "rev-parse", "--verify", "-q", ref))
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

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fixture is a repository on main (checked out by the user), one worktree
// ferry/NAME of it, and a bare remote "origin".
type fixture struct {
	dir, bare string
	wt        *worktree.Worktree
}

func newFixture(t *testing.T, name string) *fixture {
	t.Helper()
	needGit(t)
	f := &fixture{dir: filepath.Join(t.TempDir(), "repo"), bare: filepath.Join(t.TempDir(), "remote.git")}
	run(t, t.TempDir(), "init", "-q", "-b", "main", f.dir)
	run(t, f.dir, "config", "user.name", "Test User")
	run(t, f.dir, "config", "user.email", "test@example.com")
	write(t, filepath.Join(f.dir, "a.txt"), "one\ntwo\nthree\n")
	write(t, filepath.Join(f.dir, "b.txt"), "bee\n")
	run(t, f.dir, "add", "-A")
	run(t, f.dir, "commit", "-q", "-m", "first")
	run(t, t.TempDir(), "init", "-q", "--bare", f.bare)
	run(t, f.dir, "remote", "add", "origin", f.bare)
	ctx := context.Background()
	repo, err := worktree.Open(ctx, f.dir)
	if err != nil {
		t.Fatal(err)
	}
	if f.wt, err = repo.Create(ctx, worktree.Options{Name: name, Root: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	return f
}

// onGitHub makes origin's URL a GitHub one (as git remote get-url prints
// it) whose pushes still go to the bare remote.
func (f *fixture) onGitHub(t *testing.T, remote string) {
	t.Helper()
	run(t, f.dir, "remote", "set-url", "origin", remote)
	run(t, f.dir, "config", "url."+f.bare+".pushInsteadOf", remote)
}

// state is what a refused step must leave as it was: refs, status, the
// worktree list and every byte of the user's checkout and of the worktree
// (their indexes too), and the remote's refs.
func (f *fixture) state(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(run(t, f.dir, "for-each-ref", "--format=%(refname) %(objectname)"))
	b.WriteString(run(t, f.dir, "status", "--porcelain=v1", "--untracked-files=all"))
	b.WriteString(run(t, f.wt.Path, "status", "--porcelain=v1", "--untracked-files=all"))
	b.WriteString(run(t, f.dir, "worktree", "list", "--porcelain"))
	b.WriteString(run(t, f.bare, "for-each-ref", "--format=%(refname) %(objectname)"))
	b.WriteString(gittest.Checkout(t, f.dir))
	b.WriteString(gittest.Checkout(t, f.wt.Path))
	return b.String()
}

func wantCode(t *testing.T, err error, code string) *worktree.Error {
	t.Helper()
	var we *worktree.Error
	if !errors.As(err, &we) || we.Code != code {
		t.Fatalf("error %v, want code %s", err, code)
	}
	if strings.Contains(err.Error(), token) {
		t.Fatalf("the token is in the error: %v", err)
	}
	return we
}

func parents(t *testing.T, dir, ref string) int {
	t.Helper()
	return len(strings.Fields(run(t, dir, "rev-list", "--parents", "-n", "1", ref))) - 1
}

func TestShipStrategies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		strategy, want string
		parents        int // of the base's new commit
	}{
		{"", ship.StrategySquash, 1},
		{"squash", ship.StrategySquash, 1},
		{"ff", ship.StrategyFF, 1},
		{"fast-forward", ship.StrategyFF, 1},
		{"merge", ship.StrategyMerge, 2},
		{"none", ship.StrategyNone, 0},
	} {
		t.Run(tc.strategy, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "feat")
			ctx := context.Background()
			oldMain := rev(t, f.dir, "main")
			write(t, filepath.Join(f.wt.Path, "a.txt"), "one\nTWO\nthree\n")
			write(t, filepath.Join(f.wt.Path, "new.txt"), "new\n")
			res, err := ship.Ship(ctx, f.wt, ship.Options{Message: "Change two\n\nBecause.", Strategy: tc.strategy})
			if err != nil {
				t.Fatal(err)
			}
			branch := rev(t, f.dir, "ferry/feat")
			if res.Commit != branch || res.Strategy != tc.want || res.Pushed || res.Remote != "" || res.PRURL != "" || res.CompareURL != "" {
				t.Fatalf("result %+v, branch at %s", res, branch)
			}
			if got := run(t, f.dir, "log", "-1", "--format=%B", branch); got != "Change two\n\nBecause.\n\n" {
				t.Fatalf("branch commit message %q", got)
			}
			if run(t, f.wt.Path, "status", "--porcelain") != "" {
				t.Fatal("the worktree is not clean after the commit")
			}
			main := rev(t, f.dir, "main")
			if tc.want == ship.StrategyNone {
				if res.Merged || res.MergeCommit != "" || main != oldMain {
					t.Fatalf("strategy none merged: %+v", res)
				}
				if read(t, filepath.Join(f.dir, "a.txt")) != "one\ntwo\nthree\n" {
					t.Fatal("the user's checkout changed")
				}
				return
			}
			if !res.Merged || res.MergeCommit != main || main == oldMain {
				t.Fatalf("result %+v, main %s (was %s)", res, main, oldMain)
			}
			if got := parents(t, f.dir, "main"); got != tc.parents {
				t.Fatalf("main's new commit has %d parents, want %d", got, tc.parents)
			}
			// The user's checkout of main follows, and stays clean.
			if read(t, filepath.Join(f.dir, "a.txt")) != "one\nTWO\nthree\n" || read(t, filepath.Join(f.dir, "new.txt")) != "new\n" {
				t.Fatal("the user's checkout did not get the change")
			}
			if st := run(t, f.dir, "status", "--porcelain"); st != "" {
				t.Fatalf("the user's checkout is dirty:\n%s", st)
			}
			subject := strings.TrimSpace(run(t, f.dir, "log", "-1", "--format=%s", "main"))
			switch tc.want {
			case ship.StrategyFF:
				if main != branch {
					t.Fatal("fast-forward did not move main to the branch")
				}
			case ship.StrategySquash:
				if subject != "Change two" {
					t.Fatalf("squash subject %q", subject)
				}
			case ship.StrategyMerge:
				if subject != "Merge branch 'ferry/feat' into main" || !strings.Contains(run(t, f.dir, "log", "-1", "--format=%b", "main"), "Change two") {
					t.Fatalf("merge message %q", run(t, f.dir, "log", "-1", "--format=%B", "main"))
				}
			}
		})
	}
}

// A branch whose commits are there already (ferry run --worktree made
// them) ships without a message; MergeMessage wins over the default.
func TestShipCommittedBranch(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "done")
	write(t, filepath.Join(f.wt.Path, "b.txt"), "BEE\n")
	if _, err := f.wt.Commit(context.Background(), "by the agent"); err != nil {
		t.Fatal(err)
	}
	res, err := ship.Ship(context.Background(), f.wt, ship.Options{Strategy: "squash", MergeMessage: "Squash it\n\nall of it"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit != "" || !res.Merged || res.MergeCommit != rev(t, f.dir, "main") {
		t.Fatalf("result %+v", res)
	}
	if got := run(t, f.dir, "log", "-1", "--format=%B", "main"); got != "Squash it\n\nall of it\n" {
		t.Fatalf("squash message %q", got)
	}
	// Without a message either: one commit's message is the squash's;
	// several give the oldest's subject and the list of all.
	for _, tc := range []struct {
		messages []string
		want     string
	}{
		{[]string{"Fix the bug\n\nIt was off by one."}, "Fix the bug\n\nIt was off by one.\n"},
		{[]string{"Add a flag", "Test the flag\n\nwith a body", "Document it"}, "Add a flag\n\n- Add a flag\n- Test the flag\n- Document it\n"},
	} {
		f := newFixture(t, "dflt")
		for i, m := range tc.messages {
			write(t, filepath.Join(f.wt.Path, "b.txt"), strings.Repeat("bee\n", i+2))
			if _, err := f.wt.Commit(context.Background(), m); err != nil {
				t.Fatal(err)
			}
		}
		commits, err := f.wt.Commits(context.Background())
		if err != nil || len(commits) != len(tc.messages) || commits[0].Hash != strings.TrimSpace(run(t, f.dir, "rev-list", "--reverse", "main..ferry/dflt"))[:40] {
			t.Fatalf("commits %+v, %v", commits, err)
		}
		if _, err := ship.Ship(context.Background(), f.wt, ship.Options{}); err != nil {
			t.Fatal(err)
		}
		if got := run(t, f.dir, "log", "-1", "--format=%B", "main"); got != tc.want+"\n" {
			t.Fatalf("default squash message %q, want %q", got, tc.want)
		}
	}
}

func TestShipPush(t *testing.T) {
	t.Parallel()
	for _, strategy := range []string{"none", "squash"} {
		t.Run(strategy, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "pushed")
			write(t, filepath.Join(f.wt.Path, "a.txt"), "pushed\n")
			res, err := ship.Ship(context.Background(), f.wt, ship.Options{Message: "Push me", Strategy: strategy, Push: true})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Pushed || res.Remote != "origin" || res.Merged != (strategy != "none") || res.PRURL != "" || res.CompareURL != "" {
				t.Fatalf("result %+v", res)
			}
			if got := rev(t, f.bare, "refs/heads/ferry/pushed"); got != res.Commit {
				t.Fatalf("remote has %q, want %s", got, res.Commit)
			}
			// Only the branch is pushed, not the base.
			if refs := run(t, f.bare, "for-each-ref", "--format=%(refname)"); refs != "refs/heads/ferry/pushed\n" {
				t.Fatalf("remote refs:\n%s", refs)
			}
		})
	}
}

// rewrite sends every request to the fake GitHub, as if it were the host
// asked for (api.github.com).
type rewrite struct{ to *url.URL }

func (r rewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = r.to.Scheme, r.to.Host
	return http.DefaultTransport.RoundTrip(req)
}

func TestShipPullRequest(t *testing.T) {
	t.Parallel()
	t.Run("github.com", func(t *testing.T) {
		t.Parallel()
		srv := forgetest.New(t, token)
		f := newFixture(t, "fix-login")
		f.onGitHub(t, "git@github.com:acme/widgets.git")
		to, _ := url.Parse(srv.URL)
		write(t, filepath.Join(f.wt.Path, "a.txt"), "fixed\n")
		res, err := ship.Ship(context.Background(), f.wt, ship.Options{
			Message: "Fix the login\n\nIt was broken.", Strategy: "none", PullRequest: true,
			Token: token, HTTPClient: &http.Client{Transport: rewrite{to}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.PRURL != srv.PullURL("acme", "widgets", 1) || res.CompareURL != "https://github.com/acme/widgets/compare/main...ferry/fix-login?expand=1" || !res.Pushed {
			t.Fatalf("result %+v", res)
		}
		checkPRCall(t, srv, "/repos/acme/widgets/pulls", map[string]any{
			"title": "Fix the login", "body": "It was broken.", "head": "ferry/fix-login", "base": "main", "draft": false})
		if rev(t, f.bare, "refs/heads/ferry/fix-login") != res.Commit {
			t.Fatal("the branch was not pushed before the pull request")
		}
	})
	t.Run("enterprise", func(t *testing.T) {
		t.Parallel()
		srv := forgetest.New(t, token)
		f := newFixture(t, "ghe")
		host := strings.TrimPrefix(srv.URL, "http://")
		f.onGitHub(t, srv.URL+"/acme/widgets.git")
		write(t, filepath.Join(f.wt.Path, "a.txt"), "fixed\n")
		// PRTitle and PRBody win over the message; squash then PR.
		res, err := ship.Ship(context.Background(), f.wt, ship.Options{
			Message: "Subject", PullRequest: true, PRTitle: "Title", PRBody: "Body",
			Token: token, Forge: forge.Config{Hosts: map[string]forge.Kind{"127.0.0.1": forge.KindGitHub}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.PRURL != srv.PullURL("acme", "widgets", 1) || res.CompareURL != "http://"+host+"/acme/widgets/compare/main...ferry/ghe?expand=1" || !res.Merged || !res.Pushed {
			t.Fatalf("result %+v", res)
		}
		checkPRCall(t, srv, "/api/v3/repos/acme/widgets/pulls", map[string]any{
			"title": "Title", "body": "Body", "head": "ferry/ghe", "base": "main", "draft": false})
	})
	t.Run("from the commits", func(t *testing.T) {
		t.Parallel()
		srv := forgetest.New(t, token)
		f := newFixture(t, "made")
		f.onGitHub(t, srv.URL+"/acme/widgets.git")
		write(t, filepath.Join(f.wt.Path, "a.txt"), "made\n")
		if _, err := f.wt.Commit(context.Background(), "Greet the user\n\nGreeted."); err != nil {
			t.Fatal(err)
		}
		res, err := ship.Ship(context.Background(), f.wt, ship.Options{Strategy: "none", PullRequest: true, Token: token,
			Forge: forge.Config{Hosts: map[string]forge.Kind{"127.0.0.1": forge.KindGitHub}}})
		if err != nil || res.Commit != "" || res.PRURL == "" {
			t.Fatalf("result %+v, %v", res, err)
		}
		checkPRCall(t, srv, "/api/v3/repos/acme/widgets/pulls", map[string]any{"title": "Greet the user", "body": "Greeted.", "head": "ferry/made", "base": "main"})
	})
	t.Run("no token", func(t *testing.T) {
		t.Parallel()
		srv := forgetest.New(t, token)
		f := newFixture(t, "nt")
		f.onGitHub(t, srv.URL+"/acme/widgets.git")
		write(t, filepath.Join(f.wt.Path, "a.txt"), "x\n")
		res, err := ship.Ship(context.Background(), f.wt, ship.Options{Message: "m", Strategy: "none", PullRequest: true,
			Forge: forge.Config{Hosts: map[string]forge.Kind{"127.0.0.1": forge.KindGitHub}}})
		if err != nil {
			t.Fatal(err)
		}
		if res.PRURL != "" || !strings.HasSuffix(res.CompareURL, "/acme/widgets/compare/main...ferry/nt?expand=1") || !res.Pushed {
			t.Fatalf("result %+v", res)
		}
		if len(srv.Calls()) != 0 {
			t.Fatalf("%d calls to the forge without a token", len(srv.Calls()))
		}
	})
	t.Run("gitlab", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, "gl")
		f.onGitHub(t, "https://gitlab.com/acme/sub/widgets.git")
		write(t, filepath.Join(f.wt.Path, "a.txt"), "x\n")
		res, err := ship.Ship(context.Background(), f.wt, ship.Options{Message: "m", Strategy: "none", PullRequest: true, Token: token})
		if err != nil {
			t.Fatal(err)
		}
		if res.PRURL != "" || !strings.HasPrefix(res.CompareURL, "https://gitlab.com/acme/sub/widgets/-/merge_requests/new?") {
			t.Fatalf("result %+v", res)
		}
	})
	t.Run("exists", func(t *testing.T) {
		t.Parallel()
		srv := forgetest.New(t, token)
		f := newFixture(t, "again")
		f.onGitHub(t, srv.URL+"/acme/widgets.git")
		n := srv.AddPull(forgetest.Pull{Owner: "acme", Repo: "widgets", Title: "old", Head: "ferry/again", Base: "main"})
		write(t, filepath.Join(f.wt.Path, "a.txt"), "x\n")
		res, err := ship.Ship(context.Background(), f.wt, ship.Options{Message: "m", Strategy: "none", PullRequest: true, Token: token,
			Forge: forge.Config{Hosts: map[string]forge.Kind{"127.0.0.1": forge.KindGitHub}}})
		if err != nil {
			t.Fatal(err)
		}
		if res.PRURL != srv.PullURL("acme", "widgets", n) {
			t.Fatalf("result %+v, want the open pull request %d", res, n)
		}
		for _, c := range srv.Calls() {
			if c.Method != http.MethodGet {
				t.Fatalf("call %s %s: the open pull request was opened again", c.Method, c.Path)
			}
		}
	})
}

func checkPRCall(t *testing.T, srv *forgetest.Server, path string, want map[string]any) {
	t.Helper()
	var posts []forgetest.Call
	for _, c := range srv.Calls() {
		if c.Method == http.MethodPost {
			posts = append(posts, c)
		}
	}
	if len(posts) != 1 || posts[0].Path != path || !posts[0].TokenOK {
		t.Fatalf("pull-request calls %+v", posts)
	}
	var body map[string]any
	if err := json.Unmarshal(posts[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	for k, v := range want {
		if body[k] != v {
			t.Errorf("body %s = %v, want %v (body %s)", k, body[k], v, posts[0].Body)
		}
	}
}

// A token GitHub refuses, and a remote on no forge, fail before anything
// is done; the token is in no error.
func TestShipForgeRefusedFirst(t *testing.T) {
	t.Parallel()
	hosts := forge.Config{Hosts: map[string]forge.Kind{"127.0.0.1": forge.KindGitHub}}
	for _, tc := range []struct {
		name, token string
		remote      func(srv *forgetest.Server) string
		code, says  string
	}{
		{"wrong token", "ghp_wrong_token_4242", func(srv *forgetest.Server) string { return srv.URL + "/acme/widgets.git" }, ship.CodeForgeAuth, "nothing was done"},
		{"token with a newline", token + "\n", func(srv *forgetest.Server) string { return srv.URL + "/acme/widgets.git" }, ship.CodeForgeAuth, "nothing was done"},
		{"local remote", token, nil, ship.CodeForgeError, "no forge"},
		{"unknown host", token, func(*forgetest.Server) string { return "https://git.example.org/acme/widgets.git" }, ship.CodeForgeError, "no forge"},
		{"credentials in the remote", token, func(*forgetest.Server) string { return "https://bob:hunter2secret@git.example.org/acme/widgets.git" }, ship.CodeForgeError, "no forge"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := forgetest.New(t, token)
			f := newFixture(t, "tok")
			if tc.remote != nil {
				f.onGitHub(t, tc.remote(srv))
			}
			write(t, filepath.Join(f.wt.Path, "a.txt"), "x\n")
			before := f.state(t)
			res, err := ship.Ship(context.Background(), f.wt, ship.Options{Message: "m", Strategy: "squash", PullRequest: true, Token: tc.token, Forge: hosts})
			we := wantCode(t, err, tc.code)
			if strings.Contains(err.Error(), tc.token) || strings.Contains(err.Error(), "hunter2") || we.Err != nil && strings.Contains(we.Err.Error(), "hunter2") || strings.Contains(we.Message, f.bare) || !strings.Contains(we.Message, tc.says) {
				t.Fatalf("message %q", we.Message)
			}
			if res != (ship.Result{Strategy: ship.StrategySquash}) {
				t.Fatalf("result %+v after a refusal", res)
			}
			if f.state(t) != before || len(srv.Pulls()) != 0 {
				t.Fatal("the repository or the remote changed, or a pull request was made")
			}
		})
	}
}

// A refusal of the pull request itself comes after the push, which stays:
// the result says so; the token is in no error.
func TestShipForgeRefusedAfterPush(t *testing.T) {
	t.Parallel()
	hosts := forge.Config{Hosts: map[string]forge.Kind{"127.0.0.1": forge.KindGitHub}}
	for _, tc := range []struct {
		name string
		fail forgetest.Fail
		code string
	}{
		{"forbidden", forgetest.Forbidden, ship.CodeForgeAuth},
		{"rate limited", forgetest.RateLimited, ship.CodeForgeError},
		{"no head", forgetest.NoHead, ship.CodeForgeError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := forgetest.New(t, token)
			srv.SetFail(tc.fail)
			f := newFixture(t, "tok")
			f.onGitHub(t, srv.URL+"/acme/widgets.git")
			mainBefore := rev(t, f.dir, "main")
			write(t, filepath.Join(f.wt.Path, "a.txt"), "x\n")
			res, err := ship.Ship(context.Background(), f.wt, ship.Options{Message: "m", Strategy: "none", PullRequest: true, Token: token, Forge: hosts})
			we := wantCode(t, err, tc.code)
			var fe *forge.Error
			if !errors.As(err, &fe) {
				t.Fatalf("no *forge.Error wrapped in %v", err)
			}
			if !strings.Contains(we.Message, "pushed") {
				t.Fatalf("message %q does not say the branch was pushed", we.Message)
			}
			if !res.Pushed || res.Commit == "" || res.PRURL != "" || res.CompareURL == "" {
				t.Fatalf("result so far %+v", res)
			}
			if rev(t, f.bare, "refs/heads/ferry/tok") != res.Commit || rev(t, f.dir, "main") != mainBefore || len(srv.Pulls()) != 0 {
				t.Fatal("the push was undone, main moved or a pull request was made")
			}
			if st := run(t, f.wt.Path, "status", "--porcelain"); st != "" {
				t.Fatalf("worktree left dirty:\n%s", st)
			}
		})
	}
}

// Refusals before anything is done leave everything as it was.
func TestShipRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, f *fixture)
		opts    ship.Options
		code    string
		files   []string
	}{
		{"unknown strategy", dirtyWT, ship.Options{Message: "m", Strategy: "rebase"}, ship.CodeInvalid, nil},
		{"no message", dirtyWT, ship.Options{Strategy: "squash"}, ship.CodeInvalid, nil},
		{"blank message", dirtyWT, ship.Options{Message: " \n\t"}, ship.CodeInvalid, nil},
		{"NUL in message", dirtyWT, ship.Options{Message: "a\x00b"}, ship.CodeInvalid, nil},
		{"long message", dirtyWT, ship.Options{Message: strings.Repeat("m", ship.MaxMessage+1)}, ship.CodeInvalid, nil},
		{"nothing at all", nil, ship.Options{Message: "m"}, worktree.CodeNothingToMerge, nil},
		{"nothing, push", nil, ship.Options{Strategy: "squash", Push: true}, worktree.CodeNothingToMerge, nil},
		{"committed, nothing asked", committedWT, ship.Options{Strategy: "none"}, worktree.CodeNothingToCommit, nil},
		{"no such remote", dirtyWT, ship.Options{Message: "m", Push: true, Remote: "upstream"}, worktree.CodeRemoteNotFound, nil},
		{"dash remote", dirtyWT, ship.Options{Message: "m", Push: true, Remote: "--mirror"}, worktree.CodeRemoteNotFound, nil},
		{"conflict", conflict, ship.Options{Strategy: "squash"}, worktree.CodeMergeConflict, []string{"a.txt"}},
		{"conflict merge", conflict, ship.Options{Strategy: "merge"}, worktree.CodeMergeConflict, []string{"a.txt"}},
		{"base dirty", baseDirty, ship.Options{Strategy: "squash"}, worktree.CodeBaseDirty, []string{"a.txt"}},
		{"base dirty ff", baseDirty, ship.Options{Strategy: "ff"}, worktree.CodeBaseDirty, []string{"a.txt"}},
		{"not fast-forward", mainMoved, ship.Options{Strategy: "ff"}, worktree.CodeNotFastForward, nil},
		{"markers left", func(t *testing.T, f *fixture) {
			t.Helper()
			conflict(t, f)
			if _, err := f.wt.UpdateFromBase(context.Background()); !worktree.HasCode(err, worktree.CodeMergeConflict) {
				t.Fatalf("update: %v", err)
			}
		}, ship.Options{Message: "resolved?", Push: true}, worktree.CodeMergeConflict, []string{"a.txt"}},
		{"missing folder", func(t *testing.T, f *fixture) {
			t.Helper()
			if err := os.RemoveAll(f.wt.Path); err != nil {
				t.Fatal(err)
			}
		}, ship.Options{Message: "m"}, worktree.CodeMissing, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "refuse")
			if tc.prepare != nil {
				tc.prepare(t, f)
			}
			var before string
			if tc.code != worktree.CodeMissing {
				before = f.state(t)
			}
			res, err := ship.Ship(ctx, f.wt, tc.opts)
			we := wantCode(t, err, tc.code)
			if !slices.Equal(we.Files, tc.files) {
				t.Fatalf("files %q, want %q", we.Files, tc.files)
			}
			if res.Commit != "" || res.Merged || res.Pushed {
				t.Fatalf("result %+v after a refusal", res)
			}
			if tc.code != worktree.CodeMissing && f.state(t) != before {
				t.Fatal("the repository changed")
			}
		})
	}
}

func dirtyWT(t *testing.T, f *fixture) {
	t.Helper()
	write(t, filepath.Join(f.wt.Path, "a.txt"), "dirty\n")
}

func committedWT(t *testing.T, f *fixture) {
	t.Helper()
	write(t, filepath.Join(f.wt.Path, "a.txt"), "committed\n")
	if _, err := f.wt.Commit(context.Background(), "agent"); err != nil {
		t.Fatal(err)
	}
}

func mainMoved(t *testing.T, f *fixture) {
	t.Helper()
	committedWT(t, f)
	write(t, filepath.Join(f.dir, "b.txt"), "moved on\n")
	run(t, f.dir, "commit", "-q", "-am", "main moves")
}

func conflict(t *testing.T, f *fixture) {
	t.Helper()
	committedWT(t, f)
	write(t, filepath.Join(f.dir, "a.txt"), "the user's\n")
	run(t, f.dir, "commit", "-q", "-am", "user edits a")
}

func baseDirty(t *testing.T, f *fixture) {
	t.Helper()
	committedWT(t, f)
	write(t, filepath.Join(f.dir, "a.txt"), "uncommitted by the user\n")
}

// A conflict found after the commit keeps the commit (on the branch
// only) and reports it; the base and the user's checkout are untouched.
func TestShipConflictAfterCommit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "late")
	write(t, filepath.Join(f.dir, "a.txt"), "the user's\n")
	run(t, f.dir, "commit", "-q", "-am", "user edits a")
	mainBefore, checkout := rev(t, f.dir, "main"), gittest.Checkout(t, f.dir)
	write(t, filepath.Join(f.wt.Path, "a.txt"), "the agent's\n")
	res, err := ship.Ship(context.Background(), f.wt, ship.Options{Message: "agent's a", Push: true})
	we := wantCode(t, err, worktree.CodeMergeConflict)
	if !slices.Equal(we.Files, []string{"a.txt"}) {
		t.Fatalf("files %q", we.Files)
	}
	if res.Commit == "" || res.Commit != rev(t, f.dir, "ferry/late") || res.Merged || res.Pushed {
		t.Fatalf("result so far %+v", res)
	}
	if rev(t, f.dir, "main") != mainBefore || gittest.Checkout(t, f.dir) != checkout || run(t, f.bare, "for-each-ref") != "" {
		t.Fatal("main, the user's checkout or the remote changed")
	}
}

// A push the remote rejects after the merge: the merge stays, reported.
func TestShipPushRejected(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "rej")
	hook := filepath.Join(f.bare, "hooks", "pre-receive")
	exectest.WriteScript(t, hook, "#!/bin/sh\necho 'branch protection: no ferry branches' >&2\nexit 1\n")
	write(t, filepath.Join(f.wt.Path, "a.txt"), "x\n")
	res, err := ship.Ship(context.Background(), f.wt, ship.Options{Message: "m", Push: true})
	we := wantCode(t, err, worktree.CodePushRejected)
	if !strings.Contains(we.Message, "branch protection") {
		t.Fatalf("message %q lacks the remote's reason", we.Message)
	}
	if !res.Merged || res.MergeCommit != rev(t, f.dir, "main") || res.Pushed || res.Remote != "" {
		t.Fatalf("result so far %+v", res)
	}
	if run(t, f.bare, "for-each-ref") != "" {
		t.Fatal("the remote got a ref")
	}
}

func TestProposeMessage(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 50) // 100 bytes
	for _, tc := range []struct {
		prompts      []string
		answer, want string
	}{
		{[]string{"Fix the bug\nin detail"}, "Fixed it.", "Fix the bug\n\nFixed it.\n"},
		{[]string{"\n\n  Trim me  \n"}, "", "Trim me\n"},
		{[]string{""}, "", "ferry run\n"},
		{nil, "", "ferry run\n"},
		{[]string{long}, "x", strings.Repeat("é", 34) + "…\n\nx\n"},
		{[]string{"p"}, strings.Repeat("a", ship.MaxBody+10), "p\n\n" + strings.Repeat("a", ship.MaxBody) + "…\n"},
		{[]string{"Add a flag", "", "  and test it\nplease"}, "Done.", "Add a flag\n\nDone.\n\nPrompts:\n- Add a flag\n- and test it\n"},
		{[]string{"one", "two"}, "", "one\n\nPrompts:\n- one\n- two\n"},
		{[]string{"Fix \x1b[31mred\x1b[0m\r\nnext"}, "done\x07\r\n\xff", "Fix [31mred[0m\n\ndone\n\ufffd\n"},
	} {
		got := ship.ProposeMessage(tc.prompts, tc.answer)
		if got != tc.want {
			t.Errorf("ProposeMessage(%q, %q) = %q, want %q", tc.prompts, tc.answer, got, tc.want)
		}
		if subject, _, _ := strings.Cut(got, "\n"); len(subject) > ship.MaxSubject {
			t.Errorf("subject of %d bytes", len(subject))
		}
	}
}

// Shipping again what a squash shipped is nothing_to_merge, not an empty
// commit on the base.
func TestShipTwice(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "again")
	write(t, filepath.Join(f.wt.Path, "a.txt"), "once\n")
	// (A squash of one commit on an unmoved base with the same message in
	// the same second is that very commit: another message tells them
	// apart.)
	if _, err := ship.Ship(context.Background(), f.wt, ship.Options{Message: "once", MergeMessage: "squashed once"}); err != nil {
		t.Fatal(err)
	}
	before := f.state(t)
	for _, s := range []string{"squash", "merge", "ff"} {
		_, err := ship.Ship(context.Background(), f.wt, ship.Options{Strategy: s})
		want := worktree.CodeNothingToMerge
		if s == "ff" {
			want = worktree.CodeNotFastForward // main has the squash commit the branch has not
		}
		wantCode(t, err, want)
	}
	if f.state(t) != before {
		t.Fatal("shipping again changed the repository")
	}
	if u, err := f.wt.HasUnshipped(context.Background()); err != nil || u {
		t.Fatalf("unshipped %v, %v after the squash", u, err)
	}
}
