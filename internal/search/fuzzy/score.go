package fuzzy

import (
	"math"
	"unsafe"
)

// Scoring. Each matched character earns scoreMatch plus a bonus for where
// it lands; gaps between matched characters cost gapStart for the first
// skipped character and gapExtend for each further one. The bonuses follow
// fzf's FuzzyMatchV2 family, retuned for paths:
//
//   - bonusSegment: the first character of a path segment (after '/' or at
//     the start) — the strongest signal in a path;
//   - bonusWord: the first character after '.', '_', '-', ' ' and the like;
//   - bonusCamel: an upper-case letter after a lower-case one, or a digit
//     after a non-digit;
//   - bonusNonWord: matching a punctuation character itself;
//   - inside a run of consecutive matches every character earns at least
//     bonusConsec and at least the bonus of the run's first character, so
//     "rout" in "router" scores like four boundary characters;
//   - the first character of each term counts its bonus firstCharMultiplier
//     times, because the first typed character is the most deliberate;
//   - bonusBase for every character matched inside the file name (the last
//     segment), so a match in the name beats the same match in a directory;
//   - bonusCase when the original character equals the typed one exactly
//     (matching is case-insensitive; case only breaks near-ties);
//   - per term, bonusExact when the file name or its stem (the name without
//     its last extension) equals the term's last part, else bonusPrefix when
//     the file name starts with it.
const (
	scoreMatch          = 16
	gapStart            = 3
	gapExtend           = 1
	bonusSegment        = 10
	bonusWord           = 8
	bonusCamel          = 7
	bonusNonWord        = 8
	bonusConsec         = 4
	bonusMax            = bonusSegment // no character earns more before doubling
	firstCharMultiplier = 2
	bonusBase           = 3
	bonusCase           = 1
	bonusExact          = 24
	bonusPrefix         = 12

	// maxCells bounds the DP matrix; larger alignments are scored greedily
	// (still a valid alignment, just not necessarily the best one).
	maxCells = 1 << 18
)

const neg = math.MinInt32 / 4 // "no alignment"; far from overflow with penalties added

var bonusTable [numClasses][numClasses]int32

func init() {
	for prev := range numClasses {
		for cur := range numClasses {
			bonusTable[prev][cur] = bonusFor(uint8(prev), uint8(cur))
		}
	}
}

func bonusFor(prev, cur uint8) int32 {
	word := cur == clsLower || cur == clsUpper || cur == clsLetter || cur == clsDigit
	if word {
		switch prev {
		case clsSep:
			return bonusSegment
		case clsNonWord:
			return bonusWord
		}
		if prev == clsLower && cur == clsUpper || prev != clsDigit && cur == clsDigit {
			return bonusCamel
		}
		return 0
	}
	return bonusNonWord
}

// unit is an element of the text being matched: the bytes of an ASCII path
// (folded on the fly through lowerASCII) or the folded runes of a decomposed
// path (on which lowerASCII is the identity).
type unit interface{ ~byte | ~rune }

func foldAt[E unit](text []E, j int) rune {
	c := rune(text[j])
	if c < 0x80 {
		return rune(lowerASCII[c])
	}
	return c
}

func classAt[E unit](orig []E, j int) uint8 {
	c := rune(orig[j])
	if c < 0x80 {
		return classASCII[c]
	}
	return classOf(c)
}

// asBytes views a string's bytes without copying; the view is only read.
func asBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s)) //nolint:gosec // read-only view of an immutable string
}

// Slab holds the scratch memory of one matching goroutine, so that matching
// allocates nothing per path. The zero value is ready; a Slab must not be
// used by two goroutines at once.
type Slab struct {
	u     units
	lo    []int32
	hi    []int32
	pos   []int32
	bonus []int32
	m     []int32
	x     []int32
	fb    []int8
	dir   []uint8
	hits  []int32 // matched unit indexes of all terms, for ranges
	ascii bool    // the last path given to raw was ASCII
}

func grow32(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n, n+n/4)
	}
	return s[:n]
}

// baseStart returns the index of the first unit of the file name.
func baseStart[E unit](text []E) int {
	for j := len(text) - 1; j >= 0; j-- {
		if text[j] == '/' {
			return j + 1
		}
	}
	return 0
}

// nameBonus is the exact/prefix bonus of term part last against the file
// name text[base:].
func nameBonus[E unit](text []E, base int, last []rune) int32 {
	name := text[base:]
	if len(last) == 0 || len(name) < len(last) {
		return 0
	}
	for i, r := range last {
		if foldAt(name, i) != r {
			return 0
		}
	}
	if len(name) == len(last) {
		return bonusExact
	}
	// The stem is the name up to its last '.', unless that dot starts it.
	if name[len(last)] == '.' {
		dot := len(name) - 1
		for dot > 0 && name[dot] != '.' {
			dot--
		}
		if dot == len(last) {
			return bonusExact
		}
	}
	return bonusPrefix
}

// baseReach is how many of the term's last units can be matched inside the
// file name: matched name characters always form a suffix of the term, and
// that suffix must be a subsequence of the name.
func baseReach[E unit](text []E, base int, q []rune) int32 {
	i := len(q) - 1
	for j := len(text) - 1; j >= base && i >= 0; j-- {
		if foldAt(text, j) == q[i] {
			i--
		}
	}
	return int32(len(q) - 1 - i)
}

// upperBound bounds the raw score t can reach on text: every character at
// the best bonus, the first one doubled, plus the bonuses that depend on the
// path, computed exactly or bounded by baseReach.
func upperBound[E unit](t *term, text []E) int32 {
	base := baseStart(text)
	return t.ubBase + nameBonus(text, base, t.last) + bonusBase*baseReach(text, base, t.fold)
}

// forward finds the leftmost alignment of t in text (greedy, which is exact
// for feasibility: a '/' and the anchored unit after it move as one token).
// It fills lo when lo is non-nil and reports whether t matches.
func forward[E unit](t *term, text []E, lo []int32) bool {
	q := t.fold
	m, n := len(q), len(text)
	pos := 0
	for i := 0; i < m; {
		c := q[i]
		switch {
		case c == '/' && i+1 < m:
			next := q[i+1]
			for pos+1 < n && !(text[pos] == '/' && foldAt(text, pos+1) == next) {
				pos++
			}
			if pos+1 >= n {
				return false
			}
			if lo != nil {
				lo[i], lo[i+1] = int32(pos), int32(pos+1)
			}
			pos += 2
			i += 2
			continue
		case i == 0 && t.lead:
			for pos < n && !(foldAt(text, pos) == c && (pos == 0 || text[pos-1] == '/')) {
				pos++
			}
		default:
			for pos < n && foldAt(text, pos) != c {
				pos++
			}
		}
		if pos >= n {
			return false
		}
		if lo != nil {
			lo[i] = int32(pos)
		}
		pos++
		i++
	}
	return true
}

// backward fills hi with the rightmost alignment; t must match text.
func backward[E unit](t *term, text []E, hi []int32) {
	q := t.fold
	pos := len(text) - 1
	for i := len(q) - 1; i >= 0; {
		c := q[i]
		switch {
		case i >= 1 && q[i-1] == '/':
			for pos >= 1 && !(foldAt(text, pos) == c && text[pos-1] == '/') {
				pos--
			}
			hi[i], hi[i-1] = int32(pos), int32(pos-1)
			pos -= 2
			i -= 2
			continue
		case i == 0 && t.lead:
			for pos > 0 && !(foldAt(text, pos) == c && text[pos-1] == '/') {
				pos--
			}
		default:
			for pos > 0 && foldAt(text, pos) != c {
				pos--
			}
		}
		hi[i] = int32(pos)
		pos--
		i--
	}
}

// Decision bits of a DP cell.
const (
	dirConsec = 1 // M took the consecutive predecessor
	dirXFromM = 2 // X opened its gap right after a match
)

// align scores t on text (fold and orig are the same slice for ASCII
// paths) and, when withPos, leaves the matched unit indexes in s.pos. It
// reports false when t does not match.
//
// The DP keeps two rows of states per query unit i: M[i][j], the best score
// with unit i matched exactly at j, and X[i][j], the best score with unit i
// matched before j and text[..j] skipped since (an open gap). Rows are
// restricted to the band between the leftmost and rightmost feasible
// positions of each unit, so most cells are never touched.
func align[E unit](t *term, s *Slab, fold, orig []E, withPos bool) (int32, bool) {
	m := len(t.fold)
	s.lo = grow32(s.lo, m)
	s.hi = grow32(s.hi, m)
	if !forward(t, fold, s.lo) {
		return 0, false
	}
	backward(t, fold, s.hi)
	lo, hi := s.lo, s.hi
	base := baseStart(fold)
	off := int(lo[0])
	w := int(hi[m-1]) - off + 1
	var raw int32
	if w*m > maxCells {
		raw = alongGreedy(t, s, fold, orig, base, withPos)
	} else {
		raw = alignDP(t, s, fold, orig, base, off, w, withPos)
	}
	return raw + nameBonus(fold, base, t.last), true
}

func alignDP[E unit](t *term, s *Slab, fold, orig []E, base, off, w int, withPos bool) int32 {
	m := len(t.fold)
	lo, hi := s.lo, s.hi
	cells := w * m
	s.m = grow32(s.m, cells)
	s.x = grow32(s.x, cells)
	if cap(s.fb) < cells {
		s.fb = make([]int8, cells, cells+cells/4)
		s.dir = make([]uint8, cells, cells+cells/4)
	}
	s.fb, s.dir = s.fb[:cells], s.dir[:cells]
	s.bonus = grow32(s.bonus, w)
	prev := clsSep
	if off > 0 {
		prev = classAt(orig, off-1)
	}
	for c := range w {
		cur := classAt(orig, off+c)
		b := bonusTable[prev][cur]
		if off+c >= base {
			b += bonusBase << 8 // carried in the high bits: the name bonus is not a position bonus
		}
		s.bonus[c] = b
		prev = cur
	}
	M, X, FB, D, B := s.m, s.x, s.fb, s.dir, s.bonus

	best, bestJ := int32(neg), -1
	for i := range m {
		q := t.fold[i]
		qo := t.orig[i]
		row := i * w
		prow := row - w
		from, to := int(lo[i]), int(hi[i])
		end := to
		if i < m-1 {
			end = int(hi[i+1]) - 1
		}
		anchored := t.anchored[i]
		prevM, prevX := int32(neg), int32(neg)
		for j := from; j <= end; j++ {
			c := j - off
			// X[i][j]: the gap after unit i grows by text[j-1]... as seen at j.
			xv, xd := int32(neg), uint8(0)
			if prevM > neg {
				xv, xd = prevM-gapStart, dirXFromM
			}
			if prevX > neg && prevX-gapExtend > xv {
				xv, xd = prevX-gapExtend, 0
			}
			mv, mfb, md := int32(neg), int8(0), uint8(0)
			if j <= to && foldAt(fold, j) == q {
				bb := B[c]
				b := bb & 0xff
				gain := int32(scoreMatch) + bb>>8
				if rune(orig[j]) == qo {
					gain += bonusCase
				}
				if i == 0 {
					if !anchored || j == 0 || fold[j-1] == '/' {
						mv, mfb = gain+firstCharMultiplier*b, int8(b)
					}
				} else {
					if pm := M[prow+c-1]; pm > neg {
						f := int32(FB[prow+c-1])
						bc := b
						if b >= bonusWord && b > f {
							f = b
						} else {
							bc = max(b, f, bonusConsec)
						}
						mv, mfb, md = pm+gain+bc, int8(f), dirConsec
					}
					if !anchored {
						if px := X[prow+c-1]; px > neg && px+gain+b > mv {
							mv, mfb, md = px+gain+b, int8(b), 0
						}
					}
				}
			}
			M[row+c], X[row+c], FB[row+c], D[row+c] = mv, xv, mfb, md|xd
			prevM, prevX = mv, xv
			if i == m-1 && mv >= best && mv > neg {
				best, bestJ = mv, j
			}
		}
	}
	if withPos {
		s.pos = grow32(s.pos, m)
		i, j := m-1, bestJ
		for {
			s.pos[i] = int32(j)
			if i == 0 {
				break
			}
			c := j - off
			if D[i*w+c]&dirConsec != 0 {
				i, j = i-1, j-1
				continue
			}
			k := c - 1
			for D[(i-1)*w+k]&dirXFromM == 0 {
				k--
			}
			i, j = i-1, k-1+off
		}
	}
	return best
}

// alongGreedy scores the leftmost alignment (already in s.lo) with the same
// per-character rules as the DP, for alignments too large for it.
func alongGreedy[E unit](t *term, s *Slab, fold, orig []E, base int, withPos bool) int32 {
	var score, fb int32
	prevJ := -2
	for i, pj := range s.lo {
		j := int(pj)
		prev := clsSep
		if j > 0 {
			prev = classAt(orig, j-1)
		}
		b := bonusTable[prev][classAt(orig, j)]
		gain := int32(scoreMatch)
		if j >= base {
			gain += bonusBase
		}
		if rune(orig[j]) == t.orig[i] {
			gain += bonusCase
		}
		switch {
		case i == 0:
			score += gain + firstCharMultiplier*b
			fb = b
		case j == prevJ+1:
			bc := b
			if b >= bonusWord && b > fb {
				fb = b
			} else {
				bc = max(b, fb, bonusConsec)
			}
			score += gain + bc
		default:
			score += gain + b - gapStart - gapExtend*int32(j-prevJ-2)
			fb = b
		}
		prevJ = j
	}
	if withPos {
		s.pos = append(s.pos[:0], s.lo...)
	}
	return score
}
