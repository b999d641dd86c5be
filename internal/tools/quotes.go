package tools

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Curly quotes Edit normalises to straight ones when old_string does not
// match exactly. Only these four: primes (′ ″), guillemets and low quotes
// are other characters, not another spelling of ' and ".
const (
	leftSingle  = '\u2018' // ‘
	rightSingle = '\u2019' // ’ (also the apostrophe)
	leftDouble  = '\u201C' // “
	rightDouble = '\u201D' // ”
)

// hasCurlyQuote reports whether s holds one of the four curly quotes. They
// all start with E2 80, which makes the common "no" cheap on a large file.
func hasCurlyQuote(s string) bool {
	for {
		i := strings.Index(s, "\xE2\x80")
		if i < 0 || i+2 >= len(s) {
			return false
		}
		switch s[i+2] {
		case 0x98, 0x99, 0x9C, 0x9D:
			return true
		}
		s = s[i+2:]
	}
}

// hasAnyQuote reports whether s holds a straight or curly quote.
func hasAnyQuote(s string) bool {
	return strings.ContainsAny(s, `'"`) || hasCurlyQuote(s)
}

// quoteMap is a quote-normalised text with the way back to the original:
// each curly quote (3 bytes) became one straight byte, and at lists the
// normalised offsets where that happened, ascending.
type quoteMap struct {
	text string
	at   []int
}

// normalizeQuotes replaces the curly quotes of s with straight ones.
func normalizeQuotes(s string) quoteMap {
	if !hasCurlyQuote(s) {
		return quoteMap{text: s}
	}
	var sb strings.Builder
	sb.Grow(len(s))
	var at []int
	for {
		i := strings.Index(s, "\xE2\x80")
		if i < 0 || i+2 >= len(s) {
			sb.WriteString(s)
			break
		}
		var straight byte
		switch s[i+2] {
		case 0x98, 0x99:
			straight = '\''
		case 0x9C, 0x9D:
			straight = '"'
		}
		if straight == 0 {
			sb.WriteString(s[:i+2])
			s = s[i+2:]
			continue
		}
		sb.WriteString(s[:i])
		at = append(at, sb.Len())
		sb.WriteByte(straight)
		s = s[i+3:]
	}
	return quoteMap{text: sb.String(), at: at}
}

// orig maps an offset of the normalised text to the original.
func (m quoteMap) orig(n int) int {
	return n + 2*sort.SearchInts(m.at, n)
}

// quoteStyle is how a matched span of the file writes one kind of quote.
type quoteStyle int

const (
	styleNone     quoteStyle = iota // the span has no quote of this kind
	styleStraight                   // only straight ones
	styleCurly                      // only curly ones
	styleMixed                      // both: the new text is left alone
)

func quoteStyleOf(span string, straight byte, left, right rune) quoteStyle {
	s := strings.IndexByte(span, straight) >= 0
	c := strings.ContainsRune(span, left) || strings.ContainsRune(span, right)
	switch {
	case s && c:
		return styleMixed
	case c:
		return styleCurly
	case s:
		return styleStraight
	}
	return styleNone
}

// preserveQuoteStyle rewrites the quotes of repl, the replacement of a span
// that matched only after quote normalisation, in the style the file uses in
// that span: straight quotes become curly where the span's quotes of that
// kind are all curly (opening or closing by context, an apostrophe inside a
// word as ’), and curly ones straight where the span's are all straight. A
// span that mixes both styles of a kind, or has none, leaves repl's quotes
// of that kind as they are. before is the file's text right before the span
// (for the context of a quote at repl's start).
func preserveQuoteStyle(span, repl, before string) string {
	single := quoteStyleOf(span, '\'', leftSingle, rightSingle)
	double := quoteStyleOf(span, '"', leftDouble, rightDouble)
	if (single != styleCurly && single != styleStraight) && (double != styleCurly && double != styleStraight) {
		return repl
	}
	prev, _ := utf8.DecodeLastRuneInString(before)
	if before == "" {
		prev = utf8.RuneError
	}
	var sb strings.Builder
	sb.Grow(len(repl) + 8)
	for i, r := range repl {
		next, _ := utf8.DecodeRuneInString(repl[i+utf8.RuneLen(r):])
		if i+utf8.RuneLen(r) >= len(repl) {
			next = utf8.RuneError
		}
		out := r
		switch {
		case r == '"' && double == styleCurly:
			out = rightDouble
			if opensQuote(prev, next) {
				out = leftDouble
			}
		case r == '\'' && single == styleCurly:
			switch {
			case quoteWordRune(prev) && quoteWordRune(next):
				out = rightSingle // apostrophe: don’t
			case opensQuote(prev, next):
				out = leftSingle
			default:
				out = rightSingle
			}
		case (r == leftDouble || r == rightDouble) && double == styleStraight:
			out = '"'
		case (r == leftSingle || r == rightSingle) && single == styleStraight:
			out = '\''
		}
		sb.WriteRune(out)
		prev = r
	}
	return sb.String()
}

// opensQuote: a quote opens after the start, whitespace, an opening
// bracket or a dash, unless what follows is the end, whitespace or closing
// punctuation (then it closes: “—”).
func opensQuote(prev, next rune) bool {
	opening := prev == utf8.RuneError || unicode.IsSpace(prev) || strings.ContainsRune("([{<\u2014\u2013", prev)
	if !opening {
		return false
	}
	return next != utf8.RuneError && !unicode.IsSpace(next) && !strings.ContainsRune(".,;:!?)]}>", next)
}

func quoteWordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}
