package permission

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/ferry-dev/ferry/internal/lazyregexp"

	"mvdan.cc/sh/v3/syntax"
)

// Bash commands are read with a real shell parser (mvdan.cc/sh, bash
// dialect), so quoting, escapes, here-documents, substitutions and
// operators are understood as bash understands them, not guessed at with
// string matching.

// word is one shell word of a simple command.
type word struct {
	// text is the word after quote removal when lit; otherwise its source
	// text, so two identical non-literal words still compare equal.
	text string
	// lit: the word is fixed text that no expansion, glob or brace
	// expansion changes at run time.
	lit bool
}

// simple is one simple command (program and arguments) of a command line.
type simple struct {
	words []word
	// derived commands are seen through a wrapper (`sudo rm` → `rm`), a
	// program path (`/bin/rm` → `rm`), `find -exec` or a nested script
	// (`bash -c '…'`, `eval '…'`). Each must be allowed on its own as well
	// as the command that runs it: allowing `find` or `sudo` does not allow
	// what they run, and allowing `rm` does not allow `sudo rm`.
	derived bool
	// alias: a derived command that is the same program under another
	// name (`/bin/rm` seen as `rm`); it counts for deny and ask rules only.
	alias bool
}

// script is what analysing a command line found.
type script struct {
	// cmds are every simple command that may run, nested ones included.
	cmds []simple
	// parsed: the line is valid shell syntax.
	parsed bool
	// opaque: something runs whose name is known only at run time ($CMD,
	// eval "$x", bash -c "$x"), or nesting is too deep to follow.
	opaque bool
	// unvetted: the line does something no allow rule looks at: output
	// redirection to a file, variable assignments, function definitions,
	// declarations, for loops, coprocesses, or code that no simple
	// command shows (hidden.go: arithmetic, subscripts, builtins that
	// take code or variable names).
	unvetted bool
}

// allowable reports whether allow rules may cover the line at all.
func (s script) allowable() bool { return s.parsed && !s.opaque && !s.unvetted }

// maxNesting bounds how deep nested scripts and wrappers are followed.
const maxNesting = 4

// maxCommandLen bounds what is parsed; a longer command is opaque.
const maxCommandLen = 1 << 20

func parseShell(src string) (f *syntax.File, err error) {
	if len(src) > maxCommandLen {
		return nil, errors.New("command too long to check")
	}
	p := parsers.Get().(*syntax.Parser)
	defer func() {
		// The parser is third-party code fed untrusted text; a bug there
		// must make the command unparsable, not crash the session (and
		// the parser that failed is not reused).
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("shell parser failed: %v", r)
			return
		}
		parsers.Put(p)
	}()
	return p.Parse(strings.NewReader(src), "")
}

// parsers are reused: a Parser is not safe for concurrent use, but Parse
// resets it, and a new one costs more than the parse of a short command.
var parsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

// analyze splits a command line into its simple commands.
func analyze(line string) script {
	var s script
	f, err := parseShell(line)
	if err != nil {
		s.opaque = true
		return s
	}
	s.parsed = true
	s.walk(f, 0, false)
	return s
}

// walk collects the simple commands under n. Nested scripts (derived) are
// held to the same checks as the line itself: `bash -c 'ls > f'` writes f.
func (s *script) walk(n syntax.Node, depth int, derived bool) {
	syntax.Walk(n, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			if n.Coprocess || n.Disown {
				s.unvetted = true
			}
			for _, rd := range n.Redirs {
				if writesFile(rd) {
					s.unvetted = true
				}
			}
		case *syntax.CallExpr:
			s.call(n, depth, derived)
		case *syntax.FuncDecl, *syntax.DeclClause, *syntax.CoprocClause, *syntax.TestDecl, *syntax.WordIter:
			// Each changes what later commands mean (a function named
			// git, an exported variable, a loop variable).
			s.unvetted = true
		default:
			if hidesCode(n) {
				s.unvetted = true
			}
		}
		return true
	})
}

func (s *script) call(n *syntax.CallExpr, depth int, derived bool) {
	if len(n.Args) == 0 {
		// NAME=value alone changes the shell's variables.
		s.unvetted = true
		return
	}
	if len(n.Assigns) > 0 {
		// NAME=value cmd: GIT_EXTERNAL_DIFF=x git diff runs x.
		s.unvetted = true
	}
	words := wordsOf(n.Args)
	if !words[0].lit {
		s.opaque = true
	}
	if builtinHidesCode(words) {
		s.unvetted = true
	}
	s.cmds = append(s.cmds, simple{words: words, derived: derived})
	s.derive(words, depth)
}

// nested analyses a script a command runs (bash -c, eval) as derived
// commands.
func (s *script) nested(src word, depth int) {
	if !src.lit || depth >= maxNesting {
		s.opaque = true
		return
	}
	f, err := parseShell(src.text)
	if err != nil {
		s.opaque = true
		return
	}
	s.walk(f, depth+1, true)
}

var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true}

// wrapper describes a program that runs the command in its arguments:
// the short options that take a separate argument, and how many
// positional arguments come before the command.
type wrapper struct {
	argOpts    string
	positional int
}

var wrappers = map[string]wrapper{
	"sudo":    {argOpts: "ugCDhprtUT"},
	"doas":    {argOpts: "uC"},
	"env":     {argOpts: "uC"},
	"exec":    {argOpts: "a"},
	"command": {},
	"builtin": {},
	"nohup":   {},
	"nice":    {argOpts: "n"},
	"time":    {argOpts: "fo"},
	"timeout": {argOpts: "sk", positional: 1},
	"xargs":   {argOpts: "IinPLsdEa"},
	"stdbuf":  {argOpts: "ioe"},
	"ionice":  {argOpts: "cnp"},
	"setsid":  {},
	"chrt":    {positional: 1},
	"taskset": {positional: 1},
}

// derive adds the commands words runs on its behalf.
func (s *script) derive(words []word, depth int) {
	if depth > maxNesting {
		s.opaque = true
		return
	}
	for range maxNesting {
		if len(words) == 0 || !words[0].lit {
			return
		}
		name := words[0].text
		if i := strings.LastIndexByte(name, '/'); i >= 0 && i < len(name)-1 {
			name = name[i+1:]
			words = append([]word{{text: name, lit: true}}, words[1:]...)
			s.cmds = append(s.cmds, simple{words: words, derived: true, alias: true})
		}
		switch {
		case name == "eval":
			s.nested(joinWords(words[1:]), depth)
			return
		case shells[name]:
			if src, ok := shellScript(words[1:]); ok {
				s.nested(src, depth)
			}
			return
		case name == "find":
			s.findExec(words, depth)
			return
		case name == "jobs":
			s.jobsExec(words, depth)
			return
		}
		w, ok := wrappers[name]
		if !ok {
			return
		}
		inner, opaque, assigns := unwrap(name, w, words[1:])
		if opaque {
			s.opaque = true
			return
		}
		if assigns {
			s.unvetted = true // env GIT_EXTERNAL_DIFF=x git diff runs x
		}
		if len(inner) == 0 {
			return
		}
		words = inner
		s.cmds = append(s.cmds, simple{words: words, derived: true})
		if !words[0].lit {
			s.opaque = true
			return
		}
	}
}

// unwrap returns the command a wrapper runs; opaque when it cannot be told;
// assigns when it sets environment variables for it (env X=1, sudo X=1).
func unwrap(name string, w wrapper, args []word) (inner []word, opaque, assigns bool) {
	positional := w.positional
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.lit {
			return nil, true, assigns
		}
		t := a.text
		switch {
		case t == "--":
			return skipPositional(args[i+1:], positional), false, assigns
		case name == "command" && (t == "-v" || t == "-V"):
			return nil, false, assigns // only looks the name up
		case name == "env" && (strings.HasPrefix(t, "-S") || strings.HasPrefix(t, "--split-string")):
			return nil, true, assigns
		case strings.HasPrefix(t, "--"):
			continue
		case strings.HasPrefix(t, "-") && len(t) > 1:
			if len(t) == 2 && strings.IndexByte(w.argOpts, t[1]) >= 0 {
				i++ // the option's argument
			}
			continue
		case (name == "env" || name == "sudo" || name == "doas") && isAssignment(t):
			assigns = true
			continue
		}
		return skipPositional(args[i:], positional), false, assigns
	}
	return nil, false, assigns
}

func skipPositional(args []word, n int) []word {
	if len(args) <= n {
		return nil
	}
	return args[n:]
}

var assignmentRE = lazyregexp.New(`^[A-Za-z_][A-Za-z0-9_]*=`)

func isAssignment(t string) bool { return assignmentRE.MatchString(t) }

// shellScript finds the script of `bash [options] -c SCRIPT`.
func shellScript(args []word) (word, bool) {
	sawC := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.lit {
			if sawC {
				return a, true
			}
			return word{}, false
		}
		t := a.text
		switch {
		case t == "-o" || t == "+o":
			i++
		case strings.HasPrefix(t, "-") && !strings.HasPrefix(t, "--") && len(t) > 1:
			if strings.IndexByte(t[1:], 'c') >= 0 {
				sawC = true
			}
		case strings.HasPrefix(t, "--"):
		default:
			if sawC {
				return a, true
			}
			return word{}, false // a script file: its content is not known
		}
	}
	return word{}, false
}

// findExec adds the commands of find's -exec, -execdir, -ok and -okdir.
func (s *script) findExec(words []word, depth int) {
	for i := 1; i < len(words); i++ {
		t := words[i]
		if !t.lit || (t.text != "-exec" && t.text != "-execdir" && t.text != "-ok" && t.text != "-okdir") {
			continue
		}
		j := i + 1
		for j < len(words) && !endsExec(words[j]) {
			j++
		}
		if inner := words[i+1 : j]; len(inner) > 0 {
			s.cmds = append(s.cmds, simple{words: inner, derived: true})
			if !inner[0].lit {
				s.opaque = true
			}
			s.derive(inner, depth+1)
		}
		i = j
	}
}

// jobsExec adds the command of `jobs -x COMMAND ARGS…`, which bash runs.
func (s *script) jobsExec(words []word, depth int) {
	opts, operands, ok := getopt(words[1:], builtinOpts["jobs"])
	if !ok {
		s.opaque = true
		return
	}
	if !hasOpt(opts, "x") || len(operands) == 0 {
		return
	}
	s.cmds = append(s.cmds, simple{words: operands, derived: true})
	if !operands[0].lit {
		s.opaque = true
	}
	s.derive(operands, depth+1)
}

// endsExec reports whether w ends find's -exec command (";" or "+").
func endsExec(w word) bool { return w.lit && (w.text == ";" || w.text == "+") }

// joinWords is eval's view of its arguments: one script, joined by spaces.
func joinWords(ws []word) word {
	texts := make([]string, len(ws))
	for i, w := range ws {
		if !w.lit {
			return word{}
		}
		texts[i] = w.text
	}
	return word{text: strings.Join(texts, " "), lit: true}
}

// writesFile reports whether a redirection may write to a file: any output
// redirection except to /dev/null or to another descriptor (2>&1).
func writesFile(rd *syntax.Redirect) bool {
	switch rd.Op {
	case syntax.RdrIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc, syntax.DplIn:
		return false
	case syntax.DplOut:
		// >&2 and >&- duplicate or close; >&file writes the file.
		t := wordOf(rd.Word)
		return !t.lit || !isFD(t.text)
	}
	t := wordOf(rd.Word)
	return !t.lit || t.text != "/dev/null"
}

func isFD(s string) bool {
	if s == "-" {
		return true
	}
	if s == "" {
		return false
	}
	for _, r := range strings.TrimSuffix(s, "-") {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func wordsOf(args []*syntax.Word) []word {
	out := make([]word, len(args))
	for i, a := range args {
		out[i] = wordOf(a)
	}
	return out
}

// wordOf is a word's value after quote removal, as bash would pass it to
// the program, when that value is fixed text.
func wordOf(w *syntax.Word) word {
	if w == nil {
		return word{lit: false}
	}
	var b strings.Builder
	lit := true
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			v, ok := unescapeUnquoted(p.Value)
			lit = lit && ok
			b.WriteString(v)
		case *syntax.SglQuoted:
			if p.Dollar {
				lit = false // $'…' decodes escapes
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					lit = false
					continue
				}
				b.WriteString(unescapeDouble(l.Value))
			}
		default:
			lit = false
		}
	}
	if lit {
		return word{text: b.String(), lit: true}
	}
	return word{text: printNode(w)}
}

func printNode(n syntax.Node) string {
	var buf bytes.Buffer
	if err := syntax.NewPrinter().Print(&buf, n); err != nil {
		return "\x00unprintable"
	}
	return buf.String()
}

// unescapeUnquoted removes backslash escapes from unquoted text; ok is
// false when an unescaped glob or brace expansion character makes the
// value depend on the file system or expand to several words.
func unescapeUnquoted(v string) (string, bool) {
	if !strings.ContainsAny(v, `\*?[{`) {
		return v, true
	}
	var b strings.Builder
	ok := true
	// Brace expansion needs {a,b} or {1..3}; a bare {} (find, xargs) is text.
	brace, sep := false, false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch c {
		case '\\':
			if i+1 < len(v) {
				i++
				if v[i] != '\n' {
					b.WriteByte(v[i])
				}
				continue
			}
		case '*', '?', '[':
			ok = false
		case '{':
			brace, sep = true, false
		case ',':
			sep = sep || brace
		case '.':
			sep = sep || (brace && i+1 < len(v) && v[i+1] == '.')
		case '}':
			if brace && sep {
				ok = false
			}
		}
		b.WriteByte(c)
	}
	return b.String(), ok
}

// unescapeDouble removes the escapes bash removes inside double quotes.
func unescapeDouble(v string) string {
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) && strings.IndexByte("$`\"\\\n", v[i+1]) >= 0 {
			i++
			if v[i] != '\n' {
				b.WriteByte(v[i])
			}
			continue
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// commandPattern is a compiled Bash rule pattern.
type commandPattern struct {
	words  []word
	prefix bool // "words:*": the command starts with words
}

func (p commandPattern) match(cmd []word) bool {
	if len(cmd) < len(p.words) || (!p.prefix && len(cmd) != len(p.words)) {
		return false
	}
	for i, w := range p.words {
		if cmd[i] != w {
			return false
		}
	}
	return true
}

// compileCommandPattern reads "prefix:*" or an exact command.
func compileCommandPattern(src string) (commandPattern, error) {
	p := strings.TrimSpace(src)
	prefix := false
	if rest, ok := strings.CutSuffix(p, ":*"); ok {
		prefix = true
		p = strings.TrimSpace(rest)
	}
	switch p {
	case "":
		return commandPattern{}, errors.New(`no command before ":*"; write Bash alone to match every command`)
	case "*":
		return commandPattern{}, errors.New(`write Bash alone to match every command`)
	}
	f, err := parseShell(p)
	if err != nil {
		return commandPattern{}, fmt.Errorf("not valid shell syntax (%w)", err)
	}
	if len(f.Stmts) != 1 {
		return commandPattern{}, errors.New("names more than one command; write one rule per command")
	}
	st := f.Stmts[0]
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || st.Background || st.Negated || st.Coprocess || st.Disown || len(st.Redirs) > 0 || len(call.Assigns) > 0 || len(call.Args) == 0 {
		return commandPattern{}, errors.New("a rule names one plain command (words only), without operators, redirections or assignments")
	}
	var subst bool
	syntax.Walk(call, func(n syntax.Node) bool {
		switch n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			subst = true
		}
		return !subst
	})
	if subst {
		return commandPattern{}, errors.New("a rule cannot hold $(…), backticks or <(…)")
	}
	last := call.Args[len(call.Args)-1]
	if lit, ok := last.Parts[0].(*syntax.Lit); ok && len(last.Parts) == 1 && lit.Value == "*" {
		fix := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(p), "*"))
		return commandPattern{}, fmt.Errorf(`a trailing "*" is not a wildcard here; write Bash(%s:*) for every command starting with %q`, fix, fix)
	}
	return commandPattern{words: wordsOf(call.Args), prefix: prefix}, nil
}

var commandCache sync.Map // pattern → commandPattern or error

func compiledCommand(p string) (commandPattern, error) {
	if v, ok := commandCache.Load(p); ok {
		if err, bad := v.(error); bad {
			return commandPattern{}, err
		}
		return v.(commandPattern), nil
	}
	cp, err := compileCommandPattern(p)
	if err != nil {
		commandCache.Store(p, err)
		return commandPattern{}, err
	}
	commandCache.Store(p, cp)
	return cp, nil
}

// subcommandTools are programs whose second word is a subcommand, so
// "allow always" on `git diff --stat` records `git diff:*`, not `git:*`.
var subcommandTools = map[string]bool{
	"git": true, "go": true, "npm": true, "pnpm": true, "yarn": true, "bun": true, "deno": true,
	"cargo": true, "rustup": true, "docker": true, "podman": true, "kubectl": true, "helm": true,
	"gh": true, "pip": true, "pip3": true, "uv": true, "poetry": true, "conda": true, "brew": true,
	"apt": true, "apt-get": true, "dotnet": true, "mvn": true, "gradle": true, "terraform": true,
	"bundle": true, "rails": true, "composer": true, "swift": true, "nix": true, "systemctl": true,
	"make": true, "just": true, "npx": true,
}

var subcommandRE = lazyregexp.New(`^[a-z][a-z0-9_-]*$`)

// commandRulesFor is RulesFor for Bash: one prefix rule per distinct
// command, each checked to parse back to itself and to match.
func commandRulesFor(line string) []Rule {
	s := analyze(line)
	if !s.allowable() {
		return nil
	}
	var rules []Rule
	for _, c := range s.cmds {
		if c.alias {
			continue
		}
		n := 1
		if len(c.words) > 1 && subcommandTools[c.words[0].text] && c.words[1].lit && subcommandRE.MatchString(c.words[1].text) {
			n = 2
		}
		parts := make([]string, n)
		for i, w := range c.words[:n] {
			q, err := syntax.Quote(w.text, syntax.LangBash)
			if err != nil || !w.lit {
				return nil
			}
			parts[i] = q
		}
		rule := Rule{Tool: "Bash", Pattern: strings.Join(parts, " ") + ":*"}
		got, err := Parse(rule.String())
		if err != nil || got != rule {
			return nil
		}
		if cp, err := compiledCommand(rule.Pattern); err != nil || !cp.match(c.words) {
			return nil
		}
		dup := false
		for _, r := range rules {
			dup = dup || r == rule
		}
		if !dup {
			rules = append(rules, rule)
		}
	}
	return rules
}
