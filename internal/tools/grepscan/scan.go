package grepscan

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"
)

// How it works: line mode finds candidate matches with one regexp search
// over a whole buffer of lines (fast: RE2 with its literal prefilters),
// then confirms each candidate on its line alone, so a match never spans
// lines. A line longer than the buffer is matched through a rune reader,
// and only an excerpt of it is ever kept.

const (
	// defaultBufSize is the line-mode buffer; longer lines take the slow path.
	defaultBufSize = 256 << 10
	// binaryProbe is how much of a file is checked for a NUL byte.
	binaryProbe = 8 << 10
	// lineRunes caps a line shown in content mode (as ripgrep's
	// --max-columns 500 in Claude Code); a longer line is shown as an
	// excerpt around its first match, with markers.
	lineRunes = 500
	// MultilineMaxBytes caps a file in multiline mode, which reads a file
	// whole; larger files are skipped (Outcome.TooLarge).
	MultilineMaxBytes = 32 << 20
)

// Line is a line of content output.
type Line struct {
	No    int64  // 1-based line number
	Text  string // the line as shown (see DisplayLine); empty when only counting
	Match bool   // a match line, not a context line
}

// Scanner searches files with one compiled pattern. Not safe for
// concurrent use (it owns its buffer).
type Scanner struct {
	Re        *regexp.Regexp
	Multiline bool
	// Before and After are context line counts; WantLines says whether
	// lines are shown (content mode) or only counted.
	Before, After int
	WantLines     bool
	// BufSize is the line buffer's size (256 KiB when 0; tests use tiny
	// ones to reach every boundary).
	BufSize int
	// MaxWhole caps a file in multiline mode (MultilineMaxBytes when 0).
	MaxWhole int
	buf      []byte
}

// File is a file to scan: a reader positioned at its start, and
// random access for excerpts of long lines.
type File interface {
	io.Reader
	io.ReaderAt
}

// Outcome is what scanning one file found.
type Outcome struct {
	// Matches counts matching lines (matches, in multiline mode).
	Matches int64
	// Binary: a NUL byte in the first 8 KiB; not searched.
	Binary bool
	// TooLarge: over MaxWhole in multiline mode; not searched.
	TooLarge bool
}

// ErrStop is returned by an emit function to stop scanning the file
// (files_with_matches needs one match; content mode stops at its limit).
var ErrStop = errors.New("stop scanning this file")

// Scan searches f, calling emit for every match line and context line in
// order (and, when !WantLines, for every match with an empty text).
// emit returning ErrStop ends the scan without error.
func (s *Scanner) Scan(ctx context.Context, f File, emit func(Line) error) (Outcome, error) {
	var out Outcome
	if s.buf == nil {
		if s.BufSize <= 0 {
			s.BufSize = defaultBufSize
		}
		s.buf = make([]byte, s.BufSize)
	}
	probe := min(binaryProbe, len(s.buf))
	n, err := io.ReadAtLeast(f, s.buf[:probe], probe)
	eof := false
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		eof = true
	case err != nil:
		return out, err
	}
	if bytes.IndexByte(s.buf[:n], 0) >= 0 {
		out.Binary = true
		return out, nil
	}
	if n == probe && probe < binaryProbe {
		// A buffer smaller than the probe (tests): look further without
		// consuming.
		var more [binaryProbe]byte
		m, _ := f.ReadAt(more[:binaryProbe-probe], int64(probe))
		if bytes.IndexByte(more[:m], 0) >= 0 {
			out.Binary = true
			return out, nil
		}
	}
	counting := func(l Line) error {
		if l.Match {
			out.Matches++
		}
		return emit(l)
	}
	if s.Multiline {
		err = s.scanWhole(ctx, f, s.buf[:n], eof, emit, &out)
	} else {
		ls := &lineScan{s: s, ctx: ctx, f: f, emit: counting, end: n, eof: eof}
		err = ls.run()
	}
	if errors.Is(err, ErrStop) {
		err = nil
	}
	return out, err
}

// lineScan is the state of one line-mode scan.
type lineScan struct {
	s    *Scanner
	ctx  context.Context
	f    File
	emit func(Line) error

	start, end int   // valid data is s.buf[start:end]
	off        int64 // file offset of s.buf[start]
	eof        bool
	lineNo     int64 // number of the line at s.buf[start] (1-based, once set)

	// pending holds bytes read past a long line that did not fit in the
	// buffer; reads take them before reading on from f.
	pending []byte

	lastEmitted  int64 // number of the last line emitted
	pendingAfter int
	// tail holds the last lines before the current buffer, for before-
	// context (only when lines are shown and before > 0).
	tail []Line
}

func (ls *lineScan) run() error {
	ls.lineNo = 1
	buf := ls.s.buf
	for {
		if err := ls.ctx.Err(); err != nil {
			return err
		}
		data := buf[ls.start:ls.end]
		if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
			if err := ls.region(data[:i+1]); err != nil {
				return err
			}
			ls.start += i + 1
			ls.off += int64(i + 1)
		} else if ls.eof {
			if len(data) > 0 {
				return ls.region(data)
			}
			return nil
		} else if ls.start == 0 && ls.end == len(buf) {
			// The buffer is full and holds no newline: a long line.
			if err := ls.longLine(); err != nil {
				return err
			}
			continue
		}
		if ls.eof {
			if ls.start < ls.end {
				continue
			}
			return nil
		}
		// Keep the partial last line and read more after it.
		copy(buf, buf[ls.start:ls.end])
		ls.end -= ls.start
		ls.start = 0
		n, err := io.ReadFull(ls, buf[ls.end:])
		ls.end += n
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			ls.eof = true
		} else if err != nil {
			return err
		}
	}
}

// Read reads the file on, starting with what is pending.
func (ls *lineScan) Read(p []byte) (int, error) {
	if len(ls.pending) > 0 {
		n := copy(p, ls.pending)
		ls.pending = ls.pending[n:]
		return n, nil
	}
	return ls.f.Read(p)
}

// region scans complete lines (the last may lack its newline at EOF),
// starting at line ls.lineNo.
func (ls *lineScan) region(region []byte) error {
	s := ls.s
	regionFirst := ls.lineNo
	pos := 0
	for pos < len(region) {
		if ls.pendingAfter > 0 {
			le := lineEnd(region, pos)
			line := region[pos:le]
			if s.Re.Match(line) {
				if err := ls.emitMatch(line, -1); err != nil {
					return err
				}
			} else {
				if err := ls.emitLine(Line{No: ls.lineNo, Text: DisplayLine(line, -1)}); err != nil {
					return err
				}
				ls.pendingAfter--
			}
			pos = le + 1
			ls.lineNo++
			continue
		}
		loc := s.Re.FindIndex(region[pos:])
		if loc != nil && pos+loc[0] == len(region) && region[len(region)-1] == '\n' {
			loc = nil // an empty match after the last newline: no line there
		}
		if loc == nil {
			ls.lineNo += int64(bytes.Count(region[pos:], nl))
			if pos < len(region) && region[len(region)-1] != '\n' {
				ls.lineNo++
			}
			break
		}
		ms := pos + loc[0]
		lstart := pos + bytes.LastIndexByte(region[pos:ms], '\n') + 1
		le := lineEnd(region, ms)
		ls.lineNo += int64(bytes.Count(region[pos:lstart], nl))
		line := region[lstart:le]
		// Confirm on the line alone: the candidate may span lines.
		if s.Re.Match(line) {
			if err := ls.beforeContext(region, lstart, regionFirst); err != nil {
				return err
			}
			if err := ls.emitMatch(line, -1); err != nil {
				return err
			}
		}
		pos = le + 1
		ls.lineNo++
	}
	ls.keepTail(region, regionFirst)
	return nil
}

var nl = []byte{'\n'}

// lineEnd is the index of the newline ending the line at i (or len(b)).
func lineEnd(b []byte, i int) int {
	if j := bytes.IndexByte(b[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(b)
}

// emitMatch emits line ls.lineNo as a match; at is where the match starts
// when known (-1: find it).
func (ls *lineScan) emitMatch(line []byte, at int) error {
	text := ""
	if ls.s.WantLines {
		if at < 0 {
			if loc := ls.s.Re.FindIndex(line); loc != nil {
				at = loc[0]
			}
		}
		text = DisplayLine(line, at)
	}
	if err := ls.emitLine(Line{No: ls.lineNo, Text: text, Match: true}); err != nil {
		return err
	}
	ls.pendingAfter = ls.s.After
	return nil
}

func (ls *lineScan) emitLine(l Line) error {
	ls.lastEmitted = l.No
	return ls.emit(l)
}

// beforeContext emits the lines before the one at region[lstart:] that
// context asks for and that were not shown yet: from this region, and
// from the tail of the previous ones.
func (ls *lineScan) beforeContext(region []byte, lstart int, regionFirst int64) error {
	b := ls.s.Before
	if b == 0 || !ls.s.WantLines {
		return nil
	}
	from := max(ls.lastEmitted+1, ls.lineNo-int64(b), 1)
	if from >= ls.lineNo {
		return nil
	}
	var lines []Line
	// Backwards through this region.
	end := lstart - 1 // the newline ending the previous line
	no := ls.lineNo - 1
	for no >= from && end >= 0 && no >= regionFirst {
		st := bytes.LastIndexByte(region[:end], '\n') + 1
		lines = append(lines, Line{No: no, Text: DisplayLine(region[st:end], -1)})
		end = st - 1
		no--
	}
	// Then the tail of earlier regions.
	for i := len(ls.tail) - 1; i >= 0 && no >= from; i-- {
		if ls.tail[i].No == no {
			lines = append(lines, ls.tail[i])
			no--
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if err := ls.emitLine(lines[i]); err != nil {
			return err
		}
	}
	return nil
}

// keepTail remembers the last lines of region for before-context.
func (ls *lineScan) keepTail(region []byte, regionFirst int64) {
	b := ls.s.Before
	if b == 0 || !ls.s.WantLines || len(region) == 0 {
		return
	}
	var lines []Line
	end := len(region)
	if region[end-1] == '\n' {
		end--
	}
	no := ls.lineNo - 1
	for len(lines) < b && end >= 0 && no >= regionFirst {
		st := bytes.LastIndexByte(region[:end], '\n') + 1
		lines = append(lines, Line{No: no, Text: DisplayLine(region[st:end], -1)})
		end = st - 1
		no--
	}
	tail := append(ls.tail[:0:0], ls.tail...)
	for i := len(lines) - 1; i >= 0; i-- {
		tail = append(tail, lines[i])
	}
	if len(tail) > b {
		tail = tail[len(tail)-b:]
	}
	ls.tail = tail
}

// longLine handles a line longer than the buffer, which holds its start:
// it is matched through a rune reader, and only excerpts are kept.
func (ls *lineScan) longLine() error {
	s := ls.s
	lineOff := ls.off
	head := s.buf[ls.start:ls.end]
	lr := &lineReader{head: head, r: ls, scratch: make([]byte, 64<<10)}
	rr := bufio.NewReaderSize(lr, 64<<10)
	loc := s.Re.FindReaderIndex(rr)
	// Drain the rest of the line to find where it ends.
	if _, err := io.Copy(io.Discard, rr); err != nil {
		return err
	}
	if lr.err != nil {
		return lr.err
	}
	// Shown length: without a final CR, as DisplayLine does.
	shownLen := lr.n
	if s.WantLines && shownLen > 0 {
		var last [1]byte
		if _, err := ls.f.ReadAt(last[:], lineOff+shownLen-1); err == nil && last[0] == '\r' {
			shownLen--
		}
	}
	l := Line{No: ls.lineNo}
	switch {
	case loc != nil:
		l.Match = true
		if err := ls.beforeContext(nil, 0, ls.lineNo); err != nil {
			return err
		}
		if s.WantLines {
			l.Text = ls.excerpt(lineOff, shownLen, int64(loc[0]))
		}
		if err := ls.emitLine(l); err != nil {
			return err
		}
		ls.pendingAfter = s.After
	case ls.pendingAfter > 0:
		l.Text = ls.excerpt(lineOff, shownLen, 0)
		if err := ls.emitLine(l); err != nil {
			return err
		}
		ls.pendingAfter--
	}
	if s.Before > 0 && s.WantLines {
		l.Text = ls.excerpt(lineOff, shownLen, 0)
		l.Match = false
		ls.tail = append(ls.tail, l)
		if len(ls.tail) > s.Before {
			ls.tail = ls.tail[1:]
		}
	}
	ls.lineNo++
	// Carry on with what followed the newline.
	ls.off = lineOff + lr.n + 1
	ls.start, ls.end = 0, 0
	ls.pending = append(append([]byte(nil), lr.leftover...), ls.pending...)
	if !lr.newline {
		ls.eof = true
	}
	return nil
}

// excerpt reads, from the file, the part of a long line around at.
func (ls *lineScan) excerpt(lineOff, lineLen, at int64) string {
	if lineLen <= lineRunes*utf8.UTFMax {
		// Short enough to read whole (only with tiny test buffers).
		b := make([]byte, lineLen)
		n, _ := ls.f.ReadAt(b, lineOff)
		return DisplayLine(b[:n], int(at))
	}
	from := max(0, at-lineRunes/4)
	want := min(int64(lineRunes*utf8.UTFMax), lineLen-from)
	b := make([]byte, want)
	n, err := ls.f.ReadAt(b, lineOff+from)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Sprintf("[line of %d bytes; could not read it: %v]", lineLen, err)
	}
	b = b[:n]
	// Start on a rune boundary.
	skip := 0
	for skip < len(b) && skip < utf8.UTFMax && !utf8.RuneStart(b[skip]) {
		skip++
	}
	return markLong(string(b[skip:]), from+int64(skip), lineLen)
}

// lineReader reads one line, starting with what is buffered (head), then
// from r up to the newline, which it does not return. What followed the
// newline in its last read is left in leftover.
type lineReader struct {
	head     []byte
	r        io.Reader
	scratch  []byte
	leftover []byte
	n        int64 // bytes of the line returned so far
	done     bool
	newline  bool // the line ended with a newline (not at EOF)
	err      error
}

func (l *lineReader) Read(p []byte) (int, error) {
	for len(l.head) == 0 {
		if l.done {
			return 0, io.EOF
		}
		if l.err != nil {
			return 0, l.err
		}
		m, err := l.r.Read(l.scratch)
		chunk := l.scratch[:m]
		if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
			l.leftover = append(l.leftover[:0], chunk[i+1:]...)
			chunk = chunk[:i]
			l.done, l.newline = true, true
		}
		l.head = chunk
		switch {
		case errors.Is(err, io.EOF):
			l.done = true
		case err != nil:
			l.err = err
		}
	}
	n := copy(p, l.head)
	l.head = l.head[n:]
	l.n += int64(n)
	return n, nil
}

// DisplayLine is how a line is shown: without its CR, valid UTF-8, at
// most lineRunes runes; a longer one as an excerpt around at (its
// first match; -1 for none) between markers.
func DisplayLine(line []byte, at int) string {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if len(line) <= lineRunes || utf8.RuneCount(line) <= lineRunes {
		return strings.ToValidUTF8(string(line), "\uFFFD")
	}
	from := 0
	if at > 0 {
		from = max(0, at-lineRunes/4)
		for from > 0 && !utf8.RuneStart(line[from]) {
			from--
		}
	}
	return markLong(string(line[from:]), int64(from), int64(len(line)))
}

// markLong shows at most lineRunes runes of s, which starts at byte
// from of a line of lineLen bytes, marking what is left out.
func markLong(s string, from, lineLen int64) string {
	s = strings.TrimSuffix(s, "\r")
	var b strings.Builder
	if from > 0 {
		fmt.Fprintf(&b, "[… %d bytes] ", from)
	}
	end := 0
	for i := 0; i < lineRunes && end < len(s); i++ {
		_, size := utf8.DecodeRuneInString(s[end:])
		end += size
	}
	b.WriteString(strings.ToValidUTF8(s[:end], "\uFFFD"))
	if rest := lineLen - from - int64(end); rest > 0 {
		fmt.Fprintf(&b, " [… %d more bytes]", rest)
	}
	return b.String()
}

// scanWhole is multiline mode: the file is read whole (up to
// MultilineMaxBytes) and matches may span lines; every line a match
// touches is a match line, and out.Matches counts matches, not lines.
func (s *Scanner) scanWhole(ctx context.Context, f File, head []byte, eof bool, emit func(Line) error, out *Outcome) error {
	limit := s.MaxWhole
	if limit <= 0 {
		limit = MultilineMaxBytes
	}
	data := append([]byte(nil), head...)
	if !eof {
		rest, err := io.ReadAll(io.LimitReader(f, int64(limit-len(data)+1)))
		if err != nil {
			return err
		}
		data = append(data, rest...)
	}
	if len(data) > limit {
		out.TooLarge = true
		return nil
	}
	var starts []int // line start offsets, when lines are shown
	if s.WantLines {
		starts = append(starts, 0)
		for i, c := range data {
			if c == '\n' && i+1 < len(data) {
				starts = append(starts, i+1)
			}
		}
	}
	lineText := func(no int64) string {
		st := starts[no-1]
		return DisplayLine(data[st:lineEnd(data, st)], -1)
	}
	var lastEmitted, afterUntil int64
	emitRange := func(from, to int64, match bool) error {
		for no := max(from, lastEmitted+1); no <= to && no <= int64(len(starts)); no++ {
			lastEmitted = no
			if err := emit(Line{No: no, Text: lineText(no), Match: match}); err != nil {
				return err
			}
		}
		return nil
	}
	lineNo, cursor := int64(1), 0 // line number at byte cursor
	lineAt := func(i int) int64 {
		lineNo += int64(bytes.Count(data[cursor:i], nl))
		cursor = i
		return lineNo
	}
	for pos := 0; pos <= len(data); {
		if err := ctx.Err(); err != nil {
			return err
		}
		loc := s.Re.FindIndex(data[pos:])
		if loc == nil {
			break
		}
		ms, me := pos+loc[0], pos+loc[1]
		if ms == len(data) && ms > 0 && data[ms-1] == '\n' {
			break // after the final newline: no line there
		}
		out.Matches++
		first := lineAt(ms)
		last := first
		if me > ms {
			last = first + int64(bytes.Count(data[ms:me-1], nl))
		}
		if !s.WantLines {
			if err := emit(Line{No: first, Match: true}); err != nil {
				return err
			}
		} else {
			if err := emitRange(lastEmitted+1, min(afterUntil, first-1), false); err != nil {
				return err
			}
			if err := emitRange(first-int64(s.Before), first-1, false); err != nil {
				return err
			}
			if err := emitRange(first, last, true); err != nil {
				return err
			}
			afterUntil = last + int64(s.After)
		}
		if me > ms {
			pos = me
		} else {
			_, size := utf8.DecodeRune(data[me:])
			pos = me + max(size, 1)
		}
	}
	if s.WantLines {
		return emitRange(lastEmitted+1, afterUntil, false)
	}
	return nil
}
