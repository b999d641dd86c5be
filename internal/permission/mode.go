package permission

import (
	"context"
	"fmt"

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
			if ok, why := ReadOnlyGit(c.Command); !ok {
				return false, "review mode runs only read-only git commands (git status, diff, log, show, blame, grep and the like): " + why
			}
			if ok, why := GitRepoCheck(context.Background(), c.Dir); !ok {
				return false, "review mode runs git only where the repository cannot make it run programs: " + why
			}
			return true, ""
		}
		return false, "only read-only tools and read-only git commands run in review mode; writes are refused"
	}
	if c.ReadOnly {
		return true, ""
	}
	return false, fmt.Sprintf("unknown mode %q: only read-only tools run", mode)
}

// ReadOnlyGit reports whether command only reads a git repository, as far
// as the command line shows: one or more git commands joined by `&&`,
// `||`, `;` or newlines, each plain `git SUBCOMMAND args…` with fixed
// words (no $VAR, $(…), backticks, unquoted globs or braces, assignments),
// no redirection at all, no pipe, no background job, no global git options
// (`-c`, `-C`, `--git-dir` can run or reach anything) but --no-pager, -P
// and --no-optional-locks; the subcommand one of GitReadOnlyCommands (in
// its reading forms), and every option on that subcommand's allow-list,
// parsed as git parses them (bundles, `--opt=value`, abbreviations refused
// naming what they abbreviate). No path argument outside the repository.
// why says what is not read-only.
//
// The repository's own configuration is not looked at: GitRepoCheck does
// that, and ModeAllows runs both.
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
	return checkGitArgs(args[1:])
}
