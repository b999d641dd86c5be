package fuzzy

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"

	"github.com/ferry-dev/ferry/protocol"
)

// Result is how one path matched a pattern.
type Result struct {
	// Score is the match_score: Raw divided by the pattern's ideal raw score
	// (the score of the query's own text taken as a file name), clamped to
	// [0, 1]. It orders like Raw wherever Raw is in [0, ideal].
	Score float64
	// Raw is the integer score the ranking uses, higher is better.
	Raw int32
	// Ranges are the matched characters as half-open UTF-16 code-unit spans
	// of the original path, sorted, with touching spans merged.
	Ranges []protocol.MatchRange
}

// Match reports whether path matches p and, if so, its score and ranges.
// slab may be nil (a temporary one is used).
func (p *Pattern) Match(path string, slab *Slab) (Result, bool) {
	if slab == nil {
		slab = new(Slab)
	}
	raw, ok := p.raw(path, slab, true)
	if !ok {
		return Result{}, false
	}
	return Result{Score: p.normalize(raw), Raw: raw, Ranges: slab.ranges(path)}, true
}

// normalize maps a raw score into [0, 1].
func (p *Pattern) normalize(raw int32) float64 {
	if p.ideal <= 0 || raw <= 0 {
		return 0
	}
	return min(1, float64(raw)/float64(p.ideal))
}

// raw computes the raw score of path with the full DP. With withPos it also
// records, in s.hits, the matched unit indexes of every term (for ranges).
func (p *Pattern) raw(path string, s *Slab, withPos bool) (int32, bool) {
	s.hits = s.hits[:0]
	s.ascii = !hasNonASCII(path)
	if s.ascii {
		b := asBytes(path)
		return rawTerms(p, s, b, b, baseStart(b), withPos)
	}
	if withPos {
		s.u.decompose(path)
	} else {
		s.u.decomposeUnits(path)
	}
	return rawTerms(p, s, s.u.fold, s.u.orig, baseStart(s.u.fold), withPos)
}

func rawTerms[E unit](p *Pattern, s *Slab, fold, orig []E, base int, withPos bool) (int32, bool) {
	var total int32
	for _, t := range p.terms {
		raw, ok := align(t, s, fold, orig, base, withPos)
		if !ok {
			return 0, false
		}
		total += raw
		if withPos {
			s.hits = append(s.hits, s.pos[:len(t.fold)]...)
		}
	}
	return total, true
}

func hasNonASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return true
		}
	}
	return false
}

// ranges turns the unit indexes left in s.hits by raw into merged UTF-16
// ranges of path.
func (s *Slab) ranges(path string) []protocol.MatchRange {
	if len(s.hits) == 0 {
		return nil
	}
	slices.Sort(s.hits)
	var out []protocol.MatchRange
	for _, j := range s.hits {
		start, end := int(j), int(j)+1
		if !s.ascii {
			start, end = int(s.u.start[j]), int(s.u.end[j])
		}
		if n := len(out); n > 0 && start <= out[n-1].End {
			out[n-1].End = max(out[n-1].End, end)
			continue
		}
		out = append(out, protocol.MatchRange{Start: start, End: end})
	}
	return out
}

// feasible reports whether every term of p matches path, the cheap way.
// mask is MaskOf(path); the caller has checked it against p.mask. For a
// non-ASCII path it leaves the path's units in s.u.
func (p *Pattern) feasible(path string, mask uint64, s *Slab) bool {
	if mask&(1<<bitNonASCII) != 0 {
		s.u.decomposeUnits(path)
		for _, t := range p.terms {
			if !forward(t, s.u.fold, nil) {
				return false
			}
		}
		return true
	}
	b := asBytes(path)
	var dts []dirTerm
	nl := int(mask >> nameLenShift & nameLenMax)
	if s.dc.on && p.plainMulti && nl < nameLenMax && nl < len(b) {
		dts = s.dirTerms(p, b[:len(b)-nl])
	}
	for i, t := range p.terms {
		switch {
		case !t.ascii:
			return false
		case t.single:
			// The mask already proved the one character is there.
		case t.plain && dts != nil:
			// The greedy match of the directories is the same for every
			// file of a directory: continue it on the name.
			dt := &dts[i]
			if !dt.feasOK {
				dt.feas, dt.feasOK = subsequenceFrom(t.words, 0, b[:len(b)-nl]), true
			}
			if dt.feas < len(t.words) && subsequenceFrom(t.words, dt.feas, b[len(b)-nl:]) < len(t.words) {
				return false
			}
		case t.plain:
			if !subsequenceASCII(t.words, b) {
				return false
			}
		case !forwardASCII(t, b):
			return false
		}
	}
	return true
}

const (
	ones  = 0x0101010101010101
	low7  = 0x7f7f7f7f7f7f7f7f
	highs = 0x8080808080808080
)

// foldWord lowers the ASCII upper-case letters among eight bytes: a byte
// b < 0x80 is in 'A'..'Z' iff b+(0x80-'A') has its top bit and
// b+(0x80-'Z'-1) does not; no sum carries into the next byte.
func foldWord(w uint64) uint64 {
	a := w + (0x80-'A')*ones
	z := w + (0x80-'Z'-1)*ones
	return w | ((a^z)&highs&^w)>>2
}

// zeroBytes flags (with 0x80) exactly the zero bytes of x.
func zeroBytes(x uint64) uint64 {
	return ^((x&low7 + low7) | x | low7)
}

// subsequenceASCII reports whether the folded bytes of q occur in order in
// path (ASCII), case-insensitively. It folds eight path bytes at a time and
// finds the next wanted byte in the word with one comparison (SWAR): paths
// are short, so this beats byte loops and calls to IndexByte.
func subsequenceASCII(q []uint64, path []byte) bool {
	return subsequenceFrom(q, 0, path) == len(q)
}

// subsequenceFrom continues subsequenceASCII: q[:qi] has matched already,
// and it returns how many of q have matched once path is read too.
func subsequenceFrom(q []uint64, qi int, path []byte) int {
	n := len(path)
	for i := 0; i < n && qi < len(q); i += 8 {
		var w uint64
		keep := ^uint64(0)
		if i+8 <= n {
			w = binary.LittleEndian.Uint64(path[i:])
		} else {
			for k := n - 1; k >= i; k-- {
				w = w<<8 | uint64(path[k])
			}
			keep = 1<<(8*(n-i)) - 1 // the padding matches nothing
		}
		w = foldWord(w)
		for {
			t := zeroBytes(w^q[qi]) & keep
			if t == 0 {
				break
			}
			qi++
			if qi == len(q) {
				return qi
			}
			// Bytes up to the match are spent; a shift of 64 keeps none.
			keep &= ^uint64(0) << (bits.TrailingZeros64(t) + 1)
		}
	}
	return qi
}

// forwardASCII is forward (without positions) for an ASCII path.
func forwardASCII(t *term, path []byte) bool {
	q := t.bytes
	pos := 0
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '/' && i+1 < len(q):
			next := q[i+1]
			for {
				k := bytes.IndexByte(path[pos:], '/')
				if k < 0 {
					return false
				}
				pos += k + 1
				if pos < len(path) && lowerASCII[path[pos]] == next {
					break
				}
			}
			i++
		case i == 0 && t.lead:
			for pos < len(path) && (lowerASCII[path[pos]] != c || pos > 0 && path[pos-1] != '/') {
				pos++
			}
			if pos >= len(path) {
				return false
			}
		default:
			for pos < len(path) && lowerASCII[path[pos]] != c {
				pos++
			}
			if pos >= len(path) {
				return false
			}
		}
		pos++
	}
	return true
}

// view is a path being scanned, in the form the generic code takes.
type view[E unit] struct {
	fold, orig []E
	base       int
}
