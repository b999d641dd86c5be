// Keeping the head and tail of a command's output within a cap, while
// passing all of it on as progress.

package tools

import (
	"bytes"
	"fmt"
	"io"
	"unicode/utf8"
)

// capture keeps the head and the tail of a stream within max bytes, and
// passes everything on to progress in order, never splitting a UTF-8
// sequence between two deltas.
type capture struct {
	headCap, tailCap int
	head             []byte
	tail             []byte // the newest bytes after head; trimmed to tailCap
	total            int64
	progress         func(string)
	carry            []byte // an incomplete UTF-8 sequence held back from progress
}

func newCapture(max int, progress func(string)) *capture {
	return &capture{headCap: max / 2, tailCap: max - max/2, progress: progress}
}

// readFrom reads r until EOF or an error (a read deadline ends it too).
func (c *capture) readFrom(r io.Reader) {
	buf := make([]byte, 32*1024)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			c.write(buf[:n])
		}
		if err != nil {
			break
		}
	}
	if c.progress != nil && len(c.carry) > 0 {
		c.send(string(c.carry))
		c.carry = nil
	}
}

// send passes a delta to the progress hook. The hook runs on this reader
// goroutine, where a panic would kill the process rather than fail the
// call: a hook that panics is dropped and the output is still captured.
func (c *capture) send(d string) {
	defer func() {
		if recover() != nil {
			c.progress = nil
		}
	}()
	c.progress(d)
}

func (c *capture) write(p []byte) {
	c.total += int64(len(p))
	if c.progress != nil {
		c.emit(p)
	}
	if room := c.headCap - len(c.head); room > 0 {
		n := min(room, len(p))
		c.head = append(c.head, p[:n]...)
		p = p[n:]
	}
	if len(p) == 0 {
		return
	}
	c.tail = append(c.tail, p...)
	// Trim only when twice the cap, so keeping the tail costs O(1) per byte.
	if len(c.tail) > 2*c.tailCap {
		c.tail = append(c.tail[:0], c.tail[len(c.tail)-c.tailCap:]...)
	}
}

func (c *capture) emit(p []byte) {
	data := p
	if len(c.carry) > 0 {
		data = append(c.carry, p...)
		c.carry = nil
	}
	cut := completeUTF8(data)
	if cut > 0 {
		c.send(string(data[:cut]))
	}
	if cut < len(data) {
		c.carry = append([]byte(nil), data[cut:]...)
	}
}

// completeUTF8 returns the length of the longest prefix of p that does not
// end inside a UTF-8 sequence that more bytes could still complete.
func completeUTF8(p []byte) int {
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				return i
			}
			return len(p)
		}
	}
	return len(p)
}

// String is the captured output: whole when it fits, else the head, a
// marker and the tail, cut at a line end when one is near, else on a
// character boundary.
func (c *capture) String() string {
	tail := c.tail
	if len(tail) > c.tailCap {
		tail = tail[len(tail)-c.tailCap:]
	}
	if c.total <= int64(c.headCap+c.tailCap) {
		return string(c.head) + string(tail)
	}
	head := c.head[:completeUTF8(c.head)]
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	// Whole lines read better: cut at a line end when one is near.
	if i := bytes.LastIndexByte(head, '\n'); i >= len(head)/2 {
		head = head[:i+1]
	}
	if i := bytes.IndexByte(tail, '\n'); i >= 0 && i < len(tail)/2 {
		tail = tail[i+1:]
	}
	elided := c.total - int64(len(head)) - int64(len(tail))
	return fmt.Sprintf("%s\n… [%d bytes of output elided: it was %d bytes; the first %d and the last %d are shown. "+
		"Send long output to a file and Read or Grep it.] …\n\n%s",
		head, elided, c.total, len(head), len(tail), tail)
}
