// Small text helpers shared by the tools' messages.

package tools

import (
	"fmt"
	"strings"
)

// countLines counts the lines of LF text: its newlines, plus a last line
// without one.
func countLines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

func countOf(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
