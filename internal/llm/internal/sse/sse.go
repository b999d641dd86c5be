// Package sse reads a text/event-stream body as the WHATWG spec defines it:
// events are split at blank lines, "data:" lines are joined with "\n",
// "event:" names the event, comments (":") and id/retry lines are ignored,
// one optional space after the colon is dropped, CRLF/CR/LF all end a line,
// and a byte-order mark opening the stream is dropped.
//
// Two departures, both for the provider streams it reads: an unterminated
// last event (the body ended without its blank line) is still dispatched,
// and a line or an event's data longer than the limit is an error wrapping
// ErrTooLong, so a hostile stream cannot make the reader hold more than
// about twice the limit.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ErrTooLong is wrapped by the error of a line or event over the limit.
var ErrTooLong = errors.New("sse: line or event too long")

// Event is one dispatched event.
type Event struct {
	Name string // "" when the event had no event: line
	Data []byte // valid until the next call of Next
}

// Reader reads events from a stream. It is not safe for concurrent use.
type Reader struct {
	br      *bufio.Reader
	max     int
	line    []byte // the current line, reused
	data    []byte // the current event's data, reused
	started bool   // the byte-order mark check is done
	skipLF  bool   // the last line ended in CR: a leading LF is its end
	err     error  // sticky: io.EOF or the read error
}

// NewReader reads events from r; a line or an event's data over maxLine
// bytes is an error (maxLine <= 0 means 1 MiB).
func NewReader(r io.Reader, maxLine int) *Reader {
	if maxLine <= 0 {
		maxLine = 1 << 20
	}
	return &Reader{br: bufio.NewReaderSize(r, 4096), max: maxLine}
}

// Next returns the next event with data; io.EOF at the end of the stream
// (an unterminated last event is dispatched first, as the spec does not
// but provider clients expect). Any other error is the body's read error
// or one wrapping ErrTooLong; every later call returns the same error.
func (r *Reader) Next() (Event, error) {
	if r.err != nil {
		return Event{}, r.err
	}
	r.data = r.data[:0]
	name, hasData := "", false
	for {
		line, err := r.readLine()
		if err != nil {
			r.err = err
			if errors.Is(err, io.EOF) && hasData {
				return Event{Name: name, Data: r.data}, nil
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if hasData {
				return Event{Name: name, Data: r.data}, nil
			}
			name = "" // a blank line after no data resets the name too
			continue
		}
		if line[0] == ':' {
			continue // a comment
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "event":
			name = string(value)
		case "data":
			if hasData {
				r.data = append(r.data, '\n')
			}
			r.data = append(r.data, value...)
			hasData = true
			if len(r.data) > r.max {
				r.err = fmt.Errorf("event data over %d bytes: %w", r.max, ErrTooLong)
				return Event{}, r.err
			}
		}
		// id, retry and unknown fields are ignored.
	}
}

// readLine returns the next line without its end, valid until the next
// call. A last line without an end is returned before io.EOF.
func (r *Reader) readLine() ([]byte, error) {
	if !r.started {
		r.started = true
		// The BOM may only open the stream; Peek returns fewer bytes at EOF.
		if b, _ := r.br.Peek(3); bytes.Equal(b, []byte("\xef\xbb\xbf")) {
			_, _ = r.br.Discard(3)
		}
	}
	r.line = r.line[:0]
	for {
		if r.br.Buffered() == 0 {
			if _, err := r.br.Peek(1); err != nil {
				if errors.Is(err, io.EOF) && len(r.line) > 0 {
					return r.line, nil // the next call finds EOF again
				}
				return nil, err
			}
		}
		buf, _ := r.br.Peek(r.br.Buffered())
		if r.skipLF {
			r.skipLF = false
			if buf[0] == '\n' {
				_, _ = r.br.Discard(1)
				continue
			}
		}
		i := bytes.IndexAny(buf, "\r\n")
		end := i
		if i < 0 {
			end = len(buf)
		}
		if len(r.line)+end > r.max {
			return nil, fmt.Errorf("line over %d bytes: %w", r.max, ErrTooLong)
		}
		r.line = append(r.line, buf[:end]...)
		if i < 0 {
			_, _ = r.br.Discard(end)
			continue
		}
		// An LF after this CR may not have arrived yet: waiting for it would
		// hold back the event, so the next read drops it instead.
		r.skipLF = buf[i] == '\r'
		_, _ = r.br.Discard(i + 1)
		return r.line, nil
	}
}
