// Package runecut cuts strings to a byte budget without splitting a UTF-8
// sequence: the result is always a prefix of the input, at most n bytes
// long, and never ends inside a rune (so text cut for a log line or a wire
// field stays valid UTF-8 when the input was).
package runecut

import "unicode/utf8"

// Prefix returns the longest prefix of s of at most n bytes that does not
// end inside a UTF-8 sequence ("" when n <= 0).
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Ellipsis is Prefix followed by "…" when s was cut.
func Ellipsis(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return Prefix(s, n) + "…"
}
