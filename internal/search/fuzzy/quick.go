package fuzzy

import (
	"encoding/binary"
	"math/bits"
)

// The quick scan: most paths of a large list match a short or misspelt
// query and still fall far below the k-th best score. For a pattern whose
// terms are all plain ASCII (no '/') or end with '/' (matched, and scored,
// in the directories alone, once per directory), an ASCII path costs here
// at most one backward pass over its file name per term: what the directory part
// allows is computed once per directory (lists keep a directory's files
// together) and kept in the slab's dirCache. The pass decides the match
// exactly (a plain term matches when the most of its head the directories
// take greedily and the most of its tail the name takes add up to the
// term) and bounds the score; only paths whose bound reaches the threshold
// go on to rank.

// quickTerms reports whether p's terms all run on the quick scan: plain
// ASCII terms of up to 64 units, and ASCII terms ending with '/', which
// only the directories can hold.
func quickTerms(p *Pattern) bool {
	if len(p.terms) == 0 {
		return false
	}
	for _, t := range p.terms {
		if !t.dirOnly && (!t.plain || len(t.bytes) > 64) {
			return false
		}
	}
	return true
}

// dirScore is the score of a term ending with '/' in directory part dir
// (its whole alignment lies there, so the file name changes nothing), or
// neg when it does not match. It is used as a bound: for paths so long
// that align scores them greedily, the greedy score is lower.
func dirScore(t *term, s *Slab, dir []byte) int32 {
	raw, ok := align(t, s, dir, dir, len(dir), false)
	if !ok {
		return neg
	}
	return raw
}

// singleTerms reports whether p's terms are all single characters whose
// presence the mask proves.
func singleTerms(p *Pattern) bool {
	for _, t := range p.terms {
		if !t.single {
			return false
		}
	}
	return true
}

// quick decides whether the ASCII path whose file name has nl bytes
// (nl < nameLenMax) matches p (p.quick) and, if so, bounds its score; once
// the bound is proved below thr it returns a value below thr at once.
func (s *Slab) quick(p *Pattern, path string, nl int, thr int32) (match bool, bound int32) {
	if p.soloPlain {
		return s.quickSolo(p, path, nl, thr)
	}
	b := asBytes(path)
	base, first := nameStart(b, nl)
	name := b[base:]
	// Every unit at the top bonus and in the name (ubName): only a name
	// starting like a term can lift that to thr (firstLift).
	ub := p.ubName + p.firstLift[first]
	if ub < thr && p.singles {
		return true, ub // the mask proved the match
	}
	dts := s.dirTerms(p, b[:base])
	s.reach = grow32(s.reach, len(p.terms))
	var fixed int32 // the bounds of the terms matched in the directories
	for i, t := range p.terms {
		dt := &dts[i]
		if t.dirOnly {
			if !dt.feasOK {
				dt.dirScore, dt.feasOK = dirScore(t, s, b[:base]), true
			}
			if dt.dirScore == neg {
				return false, 0
			}
			fixed += dt.dirScore
			continue
		}
		if !dt.feasOK {
			dt.feas, dt.feasOK = subsequenceFrom(t.words, 0, b[:base]), true
		}
		r := int32(-1) // not read yet
		if dt.feas < len(t.words) {
			// The directories leave a tail of the term to the name.
			r = int32(reachFrom(t.words, b, base))
			if dt.feas+int(r) < len(t.words) {
				return false, 0
			}
		}
		s.reach[i] = r
	}
	if ub < thr {
		return true, ub
	}
	// The exact and prefix name bonuses aside (nb), the bound depends on
	// nothing but the directories, the reaches and the name's first
	// character: once known for these, it is not computed again.
	var nb int32
	for _, t := range p.terms {
		if !t.dirOnly && first == t.bytes[0] {
			nb += nameBonus(name, 0, t.last)
		}
	}
	var memo *memoEntry
	if p.memoSize > 0 {
		if len(s.memo) < p.memoSize {
			s.memo = make([]memoEntry, p.memoSize)
		}
		key := int(p.memoFirst[first])
		for i, t := range p.terms {
			if t.dirOnly {
				continue
			}
			if s.reach[i] < 0 {
				s.reach[i] = int32(reachFrom(t.words, b, base))
			}
			key += p.memoStride[i] * int(s.reach[i])
		}
		memo = &s.memo[key]
		if memo.gen == s.memoGen && memo.ub+nb < thr {
			return true, memo.ub + nb
		}
	}
	if memo == nil || memo.gen != s.memoGen || !memo.final {
		var final bool
		ub, final = s.quickLevels(p, dts, b, base, nl, first, fixed, thr-nb)
		if memo != nil {
			*memo = memoEntry{gen: s.memoGen, ub: ub, final: final}
		}
		ub += nb
		if ub < thr {
			return true, ub
		}
	} else {
		ub = memo.ub + nb
	}
	// Last, what the name's characters allow (see nameBound), unless the
	// directories alone reach thr (nameBound never goes below them) or
	// the name starts with a term (the bound of that run is exact).
	dirsAlone := fixed
	for i, t := range p.terms {
		if t.dirOnly {
			continue
		}
		if first == t.bytes[0] && len(name) >= len(t.bytes) && foldedPrefix(name, t.bytes) {
			return true, ub
		}
		dirsAlone += max(dts[i].tightest(t)[0], neg)
	}
	if dirsAlone >= ub {
		return true, ub
	}
	tight := fixed
	for i, t := range p.terms {
		if !t.dirOnly {
			tight += s.nameBound(t, dts[i].tightest(t), int(s.reach[i]), name)
		}
	}
	return true, min(ub, tight)
}

// nameStart returns where the file name of ASCII path b (nl bytes long)
// starts and its first character, folded (0 for none; '/' never is).
func nameStart(b []byte, nl int) (base int, first byte) {
	base = len(b) - nl
	if nl > 0 {
		first = lowerASCII[b[base]] & 0x7f
	}
	return base, first
}

// quickSolo is quick for a pattern of one plain term, the commonest and
// the one whose keystrokes cost most: the same steps, without the loops
// over terms (a few percent of every path's cost).
func (s *Slab) quickSolo(p *Pattern, path string, nl int, thr int32) (match bool, bound int32) {
	b := asBytes(path)
	base, first := nameStart(b, nl)
	name := b[base:]
	ub := p.ubName + p.firstLift[first]
	t := p.terms[0]
	m := len(t.words)
	// The directories of the path before, most of the time.
	if c := &s.dc; c.p != p || len(c.dir) != base || string(c.dir) != path[:base] {
		s.dirTerms(p, b[:base])
	}
	dt := &s.dc.terms[0]
	if !dt.feasOK {
		dt.feas, dt.feasOK = subsequenceFrom(t.words, 0, b[:base]), true
	}
	r := -1 // not read yet
	if dt.feas < m {
		r = reachFrom(t.words, b, base)
		if dt.feas+r < m {
			return false, 0
		}
	}
	if ub < thr {
		return true, ub
	}
	var nb int32 // see quick
	if first == t.bytes[0] {
		nb = nameBonus(name, 0, t.last)
	}
	if len(s.memo) < p.memoSize {
		s.memo = make([]memoEntry, p.memoSize)
	}
	key, stride := int(p.memoFirst[first]), p.memoStride[0]
	if r < 0 {
		if e := &s.memo[key+stride*min(m, nl)]; e.gen == s.memoGen && e.ub+nb < thr {
			return true, e.ub + nb
		}
		r = reachFrom(t.words, b, base)
	}
	s.reach = grow32(s.reach, 1)
	s.reach[0] = int32(r)
	switch memo := &s.memo[key+stride*r]; {
	case memo.gen == s.memoGen && memo.ub+nb < thr:
		return true, memo.ub + nb
	case memo.gen == s.memoGen && memo.final:
		ub = memo.ub + nb
	default:
		var final bool
		ub, final = s.quickLevels(p, s.dc.terms, b, base, nl, first, 0, thr-nb)
		*memo = memoEntry{gen: s.memoGen, ub: ub, final: final}
		if ub += nb; ub < thr {
			return true, ub
		}
	}
	if first == t.bytes[0] && nl >= m && foldedPrefix(name, t.bytes) {
		return true, ub
	}
	split := dt.tightest(t)
	if split[0] >= ub {
		return true, ub
	}
	return true, min(ub, s.nameBound(t, split, r, name))
}

// memoEntry is a memoised quick bound: final when no level of quick
// would lower it, else only known to fall below the threshold it met.
type memoEntry struct {
	gen   uint32
	ub    int32
	final bool
}

// quickLevels is the rest of quick once the path is known to match and
// its first bound reached thr: tighter bounds level by level until one
// falls below thr, without the exact and prefix name bonuses. final
// reports that the bound is the tightest quick has.
func (s *Slab) quickLevels(p *Pattern, dts []dirTerm, b []byte, base, nl int, first byte, fixed, thr int32) (ub int32, final bool) {
	// First without the directories: every unit there at the top bonus,
	// and a term the directories hold whole taken as reaching as far into
	// the name as its length allows, which spares reading the name when
	// even that stays below thr (the bound grows with the reach).
	ub = fixed
	unread := false
	for i, t := range p.terms {
		if t.dirOnly {
			continue
		}
		r := int(s.reach[i])
		if r < 0 {
			r, unread = min(len(t.bytes), nl), true
		}
		b, _ := quickTerm(t, t.split, t.off, r, first)
		ub += b
	}
	if ub < thr {
		return ub, false
	}
	// A term whose bound then comes from the name alone keeps it.
	s.tight = grow32(s.tight, len(p.terms))
	if unread {
		ub = fixed
	}
	dirsMatter := false
	for i, t := range p.terms {
		if t.dirOnly {
			continue
		}
		if s.reach[i] < 0 {
			s.reach[i] = int32(reachFrom(t.words, b, base))
		}
		b, dirs := quickTerm(t, t.split, t.off, int(s.reach[i]), first)
		if unread {
			ub += b
		}
		s.tight[i] = b
		if !dirs {
			s.tight[i] = neg
		}
		dirsMatter = dirsMatter || dirs
	}
	if !dirsMatter {
		return ub, true
	}
	// Then with the directories' part bounded from their occurrences
	// (level 1) and, if that is not enough, from a DP over them (level 2).
	for level := 1; level <= 2 && ub >= thr; level++ {
		ub = fixed
		for i, t := range p.terms {
			if t.dirOnly {
				continue
			}
			split, off := t.split, t.off
			if s.tight[i] != neg {
				split, off = s.dirSplits(t, &dts[i], b, base, level)
			}
			v, _ := quickTerm(t, split, off, int(s.reach[i]), first)
			ub += v
		}
	}
	return ub, ub >= thr
}

// dirSplits returns the split bounds of plain term t for the directories
// b[:base] at a level of quick: 1 from fillSplit, 2 from fillHead, unless
// the directories hold the term as a run from a segment start: that
// alignment earns every bonus there is, so nothing tighter would lower
// the bound.
func (s *Slab) dirSplits(t *term, dt *dirTerm, b []byte, base, level int) (split, off []int32) {
	if level == 2 {
		if !dt.chainOK {
			s.pos = grow32(s.pos, len(t.fold))
			dt.chain, dt.chainOK = chains(t, s, b, b, base, 0, base), true
		}
		if dt.chain == neg {
			if !dt.headOK {
				dt.fillHead(t, b[:base], s)
			}
			return dt.hsplit, dt.hoff
		}
	}
	if !dt.splitOK {
		dt.fillSplit(t, b[:base])
	}
	return dt.split, dt.off
}

// fillHead is fillSplit with the directories' part of each split bounded
// by headBounds instead of runBound: tighter, and costlier.
func (dt *dirTerm) fillHead(t *term, dir []byte, s *Slab) {
	m := len(t.bytes)
	s.head = grow32(s.head, m)
	headBounds(t, dir, s)
	dt.hsplit = grow32(dt.hsplit, m)
	dt.hoff = grow32(dt.hoff, m+1)
	splitBounds(t, dt.hsplit, dt.hoff, func(k int) (int32, bool) {
		return s.head[k], s.head[k] != neg
	})
	dt.headOK = true
}

// headBounds sets s.head[k], for each k < len(t), to a bound on the
// bonuses (the first unit's twice), less the gaps, of the term's first
// len(t)-k units aligned in dir, less (for k > 0) the extension of the gap
// from the last of them to the end of dir; neg when they do not fit. It is
// the DP of sparseDP over dir with the run's first bonus kept as the most
// any alignment ending at a cell has, beside the best score: each is a
// bound, so their combination is one.
func headBounds(t *term, dir []byte, s *Slab) {
	m, n := len(t.bytes), len(dir)
	s.hrow = grow32(s.hrow, 4*n)
	prev, prevFB, cur, curFB := s.hrow[:n], s.hrow[n:2*n], s.hrow[2*n:3*n], s.hrow[3*n:]
	for i := range m {
		c := t.bytes[i]
		gapBest := int32(neg) // max over j' <= j-2 of prev[j'] + gapExtend*j'
		rowBest := int32(neg)
		k := m - 1 - i
		prevCls := clsSep
		for j := range n {
			if i > 0 && j >= 2 && prev[j-2] != neg {
				gapBest = max(gapBest, prev[j-2]+gapExtend*int32(j-2))
			}
			ch := dir[j] & 0x7f
			cls := classASCII[ch]
			bonus := bonusTable[prevCls][cls]
			prevCls = cls
			cur[j], curFB[j] = neg, 0
			if lowerASCII[ch] != c {
				continue
			}
			if i == 0 {
				cur[j], curFB[j] = firstCharMultiplier*bonus, bonus
			} else {
				if j > 0 && prev[j-1] != neg {
					cur[j] = prev[j-1] + max(bonus, prevFB[j-1], bonusConsec)
					curFB[j] = max(bonus, prevFB[j-1])
				}
				if gapBest != neg {
					if v := gapBest - gapExtend*int32(j-2) - gapStart + bonus; v > cur[j] {
						cur[j] = v
					}
					curFB[j] = max(curFB[j], bonus)
				}
			}
			if cur[j] == neg {
				continue
			}
			v := cur[j]
			if k > 0 {
				v -= gapExtend * int32(n-j-2)
			}
			rowBest = max(rowBest, v)
		}
		s.head[k] = rowBest
		prev, prevFB, cur, curFB = cur, curFB, prev, prevFB
	}
}

// quickTerm is the quick bound of plain term t on a file name whose first
// character is first and which holds the term's last r units, from the
// split bounds made by fillSplit (or, for any directories, compileTerm),
// without the exact and prefix name bonuses. dirs reports that the bound
// comes from an alignment with units in the directories (else tighter
// split bounds cannot lower it).
func quickTerm(t *term, split, off []int32, r int, first byte) (bound int32, dirs bool) {
	m := len(t.bytes)
	inDirs := off[r] // r = m: off includes the name-only alignment, counted below too
	inName := int32(neg)
	if r == m {
		inName = t.allInName + int32(m+1)*bonusOffSegment
	}
	// The name's first character earns the top bonus: so do the units
	// of a run that starts there.
	for rows := t.rowsFold[first] &^ (1<<(m-r) - 1); rows != 0; rows &= rows - 1 {
		k := m - bits.TrailingZeros64(rows)
		if k == m {
			inName = t.allInName + int32(m+1)*bonusMax
		} else if split[k] != neg {
			inDirs = max(inDirs, split[k]+int32(k)*bonusMax)
		}
	}
	return max(inDirs, inName), inDirs > inName
}

// foldedPrefix reports whether name starts with the folded ASCII term
// bytes q (len(name) >= len(q)).
func foldedPrefix(name, q []byte) bool {
	for i, c := range q {
		if lowerASCII[name[i]] != c {
			return false
		}
	}
	return true
}

// tightest returns the tightest split bounds of plain term t computed so
// far for these directories (see dirSplits), or those for any directories.
func (dt *dirTerm) tightest(t *term) []int32 {
	switch {
	case dt.headOK:
		return dt.hsplit
	case dt.splitOK:
		return dt.split
	}
	return t.split
}

// nameBound is quickTerm with what the file name's characters allow, from
// one pass over it: for each unit of term t, the best bonus among its
// occurrences past the name's first character (bhi), and whether it
// follows an occurrence of the unit before it anywhere (pairs). No
// position past the first earns the segment bonus, so a unit there earns
// at most its bhi when it starts a run, and when it continues one (only
// possible with its pair) at most bonusConsec or the bhi of a unit that
// may have started that run. A run that starts at the name's first
// character and that the name does not continue to the term's end is cut
// after l units, l up to their common prefix: the next unit starts
// another run past a gap. split are split bounds for the directories and
// r the term's reach in the name.
func (s *Slab) nameBound(t *term, split []int32, r int, name []byte) int32 {
	m := len(t.bytes)
	if len(name) == 0 {
		return max(split[0], neg) // r = 0: the directories hold the term
	}
	s.bhi = grow32(s.bhi, 3*m+1)
	bhi, near, suf := s.bhi[:m], s.bhi[m:2*m], s.bhi[2*m:]
	fill(bhi, neg)
	fill(near, neg)
	var pairs uint64
	first := lowerASCII[name[0]] & 0x7f
	prevCls, prevRows := classASCII[name[0]&0x7f], t.rowsFold[first]
	for at, c := range name[1:] {
		c &= 0x7f
		cls, rows := classASCII[c], t.rowsFold[c]
		if rows != 0 {
			b := bonusTable[prevCls][cls]
			pairs |= rows & (prevRows << 1)
			for u := rows; u != 0; u &= u - 1 {
				j := bits.TrailingZeros64(u)
				bhi[j] = max(bhi[j], b)
				near[j] = max(near[j], b-gapExtend*int32(at+1))
			}
		}
		prevCls, prevRows = cls, rows
	}
	// suf[j]: the most units j.. earn past the first character, unit j
	// counted as continuing a run where its pair allows (neg when one of
	// them does not occur there).
	suf[m] = 0
	run := int32(neg) // the most the first unit of a run holding unit j-1 earned
	for j := range m {
		e := bhi[j]
		if e != neg && j > 0 && pairs>>j&1 != 0 && run != neg {
			e = max(e, run, bonusConsec)
			run = max(run, bhi[j])
		} else {
			run = bhi[j]
		}
		suf[j] = e
	}
	for j := m - 1; j >= 0; j-- {
		if suf[j] == neg || suf[j+1] == neg {
			suf[j] = neg
		} else {
			suf[j] += suf[j+1]
		}
	}
	// startAt is what units j.. earn with unit j starting a run past the
	// first character (so not continuing one).
	startAt := func(j int) int32 {
		if bhi[j] == neg || suf[j+1] == neg {
			return neg
		}
		return bhi[j] + suf[j+1]
	}
	inDirs := int32(neg)
	if split[0] != neg {
		inDirs = split[0]
	}
	for k := 1; k <= min(r, m-1); k++ {
		if v := startAt(m - k); v != neg && split[k] != neg {
			inDirs = max(inDirs, split[k]+v)
		}
	}
	inName := int32(neg)
	if r == m {
		if v := startAt(0); v != neg {
			inName = t.allInName + v + bhi[0] // the first unit's bonus counts twice
		}
	}
	for rows := t.rowsFold[first] &^ (1<<(m-r) - 1); rows != 0; rows &= rows - 1 {
		i := bits.TrailingZeros64(rows)
		k := m - i
		common := 1
		for common < k && common < len(name) && lowerASCII[name[common]] == t.bytes[i+common] {
			common++
		}
		v := int32(k) * bonusMax
		if common < k {
			v = neg
			for l := 1; l <= common; l++ {
				if w := startAt(i + l); w != neg {
					// Unit i+l lands past position l: the gap grows
					// with the distance (near).
					w -= bhi[i+l] - min(bhi[i+l], near[i+l]+gapExtend*int32(l+1))
					v = max(v, int32(l)*bonusMax+w-gapStart)
				}
			}
			if v == neg {
				continue
			}
		}
		if i == 0 {
			inName = max(inName, t.allInName+v+bonusMax)
		} else if split[k] != neg {
			inDirs = max(inDirs, split[k]+v)
		}
	}
	bound := max(inDirs, inName)
	if bound != neg && first == t.bytes[0] {
		bound += nameBonus(name, 0, t.last)
	}
	return bound
}

// reachFrom is baseReach on an ASCII path b whose file name starts at
// base, for q as subsequenceFrom takes it: how many of q's last units the
// name holds in order. It reads eight bytes at a time from the end, the
// first of them from the directories when the name is short.
func reachFrom(q []uint64, b []byte, base int) int {
	qi := len(q) - 1
	for end := len(b); end > base; end -= 8 {
		var w uint64
		keep := ^uint64(0)
		switch {
		case end >= 8:
			w = binary.LittleEndian.Uint64(b[end-8:])
			if lo := end - 8; lo < base {
				keep <<= 8 * (base - lo) // bytes before the name
			}
		default: // a path shorter than eight bytes
			for k := end - 1; k >= base; k-- {
				w = w<<8 | uint64(b[k])
			}
			w <<= 8 * (8 - (end - base))
			keep <<= 8 * (8 - (end - base))
		}
		w = foldWord(w)
		for {
			t := zeroBytes(w^q[qi]) & keep
			if t == 0 {
				break
			}
			qi--
			if qi < 0 {
				return len(q)
			}
			// Bytes from the match on are spent.
			keep &= 1<<((63-bits.LeadingZeros64(t))&^7) - 1
		}
	}
	return len(q) - 1 - qi
}

// fillSplit prepares the quick bound of plain term t for the files of
// directory part dir: see splitBounds.
func (dt *dirTerm) fillSplit(t *term, dir []byte) {
	m := len(t.bytes)
	if !dt.occOK && !dt.lastOK {
		// Both from one pass over the directories.
		dt.occ, dt.last = grow32(dt.occ, m), grow32(dt.last, m)
		fill(dt.occ, -1)
		fill(dt.last, -1)
		dt.pairs = dirOccurrences(t, dir, dt.occ, dt.last)
		dt.occOK, dt.lastOK = true, true
	}
	if !dt.occOK {
		dt.occ = grow32(dt.occ, m)
		fill(dt.occ, -1)
		dt.pairs, dt.occOK = occurrencesASCII(t, dir, len(dir), dt.occ, dt.occ), true
	}
	dt.split = grow32(dt.split, m)
	dt.off = grow32(dt.off, m+1)
	last := dt.lastIn(t, dir)
	splitBounds(t, dt.split, dt.off, func(k int) (int32, bool) {
		p, ok := runBound(dt.occ[:m-k], true, ^dt.pairs&^1&(1<<m-1))
		if ok && k > 0 {
			// The name starts after the '/' ending dir.
			p -= gapExtend * (int32(len(dir)) - last[m-k-1] - 2)
		}
		return p, ok
	})
	dt.splitOK = true
}

// splitBounds fills split and off for plain term t. split[k], for k <
// len(t) units matched in the file name, bounds the term's score without
// the name's position bonuses and name bonus: the gains of every unit, the
// bonusBase of the k in the name, gapStart between the two parts, and what
// dirPart(k) allows the first len(t)-k units in the directories (ok false
// when they cannot all be there: split[k] is then neg). off[r] is the best
// bound for a name holding r of the term's last units whose first
// character starts no run: every unit in the name then earns at most
// bonusOffSegment.
func splitBounds(t *term, split, off []int32, dirPart func(k int) (int32, bool)) {
	m := len(t.bytes)
	gains := int32(m)*scoreMatch + t.caseMax
	best := int32(neg)
	for k := range m {
		v := int32(neg)
		if p, ok := dirPart(k); ok {
			v = gains + p + bonusBase*int32(k)
			if k > 0 {
				v -= gapStart
			}
			best = max(best, v+int32(k)*bonusOffSegment)
		}
		split[k] = v
		off[k] = best
	}
	off[m] = max(best, t.allInName+int32(m+1)*bonusOffSegment)
}

// anyDirs is splitBounds' dirPart for any directories: every unit there
// at the top bonus, the first counted twice.
func anyDirs(t *term) func(k int) (int32, bool) {
	return func(k int) (int32, bool) {
		return int32(len(t.bytes)-k+1) * bonusMax, true
	}
}

// dirOccurrences is occurrencesASCII on directories alone that also sets
// last[i] to the last position of unit i in them (as lastOccurrences).
func dirOccurrences(t *term, dir []byte, occ, last []int32) (pairs uint64) {
	var prevRows uint64
	prev := clsSep
	for j, c := range dir {
		c &= 0x7f
		cls := classASCII[c]
		rows := t.rowsFold[c]
		if rows != 0 {
			pairs |= rows & (prevRows << 1)
			b := bonusTable[prev][cls]
			for r := rows; r != 0; r &= r - 1 {
				i := bits.TrailingZeros64(r)
				occ[i] = max(occ[i], b)
				last[i] = int32(j) //nolint:gosec // a path's length fits
			}
		}
		prevRows, prev = rows, cls
	}
	return pairs
}

// lastIn returns, for each unit of t, its last position in dir (-1 where
// it does not occur), computed once per directory.
func (dt *dirTerm) lastIn(t *term, dir []byte) []int32 {
	if !dt.lastOK {
		dt.last = grow32(dt.last, len(t.fold))
		lastOccurrences(t, dir, dt.last)
		dt.lastOK = true
	}
	return dt.last
}
