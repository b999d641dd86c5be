package permission

import (
	"fmt"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// The modes of a session (control.mode.switch).
const (
	ModeDefault = "default"
	ModePlan    = "plan"
	ModeReview  = "review"
)

// ModeAllows reports whether mode lets c run at all (the rules decide
// afterwards); reason says why not, as a phrase ("only read-only tools run
// in plan mode"). default (and "") allows everything; plan allows read-only
// tools only; review allows read-only tools and Bash commands that
// ReadOnlyGit accepts. An unknown mode refuses like plan, naming the mode:
// a typo must not lift the limits.
func ModeAllows(mode string, c Call) (ok bool, reason string) {
	switch mode {
	case "", ModeDefault:
		return true, ""
	case ModePlan:
		if c.ReadOnly {
			return true, ""
		}
		return false, "only read and search tools run in plan mode; writes and commands are refused"
	case ModeReview:
		if c.ReadOnly {
			return true, ""
		}
		if c.Tool == "Bash" {
			ok, why := ReadOnlyGit(c.Command)
			if ok {
				return true, ""
			}
			return false, "review mode runs only read-only git commands (git status, diff, log, show, blame, grep and the like): " + why
		}
		return false, "only read-only tools and read-only git commands run in review mode; writes are refused"
	}
	if c.ReadOnly {
		return true, ""
	}
	return false, fmt.Sprintf("unknown mode %q: only read-only tools run", mode)
}

// gitArgCheck checks a read-only subcommand's arguments; "" when fine.
type gitArgCheck func(args []string) string

// gitReadOnly are the git subcommands review mode runs, with the checks on
// their arguments for those that can also write.
var gitReadOnly = map[string]gitArgCheck{
	"status": nil, "diff": nil, "log": nil, "show": nil, "blame": nil, "annotate": nil,
	"grep": checkGitGrep, "ls-files": nil, "ls-tree": nil, "ls-remote": nil,
	"rev-parse": nil, "rev-list": nil, "describe": nil, "shortlog": nil, "cat-file": nil,
	"merge-base": nil, "name-rev": nil, "for-each-ref": nil, "show-ref": nil, "show-branch": nil,
	"diff-tree": nil, "diff-files": nil, "diff-index": nil, "range-diff": nil, "whatchanged": nil,
	"count-objects": nil, "check-ignore": nil, "check-attr": nil, "version": nil,
	"branch":   listOnly("git branch creates, renames and deletes branches", []string{"-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "-l", "--list", "--show-current", "-i", "--ignore-case", "--no-color", "--no-column", "--no-abbrev"}, []string{"--merged", "--no-merged", "--contains", "--no-contains", "--points-at", "--sort", "--format", "--color", "--column", "--abbrev"}),
	"tag":      listOnly("git tag creates and deletes tags", []string{"-l", "--list", "-i", "--ignore-case", "--no-color", "--no-column"}, []string{"--merged", "--no-merged", "--contains", "--no-contains", "--points-at", "--sort", "--format", "--color", "--column", "-n"}),
	"remote":   checkGitRemote,
	"stash":    firstWordIn("git stash changes the working tree", "list", "show"),
	"worktree": firstWordIn("git worktree adds and removes worktrees", "list"),
	"reflog":   checkGitReflog,
	"config":   checkGitConfig,
}

// GitReadOnlyCommands lists the git subcommands review mode runs, sorted.
// branch, tag, remote, stash, worktree, reflog and config only in their
// listing and reading forms.
func GitReadOnlyCommands() []string {
	out := make([]string, 0, len(gitReadOnly))
	for k := range gitReadOnly {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// ReadOnlyGit reports whether command only reads a git repository: one or
// more read-only git commands (GitReadOnlyCommands) joined by `&&`, `||`,
// `;` or newlines, each plain `git SUBCOMMAND args…` with fixed words (no
// $VAR, $(…), backticks, unquoted globs or braces, assignments), no
// redirection at all, no pipe, no background job, no global git options
// (`-c`, `-C`, `--git-dir` can run or reach anything) but --no-pager, and
// none of the options that write files or start programs: --output (and
// its abbreviations), --no-index, and grep's -O/--open-files-in-pager.
// why says what is not read-only.
//
// The repository's own configuration is trusted: hooks do not run for these
// commands, but a configured diff driver or fsmonitor does.
func ReadOnlyGit(command string) (ok bool, why string) {
	f, err := parseShell(command)
	if err != nil {
		return false, "the command is not valid shell syntax"
	}
	if len(f.Stmts) == 0 {
		return false, "the command is empty"
	}
	for _, st := range f.Stmts {
		if why := gitStmt(st); why != "" {
			return false, why
		}
	}
	return true, ""
}

func gitStmt(st *syntax.Stmt) string {
	switch {
	case st.Background || st.Coprocess || st.Disown:
		return "it runs a background job"
	case len(st.Redirs) > 0:
		return "it redirects input or output"
	}
	switch c := st.Cmd.(type) {
	case *syntax.BinaryCmd:
		if c.Op != syntax.AndStmt && c.Op != syntax.OrStmt {
			return "it pipes into another command"
		}
		if why := gitStmt(c.X); why != "" {
			return why
		}
		return gitStmt(c.Y)
	case *syntax.CallExpr:
		return gitCall(c)
	}
	return "it is not a plain git command"
}

func gitCall(c *syntax.CallExpr) string {
	if len(c.Assigns) > 0 || len(c.Args) == 0 {
		return "it sets variables"
	}
	words := wordsOf(c.Args)
	args := make([]string, len(words))
	for i, w := range words {
		if !w.lit {
			return fmt.Sprintf("%s is not fixed text (variables, substitutions, globs and braces are refused)", w.text)
		}
		args[i] = w.text
	}
	if args[0] != "git" {
		return fmt.Sprintf("%s is not git", args[0])
	}
	i := 1
	for i < len(args) && (args[i] == "--no-pager" || args[i] == "-P") {
		i++
	}
	if i == len(args) {
		return "git needs a subcommand"
	}
	sub := args[i]
	if strings.HasPrefix(sub, "-") {
		return fmt.Sprintf("the global git option %s is refused (it can change what git runs or reaches)", sub)
	}
	check, ok := gitReadOnly[sub]
	if !ok {
		return fmt.Sprintf("git %s is not a read-only git command", sub)
	}
	rest := args[i+1:]
	if why := gitWriteOptions(sub, rest); why != "" {
		return why
	}
	if check != nil {
		return check(rest)
	}
	return ""
}

// gitWriteOptions refuses options that write files or start programs. git
// accepts unambiguous abbreviations of long options, so every prefix is
// refused.
func gitWriteOptions(sub string, args []string) string {
	for _, a := range args {
		if a == "--" {
			return ""
		}
		if name, ok := strings.CutPrefix(a, "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			switch {
			case name != "" && strings.HasPrefix("output", name):
				return "--output writes a file"
			case len(name) >= 4 && strings.HasPrefix("no-index", name):
				return "--no-index reads outside the repository"
			case sub == "grep" && len(name) >= 2 && strings.HasPrefix("open-files-in-pager", name):
				return "--open-files-in-pager starts a program"
			}
		}
	}
	return ""
}

func checkGitGrep(args []string) string {
	for _, a := range args {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "-O") {
			return "-O starts a program"
		}
	}
	return ""
}

// listOnly allows a subcommand in its listing form: only the given flags
// and value options; positional arguments only as a value or with -l/--list.
func listOnly(what string, flags, valued []string) gitArgCheck {
	return func(args []string) string {
		list := slices.Contains(args, "-l") || slices.Contains(args, "--list")
		for i := 0; i < len(args); i++ {
			a := args[i]
			name, _, hasValue := strings.Cut(a, "=")
			switch {
			case slices.Contains(flags, a):
			case slices.Contains(valued, name):
				if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && name != "--color" && name != "--column" && name != "--abbrev" {
					i++
				}
			case strings.HasPrefix(a, "-"):
				return fmt.Sprintf("%s; %s is not a listing option", what, a)
			case !list:
				return fmt.Sprintf("%s; only listing is allowed (add --list to list matching names)", what)
			}
		}
		return ""
	}
}

// firstWordIn allows a subcommand whose first argument is one of words.
func firstWordIn(what string, words ...string) gitArgCheck {
	return func(args []string) string {
		if len(args) > 0 && slices.Contains(words, args[0]) {
			return ""
		}
		return fmt.Sprintf("%s; only %s are allowed", what, strings.Join(words, " and "))
	}
}

func checkGitRemote(args []string) string {
	if len(args) == 0 || (len(args) == 1 && (args[0] == "-v" || args[0] == "--verbose")) {
		return ""
	}
	if args[0] == "get-url" || args[0] == "show" {
		return ""
	}
	return "git remote changes remotes; only listing, get-url and show are allowed"
}

func checkGitReflog(args []string) string {
	if len(args) > 0 && (args[0] == "expire" || args[0] == "delete" || args[0] == "drop") {
		return "git reflog " + args[0] + " changes the reflog"
	}
	return ""
}

func checkGitConfig(args []string) string {
	writes := []string{"--add", "--unset", "--unset-all", "--replace-all", "--rename-section", "--remove-section", "-e", "--edit",
		"set", "unset", "rename-section", "remove-section", "edit"}
	reads := []string{"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool", "-l", "--list"}
	readForm := len(args) > 0 && (args[0] == "get" || args[0] == "list")
	for _, a := range args {
		if slices.Contains(writes, a) {
			return "git config " + a + " changes the configuration"
		}
		readForm = readForm || slices.Contains(reads, a)
	}
	if !readForm {
		return "git config without --get or --list can change the configuration"
	}
	return ""
}
