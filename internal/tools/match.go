package tools

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
)

// How old_string was found. Each step runs only when the ones before found
// nothing; there is no fuzzier step after the last.
type matchStep int

const (
	stepExact           matchStep = iota // as given
	stepQuotes                           // after curly → straight quote normalisation
	stepDesanitized                      // after the desanitisation table
	stepDesanitizedQuot                  // both
)

func (s matchStep) note() string {
	switch s {
	case stepQuotes:
		return " (old_string matched after normalising curly quotes; the file's quote style was kept in the replacement)"
	case stepDesanitized:
		return " (old_string matched after restoring sanitised tags such as <fnr>; new_string got the same restoration)"
	case stepDesanitizedQuot:
		return " (old_string matched after restoring sanitised tags and normalising curly quotes)"
	}
	return ""
}

// editSpan is a match in the file's view: [start, end) and its replacement.
type editSpan struct {
	start, end int
	repl       string
}

// editMatch is the outcome of matching old_string.
type editMatch struct {
	step  matchStep
	spans []editSpan // the matches to replace (non-overlapping, ascending)
	// count is the number of matches, overlapping ones included (at least
	// len(spans)); more than one is ambiguousError without replace_all.
	count int
}

// locateOld finds old in view following Edit's steps: exact; then with curly
// quotes normalised on both sides (quotes true: Unicode files only); then
// with the desanitisation table applied to old (and new), exact and with
// quotes normalised. Matches are counted in the normalised text, so two
// spans that differ only in quote style are two matches.
func locateOld(view, old, new string, quotes bool) editMatch {
	if l, ok := locateStep(view, old, new, quotes); ok {
		return l
	}
	if dOld, dNew, ok := desanitize(old, new); ok {
		if l, ok := locateStep(view, dOld, dNew, quotes); ok {
			l.step += stepDesanitized
			return l
		}
	}
	return editMatch{}
}

// locateStep runs the exact and the quote-normalised step for one old/new.
func locateStep(view, old, new string, quotes bool) (editMatch, bool) {
	if starts, count := findOccurrences(view, old); count > 0 {
		l := editMatch{step: stepExact, count: count}
		for _, s := range starts {
			l.spans = append(l.spans, editSpan{start: s, end: s + len(old), repl: new})
		}
		return l, true
	}
	if !quotes || !hasAnyQuote(old) || (!hasCurlyQuote(old) && !hasCurlyQuote(view)) {
		// Normalising would change nothing that could make a match.
		return editMatch{}, false
	}
	nv, no := normalizeQuotes(view), normalizeQuotes(old)
	starts, count := findOccurrences(nv.text, no.text)
	if count == 0 {
		return editMatch{}, false
	}
	l := editMatch{step: stepQuotes, count: count}
	for _, s := range starts {
		a, b := nv.orig(s), nv.orig(s+len(no.text))
		l.spans = append(l.spans, editSpan{start: a, end: b, repl: preserveQuoteStyle(view[a:b], new, view[max(a-4, 0):a])})
	}
	return l, true
}

// findOccurrences returns the starts of the non-overlapping occurrences of old in s,
// left to right, and the number of occurrences counting an overlapping one
// (which makes a single non-overlapping match ambiguousError too). Linear: one
// pass of strings.Index plus at most one more search.
func findOccurrences(s, old string) (starts []int, count int) {
	for at := 0; at <= len(s); {
		i := strings.Index(s[at:], old)
		if i < 0 {
			break
		}
		starts = append(starts, at+i)
		at += i + max(len(old), 1)
	}
	count = len(starts)
	if count == 1 && len(old) > 1 && strings.Contains(s[starts[0]+1:], old) {
		count = 2 // "aa" in "aaa": which one?
	}
	return starts, count
}

// lineNumbersOf returns the 1-based line numbers of ascending offsets of
// view, counting each stretch once.
func lineNumbersOf(view string, offsets []int) []int {
	out := make([]int, len(offsets))
	line, at := 1, 0
	for i, o := range offsets {
		line += strings.Count(view[at:o], "\n")
		at = o
		out[i] = line
	}
	return out
}

// ambiguousError is code 9 for count matches of old_string.
func ambiguousError(shown, view string, l editMatch) error {
	const listed = 10
	var offs []int
	for _, s := range l.spans[:min(len(l.spans), listed)] {
		offs = append(offs, s.start)
	}
	var where []string
	for _, n := range lineNumbersOf(view, offs) {
		where = append(where, fmt.Sprint(n))
	}
	at := "at lines " + strings.Join(where, ", ")
	if len(l.spans) > listed {
		at += ", …"
	}
	if len(l.spans) == 1 {
		at = fmt.Sprintf("at line %s, overlapping itself", where[0])
	}
	return Errorf(CodeAmbiguous, "old_string matches %d times in %s (%s). Add surrounding lines to old_string so that it matches exactly one place, or set replace_all to true to change every match.",
		l.count, shown, at)
}

// Bounds of the closest-candidate search, so a failed match costs a few
// scans of the file, whatever its size.
const (
	closestAnchors     = 5   // lines or words of old_string searched for
	closestPerAnchor   = 50  // occurrences of each considered
	closestCompareSize = 400 // bytes compared by edit distance
)

// noMatchError is code 10, saying where the closest candidate is: the window of
// lines (as many as old_string has) that starts where one of old_string's
// lines or words occurs and is nearest to old_string by edit distance.
func noMatchError(shown, view, old string) error {
	base := fmt.Sprintf("old_string was not found in %s.", shown)
	c, ok := closestCandidate(view, old)
	if !ok {
		return Errorf(CodeNoMatch, "%s No part of the file resembles it. Read the file to see its current content, then copy old_string from it exactly.", base)
	}
	var hint string
	switch {
	case strings.Join(strings.Fields(c.text), " ") == strings.Join(strings.Fields(old), " "):
		hint = "It differs only in whitespace or indentation: copy the exact spaces and tabs from the file (Read shows them after the line number's tab)."
	default:
		hint = "Read the file again around that line and copy old_string from it exactly, including indentation."
	}
	return Errorf(CodeNoMatch, "%s The closestCandidate text is at line %d:\n%s\n%s", base, c.line, editExcerpt(c.text, c.line, 3), hint)
}

type editCandidate struct {
	start int // offset of the window's first line
	line  int
	text  string
	dist  int
}

// closestCandidate finds the best editCandidate window for old in view.
func closestCandidate(view, old string) (editCandidate, bool) {
	oldLines := strings.Split(old, "\n")
	starts := map[int]bool{} // window start offsets
	add := func(at, lineInOld int) {
		s := editLineStartBack(view, at, lineInOld)
		if len(starts) < closestAnchors*closestPerAnchor {
			starts[s] = true
		}
	}
	search := func(needle string, lineInOld int) {
		n := 0
		for at := 0; n < closestPerAnchor; n++ {
			i := strings.Index(view[at:], needle)
			if i < 0 {
				return
			}
			add(at+i, lineInOld)
			at += i + len(needle)
		}
	}
	// Anchors: old_string's longest lines, trimmed; failing those, its
	// longest words.
	type anchor struct {
		text string
		line int
	}
	var lines []anchor
	for i, l := range oldLines {
		if t := strings.TrimSpace(l); len(t) >= 3 {
			lines = append(lines, anchor{t, i})
		}
	}
	sort.SliceStable(lines, func(i, j int) bool { return len(lines[i].text) > len(lines[j].text) })
	for _, a := range lines[:min(len(lines), closestAnchors)] {
		search(a.text, a.line)
	}
	if len(starts) == 0 {
		var words []anchor
		for i, l := range oldLines {
			for _, w := range strings.FieldsFunc(l, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' }) {
				if len(w) >= 4 {
					words = append(words, anchor{w, i})
				}
			}
		}
		sort.SliceStable(words, func(i, j int) bool { return len(words[i].text) > len(words[j].text) })
		for _, w := range words[:min(len(words), closestAnchors)] {
			search(w.text, w.line)
		}
	}
	if len(starts) == 0 {
		return editCandidate{}, false
	}
	offs := make([]int, 0, len(starts))
	for s := range starts {
		offs = append(offs, s)
	}
	sort.Ints(offs)
	var best editCandidate
	found := false
	target := old[:min(len(old), closestCompareSize)]
	for _, s := range offs {
		text := editLinesFrom(view, s, len(oldLines))
		d := textDistance(text[:min(len(text), closestCompareSize)], target, 2*closestCompareSize)
		if !found || d < best.dist {
			best, found = editCandidate{start: s, text: text, dist: d}, true
		}
	}
	best.line = lineNumbersOf(view, []int{best.start})[0]
	return best, true
}

// editLineStartBack returns the start of the line n lines above the one at.
func editLineStartBack(view string, at, n int) int {
	s := strings.LastIndexByte(view[:at], '\n') + 1
	for ; n > 0 && s > 0; n-- {
		s = strings.LastIndexByte(view[:s-1], '\n') + 1
	}
	return s
}

// editLinesFrom returns n lines of view starting at offset s, without the last
// newline.
func editLinesFrom(view string, s, n int) string {
	e := s
	for ; n > 0 && e < len(view); n-- {
		i := strings.IndexByte(view[e:], '\n')
		if i < 0 {
			e = len(view)
			break
		}
		e += i + 1
	}
	return strings.TrimSuffix(view[s:e], "\n")
}

// editExcerpt shows up to n lines of text, numbered from line, each cut short.
func editExcerpt(text string, line, n int) string {
	var sb strings.Builder
	for i, l := range strings.Split(text, "\n") {
		if i == n {
			sb.WriteString("       …\n")
			break
		}
		fmt.Fprintf(&sb, "%6d\t%s\n", line+i, editCutRunes(strings.ToValidUTF8(l, "\uFFFD"), 160))
	}
	return strings.TrimSuffix(sb.String(), "\n")
}

// editCutRunes cuts s to n runes, marking the cut.
func editCutRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + "…"
		}
		i++
	}
	return s
}
