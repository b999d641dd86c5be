package permission

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// This file checks that a repository's own configuration cannot turn a
// read-only git command into running a program. What it guarantees: for
// the directory a git command runs in, GitRepoCheck refuses when the
// repository's local or worktree configuration (includes followed) sets a
// key that names a program, a pager, a transport rewrite or signature
// verification; when a hook a read-only command can trigger exists; when
// the working tree is moved elsewhere (core.worktree); when an attribute
// (.gitattributes anywhere in the index's directories, .git/info/attributes,
// core.attributesFile) selects a diff, filter or merge driver that has a
// program configured at any scope; and all of this again in every
// populated submodule. System and global configuration are the user's own
// and trusted, as is the environment (GIT_CONFIG_*).
//
// Reading is safe: `git config --list` and `git rev-parse` load no index
// and run no hook, fsmonitor or pager (stdout is a pipe and GIT_PAGER is
// cat); ls-files and check-attr run only once the configuration passed.

// gitCheckTimeout bounds each git call of the check; a slow repository is
// refused rather than waited for.
const gitCheckTimeout = 5 * time.Second

// maxSubmodules bounds the submodules checked (nested ones included).
const maxSubmodules = 32

// programKeySuffixes end the last component of configuration keys whose
// value is a program git may start: core.fsmonitor, core.pager,
// diff.external, diff.x.textconv, diff.x.command, filter.x.clean, smudge
// and process, merge.x.driver, core.sshCommand, core.editor,
// credential.helper, core.askPass, gpg.program, core.gitProxy,
// remote.x.uploadpack, remote.x.vcs, core.alternateRefsCommand, …
var programKeySuffixes = []string{
	"command", "cmd", "program", "textconv", "pager", "editor", "helper", "proxy",
	"askpass", "fsmonitor", "external", "clean", "smudge", "process", "driver",
	"uploadpack", "receivepack", "packobjectshook", "vcs",
}

// triggerableHooks are the hooks a read-only command can run: git status
// and git diff may rewrite the index (post-index-change); the others are
// there in case a future git updates a ref or collects garbage on a read.
var triggerableHooks = []string{"post-index-change", "reference-transaction", "pre-auto-gc"}

// GitRepoCheck reports whether git commands that ReadOnlyGit accepts are
// read-only in dir, given the repository's configuration (see above); why
// says what is not. dir must be absolute: an empty or relative dir is
// refused, since the check would read some other repository than the one
// the command runs in.
func GitRepoCheck(ctx context.Context, dir string) (ok bool, why string) {
	if dir == "" {
		return false, "ferry does not know which directory the command runs in, so it cannot check the repository's configuration"
	}
	if !filepath.IsAbs(dir) {
		return false, fmt.Sprintf("the directory %q is not absolute", dir)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return false, fmt.Sprintf("the directory %s does not exist", dir)
	}
	budget := maxSubmodules
	if why := checkRepoAt(ctx, dir, &budget); why != "" {
		return false, why
	}
	return true, ""
}

// errNotRepo: the directory is in no repository.
var errNotRepo = errors.New("not a git repository")

func checkRepoAt(ctx context.Context, dir string, budget *int) string {
	out, err := runGit(ctx, dir, nil, "config", "--list", "--show-scope", "-z", "--includes")
	if err != nil {
		return "ferry could not read the repository's git configuration: " + err.Error()
	}
	drivers := map[string]map[string]bool{"diff": {}, "filter": {}, "merge": {}}
	// Entries are scope NUL key NL value NUL (no NL for a bare key).
	fields := strings.Split(string(out), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		scope := fields[i]
		key, value, _ := strings.Cut(fields[i+1], "\n")
		key = strings.ToLower(key)
		if scope == "local" || scope == "worktree" {
			if why := refusedGitKey(key, value); why != "" {
				return fmt.Sprintf("the repository's configuration sets %s (%s scope), which %s; review mode does not run git here", key, scope, why)
			}
		}
		sec, rest, _ := strings.Cut(key, ".")
		if i := strings.LastIndexByte(rest, '.'); i > 0 && drivers[sec] != nil {
			// diff.NAME.textconv: NAME is case-sensitive in git, but
			// attributes compare it as written; keep the lowered form and
			// compare lowered below (more refusals, never fewer).
			if hasProgramSuffix(rest[i+1:]) {
				drivers[sec][rest[:i]] = true
			}
		}
	}
	gitDir, err := runGit(ctx, dir, nil, "rev-parse", "--path-format=absolute", "--git-path", "hooks")
	if errors.Is(err, errNotRepo) {
		return "" // no repository: nothing of its own can run
	}
	if err != nil {
		return "ferry could not locate the repository: " + err.Error()
	}
	hooks := strings.TrimSpace(string(gitDir))
	for _, h := range triggerableHooks {
		if _, err := os.Lstat(filepath.Join(hooks, h)); err == nil {
			return fmt.Sprintf("the repository has a %s hook (%s), which git runs on a read-only command; review mode does not run git here", h, filepath.Join(hooks, h))
		}
	}
	top, err := runGit(ctx, dir, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return "" // a bare repository or a git directory: no working tree, no index
	}
	toplevel := strings.TrimSpace(string(top))
	if why := checkWorktree(dir, toplevel); why != "" {
		return why
	}
	staged, err := runGit(ctx, toplevel, nil, "ls-files", "-z", "--stage")
	if err != nil {
		return "ferry could not list the repository's files: " + err.Error()
	}
	var files []byte
	var subs []string
	for e := range strings.SplitSeq(string(staged), "\x00") {
		// "MODE OBJECT STAGE\tPATH"
		meta, p, ok := strings.Cut(e, "\t")
		if !ok {
			continue
		}
		if strings.HasPrefix(meta, "160000 ") {
			subs = append(subs, p)
			continue
		}
		files = append(append(files, p...), 0)
	}
	if len(drivers["diff"])+len(drivers["filter"])+len(drivers["merge"]) > 0 && len(files) > 0 {
		attrs, err := runGit(ctx, toplevel, files, "check-attr", "-z", "--stdin", "diff", "filter", "merge")
		if err != nil {
			return "ferry could not read the repository's attributes: " + err.Error()
		}
		f := strings.Split(string(attrs), "\x00")
		for i := 0; i+2 < len(f); i += 3 {
			attr, val := f[i+1], strings.ToLower(f[i+2])
			if val != "unspecified" && val != "set" && val != "unset" && drivers[attr][val] {
				return fmt.Sprintf("the repository's attributes give %s %s=%s, and the %s driver %q runs a program; review mode does not run git here", f[i], attr, f[i+2], attr, f[i+2])
			}
		}
	}
	for _, s := range slices.Compact(subs) {
		sd := filepath.Join(toplevel, filepath.FromSlash(s))
		if _, err := os.Lstat(filepath.Join(sd, ".git")); err != nil {
			continue // not checked out: git does not enter it
		}
		*budget--
		if *budget < 0 {
			return "the repository has too many submodules for ferry to check"
		}
		if why := checkRepoAt(ctx, sd, budget); why != "" {
			return "in submodule " + s + ": " + why
		}
	}
	return ""
}

// refusedGitKey says why a local or worktree key could make a read-only
// command run a program (or read and reach what it should not); "" when it
// cannot.
func refusedGitKey(key, value string) string {
	sec, _, _ := strings.Cut(key, ".")
	last := key[strings.LastIndexByte(key, '.')+1:]
	switch {
	case key == "core.fsmonitor":
		if isFalse(value) {
			return ""
		}
		return "starts a file system monitor program"
	case key == "core.hookspath", key == "core.worktree":
		return "" // the hooks and the working tree are checked where they end up
	case sec == "pager":
		return "runs a pager program"
	case key == "log.showsignature":
		if isFalse(value) {
			return ""
		}
		return "runs gpg on every commit shown"
	case (sec == "pretty" || key == "format.pretty") && strings.Contains(value, "%G"):
		return "verifies signatures (runs gpg) in a log format"
	case sec == "protocol" && last == "allow":
		return "allows transports that run programs"
	case sec == "url" && (last == "insteadof" || last == "pushinsteadof"):
		return "rewrites remote addresses"
	case sec == "submodule" && last == "update" && strings.HasPrefix(value, "!"):
		return "runs a program on update"
	case slices.Contains([]string{"mergetool", "difftool", "browser", "man", "sendemail"}, sec):
		return "configures a program"
	case hasProgramSuffix(last):
		return "names a program"
	}
	return ""
}

func hasProgramSuffix(last string) bool {
	for _, s := range programKeySuffixes {
		if strings.HasSuffix(last, s) {
			return true
		}
	}
	return false
}

// isFalse is git's boolean false.
func isFalse(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "false", "no", "off", "0":
		return true
	}
	return false
}

// checkWorktree refuses a working tree that is not where the repository
// sits (core.worktree pointing elsewhere, so commands would read there):
// the top level must be the directory holding the .git found above dir.
func checkWorktree(dir, toplevel string) string {
	natural := ""
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			natural = d
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	a, err1 := filepath.EvalSymlinks(toplevel)
	b, err2 := filepath.EvalSymlinks(natural)
	if natural == "" || err1 != nil || err2 != nil || a != b {
		return fmt.Sprintf("the repository's working tree is %s, not the directory that holds it (core.worktree or GIT_WORK_TREE); review mode does not run git here", toplevel)
	}
	return ""
}

// runGit runs git in dir with stdin, no pager, no prompts and no optional
// locks, and returns its standard output.
func runGit(ctx context.Context, dir string, stdin []byte, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, gitCheckTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"--no-pager"}, args...)...) //nolint:gosec // git with ferry's own fixed arguments
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_PAGER=cat", "PAGER=cat", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C")
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("git %s took longer than %s", args[0], gitCheckTimeout)
	}
	if err != nil {
		if strings.Contains(stderr.String(), "not a git repository") {
			return nil, errNotRepo
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("git %s failed: %s", args[0], firstLine(stderr.String()))
		}
		return nil, fmt.Errorf("git %s: %w", args[0], err)
	}
	return stdout.Bytes(), nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
