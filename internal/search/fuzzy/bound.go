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
func termBound[E unit](t *term, s *Slab, text, orig []E, base int, name int32, reach int) (bound int32, exact bool) {
	m, n := len(t.fold), len(text)
	ub0 := t.ubBase + name + bonusBase*int32(reach)
	if n*m > maxCells || m > 64 {
		return ub0, false // align scores greedily there: no claims
	}
	// Chains first: they are few (one check per segment start) and often
	// settle the score at once.
	s.pos = grow32(s.pos, m)
	chain := int32(neg)
	for j := 0; j+m <= n; j = nextSegment(text, j) {
		if foldAt(text, j) == t.fold[0] && isRun(t, text, j) {
			for i := range m {
				s.pos[i] = int32(j + i)
			}
			chain = max(chain, scoreAlong(t, orig, base, s.pos[:m])+name)
		}
	}
	if chain >= ub0-gapStart {
		return chain, true
	}
	s.occ = grow32(s.occ, 2*m)
	for i := range s.occ {
		s.occ[i] = -1
	}
	dir, nameOcc := s.occ[:m], s.occ[m:]
	var pairs, prevRows uint64
	for j := range n {
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
		if q, ok := runBound(nameOcc[m-r:], false, breaks>>(m-r)); ok {
			best = max(best, common+bonusBase*int32(r)-gapStart+p+q)
		}
	}
	bound = min(bound, best)
	return bound, bound == chain
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

// reachBound is a cheap bound on p's score that reads only the file name:
// every character at the top bonus, with as many of each term's last
// characters in the name as its reach. It fills s.name and s.reach for
// bounds.
func reachBound[E unit](p *Pattern, s *Slab, v view[E]) int32 {
	n := len(p.terms)
	s.name = grow32(s.name, n)
	s.reach = grow32(s.reach, n)
	var sum int32
	for i, t := range p.terms {
		name := nameBonus(v.fold, v.base, t.last)
		reach := baseReach(v.fold, v.base, t.fold)
		s.name[i], s.reach[i] = name, reach
		sum += t.ubBase + name + bonusBase*reach
	}
	return sum
}

// bounds fills s.ub and s.state (termExact or termDP) for every term of p
// and returns the sum of the bounds. reachBound must have run on v.
func bounds[E unit](p *Pattern, s *Slab, v view[E]) int32 {
	n := len(p.terms)
	s.ub = grow32(s.ub, n)
	if cap(s.state) < n {
		s.state = make([]uint8, n)
	}
	s.state = s.state[:n]
	var sum int32
	for i, t := range p.terms {
		b, exact := termBound(t, s, v.fold, v.orig, v.base, s.name[i], int(s.reach[i]))
		s.ub[i], s.state[i] = b, termDP
		if exact {
			s.state[i] = termExact
		}
		sum += b
	}
	return sum
}

// Per-term states in Slab.state.
const (
	termDP    = iota // the DP must run
	termExact        // the score is the bound
)
