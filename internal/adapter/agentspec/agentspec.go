// Package agentspec reads the --agent values of ferry's commands and builds
// the adapters they name.
//
// A value is one of
//
//	builtin            ferry's own agent
//	echo               the demo agent that needs nothing
//	claude-code        Claude Code, the claude executable on PATH
//	claude-code:CMD    Claude Code run as CMD (its executable and extra arguments)
//	acp:CMD            an ACP agent run as CMD
//	script:CMD         a script agent run as CMD
//
// CMD is split into words with shell quoting rules ('…', "…", $'…', \) and
// nothing else: a value that would need a shell to expand something
// (variables, command substitution, globs, braces, a leading ~) or holds an
// operator (pipes, redirections, ;) is refused, never half-interpreted.
//
// Every failure is an *Error with a stable code. Parse is a pure function;
// String writes a Spec back as a value that parses to the same Spec.
package agentspec

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/builtin"
	"github.com/ferry-dev/ferry/internal/adapter/echo"
	"github.com/ferry-dev/ferry/internal/adapter/script"
)

// Kinds of agent.
const (
	Builtin    = "builtin"
	Echo       = "echo"
	ClaudeCode = "claude-code"
	ACP        = "acp"
	Script     = "script"
)

// Error codes.
const (
	// CodeEmpty: the value is empty.
	CodeEmpty = "agent_empty"
	// CodeUnknown: the value names no kind of agent.
	CodeUnknown = "agent_unknown"
	// CodeNoCommand: acp: or script: without a command.
	CodeNoCommand = "agent_no_command"
	// CodeBadCommand: the command does not parse, or needs expansion or
	// operators.
	CodeBadCommand = "agent_bad_command"
	// CodeDuplicate: two agents would have the same adapter id.
	CodeDuplicate = "agent_duplicate"
	// CodeUnavailable: the adapter could not be made from the value.
	CodeUnavailable = "agent_unavailable"
)

// Usage says what values are accepted, for help texts and errors.
const Usage = "builtin, echo, claude-code, acp:CMD or script:CMD"

// Error is a refused --agent value.
type Error struct {
	// Code is one of the codes above.
	Code string
	// Value is the value refused.
	Value string
	// Reason says what is wrong, for people.
	Reason string
	// Err is the underlying error, if any.
	Err error
}

func (e *Error) Error() string {
	return fmt.Sprintf("agent %q: %s [%s]", e.Value, e.Reason, e.Code)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is matches another *Error with the same code, so callers can write
// errors.Is(err, &agentspec.Error{Code: agentspec.CodeUnknown}).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Spec is one parsed --agent value.
type Spec struct {
	// Kind is one of the kinds above.
	Kind string
	// Command is the argv of acp and script agents, and of claude-code
	// when given (nil: claude on PATH).
	Command []string
}

// Parse reads one --agent value.
func Parse(value string) (Spec, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return Spec{}, &Error{Code: CodeEmpty, Value: value, Reason: "no agent named; want " + Usage}
	}
	kind, cmd, hasCmd := strings.Cut(v, ":")
	switch kind {
	case Builtin, Echo:
		if hasCmd {
			return Spec{}, &Error{Code: CodeUnknown, Value: value, Reason: kind + " takes no command; want " + Usage}
		}
		return Spec{Kind: kind}, nil
	case ClaudeCode:
		if !hasCmd {
			return Spec{Kind: kind}, nil
		}
	case ACP, Script:
	default:
		return Spec{}, &Error{Code: CodeUnknown, Value: value, Reason: "no such agent; want " + Usage}
	}
	if !hasCmd || strings.TrimSpace(cmd) == "" {
		return Spec{}, &Error{Code: CodeNoCommand, Value: value, Reason: "no command after \"" + kind + ":\", e.g. " + kind + ":'my-agent --flag'"}
	}
	words, err := splitCommand(cmd)
	if err != nil {
		return Spec{}, &Error{Code: CodeBadCommand, Value: value, Reason: err.Error()}
	}
	if len(words) == 0 {
		return Spec{}, &Error{Code: CodeNoCommand, Value: value, Reason: "no command after \"" + kind + ":\""}
	}
	if words[0] == "" {
		return Spec{}, &Error{Code: CodeBadCommand, Value: value, Reason: "the command's name is empty"}
	}
	return Spec{Kind: kind, Command: words}, nil
}

// splitCommand splits s into words by shell quoting rules, refusing
// anything a shell would expand or treat as an operator.
func splitCommand(s string) ([]string, error) {
	if strings.ContainsRune(s, 0) {
		return nil, errors.New("the command holds a NUL byte")
	}
	var words []string
	p := syntax.NewParser()
	for w, err := range p.WordsSeq(strings.NewReader(s)) {
		if err != nil {
			return nil, fmt.Errorf("the command does not parse as shell words: %s", parseReason(err))
		}
		if err := literalOnly(w); err != nil {
			return nil, err
		}
		// Fields does the quote removal (backslashes included); with every
		// expansion refused above and no ReadDir there is nothing to split
		// or glob, so one word gives one field.
		// A config of its own: with nil, expand prepares a package-level
		// one in place, a data race between concurrent Parse calls.
		fields, err := expand.Fields(&expand.Config{}, w)
		if err != nil || len(fields) != 1 {
			return nil, fmt.Errorf("the command's word %d cannot be read as one literal word", len(words)+1)
		}
		words = append(words, fields[0])
	}
	return words, nil
}

// parseReason is the parser's message without its "1:2:" position prefix
// noise kept short.
func parseReason(err error) string {
	var pe syntax.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s (at column %d)", pe.Text, pe.Pos.Col())
	}
	return err.Error()
}

// literalOnly refuses a word whose meaning needs expansion.
func literalOnly(w *syntax.Word) error {
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if err := plainLit(p.Value, i == 0); err != nil {
				return err
			}
		case *syntax.SglQuoted:
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return fmt.Errorf("%s inside double quotes is not expanded; use single quotes for literal text", partName(q))
				}
			}
		default:
			return fmt.Errorf("%s is not expanded; write the value itself", partName(part))
		}
	}
	return nil
}

// plainLit refuses unquoted glob and brace characters and a leading ~,
// which a shell would expand (an escaped one is literal and fine).
func plainLit(v string, first bool) error {
	if first && strings.HasPrefix(v, "~") {
		return errors.New("~ is not expanded; write the home directory out")
	}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			i++ // the next character is escaped
		case '*', '?', '[', '{':
			return fmt.Errorf("unquoted %q would be expanded by a shell; quote it", c)
		}
	}
	return nil
}

func partName(p syntax.WordPart) string {
	switch p.(type) {
	case *syntax.ParamExp:
		return "a $variable"
	case *syntax.CmdSubst:
		return "a command substitution"
	case *syntax.ArithmExp:
		return "an arithmetic expansion"
	case *syntax.ProcSubst:
		return "a process substitution"
	case *syntax.ExtGlob:
		return "an extended glob"
	case *syntax.BraceExp:
		return "a brace expansion"
	}
	return "an expansion"
}

// String writes s back as an --agent value (Parse(s.String()) == s).
func (s Spec) String() string {
	if len(s.Command) == 0 {
		return s.Kind
	}
	words := make([]string, len(s.Command))
	for i, w := range s.Command {
		q, err := syntax.Quote(w, syntax.LangBash)
		if err != nil {
			q = "'" + w + "'" // only NUL cannot be quoted, and Parse refuses it
		}
		words[i] = q
	}
	return s.Kind + ":" + strings.Join(words, " ")
}

// ID is the adapter id the spec's adapter will have: the kind, and for acp
// and script agents ":" and the base name of the command.
func (s Spec) ID() string {
	if (s.Kind == ACP || s.Kind == Script) && len(s.Command) > 0 {
		return s.Kind + ":" + filepath.Base(s.Command[0])
	}
	return s.Kind
}

// ParseAll reads every value and refuses two with the same adapter id.
func ParseAll(values []string) ([]Spec, error) {
	specs := make([]Spec, 0, len(values))
	seen := map[string]string{}
	for _, v := range values {
		s, err := Parse(v)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[s.ID()]; dup {
			return nil, &Error{Code: CodeDuplicate, Value: v, Reason: fmt.Sprintf("its adapter id %q is already taken by %q", s.ID(), prev)}
		}
		seen[s.ID()] = v
		specs = append(specs, s)
	}
	return specs, nil
}

// Defaults are the agents offered when none is named: builtin and echo,
// and claude-code when lookPath finds a claude executable (run as found).
func Defaults(lookPath func(string) (string, error)) []Spec {
	specs := []Spec{{Kind: Builtin}, {Kind: Echo}}
	if lookPath != nil {
		if p, err := lookPath("claude"); err == nil && p != "" {
			specs = append(specs, Spec{Kind: ClaudeCode, Command: []string{p}})
		}
	}
	return specs
}

// Options are what building an adapter needs beyond its Spec.
type Options struct {
	// Builtin configures ferry's own agent (its Getenv and Logger default
	// to the fields below).
	Builtin builtin.Config
	// Getenv reads the environment (nil: the adapters' default, os.Getenv).
	Getenv func(string) string
	// StateDir is the client's state directory; Claude Code keeps its
	// session map under StateDir/claude-code ("" = in memory only).
	StateDir string
	// Logger gets the adapters' logs (nil: slog.Default()).
	Logger *slog.Logger
	// HostCommand is the command the user ran ("ferry up", "ferry
	// connect"), which the adapters name when they say what to set or
	// install and restart.
	HostCommand string
}

// Build makes the adapter s names.
func (s Spec) Build(opts Options) (adapter.Adapter, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	unavailable := func(err error) error {
		return &Error{Code: CodeUnavailable, Value: s.String(), Reason: err.Error(), Err: err}
	}
	switch s.Kind {
	case Builtin:
		cfg := opts.Builtin
		if cfg.Getenv == nil {
			cfg.Getenv = opts.Getenv
		}
		if cfg.Logger == nil {
			cfg.Logger = log
		}
		if cfg.HostCommand == "" {
			cfg.HostCommand = opts.HostCommand
		}
		return builtin.New(cfg), nil
	case Echo:
		return echo.New(), nil
	case ClaudeCode:
		return buildClaudeCode(s, opts, log), nil
	case ACP:
		a, err := buildACP(s, opts, log)
		if err != nil {
			return nil, unavailable(err)
		}
		return a, nil
	case Script:
		a, err := script.New(script.Config{Command: slices.Clone(s.Command), Logger: log, HostCommand: opts.HostCommand})
		if err != nil {
			return nil, unavailable(err)
		}
		return a, nil
	}
	return nil, &Error{Code: CodeUnknown, Value: s.String(), Reason: "no such agent; want " + Usage}
}

// BuildAll makes every adapter, refusing two with the same id.
func BuildAll(specs []Spec, opts Options) ([]adapter.Adapter, error) {
	out := make([]adapter.Adapter, 0, len(specs))
	seen := map[string]string{}
	for _, s := range specs {
		a, err := s.Build(opts)
		if err != nil {
			return nil, err
		}
		id := a.Capability().ID
		if prev, dup := seen[id]; dup {
			return nil, &Error{Code: CodeDuplicate, Value: s.String(), Reason: fmt.Sprintf("its adapter id %q is already taken by %q", id, prev)}
		}
		seen[id] = s.String()
		out = append(out, a)
	}
	return out, nil
}
