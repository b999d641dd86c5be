package index

import (
	"bytes"
	"errors"
	"math"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ferry-dev/ferry/internal/search/fuzzy"
)

// ErrLineTooLong is FromLines' answer to a line of maxLine bytes or more.
var ErrLineTooLong = errors.New("line too long")

// FromLines is FromPaths of the lines of text, as ferry search --stdin
// reads them: one path per line ("\n"), up to two carriage returns before
// each line end dropped (bufio.ScanLines drops one, and --stdin dropped
// one more), blank lines left out, a last line without "\n" kept. A line
// of maxLine bytes or more (before its "\n", carriage returns included)
// is ErrLineTooLong, so the limit is bufio.Scanner's with a maxLine
// buffer.
//
// It builds the snapshot in text itself, with no string per line: the
// lines are moved together in place and the snapshot's chunks share the
// result. The snapshot owns text: the caller must not use it again.
// Entries have no times and no sizes (nothing is stored for them).
func FromLines(text []byte, maxLine int) (*Snapshot, error) {
	if len(text) >= math.MaxUint32 {
		// Offsets are 32-bit: too much for one run, fall back to a string
		// per line (a chunk's own text is far smaller).
		return fromLinesSlow(text, maxLine)
	}
	// ends[i] is where line i stops in the packed text: one per "\n" at
	// most, plus a last line without one.
	ends := make([]uint32, 0, bytes.Count(text, []byte{'\n'})+1)
	w := 0
	for rest := 0; rest < len(text); {
		e := bytes.IndexByte(text[rest:], '\n')
		next := rest + e + 1
		if e < 0 {
			e, next = len(text)-rest, len(text)
		}
		if e >= maxLine {
			return nil, ErrLineTooLong
		}
		line := text[rest : rest+e]
		for k := 0; k < 2 && len(line) > 0 && line[len(line)-1] == '\r'; k++ {
			line = line[:len(line)-1]
		}
		if len(line) > 0 {
			w += copy(text[w:], line)      // w <= rest: moves left, never past what is unread
			ends = append(ends, uint32(w)) //nolint:gosec // len(text) < MaxUint32, checked above
		}
		rest = next
	}
	// One string over the packed text: it is never written again (the
	// snapshot owns it), so the view is immutable as a string must be.
	all := unsafe.String(unsafe.SliceData(text), w) //nolint:gosec // text is owned and frozen from here on
	n := len(ends)
	masks := make([]uint64, n)
	nChunks := (n + chunkTarget - 1) / chunkTarget
	chunks := make([]*chunk, nChunks)
	bounds := func(c int) (int, int) { return c * n / nChunks, (c + 1) * n / nChunks }
	// Where each chunk's text starts, read before the chunks rebase their
	// ends in place (a chunk's start is the previous chunk's last end).
	starts := make([]uint32, nChunks)
	for c := 1; c < nChunks; c++ {
		lo, _ := bounds(c)
		starts[c] = ends[lo-1]
	}
	workers := min(runtime.GOMAXPROCS(0), nChunks)
	var wg sync.WaitGroup
	for wk := range workers {
		wg.Go(func() {
			for c := wk; c < nChunks; c += workers {
				lo, hi := bounds(c)
				start := starts[c]
				ce := ends[lo:hi:hi]
				for j := range ce {
					ce[j] -= start
				}
				ch := &chunk{text: all[start : start+ce[len(ce)-1]], ends: ce, mask: masks[lo:hi:hi]}
				for j := range ce {
					ch.mask[j] = fuzzy.MaskOf(ch.path(j))
				}
				chunks[c] = ch
			}
		})
	}
	wg.Wait()
	s := fromChunks(chunks, 0, "")
	s.sorted = false
	return s, nil
}

// fromLinesSlow is FromLines for a text of 4 GiB or more.
func fromLinesSlow(text []byte, maxLine int) (*Snapshot, error) {
	var paths []string
	for len(text) > 0 {
		line, rest, _ := bytes.Cut(text, []byte{'\n'})
		if len(line) >= maxLine {
			return nil, ErrLineTooLong
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte{'\r'}), []byte{'\r'})
		if len(line) > 0 {
			paths = append(paths, string(line))
		}
		text = rest
	}
	return FromPaths(paths), nil
}
