package permission

import (
	"errors"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"
)

// Call is one tool call as the rules see it.
type Call struct {
	// Tool is the tool's name: "Read", "Bash", …
	Tool string
	// Path is what file tools act on, as given; the caller makes it
	// workspace-relative when it is inside the workspace and leaves it
	// absolute when outside. "" (Glob and Grep without a path) is the
	// workspace itself. Rules match it as given and with its symbolic
	// links resolved (see Rules.Workspace), so a caller keeps any ".."
	// as given: after a link it leads elsewhere than the text says.
	Path string
	// Command is Bash's command line.
	Command string
	// Domain is the host a WebFetch call fetches, lower case ("" when
	// its URL has none).
	Domain string
	// Writes are the files a Bash command declares it creates or
	// overwrites (artifact_paths), in the forms Path takes. Write and
	// Edit rules apply to each: a deny or ask rule matching one decides
	// the call as it would a Write of that file.
	Writes []string
	// Dir is the absolute directory a Bash command runs in (the workspace
	// root for every adapter): review mode reads the git repository there
	// to check that its configuration cannot make git run a program. ""
	// refuses git in review mode.
	Dir string
	// ReadOnly is true for tools that never change anything
	// (tools.Tool.ReadOnly).
	ReadOnly bool
}

// Rules are a session's permission rules. Decide and Add are not safe to
// call concurrently with Add: the caller serialises changes, as for a map.
type Rules struct {
	Allow, Ask, Deny []Rule
	// Workspace, when set, is the workspace's absolute path: absolute call
	// paths inside it then also match relative patterns, and workspace
	// paths absolute patterns; and relative paths are resolved against it
	// to match rules with their symbolic links resolved too. Empty,
	// relative paths are compared only as given.
	Workspace string
}

// Add records rule as kind (Allow, Ask or Deny); "allow always" adds
// RuleFor's rule as Allow. The zero Rule, a kind that is none of the three
// and a rule already present are ignored.
func (r *Rules) Add(kind Decision, rule Rule) {
	if rule.IsZero() {
		return
	}
	var list *[]Rule
	switch kind {
	case Allow:
		list = &r.Allow
	case Ask:
		list = &r.Ask
	case Deny:
		list = &r.Deny
	default:
		return
	}
	for _, have := range *list {
		if have == rule {
			return
		}
	}
	*list = append(*list, rule)
}

// Decide decides c: Deny if a deny rule matches, else Ask if an ask rule
// matches, else Allow if allow rules cover it, else Allow for read-only
// tools and Ask for the others. A nil *Rules has no rules.
//
// A file tool's path is matched as given and with its symbolic links
// resolved (and so are the fixed directories a pattern starts with): a
// deny or ask rule matching either form applies, and allow rules must
// cover both. A path whose links cannot be resolved (a loop, a directory
// that cannot be read) is never allowed by a rule.
func (r *Rules) Decide(c Call) Decision {
	var rs Rules
	if r != nil {
		rs = *r
	}
	if IsMCPTool(c.Tool) {
		return rs.decideMCP(c)
	}
	if slices.Contains(domainTools, c.Tool) {
		return rs.decideDomain(c)
	}
	m := rs.matcher()
	if c.Tool == "Bash" {
		d := rs.decideCommand(c)
		for _, w := range c.Writes {
			if d == Deny {
				break
			}
			switch m.decidePath(Call{Tool: "Write", Path: w}) {
			case Deny:
				d = Deny
			case Ask:
				d = Ask
			}
		}
		return d
	}
	if d := m.decidePath(c); d != 0 {
		return d
	}
	if c.ReadOnly {
		return Allow
	}
	return Ask
}

// matcher matches paths against a session's rules.
type matcher struct {
	rules Rules
	// ws is the workspace as given (absolute and clean, or ""), wsReal
	// with its links resolved ("" when that fails).
	ws, wsReal string
	// patterns memoises realPattern for one decision.
	patterns map[string]realPat
}

type realPat struct {
	pat string
	abs bool
}

func (r Rules) matcher() matcher {
	m := matcher{rules: r, patterns: map[string]realPat{}}
	if path.IsAbs(r.Workspace) {
		m.ws = path.Clean(r.Workspace)
		if real, err := realPath(m.ws); err == nil {
			m.wsReal = real
		}
	}
	return m
}

// decidePath is what the rules say of a file tool's call: Deny, Ask,
// Allow, or 0 when no rule speaks.
func (m matcher) decidePath(c Call) Decision {
	forms, sure := m.forms(c.Path)
	anyForm := func(list []Rule) bool {
		for _, f := range forms {
			if m.anyPathRule(list, c.Tool, f, true) {
				return true
			}
		}
		return false
	}
	switch {
	case anyForm(m.rules.Deny):
		return Deny
	case anyForm(m.rules.Ask):
		return Ask
	}
	if !sure {
		return 0
	}
	for _, f := range forms {
		if !m.anyPathRule(m.rules.Allow, c.Tool, f, false) {
			return 0
		}
	}
	return Allow
}

// Hides returns what Glob and Grep (tool) must leave out of a directory
// they search: the files, and directories, whose reading a deny or ask
// rule covers, as given or with links resolved. A search cannot ask per
// file, so an ask rule hides too. Nil when no such rule exists. The
// function takes absolute paths (a link's own path for a link) and
// resolves each pattern's directories once for the whole search.
func (r *Rules) Hides(tool string) func(path string) bool {
	if r == nil {
		return nil
	}
	found := false
	for _, list := range [][]Rule{r.Deny, r.Ask} {
		for _, rule := range list {
			found = found || covers(rule.Tool, tool)
		}
	}
	if !found {
		return nil
	}
	m := r.matcher()
	var mu sync.Mutex // m memoises patterns; a search may call from several goroutines
	return func(p string) bool {
		mu.Lock()
		defer mu.Unlock()
		forms, _ := m.forms(p)
		for _, f := range forms {
			if m.anyPathRule(m.rules.Deny, tool, f, true) || m.anyPathRule(m.rules.Ask, tool, f, true) {
				return true
			}
		}
		return false
	}
}

// callPath is a call's path in the forms rules compare: rel is
// workspace-relative ("" when the path is not inside the workspace, or
// not known to be), abs absolute ("" when not known).
type callPath struct{ rel, abs string }

// forms are p as given and, when it differs, with its links resolved.
// sure is false when the links could not be resolved.
func (m matcher) forms(p string) (forms []callPath, sure bool) {
	given := m.normPath(p, m.ws)
	if given.rel == "" && path.IsAbs(p) && m.wsReal != "" {
		// The workspace named through a link, the path through its target.
		given.rel, _ = relTo(given.abs, m.wsReal)
	}
	start := p
	if start == "" {
		start = "."
	}
	if !path.IsAbs(start) {
		if m.ws == "" {
			return []callPath{given}, true // nothing to resolve against
		}
		start = m.ws + "/" + start
	}
	real, err := realPath(start)
	if err != nil || m.ws != "" && m.wsReal == "" {
		return []callPath{given}, false
	}
	resolved := callPath{abs: real}
	for _, ws := range []string{m.wsReal, m.ws} {
		if rel, ok := relTo(real, ws); ws != "" && ok {
			resolved.rel = rel
			break
		}
	}
	if resolved == given {
		return []callPath{given}, true
	}
	return []callPath{given, resolved}, true
}

func (m matcher) normPath(p, ws string) callPath {
	if p == "" {
		p = "."
	}
	if path.IsAbs(p) {
		abs := path.Clean(p)
		out := callPath{abs: abs}
		if ws != "" {
			if rel, ok := relTo(abs, ws); ok {
				out.rel = rel
			}
		}
		return out
	}
	rel := path.Clean(p)
	out := callPath{}
	if rel != ".." && !strings.HasPrefix(rel, "../") {
		out.rel = rel
	}
	if ws != "" {
		out.abs = path.Join(ws, rel)
	}
	return out
}

// anyPathRule reports whether a rule in list matches a call of tool on p.
// failClosed makes a rule that does not compile match (deny and ask lists):
// a broken deny rule must not quietly stop denying.
func (m matcher) anyPathRule(list []Rule, tool string, p callPath, failClosed bool) bool {
	for _, rule := range list {
		if !covers(rule.Tool, tool) {
			continue
		}
		if rule.Pattern == "" {
			return true
		}
		if !isPathTool(rule.Tool) {
			continue
		}
		pat, err := compiledPath(rule.Pattern)
		if err != nil {
			if failClosed {
				return true
			}
			continue
		}
		if matchPath(pat, path.IsAbs(pat), p) {
			return true
		}
		rp, ok := m.patterns[pat]
		if !ok {
			rp.pat, rp.abs = m.realPattern(pat)
			m.patterns[pat] = rp
		}
		if rp.pat != "" && matchPath(rp.pat, rp.abs, p) {
			return true
		}
	}
	return false
}

func matchPath(pat string, abs bool, p callPath) bool {
	target := p.rel
	if abs {
		target = p.abs
	}
	if target == "" {
		return false
	}
	ok, _ := doublestar.Match(pat, target)
	return ok
}

var pathCache sync.Map // pattern → cleaned pattern or error

func compiledPath(p string) (string, error) {
	if v, ok := pathCache.Load(p); ok {
		if err, bad := v.(error); bad {
			return "", err
		}
		return v.(string), nil
	}
	clean, err := cleanPathPattern(p)
	if err != nil {
		pathCache.Store(p, err)
		return "", err
	}
	pathCache.Store(p, clean)
	return clean, nil
}

// cleanPathPattern validates a path pattern and cleans it: surrounding
// spaces trimmed, path.Clean applied, and a trailing "/" read as the
// directory's contents ("src/" is "src/**"). The result cleans to itself.
func cleanPathPattern(p string) (string, error) {
	p = strings.TrimSpace(p)
	dir := strings.HasSuffix(p, "/")
	clean := path.Clean(p)
	for range 8 { // "./ x" cleans to " x": trim and clean until stable
		next := path.Clean(strings.TrimSpace(clean))
		if next == clean {
			break
		}
		clean = next
	}
	switch {
	case p == "" || clean == "" || clean == ".":
		if p != "" && dir {
			clean = "**"
			break
		}
		if p == "" {
			return "", errors.New("empty pattern")
		}
	case strings.IndexByte(p, 0) >= 0:
		return "", errors.New("the pattern contains a NUL byte")
	case strings.HasPrefix(p, "~") || strings.HasPrefix(clean, "~"):
		return "", errors.New(`"~" is not expanded; write the absolute path`)
	}
	for _, seg := range strings.Split(p, "/") {
		if strings.TrimSpace(seg) == ".." {
			return "", errors.New(`".." is not allowed; write an absolute path for files outside the workspace`)
		}
	}
	if dir && clean != "**" && clean != "/" {
		clean = path.Join(clean, "**")
	}
	if !doublestar.ValidatePattern(clean) {
		return "", errors.New("not a valid glob (doublestar syntax: *, **, ?, [abc], {a,b}, \\ escapes)")
	}
	return clean, nil
}

// decideCommand is Decide for Bash.
func (r Rules) decideCommand(c Call) Decision {
	s := analyze(c.Command)
	if matchCommandRules(r.Deny, s) {
		return Deny
	}
	if matchCommandRules(r.Ask, s) {
		return Ask
	}
	// A command that might run what a deny or ask rule names, where ferry
	// cannot tell, is for the user to judge.
	if s.opaque && (hasCommandPatterns(r.Deny) || hasCommandPatterns(r.Ask)) {
		return Ask
	}
	for _, rule := range r.Allow {
		if rule.Tool == "Bash" && rule.Pattern == "" {
			return Allow
		}
	}
	if s.allowable() && len(s.cmds) > 0 {
		all := true
		for _, cmd := range s.cmds {
			if cmd.alias {
				continue // the same program as the command it came from
			}
			if !anyCommandRule(r.Allow, cmd) {
				all = false
				break
			}
		}
		if all {
			return Allow
		}
	}
	if c.ReadOnly {
		return Allow
	}
	return Ask
}

// matchCommandRules reports whether a rule of list (deny or ask) matches
// any simple command of s, derived ones included. A rule that does not
// compile matches: a broken deny rule must not quietly stop denying.
func matchCommandRules(list []Rule, s script) bool {
	for _, rule := range list {
		if rule.Tool != "Bash" {
			continue
		}
		if rule.Pattern == "" {
			return true
		}
		pat, err := compiledCommand(rule.Pattern)
		if err != nil {
			return true
		}
		for _, cmd := range s.cmds {
			if pat.match(cmd.words) {
				return true
			}
		}
	}
	return false
}

func anyCommandRule(list []Rule, cmd simple) bool {
	for _, rule := range list {
		if rule.Tool != "Bash" || rule.Pattern == "" {
			continue
		}
		if pat, err := compiledCommand(rule.Pattern); err == nil && pat.match(cmd.words) {
			return true
		}
	}
	return false
}

func hasCommandPatterns(list []Rule) bool {
	for _, rule := range list {
		if rule.Tool == "Bash" && rule.Pattern != "" {
			return true
		}
	}
	return false
}

// RuleFor is the rule "allow always" records for c: for Bash the command's
// first word (and its subcommand) as a prefix, "Bash(git diff:*)"; for file
// tools the exact path. It is the zero Rule when no single rule would allow
// c again: a Bash command of several commands (see RulesFor), or one no
// rule can cover (output redirection to a file, assignments, a command
// computed at run time), or a path that leaves the workspace without being
// absolute.
func RuleFor(c Call) Rule {
	rules := RulesFor(c)
	if len(rules) != 1 {
		return Rule{}
	}
	return rules[0]
}

// RulesFor is the set of rules that, added as Allow, let the same call run
// without asking next time: one prefix rule per distinct command of a Bash
// command line ("cd sub && make" → "Bash(cd:*)", "Bash(make:*)"), or the
// exact path for file tools. Nil when no rules can.
func RulesFor(c Call) []Rule {
	if c.Tool == "Bash" {
		return commandRulesFor(c.Command)
	}
	if IsMCPTool(c.Tool) {
		return []Rule{{Tool: c.Tool}}
	}
	if slices.Contains(domainTools, c.Tool) {
		return domainRulesFor(c)
	}
	if !isPathTool(c.Tool) {
		return nil
	}
	p := c.Path
	if p == "" {
		p = "."
	}
	p = path.Clean(p)
	if p == ".." || strings.HasPrefix(p, "../") {
		return nil
	}
	rule := Rule{Tool: c.Tool, Pattern: escapeGlob(p)}
	if got, err := Parse(rule.String()); err != nil || got != rule {
		return nil
	}
	return []Rule{rule}
}

// RulesFor is the package's RulesFor for a call under r: for a file tool
// whose path leads through a symbolic link it adds the exact rule for the
// resolved path, since allow rules must cover both forms, so that "allow
// always" keeps its promise and shows where the link leads. Nil when the
// path's links cannot be resolved: no rule allows such a path.
func (r *Rules) RulesFor(c Call) []Rule {
	rules := RulesFor(c)
	if !isPathTool(c.Tool) || len(rules) == 0 {
		return rules
	}
	var rs Rules
	if r != nil {
		rs = *r
	}
	forms, sure := rs.matcher().forms(c.Path)
	if !sure {
		return nil
	}
	for _, f := range forms[1:] {
		p := f.rel
		if p == "" {
			p = f.abs
		}
		extra := RulesFor(Call{Tool: c.Tool, Path: p})
		if len(extra) != 1 {
			return nil
		}
		if !slices.Contains(rules, extra[0]) {
			rules = append(rules, extra[0])
		}
	}
	return rules
}

// escapeGlob makes a path match itself only, as a doublestar pattern and
// inside a rule's parentheses.
func escapeGlob(p string) string {
	var b strings.Builder
	for _, r := range p {
		if strings.ContainsRune(`*?[]{}\()!`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
