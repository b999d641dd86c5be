package permission_test

import (
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/permission"
)

func TestModeAllows(t *testing.T) {
	gitEnv(t, "")
	repo := cleanRepo(t)
	grep := permission.Call{Tool: "Grep", ReadOnly: true}
	bash := func(cmd string) permission.Call { return permission.Call{Tool: "Bash", Command: cmd, Dir: repo} }
	for _, c := range []struct {
		mode string
		call permission.Call
		ok   bool
		says string
	}{
		{"default", write("a"), true, ""},
		{"", bash("rm -rf build"), true, ""},
		{"plan", read("a"), true, ""},
		{"plan", grep, true, ""},
		{"plan", write("a"), false, "plan mode"},
		{"plan", edit("a"), false, "plan mode"},
		{"plan", bash("git status"), false, "commands are refused"},
		{"review", read("a"), true, ""},
		{"review", edit("a"), false, "review mode"},
		{"review", bash("git status"), true, ""},
		{"review", bash("git push"), false, "git push is not a read-only git command"},
		{"review", bash("ls"), false, "status"},
		{"yolo", write("a"), false, `unknown mode "yolo"`},
		{"yolo", read("a"), true, ""},
	} {
		ok, why := permission.ModeAllows(c.mode, c.call)
		if ok != c.ok || !strings.Contains(why, c.says) || (ok && why != "") {
			t.Errorf("ModeAllows(%q, %+v) = %v, %q; want %v, %q", c.mode, c.call, ok, why, c.ok, c.says)
		}
	}
}

func TestReadOnlyGit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cmd string
		ok  bool
	}{
		{"git status", true},
		{"git status --short", true},
		{"git --no-pager log --oneline -20", true},
		{"git diff --stat && git log -5", true},
		{"git diff --quiet || git status", true},
		{"git status; git diff", true},
		{"git status\ngit diff HEAD~1", true},
		{"git diff -- '*.go'", true},
		{"git diff -- --output=x", true},
		{"git show HEAD:README.md", true},
		{"git log --format='%H %s' --author=\"A B\"", true},
		{"git blame -L 1,20 main.go", true},
		{"git grep -n TODO", true},
		{"git grep -o TODO", true},
		{"git ls-files", true},
		{"git rev-parse --abbrev-ref HEAD", true},
		{"git branch", true},
		{"git branch -a -v", true},
		{"git branch --show-current", true},
		{"git branch --contains HEAD", true},
		{"git branch --list 'feat/*'", true},
		{"git tag", true},
		{"git tag -l 'v1.*'", true},
		{"git stash list", true},
		{"git stash show -p", true},
		{"git config --get user.name", true},
		{"git config get user.name", true},
		{"git config --list", true},
		{"git remote -v", true},
		{"git remote get-url origin", true},
		{"git reflog", true},
		{"git worktree list", true},

		{"git status -ufoo", true},
		{"git status -uno", true},
		{"git log --end-of-options -p", true},
		{"git diff --no-ext-diff --no-textconv", true},
		{"git log --no-decorate --no-color", true},
		{"git grep -e-n foo", true},
		{"git grep -ie foo", true},
		{"git blame -L1,2 f", true},
		{"git log -n 3 --author T", true},
		{"git describe --dirty", true},

		{"git", false},
		{"git ls-remote .", false},
		{"git ls-remote --upload-pack=x .", false},
		{"git grep -nO'cmd' pat", false},
		{"git grep -nOcmd pat", false},
		{"git grep -e -n foo", false},
		{"git log --no-format", false},
		{"git log --no-output", false},
		{"git log --format=x --form=y", false},
		{"git blame --cont /etc/passwd f", false},
		{"git blame --contents /etc/passwd f", false},
		{"git diff /etc/passwd x", false},
		{"git log -- /etc", false},
		{"git diff ~/x y", false},
		{"git branch -d x", false},
		{"git branch --edit-description", false},
		{"git tag -v v1", false},
		{"git remote show origin", false},
		{"git remote show -n origin", true},
		{"git stash show -p stash@{0}", true},
		{"git reflog delete HEAD@{1}", false},
		{"git config --get-all --add x y", false},
		{"git status --porcelain=v2 --no-such-option", false},
		{"git push", false},
		{"git commit -m x", false},
		{"git checkout main", false},
		{"git branch new-branch", false},
		{"git branch -D old", false},
		{"git branch -m a b", false},
		{"git tag v1", false},
		{"git tag -d v1", false},
		{"git stash", false},
		{"git stash pop", false},
		{"git config user.name x", false},
		{"git config user.name", false},
		{"git config --unset user.name", false},
		{"git config --get x --add y z", false},
		{"git remote add x y", false},
		{"git reflog expire --all", false},
		{"git worktree add ../x", false},
		{"git diff --output=/tmp/x", false},
		{"git diff --output /tmp/x", false},
		{"git log --outp=x", false},
		{"git diff --no-index /etc/passwd /dev/null", false},
		{"git diff --no-ind a b", false},
		{"git grep -O foo", false},
		{"git grep -Ovim foo", false},
		{"git grep --open foo", false},
		{"git -c core.pager=sh log", false},
		{"git -C /etc log", false},
		{"git --git-dir=/x log", false},
		{"git log | head", false},
		{"git log |& cat", false},
		{"git diff > x", false},
		{"git diff 2>&1", false},
		{"git log <<< x", false},
		{"git status &", false},
		{"git status; rm -rf /", false},
		{"git status && make", false},
		{"git log $(rm x)", false},
		{"git log `rm x`", false},
		{"git log $REF", false},
		{"git log *", false},
		{"git log {a,b}", false},
		{"X=1 git status", false},
		{"GIT_DIR=/x git status", false},
		{"/usr/bin/git status", false},
		{"ls", false},
		{"(git status)", false},
		{"if git diff; then git log; fi", false},
		{"git status 'unterminated", false},
		{"", false},
	} {
		ok, why := permission.ReadOnlyGit(c.cmd)
		if ok != c.ok || (!ok && why == "") {
			t.Errorf("ReadOnlyGit(%q) = %v, %q; want %v", c.cmd, ok, why, c.ok)
		}
	}
	list := strings.Join(permission.GitReadOnlyCommands(), ",")
	for _, want := range []string{"status", "diff", "log", "show", "blame", "grep", "ls-files", "rev-parse"} {
		if !strings.Contains(list, want) {
			t.Errorf("GitReadOnlyCommands lacks %s", want)
		}
	}
}
