package fuzzy

import (
	"math"
	"math/bits"
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
//   - bonusCase when a character typed in upper case (or any form other
//     than its folded one) matches exactly that form (matching is
//     case-insensitive; case only breaks near-ties, and a query typed in
//     lower case expresses no preference, as with smart case);
//   - per term, bonusExact when the file name or its stem (the name without
//     its last extension) equals the term's last part, else bonusPrefix when
//     the file name starts with it.
const (
	scoreMatch   = 16
	gapStart     = 3
	gapExtend    = 1
	bonusSegment = 10
	bonusWord    = 8
	bonusCamel   = 7
	bonusNonWord = 8
	bonusConsec  = 4
	bonusMax     = bonusSegment // no character earns more before doubling
	// bonusOffSegment is the most a character earns anywhere but at the
	// start of a path segment.
	bonusOffSegment     = max(bonusWord, bonusCamel, bonusNonWord)
	firstCharMultiplier = 2
	bonusBase           = 3
	bonusCase           = 1
	bonusExact          = 24
	bonusPrefix         = 12

	// maxCells bounds the cells of one DP; a larger problem (only possible
	// with pathological paths and queries) is scored along the leftmost
	// alignment instead: still a valid alignment, maybe not the best.
	maxCells = 1 << 16
)

const neg = math.MinInt32 / 4 // "no alignment"; far from overflow with penalties added

var bonusTable [numClasses][numClasses]int32

func init() {
	for prev := range numClasses {
		for cur := range numClasses {
			bonusTable[prev][cur] = bonusFor(prev, cur)
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
	lo    []int32 // leftmost feasible position of each term unit
	pos   []int32 // matched positions of the last aligned term
	cnt   []int32 // DP: number of cells in each row
	cpos  []int32 // DP cells, row i from i*len(text): text position
	cmax  []int32 // DP cells: best score over the cell's states
	carg  []int32 // DP cells: the state holding it
	cm    []int32 // DP states (runStates per cell): best score with the unit matched here
	cprev []int32 // DP states: predecessor state, -1 in row 0
	ub    []int32 // per-term upper bounds of the path being scanned
	name  []int32 // per-term name bonus (exact, prefix) of that path
	tight []int32 // per-term bound from the file name alone (reachBound)
	reach []int32 // per-term count of last units that fit in its file name
	occ   []int32 // per term unit: best bonus among its occurrences
	last  []int32 // per term unit: last position in the directories
	first []int32 // per term unit: first position in the file name
	head  []int32 // per split of a term: headBounds
	hrow  []int32 // headBounds' rows
	state []uint8 // per-term: termDP or termExact
	hits  []int32 // matched unit indexes of all terms, for ranges
	dc    dirCache
	// memo holds quick's bounds of a solo term for the directory part dc
	// holds, by reach, for names starting with a character not in the
	// term (see Slab.quick); entries of another generation than memoGen
	// are empty.
	memo    []memoEntry
	memoGen uint32
	bhi     []int32 // nameBound's best bonus of each unit past the name's start, and sums
	ascii   bool    // the last path given to raw was ASCII
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
			for pos+1 < n && (text[pos] != '/' || foldAt(text, pos+1) != next) {
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
			for pos < n && (foldAt(text, pos) != c || pos > 0 && text[pos-1] != '/') {
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

// bonusAt is the position bonus of text[j].
func bonusAt[E unit](orig []E, j int) int32 {
	prev := clsSep
	if j > 0 {
		prev = classAt(orig, j-1)
	}
	return bonusTable[prev][classAt(orig, j)]
}

// gainAt is what matching unit i of t at j earns before position bonuses.
func gainAt[E unit](t *term, orig []E, base, i, j int) int32 {
	g := int32(scoreMatch)
	if j >= base {
		g += bonusBase
	}
	if t.cased[i] && rune(orig[j]) == t.orig[i] {
		g += bonusCase
	}
	return g
}

// align scores t on text (fold and orig are the same slice for ASCII
// paths; base is where the file name starts) and, when withPos, leaves the
// matched positions in s.pos. It reports false when t does not match.
func align[E unit](t *term, s *Slab, fold, orig []E, base int, withPos bool) (int32, bool) {
	m, n := len(t.fold), len(fold)
	s.lo = grow32(s.lo, m)
	if !forward(t, fold, s.lo) {
		return 0, false
	}
	var raw int32
	if n*m > maxCells {
		raw = scoreAlong(t, orig, base, s.lo)
		if withPos {
			s.pos = append(s.pos[:0], s.lo...)
		}
	} else {
		collectCells(t, s, fold)
		raw = sparseDP(t, s, orig, base, withPos)
	}
	return raw + nameBonus(fold, base, t.last), true
}

// collectCells lists, for each unit i of t, the positions where it can
// match: same folded character, at or after its leftmost feasible position
// (s.lo), early enough to leave room for the rest of the term, and after a
// '/' when anchored. Row i's cells are s.cpos[i*n:][:s.cnt[i]]. One pass
// over the text serves all rows through the term's character-to-rows masks.
func collectCells[E unit](t *term, s *Slab, fold []E) {
	m, n := len(t.fold), len(fold)
	s.cnt = grow32(s.cnt, m)
	clear(s.cnt)
	s.cpos = grow32(s.cpos, m*n)
	if m > 64 {
		for i, q := range t.fold {
			for j := int(s.lo[i]); j <= n-m+i; j++ {
				if foldAt(fold, j) == q && (!t.anchored[i] || j == 0 || fold[j-1] == '/') {
					s.cpos[i*n+int(s.cnt[i])] = int32(j)
					s.cnt[i]++
				}
			}
		}
		return
	}
	for j := int(s.lo[0]); j < n; j++ {
		rows := t.rowsOf(foldAt(fold, j))
		for rows != 0 {
			i := bits.TrailingZeros64(rows)
			rows &= rows - 1
			if j < int(s.lo[i]) || j > n-m+i || t.anchored[i] && j > 0 && fold[j-1] != '/' {
				continue
			}
			s.cpos[i*n+int(s.cnt[i])] = int32(j)
			s.cnt[i]++
		}
	}
}

// A run's first bonus (fb) takes one of four values; the DP keeps the best
// score for each, because a lower score with a higher fb can win later in
// the run. With them the DP is exact: it finds the best alignment.
const runStates = 4

var (
	runBonus   = [runStates]int32{0, bonusCamel, bonusWord, bonusSegment}
	runStateOf = func() (t [bonusMax + 1]int32) {
		for b := range t {
			switch {
			case b >= bonusSegment:
				t[b] = 3
			case b >= bonusWord:
				t[b] = 2
			case b >= bonusCamel:
				t[b] = 1
			}
		}
		return t
	}()
)

// sparseDP finds the best alignment over the cells of collectCells. A
// cell's score is the best over its two kinds of predecessor in the row
// above: the cell right before it (a consecutive run, which carries the
// run's first bonus) or any cell at least two positions before it (a gap
// of g characters costs gapStart+gapExtend*(g-1), so the best such
// predecessor is a running maximum of score+position). Ties prefer runs.
func sparseDP[E unit](t *term, s *Slab, orig []E, base int, withPos bool) int32 {
	m, n := len(t.fold), len(s.cpos)/len(t.fold)
	s.cm = grow32(s.cm, m*n*runStates)
	s.cprev = grow32(s.cprev, m*n*runStates)
	s.cmax = grow32(s.cmax, m*n)
	s.carg = grow32(s.carg, m*n)
	pos, M, P, cmax, carg, cnt := s.cpos, s.cm, s.cprev, s.cmax, s.carg, s.cnt
	for c := range int(cnt[0]) {
		j := int(pos[c])
		b := bonusAt(orig, j)
		st := int32(c*runStates) + runStateOf[b]
		for k := range runStates {
			M[c*runStates+k] = neg
		}
		M[st], P[st] = gainAt(t, orig, base, 0, j)+firstCharMultiplier*b, -1
		cmax[c], carg[c] = M[st], st
	}
	for i := 1; i < m; i++ {
		anchored := t.anchored[i]
		p0 := (i - 1) * n
		p1 := p0 + int(cnt[i-1])
		gapPtr, consPtr := p0, p0
		bestGap, bestGapState := int32(neg), int32(-1)
		for c := i * n; c < i*n+int(cnt[i]); c++ {
			j := pos[c]
			for ; gapPtr < p1 && pos[gapPtr] <= j-2; gapPtr++ {
				if v := cmax[gapPtr]; v > neg && v+pos[gapPtr] >= bestGap {
					bestGap, bestGapState = v+pos[gapPtr], carg[gapPtr]
				}
			}
			for consPtr < p1 && pos[consPtr] < j-1 {
				consPtr++
			}
			gain := gainAt(t, orig, base, i, int(j))
			b := bonusAt(orig, int(j))
			cell := c * runStates
			for k := range runStates {
				M[cell+k] = neg
			}
			if consPtr < p1 && pos[consPtr] == j-1 && cmax[consPtr] > neg {
				for k := range int32(runStates) {
					pst := int32(consPtr*runStates) + k
					pm := M[pst]
					if pm <= neg {
						continue
					}
					f, bc := runBonus[k], b
					if b >= bonusWord && b > f {
						f = b
					} else {
						bc = max(b, f, bonusConsec)
					}
					st := int32(cell) + runStateOf[f]
					if v := pm + gain + bc; v > M[st] {
						M[st], P[st] = v, pst
					}
				}
			}
			if !anchored && bestGapState >= 0 {
				st := int32(cell) + runStateOf[b]
				if v := bestGap - j - 1 + gain + b; v > M[st] {
					M[st], P[st] = v, bestGapState
				}
			}
			// The cell's best state; ties go to the higher run bonus.
			cmax[c], carg[c] = neg, -1
			for k := runStates - 1; k >= 0; k-- {
				if M[cell+k] > cmax[c] {
					cmax[c], carg[c] = M[cell+k], int32(cell+k)
				}
			}
		}
	}
	best, bestState := int32(neg), int32(-1)
	for c := (m - 1) * n; c < (m-1)*n+int(cnt[m-1]); c++ {
		if cmax[c] > neg && cmax[c] >= best {
			best, bestState = cmax[c], carg[c]
		}
	}
	if withPos {
		s.pos = grow32(s.pos, m)
		for i, st := m-1, bestState; i >= 0; i-- {
			s.pos[i] = pos[st/runStates]
			st = P[st]
		}
	}
	return best
}

// scoreAlong scores one given alignment (positions of every unit) with the
// same per-character rules as the DP.
func scoreAlong[E unit](t *term, orig []E, base int, at []int32) int32 {
	var score, fb int32
	prevJ := -2
	for i, pj := range at {
		j := int(pj)
		b := bonusAt(orig, j)
		gain := gainAt(t, orig, base, i, j)
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
	return score
}
