package master

import (
	"encoding/json"
	"unicode"
	"unicode/utf16"

	"github.com/ferry-dev/ferry/internal/runecut"
	"github.com/ferry-dev/ferry/protocol"
	"github.com/ferry-dev/ferry/protocol/fileref"
)

// What session lists show of a session besides its title: a preview of its
// last message and, for a search, why it matched. Both come from the
// session's snapshot (its newest turns), which the store reads with the
// row, so that a list costs no query per session and the UI never reads
// each session's events.

// maxSnippetSource bounds the text of one message searched for a snippet:
// a list of 200 sessions of 100 long turns each stays cheap. A match
// further in gets no snippet.
const maxSnippetSource = 64 << 10

// storedTurns are the turns of a stored snapshot (nil when there is none
// or it cannot be read).
func storedTurns(snapshot []byte) []protocol.TurnSnapshot {
	if len(snapshot) == 0 {
		return nil
	}
	var snap struct {
		Turns []protocol.TurnSnapshot `json:"turns"`
	}
	if json.Unmarshal(snapshot, &snap) != nil {
		return nil
	}
	return snap.Turns
}

// promptText is a prompt_text as the person saw it: each file token as
// its path, escapes undone.
func promptText(text string) string {
	return fileref.Parse(text, nil).Literal()
}

// preview is the last message of turns on one line: the newest turn's
// answer, else its prompt.
func preview(turns []protocol.TurnSnapshot) string {
	for i := len(turns) - 1; i >= 0; i-- {
		if p := protocol.Preview(turns[i].Text); p != "" {
			return p
		}
		if p := protocol.Preview(promptText(turns[i].Prompt)); p != "" {
			return p
		}
	}
	return ""
}

// matchOf says why a session with this title and turns matched query: the
// title, else the newest prompt or answer that holds it (case-insensitive,
// as the store searches). A match the snapshot no longer holds (an older
// turn) is reported as a prompt or answer without a snippet: the store
// found it, and the list still says so.
func matchOf(title string, turns []protocol.TurnSnapshot, query string) *protocol.SessionMatch {
	q := foldRunes(query)
	if len(q) == 0 {
		return nil
	}
	if m := snippet(protocol.MatchTitle, title, q); m != nil {
		return m
	}
	for i := len(turns) - 1; i >= 0; i-- {
		if m := snippet(protocol.MatchAnswer, turns[i].Text, q); m != nil {
			return m
		}
		if m := snippet(protocol.MatchPrompt, promptText(turns[i].Prompt), q); m != nil {
			return m
		}
	}
	return &protocol.SessionMatch{Field: protocol.MatchPrompt}
}

// snippet is the match of q (folded) in text, on one line around its first
// occurrence, or nil when text does not hold it.
func snippet(field, text string, q []rune) *protocol.SessionMatch {
	line := []rune(protocol.Plain(runecut.Prefix(text, maxSnippetSource), maxSnippetSource))
	at := indexFold(line, q, 0)
	if at < 0 {
		return nil
	}
	// A window of MaxPreviewRunes around the match, a third before it.
	width := protocol.MaxPreviewRunes - 2 // room for the two ellipses
	start := max(0, at-width/3)
	if len(q) > width {
		start = at
	}
	end := min(len(line), start+width)
	if end-start < width {
		start = max(0, end-width)
	}
	var out []rune
	if start > 0 {
		out = append(out, '…')
	}
	out = append(out, line[start:end]...)
	if end < len(line) {
		out = append(out, '…')
	}
	m := &protocol.SessionMatch{Field: field, Snippet: string(out)}
	body := out
	for i := indexFold(body, q, 0); i >= 0 && len(m.Ranges) < 32; i = indexFold(body, q, i+len(q)) {
		if i+len(q) > len(body) {
			break
		}
		s := utf16Len(body[:i])
		m.Ranges = append(m.Ranges, protocol.MatchRange{Start: s, End: s + utf16Len(body[i:i+len(q)])})
	}
	return m
}

func foldRunes(s string) []rune {
	rs := []rune(protocol.OneLine(s, len(s)+1))
	for i, r := range rs {
		rs[i] = unicode.ToLower(r)
	}
	return rs
}

// indexFold is the index of q (folded) in s at or after from, comparing
// each rune lowercased, or -1.
func indexFold(s, q []rune, from int) int {
outer:
	for i := from; i+len(q) <= len(s); i++ {
		for j, r := range q {
			if unicode.ToLower(s[i+j]) != r {
				continue outer
			}
		}
		return i
	}
	return -1
}

func utf16Len(rs []rune) int {
	n := 0
	for _, r := range rs {
		n += utf16.RuneLen(r)
	}
	return n
}
