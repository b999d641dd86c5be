package fuzzy

import (
	"bytes"
	"math/bits"
)

// Bounds let TopK skip the DP for almost every path. termBound looks at a
// path once and returns either the exact score of a term (without a DP) or
// an upper bound on it. Everything here is a proof obligation: a bound that
// is too low would drop a path that belongs in the top K, which the tests
// check against a brute-force ranking.

// termBound bounds t's score on text (see align for the arguments); exact
// reports that the bound is the score.
//
// In one pass over the path it gathers, for each term character, the best
// position bonus among its occurrences in the directories and in the file
// name; which adjacent term characters ever occur side by side; and the
// scores of the term's contiguous runs that start a path segment (where
// every character earns the top bonus: a chain). Then:
//
//   - every character at the top bonus, with every case matching and as many
//     characters in the name as can be (reach), bounds any alignment (ub0);
//   - any alignment other than a chain has a gap (gapStart at least) or a
//     first character off a segment start (2*bonusWord instead of
//     2*bonusSegment), so scores at most ub0-gapStart: a chain scoring that
//     much is the exact score;
//   - otherwise each of the three shapes of an alignment (all in the
//     directories, all in the name, or a prefix in the directories and a
//     suffix of r <= reach characters in the name, with a gap between unless
//     the term's '/' joins them) is bounded from the occurrence bonuses: a
//     run's first character earns at most the best bonus of its occurrences
//     in that part (the term's first character twice that), each later one
//     at most the best of its run so far or bonusConsec, and a character
//     that cannot follow the previous one directly starts a new run after a
//     gap. When the bound meets the best chain's score, that is the score:
//     the DP is exact, so it finds nothing better.
//
// need is the least score that could matter: once the bound is proved below
// it, termBound returns that bound at once, not exact.
//
// dt, when not nil, caches the parts that depend only on the directories
// (for a plain term on an ASCII path): the next path in the same
// directory reuses them and reads only its file name.
func termBound[E unit](t *term, s *Slab, text, orig []E, base int, name int32, reach int, need int32, dt *dirTerm) (bound int32, exact bool) {
	m, n := len(t.fold), len(text)
	ub0 := t.ubBase + name + bonusBase*int32(reach)
	if n*m > maxCells || m > 64 {
		return ub0, false // align scores greedily there: no claims
	}
	// Chains first: they are few (one check per segment start) and often
	// settle the score at once.
	s.pos = grow32(s.pos, m)
	var chain int32
	if dt != nil {
		// A plain term's run holds no '/': a run starting in the
		// directories ends there.
		if !dt.chainOK {
			dt.chain, dt.chainOK = chains(t, s, text, orig, base, 0, base), true
		}
		chain = max(dt.chain, chains(t, s, text, orig, base, base, n))
	} else {
		chain = chains(t, s, text, orig, base, 0, n)
	}
	if chain != neg {
		chain += name
	}
	if chain >= ub0-gapStart {
		return chain, true
	}
	if b := max(chain, ub0-gapStart); b < need {
		return b, false
	}
	s.occ = grow32(s.occ, 2*m)
	dir, nameOcc := s.occ[:m], s.occ[m:]
	var pairs uint64
	if b, ok := any(text).([]byte); ok && dt != nil {
		if !dt.occOK {
			dt.occ = grow32(dt.occ, m)
			fill(dt.occ, -1)
			dt.pairs, dt.occOK = occurrencesASCII(t, b[:base], base, dt.occ, dt.occ), true
		}
		copy(dir, dt.occ)
		fill(nameOcc, -1)
		// The '/' before the name matches no unit of a plain term: no
		// pair spans it, and the name starts after a separator.
		pairs = dt.pairs | occurrencesASCII(t, b[base:], 0, nameOcc, nameOcc)
	} else {
		fill(s.occ, -1)
		pairs = occurrences(t, text, orig, base, dir, nameOcc)
	}
	bound = max(chain, ub0-gapStart)
	breaks := ^pairs &^ 1 & (1<<m - 1)
	noChain := chain == neg && breaks == 0 // else the gap is counted already
	common := int32(m)*scoreMatch + t.caseMax + name
	best := int32(neg)
	if v, ok := runBound(dir, true, breaks); ok {
		if noChain && dir[0] == bonusSegment {
			v -= gapStart
		}
		best = max(best, common+v)
	}
	if v, ok := runBound(nameOcc, true, breaks); ok && reach == m {
		if noChain && nameOcc[0] == bonusSegment {
			v -= gapStart
		}
		best = max(best, common+bonusBase*int32(m)+v)
	}
	var last, first []int32 // of each unit, in the directories and in the name
	for r := 1; r < m && r <= reach; r++ {
		p, ok := runBound(dir[:m-r], true, breaks)
		if !ok {
			continue
		}
		if t.fold[m-r-1] == '/' {
			// The run may go on through the '/' into the name: count the
			// name's characters at the top bonus, with no gap.
			best = max(best, common+bonusBase*int32(r)+p+bonusMax*int32(r))
			continue
		}
		q, ok := runBound(nameOcc[m-r:], false, breaks>>(m-r))
		if !ok {
			continue
		}
		if last == nil {
			if b, ok := any(text).([]byte); ok && dt != nil {
				last = dt.lastIn(t, b[:base])
			} else {
				s.last = grow32(s.last, m)
				lastOccurrences(t, text[:base], s.last)
				last = s.last
			}
			s.first = grow32(s.first, m)
			firstOccurrences(t, text[base:], s.first)
			first = s.first
		}
		// The gap runs at least from the last occurrence of the unit
		// before the name's part to the first occurrence in the name of
		// the part's first unit.
		gap := first[m-r] + int32(base) - last[m-r-1] - 1
		best = max(best, common+bonusBase*int32(r)-gapStart-gapExtend*(gap-1)+p+q)
	}
	bound = min(bound, best)
	return bound, bound == chain
}

// chains returns the best score (without the name bonus) of t as a run of
// consecutive units starting a path segment at some j in [from, to); from
// must be a segment start. It returns neg when there is none.
func chains[E unit](t *term, s *Slab, text, orig []E, base, from, to int) int32 {
	m, n := len(t.fold), len(text)
	best := int32(neg)
	for j := from; j < to && j+m <= n; j = nextSegment(text, j) {
		if foldAt(text, j) == t.fold[0] && isRun(t, text, j) {
			for i := range m {
				s.pos[i] = int32(j + i)
			}
			best = max(best, scoreAlong(t, orig, base, s.pos[:m]))
		}
	}
	return best
}

func fill(s []int32, v int32) {
	for i := range s {
		s[i] = v
	}
}

// dirCache keeps what termBound learns from a path's directories for the
// next path in the same directory: lists keep a directory's files
// together, so most paths then cost only their file name.
type dirCache struct {
	on    bool // only TopK's workers use it: it trusts p's identity
	p     *Pattern
	dir   []byte
	terms []dirTerm
}

// dirTerm is the cached directory part of one term's bound.
type dirTerm struct {
	chainOK, occOK, feasOK, splitOK, lastOK, headOK bool
	feas                                            int   // units matched greedily in the directories
	dirScore                                        int32 // a term ending with '/': see dirScore
	chain                                           int32 // best chain in the directories, without the name bonus
	pairs                                           uint64
	occ                                             []int32
	split, off, last                                []int32 // see fillSplit
	hsplit, hoff                                    []int32 // see fillHead
}

// dirTerms returns the cache entries of p's terms for directory part dir,
// emptied when the pattern or the directory changed.
func (s *Slab) dirTerms(p *Pattern, dir []byte) []dirTerm {
	c := &s.dc
	if c.p == p && len(c.dir) == len(dir) && (len(dir) == 0 || &c.dir[0] == &dir[0] || bytes.Equal(c.dir, dir)) {
		c.dir = dir // the same slice next time: the feasibility test and the bounds ask in turn
		return c.terms
	}
	c.p, c.dir = p, dir
	s.memoGen++
	if s.memoGen == 0 { // wrapped: no entry may look current
		clear(s.memo)
		s.memoGen = 1
	}
	if cap(c.terms) < len(p.terms) {
		c.terms = make([]dirTerm, len(p.terms))
	}
	c.terms = c.terms[:len(p.terms)]
	for i := range c.terms {
		old := &c.terms[i]
		*old = dirTerm{occ: old.occ, split: old.split, off: old.off, last: old.last, hsplit: old.hsplit, hoff: old.hoff}
	}
	return c.terms
}

// occurrences sets dir[i] and nameOcc[i] to the best position bonus among
// the occurrences of term unit i in the directories and in the file name
// (left at -1 where it does not occur), and returns the set of units i that
// occur right after an occurrence of unit i-1 (bit i).
func occurrences[E unit](t *term, text, orig []E, base int, dir, nameOcc []int32) (pairs uint64) {
	if b, ok := any(text).([]byte); ok {
		return occurrencesASCII(t, b, base, dir, nameOcc)
	}
	var prevRows uint64
	for j := range text {
		rows := t.rowsOf(foldAt(text, j))
		if rows != 0 {
			pairs |= rows & (prevRows << 1)
			b := bonusAt(orig, j)
			occ := dir
			if j >= base {
				occ = nameOcc
			}
			for r := rows; r != 0; r &= r - 1 {
				i := bits.TrailingZeros64(r)
				occ[i] = max(occ[i], b)
			}
		}
		prevRows = rows
	}
	return pairs
}

// occurrencesASCII is occurrences on an ASCII path (text is also the
// original), with the folding inside the term's byte table and each byte's
// class carried to the next.
func occurrencesASCII(t *term, text []byte, base int, dir, nameOcc []int32) (pairs uint64) {
	var prevRows uint64
	prev := clsSep
	for j, c := range text {
		c &= 0x7f // an ASCII path: a no-op that spares the bounds checks
		cls := classASCII[c]
		rows := t.rowsFold[c]
		if rows != 0 {
			pairs |= rows & (prevRows << 1)
			b := bonusTable[prev][cls]
			occ := dir
			if j >= base {
				occ = nameOcc
			}
			for r := rows; r != 0; r &= r - 1 {
				i := bits.TrailingZeros64(r)
				occ[i] = max(occ[i], b)
			}
		}
		prevRows, prev = rows, cls
	}
	return pairs
}

// lastOccurrences sets last[i] to the last position of unit i of t in
// text, -1 where it does not occur.
func lastOccurrences[E unit](t *term, text []E, last []int32) {
	m := len(t.fold)
	fill(last, -1)
	var seen uint64
	for j := len(text) - 1; j >= 0 && seen != 1<<m-1; j-- {
		rows := t.rowsOf(foldAt(text, j)) &^ seen
		seen |= rows
		for ; rows != 0; rows &= rows - 1 {
			last[bits.TrailingZeros64(rows)] = int32(j)
		}
	}
}

// firstOccurrences sets first[i] to the first position of unit i of t in
// text, -1 where it does not occur.
func firstOccurrences[E unit](t *term, text []E, first []int32) {
	m := len(t.fold)
	fill(first, -1)
	var seen uint64
	for j := 0; j < len(text) && seen != 1<<m-1; j++ {
		rows := t.rowsOf(foldAt(text, j)) &^ seen
		seen |= rows
		for ; rows != 0; rows &= rows - 1 {
			first[bits.TrailingZeros64(rows)] = int32(j)
		}
	}
}

// nextSegment returns the start of the first path segment after j (past
// the next '/'), or len(text) when there is none.
func nextSegment[E unit](text []E, j int) int {
	if b, ok := any(text).([]byte); ok {
		k := bytes.IndexByte(b[j:], '/')
		if k < 0 {
			return len(b)
		}
		return j + k + 1
	}
	for j < len(text) && text[j] != '/' {
		j++
	}
	return j + 1
}

// isRun reports whether t occurs contiguously at text[j:].
func isRun[E unit](t *term, text []E, j int) bool {
	for i := 1; i < len(t.fold); i++ {
		if foldAt(text, j+i) != t.fold[i] {
			return false
		}
	}
	return true
}

// runBound bounds the bonuses of consecutive term characters whose best
// occurrence bonuses are occ, the first one doubled when first. A character
// whose bit is set in breaks can never follow the one before it directly:
// it starts a new run after a gap (gapStart) with its own bonus. ok is false
// when a character does not occur.
func runBound(occ []int32, first bool, breaks uint64) (int32, bool) {
	run := occ[0]
	if run < 0 {
		return 0, false
	}
	sum := run
	if first {
		sum *= firstCharMultiplier
	}
	for i, o := range occ[1:] {
		if o < 0 {
			return 0, false
		}
		if breaks&(2<<i) != 0 {
			run = o
			sum += o - gapStart
			continue
		}
		run = max(run, o)
		sum += max(run, bonusConsec)
	}
	return sum, true
}

// reachBound is a cheap bound on p's score that reads only the file name.
// It fills s.name, s.reach and s.tight (each term's bound) for bounds.
//
// A term's alignment puts some suffix of r units in the name (r <= reach,
// the most of the term's tail that fits there). Every unit earns at most the
// top bonus (ubBase), and the name adds bonusBase per unit in it, but:
//
//   - r = 0: nothing more;
//   - 0 < r < m: the units before the name end in a directory, so a gap
//     separates them from the name unless the unit before the suffix is the
//     term's '/' matching the one that starts the name: bonusBase*r, less
//     gapStart without that '/';
//   - r = m (reach == m): bonusBase*m, and the first unit earns the doubled
//     segment bonus only at the name's first position: elsewhere it earns
//     at most bonusWord, doubled.
//
// The name bonuses are checked first, with every unit counted in the name:
// that needs only the first units of the name and rejects most paths before
// baseReach reads the rest of it. A path whose bound falls below thr gets
// a return value below thr and s.tight unset.
func reachBound[E unit](p *Pattern, s *Slab, v view[E], thr int32) int32 {
	n := len(p.terms)
	s.name = grow32(s.name, n)
	s.reach = grow32(s.reach, n)
	s.tight = grow32(s.tight, n)
	var sum int32
	for i, t := range p.terms {
		name := nameBonus(v.fold, v.base, t.last)
		s.name[i] = name
		sum += t.ubBase + name + bonusBase*int32(len(t.fold))
	}
	if sum < thr {
		return sum
	}
	sum = 0
	for i, t := range p.terms {
		reach := baseReach(v.fold, v.base, t.fold)
		s.reach[i] = reach
		b := t.ubBase + s.name[i] + nameShare(t, v, reach)
		s.tight[i] = b
		sum += b
	}
	return sum
}

// nameShare bounds what matching in the file name adds to ubBase; see
// reachBound.
func nameShare[E unit](t *term, v view[E], reach int32) int32 {
	m := int32(len(t.fold))
	if reach == 0 {
		return 0
	}
	var best int32 // r = 0
	if reach == m {
		all := bonusBase * m
		if foldAt(v.fold, v.base) != t.fold[0] {
			all -= firstCharMultiplier * (bonusSegment - bonusOffSegment)
		}
		best = max(best, all)
	}
	for r := min(reach, m-1); r >= 1; r-- {
		share := bonusBase * r
		if t.fold[m-r-1] != '/' {
			share -= gapStart
		}
		best = max(best, share)
		if !t.slash {
			break // the largest r is the best without a '/'
		}
	}
	return best
}

// bounds fills s.ub and s.state (termExact or termDP) for every term of p
// and returns the sum of the bounds. reachBound must have run on v. Once
// the sum is proved below thr (a path scoring less cannot enter) it stops
// and returns a sum below thr, every remaining term left at termDP.
func bounds[E unit](p *Pattern, s *Slab, v view[E], thr int32) int32 {
	n := len(p.terms)
	s.ub = grow32(s.ub, n)
	if cap(s.state) < n {
		s.state = make([]uint8, n)
	}
	s.state = s.state[:n]
	var rest int32
	for _, b := range s.tight[:n] {
		rest += b
	}
	var dts []dirTerm
	if b, ok := any(v.fold).([]byte); ok && v.base > 0 && s.dc.on {
		dts = s.dirTerms(p, b[:v.base])
	}
	var sum int32
	for i, t := range p.terms {
		rest -= s.tight[i]
		var dt *dirTerm
		if dts != nil && t.plain {
			dt = &dts[i]
		}
		b, exact := termBound(t, s, v.fold, v.orig, v.base, s.name[i], int(s.reach[i]), thr-sum-rest, dt)
		s.state[i] = termDP
		if exact {
			s.state[i] = termExact
		} else {
			b = min(b, s.tight[i])
		}
		s.ub[i] = b
		sum += b
		if sum+rest < thr {
			for j := i + 1; j < n; j++ {
				s.ub[j], s.state[j] = s.tight[j], termDP
			}
			return sum + rest
		}
	}
	return sum
}

// Per-term states in Slab.state.
const (
	termDP    = iota // the DP must run
	termExact        // the score is the bound
)
