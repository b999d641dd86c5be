package tools

import (
	"slices"
	"strings"
	"testing"
)

func TestNormalizeQuotes(t *testing.T) {
	t.Parallel()
	s := "a “b” ‘c’ d’s – x"
	m := normalizeQuotes(s)
	if m.text != `a "b" 'c' d's – x` {
		t.Fatalf("text %q", m.text)
	}
	// Every normalised offset maps back to the same character.
	for i := range len(m.text) {
		o := m.orig(i)
		switch m.text[i] {
		case '"', '\'':
			if !strings.HasPrefix(s[o:], "“") && !strings.HasPrefix(s[o:], "”") && !strings.HasPrefix(s[o:], "‘") && !strings.HasPrefix(s[o:], "’") {
				t.Fatalf("offset %d maps to %q", i, s[o:])
			}
		default:
			if s[o] != m.text[i] {
				t.Fatalf("offset %d maps to %q, want %q", i, s[o], m.text[i])
			}
		}
	}
	if m.orig(len(m.text)) != len(s) {
		t.Fatal("end does not map to end")
	}
	if m := normalizeQuotes("plain 'x'"); m.text != "plain 'x'" || m.at != nil {
		t.Fatalf("%+v", m)
	}
	// Other E2 80 characters (dashes, primes) are left alone.
	if m := normalizeQuotes("a—b′c″"); m.text != "a—b′c″" {
		t.Fatalf("%q", m.text)
	}
}

func FuzzNormalizeQuotes(f *testing.F) {
	f.Add("a “b” ‘c’")
	f.Add("\xE2\x80")
	f.Add("’’’\xE2\x80\x99")
	f.Fuzz(func(t *testing.T, s string) {
		m := normalizeQuotes(s)
		prev := -1
		for i := 0; i <= len(m.text); i++ {
			o := m.orig(i)
			if o <= prev || o > len(s) {
				t.Fatalf("orig not increasing at %d: %d after %d", i, o, prev)
			}
			prev = o
		}
		if m.orig(len(m.text)) != len(s) {
			t.Fatal("end")
		}
		if !hasCurlyQuote(s) && m.text != s {
			t.Fatal("changed a text without curly quotes")
		}
	})
}

func TestPreserveQuoteStyle(t *testing.T) {
	t.Parallel()
	cases := []struct {
		span, repl, before, want string
	}{
		{"“Hello, world”", `"Hi, world"`, "say ", "“Hi, world”"},
		{"“Hello”", `x = "a" + "b"`, "", "x = “a” + “b”"},
		{"it’s", `it's 'x' don't`, "", "it’s ‘x’ don’t"},
		{"‘a’", `'b'`, "(", "‘b’"},
		{"‘a’", `'b'`, "x", "’b’"}, // after a letter: closing
		{`"a"`, "“b”", "", `"b"`},  // the span is straight: curly → straight
		{`'a'`, "‘b’ “c”", "", `'b' “c”`},
		{`"a" “b”`, `"c" “d”`, "", `"c" “d”`}, // mixed doubles: left alone
		{"no quotes", `"x"`, "", `"x"`},
		{"“a” 'b'", `"c" 'd' “e”`, "", "“c” 'd' “e”"},
		{"“x”", "\"—\"", "", "“—”"},
	}
	for _, c := range cases {
		if got := preserveQuoteStyle(c.span, c.repl, c.before); got != c.want {
			t.Errorf("preserveQuoteStyle(%q, %q, %q) = %q, want %q", c.span, c.repl, c.before, got, c.want)
		}
	}
}

func TestFindOccurrences(t *testing.T) {
	t.Parallel()
	cases := []struct {
		s, old string
		starts []int
		count  int
	}{
		{"abc", "b", []int{1}, 1},
		{"abcb", "b", []int{1, 3}, 2},
		{"aaa", "aa", []int{0}, 2},
		{"aaaa", "aa", []int{0, 2}, 2},
		{"abc", "x", nil, 0},
		{"abab", "aba", []int{0}, 1}, // "aba" at 0 and… 2 is "ab": one
		{"ababa", "aba", []int{0}, 2},
	}
	for _, c := range cases {
		starts, count := findOccurrences(c.s, c.old)
		if !slices.Equal(starts, c.starts) || count != c.count {
			t.Errorf("findOccurrences(%q, %q) = %v %d, want %v %d", c.s, c.old, starts, count, c.starts, c.count)
		}
	}
}

func TestLocateSteps(t *testing.T) {
	t.Parallel()
	view := "a “q” <function_results> b\n"
	if l := locateOld(view, "b", "c", true); l.step != stepExact || l.count != 1 {
		t.Fatalf("%+v", l)
	}
	if l := locateOld(view, `"q"`, `"r"`, true); l.step != stepQuotes || l.count != 1 || l.spans[0].repl != "“r”" || view[l.spans[0].start:l.spans[0].end] != "“q”" {
		t.Fatalf("%+v", l)
	}
	// No quote normalisation where it is not allowed (legacy files).
	if l := locateOld(view, `"q"`, `"r"`, false); l.count != 0 {
		t.Fatalf("%+v", l)
	}
	if l := locateOld(view, "<fnr>", "<fnr>!", true); l.step != stepDesanitized || l.spans[0].repl != "<function_results>!" {
		t.Fatalf("%+v", l)
	}
	if l := locateOld(view, `"q" <fnr>`, `"z" <fnr>`, true); l.step != stepDesanitizedQuot || l.spans[0].repl != "“z” <function_results>" {
		t.Fatalf("%+v", l)
	}
	if l := locateOld(view, "a  “q”", "x", true); l.count != 0 {
		t.Fatalf("whitespace must not be normalised: %+v", l)
	}
}

func TestDesanitize(t *testing.T) {
	t.Parallel()
	o, n, ok := desanitize("<fnr><n>x</n>\n\nH: hi\n\nA: yo", "<n>y</n><o>")
	if !ok || o != "<function_results><name>x</name>\n\nHuman: hi\n\nAssistant: yo" || n != "<name>y</name><o>" {
		t.Fatalf("%q %q %v", o, n, ok)
	}
	if _, _, ok := desanitize("plain", "x"); ok {
		t.Fatal("plain text desanitised")
	}
	for _, r := range desanitizations {
		if o, _, ok := desanitize("a"+r[0]+"b", ""); !ok || o != "a"+r[1]+"b" {
			t.Errorf("%q: %q", r[0], o)
		}
	}
}

func TestStripTrailingSpace(t *testing.T) {
	t.Parallel()
	if got := stripTrailingSpace("a  \n\tb\t\n  \nc \u00a0"); got != "a\n\tb\n\nc \u00a0" {
		t.Fatalf("%q", got)
	}
	for _, p := range []string{"a.md", "A.MD", "x/y.mdx"} {
		if !isMarkdown(p) {
			t.Error(p)
		}
	}
	for _, p := range []string{"a.go", "md", "a.md.txt"} {
		if isMarkdown(p) {
			t.Error(p)
		}
	}
}

func TestClosestCandidateIsBounded(t *testing.T) {
	t.Parallel()
	// A 10 MB file of one repeated line: the candidate search looks at a
	// bounded number of windows, and answers.
	line := "the quick brown fox jumps over the lazy dog\n"
	view := strings.Repeat(line, 10<<20/len(line))
	c, ok := closestCandidate(view, "the quick brown fox jumped")
	if !ok || c.line != 1 {
		t.Fatalf("%+v %v", c, ok)
	}
	if _, ok := closestCandidate(view, "zz"); ok {
		t.Fatal("a candidate for nothing alike")
	}
}

func TestEditLevenshtein(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"abc", "abc", 0}} {
		if got := textDistance(c.a, c.b, 1000); got != c.d {
			t.Errorf("%q %q: %d", c.a, c.b, got)
		}
	}
}

func TestEditSnippet(t *testing.T) {
	t.Parallel()
	num := func(lines ...string) string {
		var sb strings.Builder
		for i, l := range lines {
			if i > 0 {
				sb.WriteString("\n")
			}
			sb.WriteString(l)
		}
		return sb.String()
	}
	view := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n"
	at := strings.Index(view, "6\n")
	cases := []struct {
		name string
		view string
		s    editSpan
		line int
		want string
	}{
		{"middle", view, editSpan{start: at, end: at + 1, repl: "six"}, 6,
			num("     2\t2", "     3\t3", "     4\t4", "     5\t5", "     6\tsix", "     7\t7", "     8\t8", "     9\t9", "    10\t10")},
		{"whole line to two", view, editSpan{start: at, end: at + 2, repl: "6a\n6b\n"}, 6,
			num("     2\t2", "     3\t3", "     4\t4", "     5\t5", "     6\t6a", "     7\t6b", "     8\t7", "     9\t8", "    10\t9", "    11\t10")},
		{"fill empty", "", editSpan{repl: "x\ny\n"}, 1, num("     1\tx", "     2\ty")},
		{"last line no newline", "a\nb", editSpan{start: 2, end: 3, repl: "c"}, 2, num("     1\ta", "     2\tc")},
		{"at end", "a\nb\n", editSpan{start: 2, end: 4, repl: "c\n"}, 2, num("     1\ta", "     2\tc")},
	}
	for _, c := range cases {
		if got := editSnippet(c.view, c.s, c.line); got != c.want {
			t.Errorf("%s:\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
	// A long replacement is cut.
	long := strings.Repeat("x\n", 100)
	got := editSnippet("a\n", editSpan{start: 0, end: 2, repl: long}, 1)
	if !strings.Contains(got, "… (60 more edited lines)") || strings.Count(got, "\n") > snippetMaxLines+2 {
		t.Fatalf("long snippet:\n%s", got)
	}
}
