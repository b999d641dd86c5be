// The excerpt of an edited file shown in Edit's result.

package tools

import (
	"fmt"
	"strings"
)

// snippetContext is the lines shown around the edited region in the result.
const (
	snippetContext  = 4
	snippetMaxLines = 40
)

// editSnippet shows the edited lines of the new text with snippetContext
// lines around them, numbered as Read numbers lines, built from the old
// view and the replacement alone (no copy of the whole new text). line is
// the number of the line the span starts on.
func editSnippet(view string, s editSpan, line int) string {
	ls := strings.LastIndexByte(view[:s.start], '\n') + 1
	le := len(view)
	repl := s.repl
	switch {
	case s.end > s.start && view[s.end-1] == '\n' && strings.HasSuffix(repl, "\n"):
		// Whole lines replaced by whole lines: the next line is context.
		le = s.end - 1
		repl = repl[:len(repl)-1]
	default:
		if i := strings.IndexByte(view[s.end:], '\n'); i >= 0 {
			le = s.end + i
		}
	}
	before := splitLinesNoEnd(view[editLineStartBack(view, ls, snippetContext):ls])
	mid := strings.Split(view[ls:s.start]+repl+view[min(s.end, le):le], "\n")
	if len(mid) > 1 && mid[len(mid)-1] == "" && le == len(view) {
		mid = mid[:len(mid)-1] // the text ends with a newline: no line after it
	}
	var after []string
	if le+1 < len(view) {
		after = strings.Split(editLinesFrom(view, le+1, snippetContext), "\n")
	}
	var sb strings.Builder
	n := line - len(before)
	put := func(l string) {
		fmt.Fprintf(&sb, "%6d\t%s\n", n, editCutRunes(strings.ToValidUTF8(l, "\uFFFD"), 500))
		n++
	}
	for _, l := range before {
		put(l)
	}
	for i, l := range mid {
		if i == snippetMaxLines {
			fmt.Fprintf(&sb, "      \t… (%d more edited lines)\n", len(mid)-i)
			n += len(mid) - i
			break
		}
		put(l)
	}
	for _, l := range after {
		put(l)
	}
	return strings.TrimSuffix(sb.String(), "\n")
}

// splitLinesNoEnd splits LF text that ends with a newline into its lines.
func splitLinesNoEnd(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
