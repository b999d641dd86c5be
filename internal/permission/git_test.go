package permission_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/exectest"
	"github.com/ferry-dev/ferry/internal/permission"
)

// gitEnv isolates git from the machine's configuration: no system config,
// a global config of the test's own (optionally with extra lines).
func gitEnv(t *testing.T, global string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (apt-get install git)")
	}
	home := t.TempDir()
	cfg := filepath.Join(home, "gitconfig")
	if err := os.WriteFile(cfg, []byte("[user]\n\tname = T\n\temail = t@example.com\n[init]\n\tdefaultBranch = main\n"+global), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", cfg)
	for _, v := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS", "GIT_INDEX_FILE"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
}

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// shell runs command under bash in dir, as an agent's Bash would; its
// failure does not matter, only what it leaves behind.
func shell(dir, command string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Dir = dir
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// cleanRepo is a repository with two commits: f says foo, then foo bar.
func cleanRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	run(t, dir, "git", "init", "-q")
	writeFile(t, filepath.Join(dir, "f"), "foo\n")
	run(t, dir, "git", "add", "f")
	run(t, dir, "git", "commit", "-qm", "one")
	writeFile(t, filepath.Join(dir, "f"), "foo\nbar\n")
	run(t, dir, "git", "commit", "-qam", "two")
	return dir
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	exectest.WriteScript(t, p, content)
}

func review(dir, cmd string) (bool, string) {
	return permission.ModeAllows(permission.ModeReview, permission.Call{Tool: "Bash", Command: cmd, Dir: dir})
}

// The exploits the adversarial review proved, with `Bash(git ls-remote:*)`
// and `Bash(git grep:*)` allowed, and their variants: refused by the mode
// itself, each reason naming the option.
func TestReviewRefusesGitExploits(t *testing.T) {
	gitEnv(t, "")
	dir := cleanRepo(t)
	for _, c := range []struct{ cmd, says string }{
		{"git ls-remote --upload-pack='touch X; git-upload-pack' .", "ls-remote is not a read-only"},
		{"git ls-remote --exec='touch X' .", "ls-remote"},
		{"git grep -nO'touch X' foo", "-O starts a program"},
		{"git grep -n -O'touch X' foo", "-O"},
		{"git grep -iOcat foo", "-O"},
		{"git grep --open-files-in-pager='touch X' foo", "--open-files-in-pager starts a program"},
		{"git grep --open='touch X' foo", "abbreviates --open-files-in-pager"},
		{"git grep -e foo -f /etc/passwd", "-f"},
		{"git blame --contents /etc/passwd f", "--contents reads a file outside"},
		{"git blame --cont /etc/passwd f", "abbreviates --contents"},
		{"git blame --contents=/etc/passwd f", "--contents"},
		{"git blame -S /etc/passwd f", "-S"},
		{"git blame --ignore-revs-file=/etc/passwd f", "--ignore-revs-file"},
		{"git diff --no-index /etc/passwd f", "--no-index"},
		{"git diff /etc/passwd f", "/etc/passwd is a path outside the repository"},
		{"git diff ../../etc/passwd f", "leads out of"},
		{"git diff -- ../x f", "leads out of"},
		{"git diff --ext-diff", "--ext-diff runs an external diff"},
		{"git log -p --ext-diff", "--ext-diff"},
		{"git show --textconv HEAD", "--textconv"},
		{"git cat-file --textconv HEAD:f", "--textconv"},
		{"git cat-file --filters HEAD:f", "--filters"},
		{"git log --show-signature", "--show-signature runs gpg"},
		{"git log '--format=%G?'", "runs gpg"},
		{"git log --pretty=format:%GS", "runs gpg"},
		{"git diff --output=x", "--output writes a file"},
		{"git log --outp=x", "abbreviates --output"},
		{"git diff -Oorder", "-O"},
		{"git log --diff-merges=remerge", "--diff-merges"},
		{"git log --remerge-diff", "--remerge-diff runs merge drivers"},
		{"git grep --recurse-submodules foo", "--recurse-submodules"},
		{"git tag -v v1", "-v"},
		{"git tag --verify v1", "--verify runs gpg"},
		{"git config --file=/etc/passwd --list", "--file"},
		{"git config -f /etc/passwd --list", "-f"},
		{"git config --edit", "--edit"},
		{"git remote show origin", "contacts the remote"},
		{"git status --porcelain -unormal --upload-pack=x", "--upload-pack"},
		{"git log --author -p", "starts with -"},
		{"git -c core.pager='touch X' log", "global git option -c"},
		{"git --exec-path=. status", "global git option"},
		{"git --paginate log", "global git option"},
		{"git log --end-of-options --output=x", ""}, // a path named --output=x: allowed, see below
	} {
		ok, why := review(dir, c.cmd)
		if c.says == "" {
			if !ok {
				t.Errorf("%s: refused (%s)", c.cmd, why)
			}
			continue
		}
		if ok || !strings.Contains(why, c.says) {
			t.Errorf("%s: %v, %q; want refused saying %q", c.cmd, ok, why, c.says)
		}
	}
}

// Ordinary review commands still run in a clean repository.
func TestReviewAllowsOrdinaryGit(t *testing.T) {
	gitEnv(t, "")
	dir := cleanRepo(t)
	for _, cmd := range ordinaryGit {
		if ok, why := review(dir, cmd); !ok {
			t.Errorf("%s: refused: %s", cmd, why)
			continue
		}
		c := exec.Command("bash", "-c", cmd)
		c.Dir = dir
		// A command git itself rejects is a wrong table entry.
		if out, err := c.CombinedOutput(); err != nil && !strings.Contains(cmd, "--quiet") {
			t.Errorf("%s: git failed: %v\n%s", cmd, err, out)
		}
	}
}

var ordinaryGit = []string{
	"git status", "git status --short", "git status -sb", "git status -uno", "git status --porcelain=v2",
	"git diff", "git diff --stat HEAD~1", "git diff --cached", "git diff HEAD~1 -- f", "git diff -w --word-diff HEAD~1",
	"git diff --name-only HEAD~1..HEAD", "git diff --no-ext-diff --no-textconv HEAD~1",
	"git log --oneline -n 5", "git log --oneline -n5", "git log -5", "git log -p -- f", "git log --stat",
	"git log --graph --decorate --oneline --all", "git log --format='%H %an %s' --author=T",
	"git log --since=1.week --until=now", "git log -S bar --oneline", "git log -Sbar", "git log -L 1,2:f",
	"git --no-pager log -1", "git -P log -1", "git --no-optional-locks status",
	"git show HEAD", "git show --stat HEAD", "git show HEAD:f", "git show -s --format=%B HEAD",
	"git blame f", "git blame -L 1,2 f", "git blame -w -M -C f", "git blame --porcelain f",
	"git grep -n foo", "git grep -in FOO", "git grep -e foo -e bar", "git grep -c foo", "git grep -nw foo -- f",
	"git grep -3 foo", "git grep -A 1 foo", "git grep -A1 foo",
	"git ls-files", "git ls-files -s", "git ls-tree -r HEAD", "git ls-tree --name-only HEAD",
	"git rev-parse HEAD", "git rev-parse --abbrev-ref HEAD", "git rev-parse --show-toplevel",
	"git rev-list --count HEAD", "git rev-list --max-count=1 HEAD",
	"git cat-file -t HEAD", "git cat-file -p HEAD", "git describe --always", "git shortlog -sn HEAD",
	"git branch", "git branch -a -v", "git branch -vv", "git branch --show-current", "git branch --contains HEAD",
	"git branch --list 'ma*'", "git tag", "git tag -l 'v1.*'", "git tag -n",
	"git remote", "git remote -v", "git stash list", "git reflog", "git reflog show -3", "git reflog HEAD",
	"git config --get user.name", "git config --list", "git config -l --show-origin",
	"git merge-base HEAD HEAD~1", "git for-each-ref --format='%(refname)'", "git show-ref", "git version",
	"git worktree list", "git diff --quiet || git status", "git status && git log -1",
}

// hostile is a repository whose own configuration, attributes or hooks
// run marker when git reads it; trigger (when set) is a git command that
// shows the setup is live by running it.
type hostile struct {
	name    string
	global  string // extra global configuration
	setup   func(t *testing.T, dir, marker string)
	trigger string
}

func gitConfig(t *testing.T, dir string, kv ...string) {
	t.Helper()
	for i := 0; i < len(kv); i += 2 {
		run(t, dir, "git", "config", kv[i], kv[i+1])
	}
}

// modify makes f differ from the index, so diff runs drivers and filters.
func modify(t *testing.T, dir string) {
	writeFile(t, filepath.Join(dir, "f"), "foo\nbar\nbaz\n")
}

// restat changes f's time, not its content: git status then refreshes the
// index entry and writes the index.
func restat(t *testing.T, dir string) {
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "f"), old, old); err != nil {
		t.Fatal(err)
	}
}

func attributes(t *testing.T, dir, line string) {
	writeFile(t, filepath.Join(dir, ".git", "info", "attributes"), line+"\n")
}

var hostileRepos = []hostile{
	{name: "core.fsmonitor", setup: func(t *testing.T, d, m string) { gitConfig(t, d, "core.fsmonitor", m) }, trigger: "git status"},
	{name: "core.pager", setup: func(t *testing.T, d, m string) { gitConfig(t, d, "core.pager", m) }, trigger: "tty:git log -1"},
	{name: "pager.log", setup: func(t *testing.T, d, m string) { gitConfig(t, d, "pager.log", m) }, trigger: "tty:git log -1"},
	{name: "diff.external", setup: func(t *testing.T, d, m string) { gitConfig(t, d, "diff.external", m); modify(t, d) }, trigger: "git diff"},
	{name: "textconv", setup: func(t *testing.T, d, m string) {
		gitConfig(t, d, "diff.x.textconv", m)
		writeFile(t, filepath.Join(d, ".gitattributes"), "* diff=x\n")
		modify(t, d)
	}, trigger: "git diff"},
	{name: "diff.x.command", setup: func(t *testing.T, d, m string) {
		gitConfig(t, d, "diff.x.command", m)
		attributes(t, d, "* diff=x")
		modify(t, d)
	}, trigger: "git diff"},
	{name: "filter clean", setup: func(t *testing.T, d, m string) {
		gitConfig(t, d, "filter.x.clean", m, "filter.x.smudge", m)
		attributes(t, d, "* filter=x")
		modify(t, d)
	}, trigger: "git diff"},
	{name: "filter process", setup: func(t *testing.T, d, m string) {
		gitConfig(t, d, "filter.x.process", m)
		attributes(t, d, "f filter=x")
		modify(t, d)
	}, trigger: "git diff"},
	{name: "core.sshCommand", setup: func(t *testing.T, d, m string) {
		gitConfig(t, d, "core.sshCommand", m, "remote.origin.url", "ssh://127.0.0.1/x")
	}, trigger: "git ls-remote origin"},
	{name: "core.hooksPath", setup: func(t *testing.T, d, m string) {
		hooks := filepath.Join(d, "myhooks")
		writeFile(t, filepath.Join(hooks, "post-index-change"), "#!/bin/sh\nexec "+m+"\n")
		gitConfig(t, d, "core.hooksPath", hooks)
		restat(t, d)
	}, trigger: "git status"},
	{name: "hooks/post-index-change", setup: func(t *testing.T, d, m string) {
		writeFile(t, filepath.Join(d, ".git", "hooks", "post-index-change"), "#!/bin/sh\nexec "+m+"\n")
		restat(t, d)
	}, trigger: "git status"},
	{name: "gpg.program", setup: func(t *testing.T, d, m string) {
		gitConfig(t, d, "gpg.program", m, "log.showSignature", "true")
		signedCommit(t, d)
	}, trigger: "git log -1"},
	{name: "include.path", setup: func(t *testing.T, d, m string) {
		inc := filepath.Join(d, "included")
		writeFile(t, inc, "[core]\n\tfsmonitor = "+m+"\n")
		gitConfig(t, d, "include.path", inc)
	}, trigger: "git status"},
	{name: "worktree config", setup: func(t *testing.T, d, m string) {
		gitConfig(t, d, "extensions.worktreeConfig", "true")
		run(t, d, "git", "config", "--worktree", "core.fsmonitor", m)
	}, trigger: "git status"},
	{name: "protocol.ext.allow", setup: func(t *testing.T, d, m string) {
		gitConfig(t, d, "protocol.ext.allow", "always", "remote.origin.url", "ext::"+m+" a b")
	}, trigger: "git ls-remote origin"},
	{name: "global textconv, repo attributes", global: "[diff \"x\"]\n\ttextconv = MARKER\n", setup: func(t *testing.T, d, m string) {
		writeFile(t, filepath.Join(d, "sub", ".gitattributes"), "* diff=x\n")
		writeFile(t, filepath.Join(d, "sub", "g"), "g\n")
		run(t, d, "git", "add", "sub")
		run(t, d, "git", "commit", "-qm", "sub")
		writeFile(t, filepath.Join(d, "sub", "g"), "g2\n")
	}, trigger: "git diff"},
	{name: "submodule fsmonitor", setup: func(t *testing.T, d, m string) {
		sub := t.TempDir()
		run(t, sub, "git", "init", "-q")
		writeFile(t, filepath.Join(sub, "s"), "s\n")
		run(t, sub, "git", "add", "s")
		run(t, sub, "git", "commit", "-qm", "s")
		run(t, d, "git", "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "mod")
		run(t, d, "git", "commit", "-qm", "mod")
		writeFile(t, filepath.Join(d, "mod", "s"), "changed\n")
		run(t, filepath.Join(d, "mod"), "git", "config", "core.fsmonitor", m)
	}, trigger: "git status"},
	{name: "core.worktree elsewhere", setup: func(t *testing.T, d, m string) {
		other := t.TempDir()
		writeFile(t, filepath.Join(other, "f"), "secret\n")
		gitConfig(t, d, "core.worktree", other)
	}},
}

// signedCommit makes HEAD a commit with a (fake) signature, which
// log.showSignature sends to gpg.program.
func signedCommit(t *testing.T, dir string) {
	t.Helper()
	raw := run(t, dir, "git", "cat-file", "commit", "HEAD")
	hdr, body, _ := strings.Cut(raw, "\n\n")
	obj := hdr + "\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n x\n -----END PGP SIGNATURE-----\n\n" + body
	p := filepath.Join(t.TempDir(), "obj")
	writeFile(t, p, obj)
	id := strings.TrimSpace(run(t, dir, "git", "hash-object", "-t", "commit", "-w", p))
	run(t, dir, "git", "update-ref", "HEAD", id)
}

// markerScript writes a program that creates marker when run (and passes
// its input through, as a filter or pager would).
func markerScript(t *testing.T) (script, marker string) {
	t.Helper()
	d := t.TempDir()
	marker = filepath.Join(d, "ran")
	script = filepath.Join(d, "evil.sh")
	// With two arguments or more it is an ssh, diff, gpg or hook
	// command: it exits rather than wait for input.
	writeFile(t, script, "#!/bin/sh\ntouch '"+marker+"'\n[ $# -ge 2 ] && exit 1\nexec cat\n")
	return script, marker
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// hostileEnv gives a hostile repository's subtest its marker script and
// git's environment. A repository that needs no global configuration of
// its own runs in parallel with the others, in the parent's environment
// (gitEnv with none: a process-wide setting, so it cannot change per
// parallel test); one that does sets its own and runs first, alone.
func hostileEnv(t *testing.T, h hostile) (script, marker string) {
	t.Helper()
	if h.global == "" {
		t.Parallel()
		return markerScript(t)
	}
	script, marker = markerScript(t)
	gitEnv(t, strings.ReplaceAll(h.global, "MARKER", script))
	return script, marker
}

// Each hostile repository is live (its trigger, run directly, runs the
// marker), reading its configuration runs nothing, and review mode refuses
// every git command in it.
func TestReviewRefusesHostileRepos(t *testing.T) {
	gitEnv(t, "")
	for _, h := range hostileRepos {
		t.Run(h.name, func(t *testing.T) {
			script, marker := hostileEnv(t, h)
			dir := cleanRepo(t)
			h.setup(t, dir, script)
			if exists(marker) {
				if err := os.Remove(marker); err != nil {
					t.Fatal(err)
				}
			}
			if ok, why := permission.GitRepoCheck(context.Background(), dir); ok {
				t.Errorf("GitRepoCheck passed")
			} else {
				t.Logf("refused: %s", why)
			}
			if exists(marker) {
				t.Fatalf("checking the repository ran the marker")
			}
			for _, cmd := range []string{"git status", "git log -1", "git diff"} {
				if ok, _ := review(dir, cmd); ok {
					t.Errorf("review mode allowed %s", cmd)
				}
			}
			trigger := h.trigger
			if cmd, ok := strings.CutPrefix(trigger, "tty:"); ok {
				// A pager runs only on a terminal: script(1) gives it one.
				trigger = "script -qec '" + cmd + "' /dev/null"
				if _, err := exec.LookPath("script"); err != nil {
					t.Logf("not checking that the pager setup is live: script(1) is missing (apt-get install util-linux)")
					trigger = ""
				}
			}
			if trigger != "" {
				shell(dir, trigger)
				if !exists(marker) {
					t.Errorf("the setup is not live: %s did not run the marker", trigger)
				}
			}
		})
	}
}

// The end-to-end proof: in a clean repository and in every hostile one,
// every plausible review command (ordinary ones and exploits) that review
// mode accepts is run under bash, and no marker appears. The exploits are
// shown live first: run directly, they create the marker.
func TestReviewModeRunsNothingEndToEnd(t *testing.T) {
	exploits := []string{
		"git ls-remote --upload-pack='touch pwned; git-upload-pack' .",
		"git ls-remote --upload-p='touch pwned; git-upload-pack' .",
		"git ls-remote --exec='touch pwned; git-upload-pack' .",
		"git grep -nO'touch pwned' foo",
		"git grep --open-files-in-pager='touch pwned' foo",
		"git grep --open='touch pwned' foo",
		"git -c core.pager='touch pwned' log",
		"git -c core.fsmonitor='touch pwned' status",
		"git diff --output=pwned",
		"git log --outp=pwned",
		"git blame --contents /etc/hostname f > pwned",
		"git blame --cont /etc/hostname f",
		"git diff --no-index /etc/hostname f",
		"git status; touch pwned",
		"git log $(touch pwned)",
		"git log -1 --format=x --output pwned",
		"git status -uno -O'touch pwned'",
		"git log -n1 -O'touch pwned'",
	}
	check := func(t *testing.T, dir string, markers ...string) {
		t.Helper()
		ran := 0
		for _, cmd := range append(append([]string{}, ordinaryGit...), exploits...) {
			if ok, _ := review(dir, cmd); !ok {
				continue
			}
			ran++
			out := shell(dir, cmd)
			for _, m := range markers {
				if exists(m) {
					t.Fatalf("%s ran a program (%s exists):\n%s", cmd, m, out)
				}
			}
		}
		t.Logf("%d commands accepted and run", ran)
	}
	gitEnv(t, "")
	t.Run("clean", func(t *testing.T) {
		dir := cleanRepo(t)
		pwned := filepath.Join(dir, "pwned")
		for _, live := range []string{exploits[0], exploits[3]} {
			shell(dir, live)
			if !exists(pwned) {
				t.Fatalf("the exploit %s is not live", live)
			}
			if err := os.Remove(pwned); err != nil {
				t.Fatal(err)
			}
		}
		for _, cmd := range exploits {
			if ok, _ := review(dir, cmd); ok {
				t.Errorf("review mode accepted the exploit %s", cmd)
			}
		}
		check(t, dir, pwned)
	})
	for _, h := range hostileRepos {
		t.Run(h.name, func(t *testing.T) {
			script, marker := hostileEnv(t, h)
			dir := cleanRepo(t)
			h.setup(t, dir, script)
			if exists(marker) {
				if err := os.Remove(marker); err != nil {
					t.Fatal(err)
				}
			}
			check(t, dir, marker, filepath.Join(dir, "pwned"))
		})
	}
}

// Review mode without a directory cannot read the repository: it refuses
// git, and still allows read-only tools.
func TestReviewWithoutDir(t *testing.T) {
	gitEnv(t, "")
	if ok, why := permission.ModeAllows(permission.ModeReview, bash("git status")); ok || !strings.Contains(why, "does not know which directory") {
		t.Errorf("%v %q", ok, why)
	}
	if ok, _ := permission.ModeAllows(permission.ModeReview, permission.Call{Tool: "Bash", Command: "git status", Dir: "rel"}); ok {
		t.Error("a relative Dir passed")
	}
	if ok, _ := permission.ModeAllows(permission.ModeReview, permission.Call{Tool: "Bash", Command: "git status", Dir: "/nonexistent/x"}); ok {
		t.Error("a missing Dir passed")
	}
	// Outside any repository only the user's own configuration applies.
	if ok, why := review(t.TempDir(), "git status"); !ok {
		t.Errorf("outside a repository: %s", why)
	}
	if ok, _ := permission.ModeAllows(permission.ModeReview, read("a")); !ok {
		t.Error("Read refused")
	}
}

// A repository's configuration that names no program passes: the keys a
// real repository carries (remotes, branches, LFS off, hooks without the
// triggerable ones) do not lock review mode out.
func TestReviewAllowsPlainConfig(t *testing.T) {
	gitEnv(t, "")
	dir := cleanRepo(t)
	gitConfig(t, dir, "remote.origin.url", "https://example.com/x.git", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*",
		"branch.main.remote", "origin", "branch.main.merge", "refs/heads/main", "core.fsmonitor", "false", "log.showSignature", "false",
		"core.hooksPath", ".husky/_", "pretty.mine", "%h %s")
	writeFile(t, filepath.Join(dir, ".husky", "_", "pre-commit"), "#!/bin/sh\nexit 1\n")
	writeFile(t, filepath.Join(dir, ".gitattributes"), "*.go diff=golang\n*.png binary\n")
	if ok, why := review(dir, "git log -1"); !ok {
		t.Errorf("refused: %s", why)
	}
}
