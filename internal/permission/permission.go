// Package permission decides whether an agent's tool call runs, asks the
// user, or is refused: the permission rules (`Read(src/**)`,
// `Write(/tmp/**)`, `Bash(git diff:*)`) and the modes (default, plan,
// review).
//
// What it guarantees:
//
//   - A deny rule is never overridden: if any deny rule matches a call, or
//     any part of a Bash command, the decision is Deny whatever the ask and
//     allow rules say. Then ask rules the same way, then allow rules; with no
//     rule, read-only tools are allowed and the others ask.
//   - Where ferry cannot tell whether a deny or ask rule applies to a Bash
//     command (it does not parse, or runs something named only at run time:
//     `$CMD`, `eval "$x"`, `bash -c "$x"`), the command is never allowed
//     automatically: it asks, even under a rule that allows every command.
//   - An allow rule covers a Bash command only if every simple command in
//     it (across `;`, `&&`, `||`, `|`, `&`, newlines, subshells, `$(…)` and
//     backticks) matches an allow rule, every command it runs through
//     another (`find -exec`, `xargs`, `sudo`, `env`, `bash -c`, `eval`,
//     `jobs -x`) does too, and the command does nothing an allow rule
//     cannot see: no output redirection to a file (`>/dev/null` and `2>&1`
//     are fine), no variable assignments (`X=1 cmd`, `export`, `env X=1`),
//     no function definitions, no `for` loops, no coprocesses, and no code
//     that bash runs without a simple command showing it: arithmetic
//     (`$((…))`, `((…))`, `let`, `[[ x -eq y ]]`), array subscripts in
//     variable names given to builtins (`printf -v 'a[$(cmd)]'`, `read`,
//     `test -v`, `unset`, …), evaluating expansions (`${a[i]}`, `${x:i}`,
//     `${!x}`, `${x@P}`), and builtins that take code (`trap`,
//     `mapfile -C`, `compgen -C`, `hash -p`, `alias`, …). Such a command
//     asks.
//   - Paths are compared cleaned, as given and with their symbolic links
//     resolved (relative paths against Rules.Workspace): a deny or ask
//     rule matching either form applies, and allow rules must cover both,
//     so a link cannot lead a call past a rule. A path whose links cannot
//     be resolved is never allowed by a rule. A relative pattern matches
//     only paths inside the workspace: `../x`, and an absolute path
//     outside the workspace, never match it. An absolute pattern matches
//     absolute paths (and workspace paths, when Rules.Workspace is set).
//     The fixed directories a pattern starts with are resolved too.
//   - A Bash call's declared output files (Call.Writes) meet the Write and
//     Edit rules as a Write of each would.
//   - A rule names a tool exactly, except that Read rules also cover Glob
//     and Grep, and Write and Edit rules each cover both Write and Edit, so
//     a deny rule cannot be sidestepped with the sibling tool.
//   - A rule built without Parse that Parse would reject never allows, and
//     as a deny or ask rule it matches every call of its tool: a broken
//     deny rule fails closed.
//   - Parse rejects what would otherwise silently never match: unknown tool
//     names, `..` or `~` in path patterns, Bash patterns of more than one
//     command, a trailing ` *` meant as a wildcard. Its errors are *Error
//     with a Code.
//   - WebFetch rules name a domain, `WebFetch(domain:example.com)` (that
//     host exactly) or `WebFetch(domain:*.example.com)` (its subdomains);
//     with no rule a fetch asks, though WebFetch only reads: it reaches
//     outside the machine. "Allow always" offers the domain's rule.
//     TodoWrite rules take no pattern; it is read-only and allowed.
//   - MCP tools (mcp__SERVER__TOOL, offered from an editor's MCP servers)
//     are matched by name: a rule names the tool, or its server
//     (mcp__SERVER) to cover all its tools, and takes no pattern. With no
//     rule they ask, even one its server marks read-only (a hint ferry
//     cannot check); the modes take that hint like a tool's ReadOnly.
//   - Plan mode runs read-only tools only; review mode adds Bash commands
//     that are read-only git commands (ReadOnlyGit), run in a repository
//     whose own configuration cannot make git start a program
//     (GitRepoCheck). An unknown mode limits like plan: a typo never lifts
//     the limits.
//
// Deny rules for Bash are a guard against mistakes, not a sandbox: a
// determined command can hide what it runs (a script file, an interpreter,
// `find -exec` with a computed name). ferry looks through the common
// wrappers (`sudo`, `env`, `xargs`, `timeout`, `nice`, `command`, `exec`,
// `nohup`, `find -exec`, `jobs -x`, `bash -c '…'`, `eval '…'`) for every
// rule, and through absolute program paths (`/bin/rm` is `rm`) when
// matching deny and ask rules.
package permission

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Decision is what happens to a call.
type Decision int

// The decisions. The zero Decision is none of them.
const (
	// Allow runs the call without asking.
	Allow Decision = iota + 1
	// Ask asks the user first.
	Ask
	// Deny refuses the call.
	Deny
)

// String implements fmt.Stringer.
func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	case Deny:
		return "deny"
	}
	return fmt.Sprintf("Decision(%d)", int(d))
}

// Rule is one permission rule: a tool name and an optional pattern. With no
// pattern it matches every call of the tool.
type Rule struct {
	Tool    string
	Pattern string
}

// String is the rule as Parse reads it: "Tool" or "Tool(pattern)".
func (r Rule) String() string {
	if r.Pattern == "" {
		return r.Tool
	}
	return r.Tool + "(" + r.Pattern + ")"
}

// IsZero reports whether r is the zero Rule, which RuleFor returns when no
// rule can express a call.
func (r Rule) IsZero() bool { return r == Rule{} }

// Tools whose rules take a path pattern (doublestar glob) and the one whose
// rules take a command pattern. A tool added to ferry's agent adds its name
// here; a test keeps this list in step with tools.AllTools.
// WebFetch's rules take a domain pattern (domain.go); TodoWrite's none.
var (
	pathTools    = []string{"Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "Glob", "Grep"}
	commandTools = []string{"Bash"}
	domainTools  = []string{"WebFetch"}
	plainTools   = []string{"TodoWrite"}
)

// KnownTools lists the tool names rules may name.
func KnownTools() []string {
	return slices.Concat(pathTools, commandTools, domainTools, plainTools)
}

func isPathTool(name string) bool {
	for _, t := range pathTools {
		if t == name {
			return true
		}
	}
	return false
}

// covers reports whether a rule naming ruleTool applies to a call of
// callTool. Read rules cover every tool that reads files (Read, Glob,
// Grep), so `Read(.env)` in deny also stops Grep from being pointed at it;
// the rules of each tool that changes files (Write, Edit, MultiEdit,
// NotebookEdit) cover all four, so `Edit(secrets/**)` in deny cannot be
// sidestepped with Write or MultiEdit, as in Claude Code.
func covers(ruleTool, callTool string) bool {
	if ruleTool == callTool {
		return true
	}
	switch {
	case ruleTool == "Read":
		return callTool == "Glob" || callTool == "Grep"
	case writeTools[ruleTool]:
		return writeTools[callTool]
	}
	return false
}

// writeTools change files; their rules cover one another.
var writeTools = map[string]bool{"Write": true, "Edit": true, "MultiEdit": true, "NotebookEdit": true}

// ErrorCode names what is wrong with a rule.
type ErrorCode string

// The codes of Parse's errors.
const (
	// CodeEmptyTool: no tool name ("", "(x)").
	CodeEmptyTool ErrorCode = "empty_tool"
	// CodeUnknownTool: a tool name ferry's agent does not have.
	CodeUnknownTool ErrorCode = "unknown_tool"
	// CodeUnbalanced: unbalanced parentheses, or text after the closing one.
	CodeUnbalanced ErrorCode = "unbalanced_parentheses"
	// CodeEmptyPattern: "Tool()"; write "Tool" to match every call.
	CodeEmptyPattern ErrorCode = "empty_pattern"
	// CodeBadPattern: a path pattern that is not a valid glob, or holds
	// ".." or a leading "~".
	CodeBadPattern ErrorCode = "bad_pattern"
	// CodeBadCommand: a Bash pattern that is not one plain command.
	CodeBadCommand ErrorCode = "bad_command"
)

// Error is a rule Parse rejects. Its message quotes the rule and says how to
// fix it; it holds nothing but the rule's own text.
type Error struct {
	Code    ErrorCode
	Rule    string
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("permission rule %q: %s", e.Rule, e.Message)
}

// Is matches an *Error with the same Code, so errors.Is(err,
// &permission.Error{Code: permission.CodeUnknownTool}) works.
func (e *Error) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Code == e.Code
}

func ruleErr(code ErrorCode, rule, format string, args ...any) *Error {
	return &Error{Code: code, Rule: rule, Message: fmt.Sprintf(format, args...)}
}

// Parse reads a rule: "Tool" (every call of the tool) or "Tool(pattern)".
// The pattern is everything between the first "(" and the last ")";
// parentheses inside it must balance unless escaped with a backslash.
//
// Path tools (Read, Write, Edit, MultiEdit, NotebookEdit, Glob, Grep) take a doublestar glob:
// relative patterns ("src/**", "**/*.go") match paths inside the workspace,
// absolute ones ("/tmp/**") absolute paths; the pattern is cleaned ("./a//b"
// is "a/b"). Bash takes "prefix:*" (the command starts with these words:
// "git diff:*" matches "git diff --stat" but not "git diffx") or an exact
// command ("npm test"); words are compared after shell quote removal, so
// `git "diff"` is `git diff`.
func Parse(s string) (Rule, error) {
	src := s
	s = strings.TrimSpace(s)
	open := strings.IndexByte(s, '(')
	if open < 0 {
		if strings.IndexByte(s, ')') >= 0 {
			return Rule{}, ruleErr(CodeUnbalanced, src, `a ")" without "("; write Tool or Tool(pattern)`)
		}
		return parseTool(src, s, "", false)
	}
	if !strings.HasSuffix(s, ")") {
		return Rule{}, ruleErr(CodeUnbalanced, src, `the pattern must end with ")": write Tool(pattern)`)
	}
	tool := strings.TrimSpace(s[:open])
	pattern := s[open+1 : len(s)-1]
	if err := balanced(pattern); err != "" {
		return Rule{}, ruleErr(CodeUnbalanced, src, "%s; escape a lone parenthesis with a backslash", err)
	}
	return parseTool(src, tool, pattern, true)
}

// balanced checks the parentheses of a pattern; "" when they balance.
func balanced(p string) string {
	depth := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '(':
			depth++
		case ')':
			depth--
			if depth < 0 {
				return `the pattern closes a ")" it never opened`
			}
		}
	}
	if depth > 0 {
		return `the pattern leaves a "(" open`
	}
	return ""
}

func parseTool(src, tool, pattern string, parens bool) (Rule, error) {
	if tool == "" {
		return Rule{}, ruleErr(CodeEmptyTool, src, "no tool name; write Tool or Tool(pattern), e.g. Read(src/**) or Bash(git diff:*)")
	}
	if IsMCPTool(tool) {
		if parens {
			return Rule{}, ruleErr(CodeBadPattern, src, "MCP tools take no pattern; write %s alone to match every call", tool)
		}
		return Rule{Tool: tool}, nil
	}
	known := false
	for _, t := range KnownTools() {
		if t == tool {
			known = true
			break
		}
	}
	if !known {
		for _, t := range KnownTools() {
			if strings.EqualFold(t, tool) {
				return Rule{}, ruleErr(CodeUnknownTool, src, "unknown tool %q; did you mean %q? Tool names are case-sensitive", tool, t)
			}
		}
		return Rule{}, ruleErr(CodeUnknownTool, src, "unknown tool %q; the tools are %s", tool, strings.Join(KnownTools(), ", "))
	}
	if !parens {
		return Rule{Tool: tool}, nil
	}
	if strings.TrimSpace(pattern) == "" {
		return Rule{}, ruleErr(CodeEmptyPattern, src, "empty pattern; write %s alone to match every call", tool)
	}
	if slices.Contains(domainTools, tool) {
		d, err := parseDomainPattern(pattern)
		if err != nil {
			return Rule{}, ruleErr(CodeBadPattern, src, "%s", err.Error())
		}
		return Rule{Tool: tool, Pattern: d}, nil
	}
	if slices.Contains(plainTools, tool) {
		return Rule{}, ruleErr(CodeBadPattern, src, "%s takes no pattern; write %s alone to match every call", tool, tool)
	}
	if tool == "Bash" {
		if _, err := compileCommandPattern(pattern); err != nil {
			return Rule{}, ruleErr(CodeBadCommand, src, "%s", err.Error())
		}
		return Rule{Tool: tool, Pattern: strings.TrimSpace(pattern)}, nil
	}
	clean, err := cleanPathPattern(pattern)
	if err != nil {
		return Rule{}, ruleErr(CodeBadPattern, src, "%s", err.Error())
	}
	return Rule{Tool: tool, Pattern: clean}, nil
}
