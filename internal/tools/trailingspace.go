// Trailing whitespace and line ends in edited text, which Edit strips
// except in Markdown, where they carry meaning.

package tools

import (
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// isMarkdown: trailing spaces are a hard line break there.
func isMarkdown(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".md", ".mdx":
		return true
	}
	return false
}

// stripTrailingSpace removes spaces and tabs at the end of each line.
func stripTrailingSpace(s string) string {
	return stripLineEnds(s, true)
}

// stripLineEnds removes spaces and tabs at the end of each line of s that
// ends a line: every line followed by a newline in s, and the last one only
// if lastEnds (what follows s is a line break or the end of the text).
func stripLineEnds(s string, lastEnds bool) string {
	if !strings.ContainsAny(s, " \t\f\v") {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if i < len(lines)-1 || lastEnds {
			lines[i] = strings.TrimRight(l, " \t\f\v")
		}
	}
	return strings.Join(lines, "\n")
}

// stripSpanLineEnds strips the trailing whitespace of the replacements of
// spans (ascending, not overlapping, in view) where it would end a line of
// the result, and nowhere else: an edit that ends mid-line keeps its spaces.
// Each span is decided by what follows it in the result: the view's next
// byte, or the next span's replacement when that starts where this one
// ends (replace_all of adjacent matches), so right to left.
func stripSpanLineEnds(view string, spans []editSpan) {
	nextEnds := true // whether the result at spans[i+1].start begins a line break or ends
	for i := len(spans) - 1; i >= 0; i-- {
		s := &spans[i]
		ends := s.end == len(view) || view[s.end] == '\n'
		if i+1 < len(spans) && spans[i+1].start == s.end {
			ends = nextEnds
		}
		s.repl = stripLineEnds(s.repl, ends)
		if s.repl != "" {
			nextEnds = s.repl[0] == '\n'
		} else {
			nextEnds = ends
		}
	}
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
