package ignore

import (
	"math/bits"
	"strings"
)

// This file is the wildcard engine: git's pattern language (the one
// gitignore(5) documents and git's wildmatch implements) compiled to a
// sequence of tokens and run as a bit-parallel NFA, so that a match costs
// O(len(pattern) × len(name)) with no backtracking whatever the pattern.
//
// The language, for a pattern matched against a "/"-separated path:
//
//	?        one byte, not "/"
//	*        any run of bytes without "/"
//	**       where it is a whole component (at the start or after "/",
//	         and at the end or before "/" or "\/"): any run of bytes,
//	         "/" included; "**/" also matches nothing at all; elsewhere
//	         "**" is a "*"
//	[...]    a byte class: ranges a-z, negation [!...] or [^...], POSIX
//	         classes [:alpha:] and friends, "\" escapes, "]" first is
//	         literal; a class never matches "/"
//	\x       the byte x literally
//
// A malformed class (unterminated, or an unknown [:name:]) or a trailing
// lone backslash makes the pattern match nothing, as in git. With case
// folding, ASCII letters of the name are lower-cased before comparing and
// the quirks of git's folding are kept (an escaped letter is compared as
// written; a range also accepts the upper-case form of a lower-case byte).
//
// Basename patterns (those without "/") are matched against a single
// component, where "/" cannot occur, so one engine serves both modes.

// byteSet is a set of bytes.
type byteSet [4]uint64

func (s *byteSet) add(c byte)      { s[c>>6] |= 1 << (c & 63) }
func (s *byteSet) has(c byte) bool { return s[c>>6]&(1<<(c&63)) != 0 }
func (s *byteSet) del(c byte)      { s[c>>6] &^= 1 << (c & 63) }
func (s *byteSet) addIf(c byte, ok bool) {
	if ok {
		s.add(c)
	}
}

// allBytes is every byte; noSlash every byte but "/".
var allBytes, noSlash = func() (byteSet, byteSet) {
	var all byteSet
	for i := range 256 {
		all.add(byte(i))
	}
	ns := all
	ns.del('/')
	return all, ns
}()

type tokKind uint8

const (
	// tokByte consumes one byte in set.
	tokByte tokKind = iota
	// tokStar consumes any run (possibly empty) of bytes in set.
	tokStar
	// tokFork consumes nothing: it leads to the next token and to the one
	// three further on. It stands before the star and "/" of "**/", which
	// may match nothing at all, slash included.
	tokFork
)

type token struct {
	kind tokKind
	set  byteSet
}

// wild is a compiled wildcard pattern.
type wild struct {
	toks []token
	// never: the pattern is malformed and matches nothing.
	never bool

	// Cheap necessary conditions, checked before the automaton runs
	// (most names fail one): the least length of a match, the bytes a
	// match must start and end with (nil: any), and a literal every
	// match contains.
	minLen      int
	first, last *byteSet
	lit         string
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}

func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }

// compileWild compiles p. pathname selects git's WM_PATHNAME mode, where
// "*" and "?" do not match "/"; fold is core.ignorecase.
func compileWild(p string, pathname, fold bool) wild {
	var w wild
	// text returns the byte of the name that a comparison sees for c.
	text := func(c byte) byte {
		if fold {
			return lower(c)
		}
		return c
	}
	// literal builds the set of name bytes equal to want once folded.
	literal := func(want byte) byteSet {
		var s byteSet
		for c := range 256 {
			s.addIf(byte(c), text(byte(c)) == want)
		}
		return s
	}
	for i := 0; i < len(p); {
		c := p[i]
		switch c {
		case '\\':
			if i+1 >= len(p) {
				w.never = true
				return w
			}
			// The escaped byte is compared as written, even when folding.
			w.toks = append(w.toks, token{kind: tokByte, set: literal(p[i+1])})
			i += 2
		case '?':
			set := allBytes
			if pathname {
				set = noSlash
			}
			w.toks = append(w.toks, token{kind: tokByte, set: set})
			i++
		case '*':
			j := i + 1
			matchSlash := !pathname
			skip := false
			if j < len(p) && p[j] == '*' {
				atStart := i == 0 || p[i-1] == '/'
				for j < len(p) && p[j] == '*' {
					j++
				}
				if pathname && atStart && (j == len(p) || p[j] == '/' ||
					(p[j] == '\\' && j+1 < len(p) && p[j+1] == '/')) {
					matchSlash = true
					skip = j < len(p) && p[j] == '/'
				}
			}
			set := allBytes
			if !matchSlash {
				set = noSlash
			}
			if skip {
				w.toks = append(w.toks, token{kind: tokFork})
			}
			w.toks = append(w.toks, token{kind: tokStar, set: set})
			i = j
		case '[':
			set, n, ok := compileClass(p[i:], fold)
			if !ok {
				w.never = true
				return w
			}
			if pathname {
				set.del('/')
			}
			w.toks = append(w.toks, token{kind: tokByte, set: set})
			i += n
		default:
			if fold {
				c = lower(c)
			}
			w.toks = append(w.toks, token{kind: tokByte, set: literal(c)})
			i++
		}
	}
	w.prefilter()
	return w
}

// prefilter derives the necessary conditions from the tokens. The "/"
// after a fork's star may be skipped, so it is not required.
func (w *wild) prefilter() {
	skippable := make([]bool, len(w.toks))
	for k, t := range w.toks {
		if t.kind == tokFork && k+2 < len(w.toks) {
			skippable[k+2] = true
		}
	}
	var run, best []byte
	for k, t := range w.toks {
		if t.kind != tokByte || skippable[k] {
			if len(run) > len(best) {
				best = run
			}
			run = nil
			continue
		}
		w.minLen++
		if c, ok := t.set.single(); ok {
			run = append(run, c)
		} else {
			if len(run) > len(best) {
				best = run
			}
			run = nil
		}
	}
	if len(run) > len(best) {
		best = run
	}
	w.lit = string(best)
	if n := len(w.toks); n > 0 {
		if t := &w.toks[0]; t.kind == tokByte {
			w.first = &t.set
		}
		if t := &w.toks[n-1]; t.kind == tokByte && !skippable[n-1] {
			w.last = &t.set
		}
	}
}

// single returns the one byte in s, if s has exactly one.
func (s *byteSet) single() (byte, bool) {
	n := bits.OnesCount64(s[0]) + bits.OnesCount64(s[1]) + bits.OnesCount64(s[2]) + bits.OnesCount64(s[3])
	if n != 1 {
		return 0, false
	}
	for c := range 256 {
		if s.has(byte(c)) {
			return byte(c), true
		}
	}
	return 0, false
}

// compileClass compiles the class at the start of p ("[..."), returning
// the set of name bytes it accepts, its length in p, and ok false when it
// is malformed.
func compileClass(p string, fold bool) (byteSet, int, bool) {
	type item struct {
		lo, hi  byte // the byte (lo) or the range lo-hi
		isRange bool
		class   string
	}
	var items []item
	j := 1
	if j >= len(p) {
		return byteSet{}, 0, false
	}
	negated := p[j] == '!' || p[j] == '^'
	if negated {
		j++
	}
	var prev byte // the previous item's byte, 0 after a range or a class
	first := true
	for {
		if j >= len(p) {
			return byteSet{}, 0, false
		}
		c := p[j]
		if !first && c == ']' {
			j++
			break
		}
		first = false
		switch {
		case c == '\\':
			j++
			if j >= len(p) {
				return byteSet{}, 0, false
			}
			items = append(items, item{lo: p[j], hi: p[j]})
			prev = p[j]
		case c == '-' && prev != 0 && j+1 < len(p) && p[j+1] != ']':
			j++
			hi := p[j]
			if hi == '\\' {
				j++
				if j >= len(p) {
					return byteSet{}, 0, false
				}
				hi = p[j]
			}
			// The range's start is the previous item, already added as a
			// byte of its own; it is part of the range as well.
			items = append(items, item{lo: prev, hi: hi, isRange: true})
			prev = 0
		case c == '[' && j+1 < len(p) && p[j+1] == ':':
			s := j + 2
			k := s
			for k < len(p) && p[k] != ']' {
				k++
			}
			if k >= len(p) {
				return byteSet{}, 0, false
			}
			if k-s-1 < 0 || p[k-1] != ':' {
				// No ":]": the "[" is an ordinary byte and parsing goes
				// on right after it.
				items = append(items, item{lo: '[', hi: '['})
				prev = '['
				break
			}
			name := p[s : k-1]
			if !knownClass(name) {
				return byteSet{}, 0, false
			}
			items = append(items, item{class: name})
			prev = 0
			j = k
		default:
			items = append(items, item{lo: c, hi: c})
			prev = c
		}
		j++
	}
	var set byteSet
	for b := range 256 {
		raw := byte(b)
		t := raw
		if fold {
			t = lower(raw)
		}
		matched := false
		for _, it := range items {
			if it.class != "" {
				if inClass(it.class, t, fold) {
					matched = true
				}
				continue
			}
			if !it.isRange {
				if t == it.lo {
					matched = true
				}
				continue
			}
			if it.lo <= t && t <= it.hi {
				matched = true
			} else if fold && isLower(t) {
				u := t - ('a' - 'A')
				if it.lo <= u && u <= it.hi {
					matched = true
				}
			}
		}
		set.addIf(raw, matched != negated)
	}
	return set, j, true
}

func knownClass(name string) bool {
	switch name {
	case "alnum", "alpha", "blank", "cntrl", "digit", "graph",
		"lower", "print", "punct", "space", "upper", "xdigit":
		return true
	}
	return false
}

// inClass is the POSIX class test git applies: ASCII only, with git's own
// definitions (isspace is " \t\n\r").
func inClass(name string, c byte, fold bool) bool {
	isDigit := '0' <= c && c <= '9'
	isAlpha := isLower(c) || isUpper(c)
	switch name {
	case "alnum":
		return isAlpha || isDigit
	case "alpha":
		return isAlpha
	case "blank":
		return c == ' ' || c == '\t'
	case "cntrl":
		return c < 0x20 || c == 0x7f
	case "digit":
		return isDigit
	case "graph":
		return 0x21 <= c && c <= 0x7e
	case "lower":
		return isLower(c)
	case "print":
		return 0x20 <= c && c <= 0x7e
	case "punct":
		return 0x21 <= c && c <= 0x7e && !isAlpha && !isDigit
	case "space":
		return c == ' ' || c == '\t' || c == '\n' || c == '\r'
	case "upper":
		return isUpper(c) || (fold && isLower(c))
	case "xdigit":
		return isDigit || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
	}
	return false
}

// match reports whether the whole of s matches.
func (w *wild) match(s string) bool {
	if w.never || len(s) < w.minLen ||
		(w.first != nil && (len(s) == 0 || !w.first.has(s[0]))) ||
		(w.last != nil && (len(s) == 0 || !w.last.has(s[len(s)-1]))) ||
		(w.lit != "" && !strings.Contains(s, w.lit)) {
		return false
	}
	n := len(w.toks)
	if n < 64 {
		return w.match64(s)
	}
	return w.matchBig(s)
}

// match64 runs the NFA with one bit per token position; bit n is accept.
func (w *wild) match64(s string) bool {
	toks := w.toks
	n := len(toks)
	state := w.closure64(1)
	for i := 0; i < len(s) && state != 0; i++ {
		c := s[i]
		var next uint64
		for st := state; st != 0; st &= st - 1 {
			k := bits.TrailingZeros64(st)
			if k >= n {
				continue
			}
			t := &toks[k]
			if !t.set.has(c) {
				continue
			}
			if t.kind == tokStar {
				next |= 1 << k
			} else {
				next |= 1 << (k + 1)
			}
		}
		state = w.closure64(next)
	}
	return state&(1<<n) != 0
}

// closure64 adds the positions reachable without consuming a byte: past a
// star (which may match nothing), and past a fork.
func (w *wild) closure64(state uint64) uint64 {
	for k := range w.toks {
		if state&(1<<k) == 0 {
			continue
		}
		switch w.toks[k].kind {
		case tokStar:
			state |= 1 << (k + 1)
		case tokFork:
			state |= 1<<(k+1) | 1<<(k+3)
		}
	}
	return state
}

// matchBig is match64 for patterns of 64 tokens or more.
func (w *wild) matchBig(s string) bool {
	toks := w.toks
	n := len(toks)
	state := make([]bool, n+1)
	next := make([]bool, n+1)
	state[0] = true
	closure := func(st []bool) bool {
		any := false
		for k := range n + 1 {
			if !st[k] {
				continue
			}
			any = true
			if k < n {
				switch toks[k].kind {
				case tokStar:
					st[k+1] = true
				case tokFork:
					st[k+1], st[k+3] = true, true
				}
			}
		}
		return any
	}
	if !closure(state) {
		return false
	}
	for i := range len(s) {
		c := s[i]
		clear(next)
		for k := range n {
			if !state[k] || !toks[k].set.has(c) {
				continue
			}
			if toks[k].kind == tokStar {
				next[k] = true
			} else {
				next[k+1] = true
			}
		}
		state, next = next, state
		if !closure(state) {
			return false
		}
	}
	return state[n]
}
