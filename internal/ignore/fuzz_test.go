package ignore

import (
	"strings"
	"testing"
)

// FuzzPattern feeds arbitrary rules and paths through parsing, compiling
// and matching: nothing may panic, and the two automaton runners (the
// 64-bit one and the general one) must agree.
func FuzzPattern(f *testing.F) {
	for _, seed := range [][2]string{
		{"*.o", "a/b.o"},
		{"!/a/**/b/", "a/x/y/b"},
		{"foo**/bar", "foox/y/bar"},
		{"[[:alpha:]-z]\\", "q"},
		{"[!]-a]*?\\*", "^x*"},
		{"a/**", "a/"},
		{"**/", "x"},
		{"\\ \\ ", "  "},
		{"[[:spaci:]]", " "},
		{"[", "["},
		{strings.Repeat("a*", 40), strings.Repeat("a", 90)},
		{strings.Repeat("**/", 30) + "z", strings.Repeat("d/", 50) + "z"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, rule, path string) {
		for _, fold := range []bool{false, true} {
			p, ok := ParsePattern(rule, fold)
			if !ok {
				continue
			}
			if p.kind == patWild {
				a, b := p.w.match(path), p.w.matchBig(path)
				if !p.w.never && len(p.w.toks) < 64 && a != b {
					t.Fatalf("rule %q, path %q: runners disagree (%v, %v)", rule, path, a, b)
				}
			}
			l := &list{}
			l.add(p)
			name := path
			if i := strings.LastIndexByte(path, '/'); i >= 0 {
				name = path[i+1:]
			}
			l.match(path, asciiLower(path), name, asciiLower(name), true)
			l.match(path, asciiLower(path), name, asciiLower(name), false)
		}
		l := parseList([]byte(rule), "", "fuzz", false)
		m := &Matcher{cache: map[string]*Dir{}}
		d := &Dir{m: m, lists: []*list{l}, anchored: l.anchored}
		if path != "" && !strings.ContainsRune(path, 0) {
			d.Match(path, false)
		}
	})
}
