// Package textenc detects how a text file is encoded and which line endings
// it uses, gives an editable view of it, and writes an edited view back in
// the file's own form.
//
// Guarantees:
//
//   - Decode accepts UTF-8 (with or without a byte-order mark), UTF-16LE and
//     UTF-16BE with a byte-order mark, and any other bytes as Legacy (cp1252,
//     Shift-JIS, …: not valid UTF-8, encoding unknown). UTF-16 that does not
//     round-trip (odd length, unpaired surrogates) is refused with ErrInvalid.
//   - The view (Text.View) has LF line endings only: CRLF and lone CR both
//     read as "\n". For Legacy files the view holds the file's raw bytes (with
//     the same line-ending rule), so it may not be valid UTF-8.
//   - Apply replaces spans of the view and encodes the result: the byte-order
//     mark and encoding are kept, and every byte outside the replaced spans is
//     kept exactly, including each line's own ending (CRLF, LF, CR) and a
//     missing final newline. Line breaks in replacement text take the ending
//     the file uses at the span (see EndingAt).
package textenc

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Encoding is a file's text encoding.
type Encoding int

// The encodings Decode tells apart.
const (
	// UTF8 without a byte-order mark (also every pure-ASCII file).
	UTF8 Encoding = iota
	// UTF8BOM is UTF-8 starting with EF BB BF.
	UTF8BOM
	// UTF16LE starts with FF FE.
	UTF16LE
	// UTF16BE starts with FE FF.
	UTF16BE
	// Legacy is anything that is not valid UTF-8 and has no UTF-16 mark:
	// cp1252, Shift-JIS, GBK, … The bytes are kept as they are; only ASCII
	// can be matched and written safely.
	Legacy
)

func (e Encoding) String() string {
	switch e {
	case UTF8:
		return "UTF-8"
	case UTF8BOM:
		return "UTF-8 with BOM"
	case UTF16LE:
		return "UTF-16LE"
	case UTF16BE:
		return "UTF-16BE"
	case Legacy:
		return "not UTF-8 (legacy encoding)"
	}
	return fmt.Sprintf("Encoding(%d)", int(e))
}

// BOM returns the byte-order mark the encoding writes ("" for none).
func (e Encoding) BOM() string {
	switch e {
	case UTF8BOM:
		return "\xEF\xBB\xBF"
	case UTF16LE:
		return "\xFF\xFE"
	case UTF16BE:
		return "\xFE\xFF"
	}
	return ""
}

// ErrInvalid is returned for bytes that claim an encoding (a UTF-16 mark) but
// do not decode losslessly in it.
var ErrInvalid = errors.New("text does not decode losslessly")

// Text is a decoded file: a view with LF line endings and what is needed to
// write an edited view back in the file's own form.
type Text struct {
	// Encoding of the file.
	Encoding Encoding
	// View is the content with every line break as "\n" (no BOM).
	View string
	// raw is the content in its original line endings, without the BOM:
	// UTF-8 for the Unicode encodings, the file's bytes for Legacy.
	raw string
	// crlf and cr hold the view offsets of the "\n"s that are "\r\n" and
	// "\r" in raw, ascending. Both are nil for an LF-only file, so the common
	// case costs no map.
	crlf, cr []int
}

// Decode detects b's encoding and line endings and builds its view.
func Decode(b []byte) (*Text, error) {
	enc, body := detect(b)
	var raw string
	switch enc {
	case UTF16LE, UTF16BE:
		s, err := decodeUTF16(body, enc == UTF16BE)
		if err != nil {
			return nil, err
		}
		raw = s
	default:
		raw = string(body)
	}
	t := &Text{Encoding: enc, raw: raw}
	t.buildView()
	return t, nil
}

// detect returns the encoding of b and b without its byte-order mark.
func detect(b []byte) (Encoding, []byte) {
	switch {
	case bytes.HasPrefix(b, []byte("\xFF\xFE\x00\x00")), bytes.HasPrefix(b, []byte("\x00\x00\xFE\xFF")):
		// UTF-32: not supported as text; its bytes are kept as they are.
		return Legacy, b
	case bytes.HasPrefix(b, []byte("\xFF\xFE")):
		return UTF16LE, b[2:]
	case bytes.HasPrefix(b, []byte("\xFE\xFF")):
		return UTF16BE, b[2:]
	}
	if !utf8.Valid(b) {
		return Legacy, b
	}
	if bytes.HasPrefix(b, []byte("\xEF\xBB\xBF")) {
		return UTF8BOM, b[3:]
	}
	return UTF8, b
}

// decodeUTF16 decodes strictly: a lone surrogate or an odd byte would not
// survive the round trip, so it is an error rather than U+FFFD.
func decodeUTF16(b []byte, bigEndian bool) (string, error) {
	if len(b)%2 != 0 {
		return "", fmt.Errorf("UTF-16 with an odd number of bytes: %w", ErrInvalid)
	}
	out := make([]byte, 0, len(b)/2+len(b)/8)
	unit := func(i int) rune {
		if bigEndian {
			return rune(b[i])<<8 | rune(b[i+1])
		}
		return rune(b[i+1])<<8 | rune(b[i])
	}
	for i := 0; i < len(b); i += 2 {
		r := unit(i)
		switch {
		case r >= 0xD800 && r < 0xDC00:
			if i+3 >= len(b) {
				return "", fmt.Errorf("UTF-16 ends inside a surrogate pair: %w", ErrInvalid)
			}
			r2 := unit(i + 2)
			if r2 < 0xDC00 || r2 >= 0xE000 {
				return "", fmt.Errorf("unpaired UTF-16 surrogate at byte %d: %w", i, ErrInvalid)
			}
			r = utf16.DecodeRune(r, r2)
			i += 2
		case r >= 0xDC00 && r < 0xE000:
			return "", fmt.Errorf("unpaired UTF-16 surrogate at byte %d: %w", i, ErrInvalid)
		}
		out = utf8.AppendRune(out, r)
	}
	return string(out), nil
}

// buildView derives View from raw, recording where CRLF and CR were.
func (t *Text) buildView() {
	if strings.IndexByte(t.raw, '\r') < 0 {
		t.View = t.raw
		return
	}
	var sb strings.Builder
	sb.Grow(len(t.raw))
	rest := t.raw
	for {
		i := strings.IndexByte(rest, '\r')
		if i < 0 {
			sb.WriteString(rest)
			break
		}
		sb.WriteString(rest[:i])
		at := sb.Len()
		sb.WriteByte('\n')
		if i+1 < len(rest) && rest[i+1] == '\n' {
			t.crlf = append(t.crlf, at)
			rest = rest[i+2:]
		} else {
			t.cr = append(t.cr, at)
			rest = rest[i+1:]
		}
	}
	t.View = sb.String()
}

// Endings counts the file's line breaks by kind.
func (t *Text) Endings() (lf, crlf, cr int) {
	n := strings.Count(t.View, "\n")
	return n - len(t.crlf) - len(t.cr), len(t.crlf), len(t.cr)
}

// rawOffset maps a view offset to the offset in raw. Offsets never fall
// inside a CRLF: the view has one byte for it.
func (t *Text) rawOffset(v int) int {
	return v + sort.SearchInts(t.crlf, v)
}

// endingOf returns the original ending of the "\n" at view offset v.
func (t *Text) endingOf(v int) string {
	if i := sort.SearchInts(t.crlf, v); i < len(t.crlf) && t.crlf[i] == v {
		return "\r\n"
	}
	if i := sort.SearchInts(t.cr, v); i < len(t.cr) && t.cr[i] == v {
		return "\r"
	}
	return "\n"
}

// EndingAt is the line ending for new line breaks written into the span
// starting at view offset v: the ending of the first line break at or after
// v (the one that ends the line the span starts on, or one inside the span);
// on a last line without a final newline, the ending of the last break
// before v; in a file without any line break, "\n". So a CRLF file stays
// CRLF, and in a mixed file new lines match their neighbourhood.
func (t *Text) EndingAt(v int) string {
	if len(t.crlf) == 0 && len(t.cr) == 0 {
		return "\n"
	}
	if i := strings.IndexByte(t.View[v:], '\n'); i >= 0 {
		return t.endingOf(v + i)
	}
	if i := strings.LastIndexByte(t.View[:v], '\n'); i >= 0 {
		return t.endingOf(i)
	}
	return "\n"
}

// Edit replaces View[Start:End] with Text, whose line breaks are "\n".
type Edit struct {
	Start, End int
	Text       string
}

// Apply performs edits (ascending, not overlapping, in view offsets) and
// returns the file's new bytes in its encoding, with its BOM and with every
// byte outside the edited spans unchanged. Legacy files get the edit texts'
// bytes as they are: the caller makes sure they are safe (ASCII) to write.
func (t *Text) Apply(edits []Edit) ([]byte, error) {
	bom := t.Encoding.BOM()
	out := make([]byte, 0, len(bom)+len(t.raw)+editGrowth(edits))
	if t.Encoding != UTF16LE && t.Encoding != UTF16BE {
		out = append(out, bom...)
	}
	prev, prevEnd := 0, 0
	brk := -1 // the first line break at or after the current edit, if known
	tailEnding := ""
	for i, e := range edits {
		if e.Start < prevEnd || e.End < e.Start || e.End > len(t.View) {
			return nil, fmt.Errorf("textenc: edit %d [%d,%d) out of order or out of range", i, e.Start, e.End)
		}
		prevEnd = e.End
		rs, re := t.rawOffset(e.Start), t.rawOffset(e.End)
		out = append(out, t.raw[prev:rs]...)
		ending := "\n"
		if (len(t.crlf) > 0 || len(t.cr) > 0) && strings.IndexByte(e.Text, '\n') >= 0 {
			// EndingAt, with the forward scan shared by the edits of one
			// line, so many edits on a long line cost one scan of it.
			if brk < e.Start {
				brk = len(t.View)
				if j := strings.IndexByte(t.View[e.Start:], '\n'); j >= 0 {
					brk = e.Start + j
				}
			}
			switch {
			case brk < len(t.View):
				ending = t.endingOf(brk)
			case tailEnding == "":
				// On the last line, without a newline: the same for all.
				tailEnding = t.EndingAt(e.Start)
				ending = tailEnding
			default:
				ending = tailEnding
			}
		}
		out = appendWithEnding(out, e.Text, ending)
		prev = re
	}
	out = append(out, t.raw[prev:]...)
	switch t.Encoding {
	case UTF16LE, UTF16BE:
		return encodeUTF16(string(out), t.Encoding == UTF16BE), nil
	}
	return out, nil
}

func editGrowth(edits []Edit) int {
	n := 0
	for _, e := range edits {
		n += len(e.Text) + strings.Count(e.Text, "\n")
	}
	return n
}

// appendWithEnding appends s with each "\n" written as ending.
func appendWithEnding(out []byte, s, ending string) []byte {
	if ending == "\n" {
		return append(out, s...)
	}
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			return append(out, s...)
		}
		out = append(out, s[:i]...)
		out = append(out, ending...)
		s = s[i+1:]
	}
}

// Encode encodes s (valid UTF-8) in enc, with enc's byte-order mark unless s
// already starts with U+FEFF. Legacy cannot be encoded to: its real encoding
// is unknown.
func Encode(enc Encoding, s string) ([]byte, error) {
	hasBOM := strings.HasPrefix(s, "\uFEFF")
	switch enc {
	case UTF8:
		return []byte(s), nil
	case UTF8BOM:
		if hasBOM {
			return []byte(s), nil
		}
		return append([]byte(enc.BOM()), s...), nil
	case UTF16LE, UTF16BE:
		if hasBOM {
			s = s[len("\uFEFF"):]
		}
		return encodeUTF16(s, enc == UTF16BE), nil
	}
	return nil, fmt.Errorf("textenc: cannot encode to %s", enc)
}

// encodeUTF16 encodes valid UTF-8 as UTF-16 with a byte-order mark.
func encodeUTF16(s string, bigEndian bool) []byte {
	out := make([]byte, 0, 2+2*len(s))
	put := func(u uint16) {
		hi, lo := byte(u>>8), byte(u&0xFF)
		if bigEndian {
			out = append(out, hi, lo)
		} else {
			out = append(out, lo, hi)
		}
	}
	put(0xFEFF)
	for _, r := range s {
		if r >= 0x10000 {
			r1, r2 := utf16.EncodeRune(r)
			put(uint16(r1)) //nolint:gosec // surrogates are 16-bit by definition
			put(uint16(r2)) //nolint:gosec // idem
			continue
		}
		put(uint16(r)) //nolint:gosec // r < 0x10000 here
	}
	return out
}

// ToLF rewrites CRLF and lone CR as LF.
func ToLF(s string) string {
	if strings.IndexByte(s, '\r') < 0 {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}

// SplitsChar reports the first of the view offsets (ascending) that might
// fall inside a double-byte character of a Legacy file, and whether there is
// one. The real encoding of a Legacy file is unknown; in Shift-JIS, GBK and
// Big5 the second byte of a character can be an ASCII byte (0x40–0x7E), so
// an ASCII match right after a non-ASCII byte might start in the middle of a
// character. Each line holding an offset is parsed from its start (LF and CR
// are never part of a double-byte character) under the Shift-JIS rules and
// under the GBK/Big5 rules; an offset is suspect if it splits a character
// under an interpretation in which the whole line is valid. Single-byte
// encodings (cp1252, Latin-1) seldom form valid double-byte lines, so most of
// their edits pass. Unicode files never split: their view is decoded text.
func (t *Text) SplitsChar(offsets []int) (int, bool) {
	if t.Encoding != Legacy {
		return 0, false
	}
	for i := 0; i < len(offsets); {
		r := t.rawOffset(offsets[i])
		start := strings.LastIndexAny(t.raw[:r], "\r\n") + 1
		end := len(t.raw)
		if j := strings.IndexAny(t.raw[r:], "\r\n"); j >= 0 {
			end = r + j
		}
		// The offsets on this line.
		var line []int
		for i < len(offsets) {
			ro := t.rawOffset(offsets[i])
			if ro > end {
				break
			}
			line = append(line, ro)
			i++
		}
		for _, rules := range []dbcs{shiftJIS, gbk} {
			if k, ok := rules.split(t.raw[start:end], start, line); ok {
				return t.viewOffset(k), true
			}
		}
	}
	return 0, false
}

// viewOffset maps a raw offset (not inside a CRLF) back to the view.
func (t *Text) viewOffset(r int) int {
	// The view offset v satisfies v + #crlf(<v) == r; search on v.
	return sort.Search(r+1, func(v int) bool { return t.rawOffset(v) >= r })
}

// dbcs describes a double-byte character set by its byte classes.
type dbcs struct {
	lead, trail, single func(c byte) bool
}

var (
	shiftJIS = dbcs{
		lead:   func(c byte) bool { return (c >= 0x81 && c <= 0x9F) || (c >= 0xE0 && c <= 0xFC) },
		trail:  func(c byte) bool { return (c >= 0x40 && c <= 0x7E) || (c >= 0x80 && c <= 0xFC) },
		single: func(c byte) bool { return c < 0x80 || (c >= 0xA1 && c <= 0xDF) },
	}
	gbk = dbcs{
		lead:   func(c byte) bool { return c >= 0x81 && c <= 0xFE },
		trail:  func(c byte) bool { return (c >= 0x40 && c <= 0x7E) || (c >= 0x80 && c <= 0xFE) },
		single: func(c byte) bool { return c < 0x80 },
	}
)

// split parses line (starting at raw offset base) and returns the first of
// offs (raw, ascending) that falls inside a double-byte character, if the
// whole line is valid under these rules.
func (d dbcs) split(line string, base int, offs []int) (int, bool) {
	found, hit := 0, false
	j := 0
	for i := 0; i < len(line); {
		c := line[i]
		size := 1
		switch {
		case d.single(c):
		case d.lead(c) && i+1 < len(line) && d.trail(line[i+1]):
			size = 2
		default:
			return 0, false // not valid under these rules: not this encoding
		}
		for j < len(offs) && offs[j] < base+i+size {
			if offs[j] > base+i && !hit {
				found, hit = offs[j], true
			}
			j++
		}
		i += size
	}
	return found, hit
}
