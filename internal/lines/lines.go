// Package lines splits a stream into newline-delimited lines of bounded
// size, the framing of newline-delimited JSON (JSON Lines, NDJSON) as
// agents speak it on stdio.
//
// bufio.Scanner is not enough for that: its token limit ends the whole
// stream at the first line over it, and raising the limit means holding
// such a line in memory. A Reader takes lines of any length up to its
// bound; a longer line is read through and dropped without being held, and
// Next reports its size so the caller can say that it skipped one. The
// stream goes on with the next line.
package lines

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// DefaultMax is the bound of a Reader made with max <= 0: 128 MiB, far
// above any file an agent puts into a single line.
const DefaultMax = 128 << 20

const (
	// readBuf is the size of the read buffer: lines that arrive in one
	// read are available together (see LineBuffered).
	readBuf = 64 << 10
	// keepBuf is the largest line buffer kept between lines; a bigger
	// one is dropped after its line so that one huge line does not pin
	// its memory.
	keepBuf = 1 << 20
)

// Reader reads lines of at most a bound's bytes from a stream. It is not
// safe for concurrent use.
type Reader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

// NewReader returns a Reader of the lines of r, each of at most max bytes
// (DefaultMax for max <= 0).
func NewReader(r io.Reader, max int) *Reader {
	if max <= 0 {
		max = DefaultMax
	}
	return &Reader{r: bufio.NewReaderSize(r, readBuf), max: max}
}

// Max is the longest line the Reader returns, in bytes.
func (l *Reader) Max() int { return l.max }

// Next returns the next line without its "\n" and without one "\r" before
// it. The line is valid until the next call.
//
// A line of more than Max bytes (not counting the "\n"; a "\r" counts) is
// read through without being kept: line is nil and skipped is its length.
//
// A last line without a "\n" is returned like any other; after it Next
// returns io.EOF. Any other read error is returned as it is, and the bytes
// of the line it cut short are dropped: a line is only ever returned whole.
func (l *Reader) Next() (line []byte, skipped int64, err error) {
	if cap(l.buf) > keepBuf {
		l.buf = nil
	}
	l.buf = l.buf[:0]
	over := false
	for {
		chunk, err := l.r.ReadSlice('\n')
		nl := 0
		if err == nil {
			nl = 1 // the chunk ends with the newline
		}
		if !over && len(l.buf)+len(chunk)-nl > l.max {
			over = true
			skipped = int64(len(l.buf))
			l.buf = l.buf[:0]
		}
		if over {
			skipped += int64(len(chunk) - nl)
		} else {
			l.buf = append(l.buf, chunk...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == nil:
		case !errors.Is(err, io.EOF):
			return nil, 0, err
		case !over && len(l.buf) == 0:
			return nil, 0, io.EOF // nothing after the last "\n"
		}
		// A whole line, or the last one before the end. (At the end, the
		// bufio.Reader returns io.EOF again on the next call.)
		if over {
			return nil, skipped, nil
		}
		return bytes.TrimSuffix(l.buf[:len(l.buf)-nl], []byte{'\r'}), 0, nil
	}
}

// LineBuffered reports whether a whole line is already buffered, so that
// Next returns it without reading from the stream. A caller that handles
// lines in batches uses it to take what arrived together.
func (l *Reader) LineBuffered() bool {
	n := l.r.Buffered()
	if n == 0 {
		return false
	}
	b, _ := l.r.Peek(n) // never blocks: n bytes are buffered
	return bytes.IndexByte(b, '\n') >= 0
}
