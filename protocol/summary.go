package protocol

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/internal/lazyregexp"
)

// Lines that session lists show for a session: its automatic title (the
// first line of its first prompt) and the preview of its last message.
// Both are made by the master from text people and agents wrote, so both
// pass CheckName: every hidden character (HiddenRune) becomes a space.

// MaxAutoTitleRunes bounds an automatic title (from the first prompt or
// from the agent), in characters, the ellipsis included.
const MaxAutoTitleRunes = 60

// MaxPreviewRunes bounds SessionInfo.Preview and a search match's
// snippet, in characters, the ellipses included.
const MaxPreviewRunes = 140

var (
	// A fenced code block's fence line, a heading, quote or list marker at
	// the start of a line, a table's pipes.
	mdFence  = lazyregexp.New("^\\s*(```|~~~)")
	mdMarker = lazyregexp.New(`^\s*(#{1,6}\s+|>\s*|[-*+]\s+\[[ xX]\]\s+|[-*+]\s+|\d{1,9}[.)]\s+)+`)
	// ![alt](url) and [text](url) keep their words; <https://…> autolinks
	// keep the address.
	mdImage = lazyregexp.New(`!\[([^\]]*)\]\([^)]*\)`)
	mdLink  = lazyregexp.New(`\[([^\]]+)\]\([^)]*\)`)
	// Emphasis and code marks around words.
	mdEmphasis = lazyregexp.New("(\\*\\*|__|\\*|`+|~~)")
)

// TitleFromPrompt is the title a session gets from its first prompt: the
// first line that says something, Markdown marks dropped, whitespace
// collapsed, cut at a word boundary to MaxAutoTitleRunes with "…". Text
// with nothing to show gives "".
func TitleFromPrompt(text string) string {
	for line := range strings.Lines(text) {
		if mdFence.MatchString(line) {
			continue
		}
		if t := OneLine(stripMarkdown(line), MaxAutoTitleRunes); t != "" {
			return t
		}
	}
	return ""
}

// Preview is text as one line for a session list: Plain, cut at a word
// boundary to MaxPreviewRunes.
func Preview(text string) string {
	return Cut(Plain(text, 4*MaxPreviewRunes*utf8.UTFMax), MaxPreviewRunes)
}

// Plain is text as one line: Markdown marks dropped line by line, code
// fences left out, every run of whitespace and hidden characters one
// space. It reads about the first maxBytes of text (whole lines).
func Plain(text string, maxBytes int) string {
	var b strings.Builder
	for line := range strings.Lines(text) {
		if mdFence.MatchString(line) {
			continue
		}
		b.WriteString(stripMarkdown(line))
		b.WriteByte(' ')
		if b.Len() > maxBytes {
			break
		}
	}
	s := b.String()
	return OneLine(s, len(s)+1)
}

func stripMarkdown(line string) string {
	line = mdMarker.ReplaceAllString(line, "")
	line = mdImage.ReplaceAllString(line, "$1")
	line = mdLink.ReplaceAllString(line, "$1")
	return mdEmphasis.ReplaceAllString(line, "")
}

// OneLine is text with invalid UTF-8 and every hidden character
// (HiddenRune) or run of whitespace made one space, trimmed, and cut to at
// most max characters: at the last word boundary that keeps at least half
// of them (else mid-word), followed by "…".
func OneLine(text string, max int) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToValidUTF8(text, " ") {
		if unicode.IsSpace(r) || HiddenRune(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return Cut(b.String(), max)
}

// Cut is s (one line) cut to at most max characters with "…" at the end
// when it was longer: at the last space that keeps at least half of the
// line, else mid-word.
func Cut(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	if max < 2 {
		return ""
	}
	all := []rune(s)
	rs := all[:max-1]
	cut := len(rs)
	for i := len(rs) - 1; i >= len(rs)/2 && all[len(rs)] != ' '; i-- {
		if rs[i] == ' ' {
			cut = i
			break
		}
	}
	return strings.TrimRight(string(rs[:cut]), " ") + "…"
}
