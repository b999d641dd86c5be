package tools

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"
	"unicode/utf8"

	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// textEncoding is how a text file's bytes become the text Read shows.
type textEncoding int

const (
	encUTF8 textEncoding = iota
	encUTF8BOM
	encUTF16LE
	encUTF16BE
)

func (e textEncoding) String() string {
	switch e {
	case encUTF8BOM:
		return "UTF-8 with a byte order mark"
	case encUTF16LE:
		return "UTF-16LE"
	case encUTF16BE:
		return "UTF-16BE"
	}
	return "UTF-8"
}

// detectEncoding reads the byte order mark. UTF-16 without one is not
// guessed: it has NUL bytes and is reported as binary.
func detectEncoding(head []byte) textEncoding {
	switch {
	case bytes.HasPrefix(head, []byte{0xEF, 0xBB, 0xBF}):
		return encUTF8BOM
	case bytes.HasPrefix(head, []byte{0xFF, 0xFE}):
		return encUTF16LE
	case bytes.HasPrefix(head, []byte{0xFE, 0xFF}):
		return encUTF16BE
	}
	return encUTF8
}

// lineBufferBytes is the read buffer of the line scanner: the one piece of
// memory a scan holds besides the window's output, whatever the file.
const lineBufferBytes = 64 << 10

// countRestBytes bounds the work spent counting the lines after the window:
// past this many remaining bytes Read says "more lines follow" with their
// size instead, so a window near the start of a huge file stays cheap.
const countRestBytes = 8 << 20

// lineWindow is what to collect.
type lineWindow struct {
	// start is the first line (1-based), count the most lines.
	start, count int
	// maxRunes cuts longer lines.
	maxRunes int
	// capBytes stops collecting once the output is larger: such a window is
	// refused by the token gate anyway, so holding more would only cost
	// memory.
	capBytes int
	// hash computes the hash of the raw bytes along the way; it is kept
	// when the scan read the file to its end.
	hash bool
}

// lineScan is the outcome of scanning a window.
type lineScan struct {
	// out is the rendered lines, "%6d\t%s\n" each.
	out []byte
	// ends[i] is len(out) after the i-th rendered line.
	ends []int
	// lines is the number of lines scanned: skipped plus rendered.
	lines int
	// eof: the window reached the end of the file.
	eof bool
	// capped: collection stopped at capBytes.
	capped bool
	// more is the number of lines after the window, -1 when not counted;
	// restBytes then is how many bytes are left.
	more      int
	restBytes int64
	// cutLines is the number of lines cut at maxRunes; cut lists them.
	cutLines int
	cut      []int
	// firstInvalid is the first line with invalid UTF-8, 0 for none.
	firstInvalid int
	// hash of the raw file, valid when hashed.
	hash   Hash
	hashed bool
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// scanLines streams src (the file from its first byte) and collects the
// lines of w. Memory: the 64 KiB buffer plus the output, which is bounded
// by w.capBytes plus one line. Lines before w.start are scanned and dropped.
func scanLines(ctx context.Context, src io.Reader, size int64, enc textEncoding, w lineWindow) (*lineScan, error) {
	counter := &countingReader{r: src}
	var raw io.Reader = counter
	var h hash.Hash
	if w.hash {
		h = sha256.New()
		raw = io.TeeReader(counter, h)
	}
	r := raw
	switch enc {
	case encUTF16LE:
		r = transform.NewReader(raw, unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM).NewDecoder())
	case encUTF16BE:
		r = transform.NewReader(raw, unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM).NewDecoder())
	}
	br := bufio.NewReaderSize(r, lineBufferBytes)
	if enc == encUTF8BOM {
		if _, err := br.Discard(3); err != nil {
			return nil, err
		}
	}

	s := &lineScan{more: -1}
	atEOF := func() (bool, error) {
		_, err := br.Peek(1)
		if errors.Is(err, io.EOF) {
			return true, nil
		}
		return false, err
	}
	// Skip to the window.
	for s.lines+1 < w.start {
		if s.lines%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		eof, err := skipLine(br)
		if err != nil {
			return nil, err
		}
		if eof {
			s.eof = true
			break
		}
		s.lines++
	}
	// Collect the window.
	for !s.eof && s.lines+1 < w.start+w.count {
		eof, err := atEOF()
		if err != nil {
			return nil, err
		}
		if eof {
			s.eof = true
			break
		}
		s.lines++
		if err := s.collectLine(br, w.maxRunes); err != nil {
			return nil, err
		}
		if len(s.out) > w.capBytes {
			s.capped = true
			return s, nil
		}
	}
	if !s.eof {
		eof, err := atEOF()
		if err != nil {
			return nil, err
		}
		if eof {
			s.eof = true
			s.more = 0
		} else if rest := size - (counter.n - int64(br.Buffered())); rest <= countRestBytes {
			n, err := countReaderLines(ctx, br)
			if err != nil {
				return nil, err
			}
			s.more = n
			if h != nil {
				// Counting read to the end: every raw byte went through the hash.
				h.Sum(s.hash[:0])
				s.hashed = true
			}
		} else {
			s.restBytes = rest
		}
	}
	if s.eof {
		s.more = 0
		if h != nil {
			// The buffer saw io.EOF, so every raw byte went through the hash.
			h.Sum(s.hash[:0])
			s.hashed = true
		}
	}
	return s, nil
}

// skipLine consumes one line; eof when there was none left.
func skipLine(br *bufio.Reader) (eof bool, err error) {
	seen := false
	for {
		chunk, err := br.ReadSlice('\n')
		seen = seen || len(chunk) > 0
		switch {
		case err == nil:
			return false, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return !seen, nil
		default:
			return false, err
		}
	}
}

// collectLine renders the next line (the caller made sure there is one) as
// "%6d\t" + text, without its line ending, cut after maxRunes runes with a
// marker saying how much was cut.
func (s *lineScan) collectLine(br *bufio.Reader, maxRunes int) error {
	s.out = appendLineNumber(s.out, s.lines)
	start := len(s.out)
	kept, cut := 0, 0
	cutting := false
	var last byte // the line's last content byte, to drop a CR
	for {
		chunk, err := br.ReadSlice('\n')
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) && !errors.Is(err, io.EOF) {
			return err
		}
		content := chunk
		if err == nil {
			content = chunk[:len(chunk)-1]
		}
		if len(content) > 0 {
			last = content[len(content)-1]
		}
		if !cutting {
			// Keep whole runes up to maxRunes: stop at the start byte of
			// the rune after the last one kept, so a rune split between two
			// chunks is kept whole.
			i := 0
			for ; i < len(content); i++ {
				if content[i]&0xC0 != 0x80 {
					if kept == maxRunes {
						cutting = true
						break
					}
					kept++
				}
			}
			s.out = append(s.out, content[:i]...)
			content = content[i:]
		}
		if cutting {
			cut += runeStarts(content)
		}
		if err == nil || errors.Is(err, io.EOF) {
			break
		}
	}
	if last == '\r' {
		if cutting {
			cut--
		} else if n := len(s.out); n > start && s.out[n-1] == '\r' {
			s.out = s.out[:n-1]
		}
	}
	if !utf8.Valid(s.out[start:]) {
		fixed := bytes.ToValidUTF8(s.out[start:], []byte("\uFFFD"))
		s.out = append(s.out[:start], fixed...)
		if s.firstInvalid == 0 {
			s.firstInvalid = s.lines
		}
	}
	if cut > 0 {
		s.cutLines++
		s.cut = append(s.cut, s.lines)
		s.out = fmt.Appendf(s.out, " … [line cut here: %d more characters not shown]", cut)
	}
	s.out = append(s.out, '\n')
	s.ends = append(s.ends, len(s.out))
	return nil
}

// appendLineNumber appends n right-aligned in six columns and a tab, as
// cat -n does.
func appendLineNumber(b []byte, n int) []byte {
	var num [20]byte
	digits := strconv.AppendInt(num[:0], int64(n), 10)
	for i := len(digits); i < 6; i++ {
		b = append(b, ' ')
	}
	b = append(b, digits...)
	return append(b, '\t')
}

// runeStarts counts the runes in b, which may begin or end inside a rune:
// every byte but a UTF-8 continuation byte starts one.
func runeStarts(b []byte) int {
	n := 0
	for _, c := range b {
		if c&0xC0 != 0x80 {
			n++
		}
	}
	return n
}

// countReaderLines counts the lines left in br: its newlines, plus a last line
// without one.
func countReaderLines(ctx context.Context, br *bufio.Reader) (int, error) {
	buf := make([]byte, 32<<10)
	n := 0
	last := byte('\n')
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		k, err := br.Read(buf)
		if chunk := buf[:k]; len(chunk) > 0 {
			n += bytes.Count(chunk, []byte{'\n'})
			last = chunk[len(chunk)-1]
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if last != '\n' {
		n++
	}
	return n, nil
}

// textView names a line window in the read state.
func textView(start, count int) string {
	return fmt.Sprintf("lines %d-%d", start, start+count-1)
}

// text reads a text file.
func (rc *readCall) text() (*Result, error) {
	req := rc.req
	view := textView(req.start, req.count)
	if stub := rc.dedup(view); stub != nil {
		return stub, nil
	}
	enc := detectEncoding(rc.head)
	s, err := scanLines(rc.ctx, io.NewSectionReader(rc.f, 0, 1<<62), rc.info.Stamp.Size, enc, lineWindow{
		start:    req.start,
		count:    req.count,
		maxRunes: rc.limits.MaxLineRunes,
		capBytes: collectCapBytes(rc.limits),
		// A window's hash lets Edit and Write tell a touched file from a
		// changed one. Hash when the scan reads little past the window
		// anyway; a window deep in a huge file skips it (its stamp decides).
		hash: req.start == 1 || rc.info.Stamp.Size <= hashWindowBytes,
	})
	if err != nil {
		if cerr := rc.ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, readFSError(rc.env.FS, rc.name, err)
	}
	if s.capped {
		return nil, rc.tooLargeLines(s, 0, false)
	}
	shown := len(s.ends)
	if shown == 0 {
		if s.lines == 0 {
			if req.start == 1 {
				rc.record(view, false, s.hash)
				return rc.result(Text(fmt.Sprintf("%s is empty (0 lines).", rc.name))), nil
			}
			return rc.result(Text(fmt.Sprintf("%s is empty (0 lines); offset %d is past its end. Leave offset out to read it.", rc.name, req.start))), nil
		}
		return rc.result(Text(fmt.Sprintf("%s has %d lines; offset %d is past its end. Use an offset from 1 to %d.", rc.name, s.lines, req.start, s.lines))), nil
	}

	first := req.start
	lastShown := first + shown - 1
	out := s.out
	var notes []string
	if enc != encUTF8 {
		notes = append(notes, fmt.Sprintf("(The file is %s; shown decoded, without the byte order mark.)", enc))
	}
	if s.firstInvalid > 0 {
		notes = append(notes, fmt.Sprintf("(The file is not valid UTF-8 (first at line %d): bytes that do not decode are shown as \uFFFD. It may be in another encoding, such as cp1252 or Shift-JIS.)", s.firstInvalid))
	}
	if s.cutLines > 0 {
		notes = append(notes, fmt.Sprintf("(%d line(s) longer than %d characters were cut where marked.)", s.cutLines, rc.limits.MaxLineRunes))
	}
	switch {
	case s.more > 0:
		notes = append(notes, fmt.Sprintf("(… %d more lines, %d-%d. Use offset=%d to read further.)", s.more, lastShown+1, lastShown+s.more, lastShown+1))
	case s.more < 0:
		notes = append(notes, fmt.Sprintf("(… more lines follow: %s of the file not shown yet. Use offset=%d to read further.)", formatBytes(s.restBytes), lastShown+1))
	}
	if len(notes) > 0 {
		out = append(out, '\n')
		for _, n := range notes {
			out = append(out, n...)
			out = append(out, '\n')
		}
	}
	text := string(out)
	tokens, exact, err := rc.gate(text)
	if err != nil {
		return nil, err
	}
	if tokens > rc.limits.MaxReadTokens {
		return nil, rc.tooLargeLines(s, tokens, exact)
	}
	partial := first > 1 || !s.eof || s.cutLines > 0
	var hash Hash
	if s.hashed {
		hash = s.hash
	}
	if rc.env.State != nil {
		total := -1
		switch {
		case s.eof:
			total = s.lines
		case s.more >= 0:
			total = lastShown + s.more
		}
		e := ReadEntry{Path: rc.info.Path, Stamp: rc.info.Stamp, Hash: hash, Partial: partial, View: view}
		if partial {
			e.Lines = &LineWindow{First: first, Last: lastShown, Cut: s.cut, Total: total}
		}
		rc.env.State.Record(e)
	}
	return rc.result(Text(text)), nil
}

// hashWindowBytes: a window of a file up to this size hashes the whole
// file as it scans (a few milliseconds), so a touch that changes nothing
// does not make the window stale for Edit and Write.
const hashWindowBytes = countRestBytes

// formatBytes renders a size for the agent.
func formatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
