package ignore

import (
	"bytes"
	"strings"
)

// Pattern is one rule of an ignore file, parsed as git parses it.
type Pattern struct {
	// Text is the rule as written (after trimming), for diagnostics.
	Text string
	// Line is its 1-based line number in Source.
	Line int
	// Negative: a "!" rule, which re-includes what it matches.
	Negative bool
	// DirOnly: a rule with a trailing "/", which matches directories only.
	DirOnly bool
	// Anchored: the rule has a "/" before its end, so it matches paths
	// relative to its file's directory; otherwise it matches the last
	// component of a path at any depth below that directory.
	Anchored bool

	kind patKind
	// lit is the literal a patLiteral rule equals, the suffix of a
	// patSuffix rule, or the literal prefix of an anchored patWild rule;
	// lower-cased when folding.
	lit string
	// w matches what follows lit (the whole rule for basename rules).
	w wild
}

type patKind uint8

const (
	// patLiteral: no wildcard; the name (or the path) equals lit.
	patLiteral patKind = iota
	// patSuffix: "*" then a literal; the basename ends with lit.
	patSuffix
	// patWild: anything else.
	patWild
)

// isGlobSpecial reports the bytes that end a rule's literal prefix.
func isGlobSpecial(c byte) bool { return c == '*' || c == '?' || c == '[' || c == '\\' }

// simpleLength is the length of s's prefix free of wildcard bytes.
func simpleLength(s string) int {
	for i := range len(s) {
		if isGlobSpecial(s[i]) {
			return i
		}
	}
	return len(s)
}

// trimTrailingSpaces drops trailing spaces that are not escaped by "\".
func trimTrailingSpaces(s string) string {
	lastSpace := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			if lastSpace < 0 {
				lastSpace = i
			}
		case '\\':
			i++
			if i >= len(s) {
				return s
			}
			lastSpace = -1
		default:
			lastSpace = -1
		}
	}
	if lastSpace >= 0 {
		return s[:lastSpace]
	}
	return s
}

// ParsePattern parses one rule. ok is false for lines that hold no rule
// (blank lines and comments). fold is core.ignorecase.
func ParsePattern(line string, fold bool) (p Pattern, ok bool) {
	if line == "" || line[0] == '#' {
		return Pattern{}, false
	}
	line = strings.TrimSuffix(line, "\r")
	// git keeps rules as C strings: a NUL byte ends one.
	if i := strings.IndexByte(line, 0); i >= 0 {
		line = line[:i]
	}
	line = trimTrailingSpaces(line)
	return compilePattern(line, fold), true
}

func compilePattern(s string, fold bool) Pattern {
	p := Pattern{Text: s}
	if strings.HasPrefix(s, "!") {
		p.Negative = true
		s = s[1:]
	}
	n := len(s)
	if n > 0 && s[n-1] == '/' {
		n--
		p.DirOnly = true
	}
	body := s[:n]
	p.Anchored = strings.IndexByte(body, '/') >= 0
	prefix := min(simpleLength(s), n)
	foldStr := func(x string) string {
		if fold {
			return asciiLower(x)
		}
		return x
	}
	if !p.Anchored {
		switch {
		case prefix == n:
			p.kind, p.lit = patLiteral, foldStr(body)
		case s[0] == '*' && simpleLength(s[1:]) == len(s)-1:
			p.kind, p.lit = patSuffix, foldStr(body[1:])
		default:
			p.kind = patWild
			p.w = compileWild(body, false, fold)
		}
		return p
	}
	// An anchored rule is matched as git's match_pathname does: a leading
	// "/" is dropped, the literal prefix is compared as a string and only
	// the rest is a wildcard pattern, whose start counts as the start of
	// a pattern (for the rule that a leading "**" spans directories).
	if body[0] == '/' {
		body = body[1:]
		prefix--
	}
	if prefix == len(body) {
		p.kind, p.lit = patLiteral, foldStr(body)
		return p
	}
	p.kind, p.lit = patWild, foldStr(body[:prefix])
	p.w = compileWild(body[prefix:], true, fold)
	return p
}

// matchBase matches a basename rule against name; nameF is name
// lower-cased when folding (else name).
func (p *Pattern) matchBase(name, nameF string) bool {
	switch p.kind {
	case patLiteral:
		return nameF == p.lit
	case patSuffix:
		return strings.HasSuffix(nameF, p.lit)
	}
	return p.w.match(name)
}

// matchPath matches an anchored rule against rel, the path relative to
// the rule's directory; relF as nameF above.
func (p *Pattern) matchPath(rel, relF string) bool {
	if p.kind == patLiteral {
		return relF == p.lit
	}
	if len(p.lit) > len(rel) || relF[:len(p.lit)] != p.lit {
		return false
	}
	return p.w.match(rel[len(p.lit):])
}

func asciiLower(s string) string {
	for i := range len(s) {
		if isUpper(s[i]) {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				b[j] = lower(b[j])
			}
			return string(b)
		}
	}
	return s
}

// list is the parsed content of one ignore file, with lookup tables that
// find the last matching rule without trying every rule.
type list struct {
	// base is the directory of the file relative to the tree's root, with a
	// trailing "/" ("" at the root and for exclude files).
	base string
	// source names the file, for diagnostics.
	source string
	pats   []Pattern
	// baseLit and pathLit index the literal basename and anchored rules by
	// their literal; others lists the remaining rules' indexes, ascending.
	baseLit map[string]litIndex
	pathLit map[string]litIndex
	// byExt indexes "*<lit>" rules whose lit has a ".", by what follows
	// its last "." (the commonest rules, "*.o", "*.mod.c"), each list
	// descending.
	byExt  map[string][]int
	others []int
	// anchored: some rule needs the path, not only the basename.
	anchored bool
}

// litIndex is the highest index of a rule with one literal: among the
// rules for any entry, and among the directory-only ones; -1 for none.
type litIndex struct{ any, dir int }

// maxRules bounds the rules kept from one file.
const maxRules = 1 << 20

// parseList parses an ignore file's content.
func parseList(data []byte, base, source string, fold bool) *list {
	l := &list{base: base, source: source}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	lineNo := 0
	for len(data) > 0 && len(l.pats) < maxRules {
		lineNo++
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		p, ok := ParsePattern(string(line), fold)
		if !ok {
			continue
		}
		p.Line = lineNo
		l.add(p)
	}
	return l
}

func (l *list) add(p Pattern) {
	idx := len(l.pats)
	l.pats = append(l.pats, p)
	var table *map[string]litIndex
	switch {
	case p.kind == patLiteral && p.Anchored:
		table = &l.pathLit
		l.anchored = true
	case p.kind == patLiteral:
		table = &l.baseLit
	case p.kind == patSuffix && strings.IndexByte(p.lit, '.') >= 0:
		if l.byExt == nil {
			l.byExt = make(map[string][]int)
		}
		ext := p.lit[strings.LastIndexByte(p.lit, '.')+1:]
		l.byExt[ext] = append([]int{idx}, l.byExt[ext]...)
		return
	default:
		if p.Anchored {
			l.anchored = true
		}
		l.others = append(l.others, idx)
		return
	}
	if *table == nil {
		*table = make(map[string]litIndex)
	}
	e, ok := (*table)[p.lit]
	if !ok {
		e = litIndex{any: -1, dir: -1}
	}
	if p.DirOnly {
		e.dir = idx
	} else {
		e.any = idx
	}
	(*table)[p.lit] = e
}

// match returns the index of the last rule of l that matches, or -1.
// rel is the path relative to l.base (needed only when l.anchored), name
// its last component, and the F variants the same lower-cased when
// folding.
func (l *list) match(rel, relF, name, nameF string, isDir bool) int {
	best := -1
	pick := func(e litIndex) {
		best = max(best, e.any)
		if isDir {
			best = max(best, e.dir)
		}
	}
	if l.baseLit != nil {
		if e, ok := l.baseLit[nameF]; ok {
			pick(e)
		}
	}
	if l.pathLit != nil {
		if e, ok := l.pathLit[relF]; ok {
			pick(e)
		}
	}
	if l.byExt != nil {
		if dot := strings.LastIndexByte(nameF, '.'); dot >= 0 {
			for _, i := range l.byExt[nameF[dot+1:]] {
				if i <= best {
					break
				}
				p := &l.pats[i]
				if (!p.DirOnly || isDir) && strings.HasSuffix(nameF, p.lit) {
					best = i
					break
				}
			}
		}
	}
	for k := len(l.others) - 1; k >= 0 && l.others[k] > best; k-- {
		p := &l.pats[l.others[k]]
		if p.DirOnly && !isDir {
			continue
		}
		var hit bool
		if p.Anchored {
			hit = p.matchPath(rel, relF)
		} else {
			hit = p.matchBase(name, nameF)
		}
		if hit {
			return l.others[k]
		}
	}
	return best
}
