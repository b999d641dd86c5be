package fuzzy

import (
	"cmp"
	"context"
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Source is the list of paths a search scans, addressed by index. Mask(i)
// must be MaskOf(Path(i)); storing it costs 8 bytes per path and lets most
// paths be rejected without reading them. Implementations must be safe for
// concurrent reads and must not change while a search runs.
type Source interface {
	Len() int
	Path(i int) string
	Mask(i int) uint64
}

// Run is a stretch of consecutive paths a Source keeps together: paths
// Base to Base+len(Ends)-1, path Base+j being Text[Ends[j-1]:Ends[j]]
// (from 0 for j = 0), Masks[j] its mask.
type Run struct {
	Base  int
	Text  string
	Ends  []uint32
	Masks []uint64
}

// RunSource is a Source that hands the scan its storage a run at a time,
// sparing it two calls per path.
type RunSource interface {
	Source
	// RunAt returns the run that holds index i.
	RunAt(i int) Run
}

// Options tune TopK.
type Options struct {
	// K is how many hits to return (default 20).
	K int
	// Workers is how many goroutines scan (default GOMAXPROCS).
	Workers int
	// Within, if not nil, restricts the scan to these indexes: pass the
	// Matches of a previous search whose pattern the new one Refines (and
	// with the same Source and Accept) to narrow instead of rescanning.
	Within *Set
	// Collect asks for Outcome.Matches, the set of every matching index.
	Collect bool
	// Accept, if not nil, is called for each matching index (from several
	// goroutines at once); a path it rejects does not count as a match.
	Accept func(i int) bool
	// Seeds are indexes likely to rank high, such as the hits of the
	// previous keystroke: when K of them match, their scores set the
	// threshold before the scan starts, so that it rejects more at once.
	// Any indexes may be given; the result does not depend on them.
	Seeds []int
}

// Hit is one ranked path.
type Hit struct {
	// Index is the path's index in the Source.
	Index int
	Result
}

// Outcome is the answer of TopK.
type Outcome struct {
	// Hits are the best K matches, best first: higher Raw, then the shorter
	// path (in bytes), then the lexically smaller path.
	Hits []Hit
	// Total is how many paths matched (and were accepted).
	Total int
	// Matches holds every matching index when Options.Collect was set.
	Matches *Set
}

// chunkSize is how many indexes a worker claims at a time. It is a multiple
// of 64 so that each worker owns whole words of the Matches set, and small
// enough that a cancelled search stops within well under a millisecond and
// that the workers share the work where it gathers (a narrowed scan's
// previous matches, a directory full of near ties).
const chunkSize = 1024

// earlyBlock is how many indexes a worker scans between rankings while
// fewer than k paths are ranked (a multiple of 64, as chunkSize).
const earlyBlock = 256

// DefaultK is the number of hits TopK returns when Options.K is zero.
const DefaultK = 20

// TopK ranks src against p and returns the best K hits with their ranges,
// the number of matches and, optionally, the set of matches. Ranges are
// computed for the K hits only. It returns ctx's error, wrapped, if ctx is
// done before the scan ends; it checks ctx every chunkSize paths and has
// stopped every worker when it returns.
//
// With an empty pattern every path matches with score 0, ordered by length
// then lexically.
func TopK(ctx context.Context, p *Pattern, src Source, opt Options) (Outcome, error) {
	k := opt.K
	if k <= 0 {
		k = DefaultK
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	n := src.Len()
	chunks := (n + chunkSize - 1) / chunkSize
	workers = max(1, min(workers, chunks))
	var matches *Set
	if opt.Collect {
		matches = NewSet(n)
	}
	var (
		next   atomic.Int64
		floor  atomic.Int32
		wg     sync.WaitGroup
		states = make([]*scanState, workers)
	)
	defer func() {
		for _, st := range states {
			st.release()
		}
	}()
	// Scores can be negative (long gaps): until k paths are known to score
	// something, the floor rejects nothing.
	floor.Store(neg)
	if len(opt.Seeds) >= k && !p.Empty() {
		floor.Store(seedFloor(p, src, k, &opt))
	}
	top := newBest(k, src)
	for w := range workers {
		st := statePool.Get().(*scanState)
		st.slab.dc = dirCache{on: true, terms: st.slab.dc.terms} // made for another pattern
		states[w] = st
		st.p, st.src, st.k, st.opt, st.matches, st.floor, st.best = p, src, k, &opt, matches, &floor, top
		st.runs, _ = src.(RunSource)
		wg.Go(func() {
			for {
				c := int(next.Add(1) - 1)
				if c >= chunks {
					break
				}
				if ctx.Err() != nil {
					return
				}
				lo, hi := c*chunkSize, min((c+1)*chunkSize, n)
				for lo < hi {
					// Until k paths are ranked every path is a
					// candidate: rank some early, so that the
					// threshold rises within the first chunks.
					end := hi
					if st.best.worstRaw() == neg && floor.Load() == neg {
						end = min(hi, lo+earlyBlock)
					}
					st.scan(lo, end)
					st.rankCandidates(ctx)
					lo = end
				}
			}
		})
	}
	wg.Wait()
	// The candidates left after the scan, best bound first, shared by
	// every worker: the one that scanned the crowded chunks does not rank
	// them alone.
	later := states[0].cands[:0]
	for _, st := range states {
		later = append(later, st.later...)
	}
	states[0].cands = later
	shared := sortByBound(states[0].sorted, later)
	states[0].sorted = shared
	var nextCand atomic.Int64
	for _, st := range states {
		wg.Go(func() {
			st.rankShared(ctx, shared, &nextCand)
			st.resolve(ctx)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Outcome{}, fmt.Errorf("fuzzy: search for %q stopped: %w", p.query, err)
	}
	out := Outcome{Matches: matches}
	for _, st := range states {
		out.Total += st.total
	}
	all := top.heap
	slices.SortFunc(all, func(a, b entry) int { return compareEntries(src, a, b) })
	if len(all) > k {
		all = all[:k]
	}
	var slab Slab
	out.Hits = make([]Hit, 0, len(all))
	for _, e := range all {
		h := Hit{Index: int(e.idx)}
		if !p.Empty() {
			res, ok := p.Match(src.Path(int(e.idx)), &slab)
			if !ok || res.Raw != e.raw {
				// Unreachable: Match runs the very computation the scan ran.
				return Outcome{}, fmt.Errorf("fuzzy: internal error: rescoring %q disagrees", src.Path(int(e.idx)))
			}
			h.Result = res
		}
		out.Hits = append(out.Hits, h)
	}
	return out, nil
}

// seedFloor returns the k-th best score among the distinct seeds that match
// p (and that Accept takes): k paths score at least that much. It returns
// neg when fewer than k seeds match.
func seedFloor(p *Pattern, src Source, k int, opt *Options) int32 {
	var slab Slab
	seen := make(map[int]bool, len(opt.Seeds))
	var scores []int32
	for _, i := range opt.Seeds {
		if i < 0 || i >= src.Len() || seen[i] {
			continue
		}
		seen[i] = true
		raw, ok := p.raw(src.Path(i), &slab, false)
		if ok && (opt.Accept == nil || opt.Accept(i)) {
			scores = append(scores, raw)
		}
	}
	if len(scores) < k {
		return neg
	}
	slices.SortFunc(scores, func(a, b int32) int { return cmp.Compare(b, a) })
	return scores[k-1]
}

// entry is a heap element; the path itself is fetched only to break ties.
type entry struct {
	raw    int32
	length int32
	idx    int32
}

// compareEntries orders best first.
func compareEntries(src Source, a, b entry) int {
	if c := cmp.Compare(b.raw, a.raw); c != 0 {
		return c
	}
	if c := cmp.Compare(a.length, b.length); c != 0 {
		return c
	}
	if c := strings.Compare(src.Path(int(a.idx)), src.Path(int(b.idx))); c != 0 {
		return c
	}
	return cmp.Compare(a.idx, b.idx)
}

// statePool recycles workers' states: their slabs, heaps and queues keep
// their capacity from one search to the next.
var statePool = sync.Pool{New: func() any { return new(scanState) }}

// release returns st to the pool, keeping only its buffers.
func (st *scanState) release() {
	*st = scanState{slab: st.slab, deferred: st.deferred[:0], lower: st.lower[:0],
		cands: st.cands[:0], sorted: st.sorted[:0], later: st.later[:0]}
	statePool.Put(st)
}

// scanState is one worker's state: its slab, its count and queues, and
// the best entries all workers share.
type scanState struct {
	// floor is the best heap minimum of all workers: at least k paths
	// score that much, so a path bounded below it cannot enter.
	floor    *atomic.Int32
	deferred []entry // phase 1 leftovers: raw holds the bound
	// cands are the quick scan's paths that may enter, raw holding their
	// quick bound, ranked best bound first (see rankCandidates); sorted
	// is scratch for that; later waits for rankShared.
	cands, sorted, later []entry
	lower                []int32 // min-heap of the k best lower bounds of deferred paths
	p                    *Pattern
	src                  Source
	runs                 RunSource // src, when it is one
	k                    int
	opt                  *Options
	matches              *Set
	slab                 Slab
	best                 *best
	total                int
}

func (st *scanState) scan(lo, hi int) {
	if st.runs == nil {
		st.scanEach(lo, hi)
		return
	}
	var r Run // the run of the last index read
	in := func(i int) bool { return i >= r.Base && i < r.Base+len(r.Ends) }
	p := st.p
	visit := func(i int) {
		if !in(i) {
			r = st.runs.RunAt(i)
		}
		j := i - r.Base
		mask := r.Masks[j]
		if mask&p.mask != p.mask {
			return
		}
		start := uint32(0)
		if j > 0 {
			start = r.Ends[j-1]
		}
		st.visit(i, mask, r.Text[start:r.Ends[j]])
	}
	if st.opt.Within == nil {
		for i := lo; i < hi; i++ {
			visit(i)
		}
		return
	}
	st.opt.Within.each(lo, hi, visit)
}

// scanEach is scan for a Source that is not a RunSource: a call per path.
func (st *scanState) scanEach(lo, hi int) {
	p := st.p
	visit := func(i int) {
		if mask := st.src.Mask(i); mask&p.mask == p.mask {
			st.visit(i, mask, st.src.Path(i))
		}
	}
	if st.opt.Within == nil {
		for i := lo; i < hi; i++ {
			visit(i)
		}
		return
	}
	st.opt.Within.each(lo, hi, visit)
}

// visit ranks path i, whose mask has every bit of the pattern's.
func (st *scanState) visit(i int, mask uint64, path string) {
	p := st.p
	if nl := int(mask >> nameLenShift & nameLenMax); p.quick && mask&(1<<bitNonASCII) == 0 && nl < nameLenMax {
		thr := st.best.threshold(st.floor.Load(), len(path))
		if p.singles && nl > 0 && p.ubName+p.firstLift[lowerASCII[path[len(path)-nl]]&0x7f] < thr {
			// The mask proved the match and the bound is too low: no
			// need to look further (Slab.quick's first step, inlined).
			st.count(i)
			return
		}
		match, ub := st.slab.quick(p, path, nl, thr)
		if !match || !st.count(i) {
			return
		}
		e := entry{raw: ub, length: int32(len(path)), idx: int32(i)}
		if ub >= thr && st.best.mayEnter(ub, e) {
			st.cands = append(st.cands, e)
		}
		return
	}
	if !p.feasible(path, mask, &st.slab) || !st.count(i) {
		return
	}
	e := entry{length: int32(len(path)), idx: int32(i)}
	if p.Empty() {
		st.offer(e)
		return
	}
	if p.ascii && mask&(1<<bitNonASCII) == 0 && p.ubName < st.floor.Load() && !st.nameMayLift(path, mask) {
		return
	}
	st.rankPath(e, path, mask, true)
}

// count counts matching path i, unless Options.Accept rejects it, and
// reports whether it counted.
func (st *scanState) count(i int) bool {
	if st.opt.Accept != nil && !st.opt.Accept(i) {
		return false
	}
	st.total++
	if st.matches != nil {
		st.matches.words[i>>6] |= 1 << (i & 63)
	}
	return true
}

// nameMayLift is reachBound's first step inlined for ASCII paths, where
// most paths end: with every unit at the top bonus and in the file name
// (Pattern.ubName), only the exact and prefix name bonuses can lift the
// path to the floor, and each needs the name to start with the first
// unit of the term's last part.
func (st *scanState) nameMayLift(path string, mask uint64) bool {
	nl := int(mask >> nameLenShift & nameLenMax)
	if nl == nameLenMax {
		return true // a saturated length: let rank find the name
	}
	ub := st.p.ubName
	if nl > 0 {
		first := lowerASCII[path[len(path)-nl]]
		for _, t := range st.p.terms {
			if len(t.lastBytes) > 0 && nl >= len(t.lastBytes) && first == t.lastBytes[0] {
				ub += bonusExact
			}
		}
	}
	return ub >= st.floor.Load()
}

// rankPath scores a matching path into the heap; see rank.
func (st *scanState) rankPath(e entry, path string, mask uint64, deferOK bool) {
	if mask&(1<<bitNonASCII) != 0 {
		u := &st.slab.u
		if !deferOK {
			u.decomposeUnits(path)
		}
		rank(st, e, path, view[rune]{fold: u.fold, orig: u.orig, base: baseStart(u.fold)}, deferOK)
		return
	}
	b := asBytes(path)
	base := len(path) - int(mask>>nameLenShift&nameLenMax)
	if mask>>nameLenShift&nameLenMax == nameLenMax {
		base = baseStart(b)
	}
	rank(st, e, path, view[byte]{fold: b, orig: b, base: base}, deferOK)
}

// rank scores a matching path into the heap unless bounds prove it cannot
// enter; each bound is tighter and costlier than the last. A path whose
// terms are all perfect has its exact score at once. Others need the DP:
// in phase 1 (deferOK) they are only queued with their bound, and resolve
// runs their DPs at the end, best bound first, when the heap's threshold is
// as high as it gets, so most never run.
func rank[E unit](st *scanState, e entry, path string, v view[E], deferOK bool) {
	p := st.p
	floor := st.floor.Load()
	s := &st.slab
	thr := max(floor, st.best.worstRaw()) // a path bounded below thr cannot enter
	if ub := reachBound(p, s, v, thr); ub < thr || !st.best.mayEnter(ub, e) {
		return
	}
	ub := bounds(p, s, v, thr)
	if ub < floor || !st.best.mayEnter(ub, e) {
		return
	}
	if !slices.Contains(s.state, termDP) {
		e.raw = ub
		st.offer(e)
		return
	}
	if deferOK {
		e.raw = ub
		st.deferred = append(st.deferred, e)
		offerLower(st, p, v, ub)
		return
	}
	// Replace bounds by exact scores, stopping as soon as the path is out.
	for i, t := range p.terms {
		if s.state[i] == termExact {
			continue
		}
		raw, _ := align(t, s, v.fold, v.orig, v.base, false)
		ub += raw - s.ub[i]
		if !st.best.mayEnter(ub, e) {
			return
		}
	}
	e.raw = ub
	st.offer(e)
}

// offerLower raises the floor while the DPs wait: the score along the
// leftmost alignment of each term (exact terms at their score) is a real
// alignment's score, so at most the path's own. Once k deferred paths have
// such lower bounds, no path bounded below the least of them can enter, and
// the cheap bounds reject most of the rest. Only a path whose bound could
// raise the k-th lower bound pays for the alignment.
func offerLower[E unit](st *scanState, p *Pattern, v view[E], ub int32) {
	if len(st.lower) == st.k && ub <= st.lower[0] {
		return
	}
	s := &st.slab
	var lb int32
	for i, t := range p.terms {
		if s.state[i] == termExact {
			lb += s.ub[i]
			continue
		}
		m := len(t.fold)
		s.lo = grow32(s.lo, m)
		if !forward(t, v.fold, s.lo) {
			return // unreachable: the path matched
		}
		lb += scoreAlong(t, v.orig, v.base, s.lo) + s.name[i]
	}
	h := st.lower
	if len(h) < st.k {
		h = append(h, lb)
		for j := len(h) - 1; j > 0 && h[j] < h[(j-1)/2]; j = (j - 1) / 2 {
			h[j], h[(j-1)/2] = h[(j-1)/2], h[j]
		}
	} else if lb > h[0] {
		h[0] = lb
		for j := 0; ; {
			l, r, least := 2*j+1, 2*j+2, j
			if l < len(h) && h[l] < h[least] {
				least = l
			}
			if r < len(h) && h[r] < h[least] {
				least = r
			}
			if least == j {
				break
			}
			h[j], h[least] = h[least], h[j]
			j = least
		}
	} else {
		return
	}
	st.lower = h
	if len(h) == st.k {
		st.publishFloor(h[0])
	}
}

// rankCandidates ranks the quick scan's candidates of one chunk best
// bound first: the best k of them at once, so that the threshold rises
// during the scan, and the rest that may still enter after the scan
// (st.later, see rankShared).
func (st *scanState) rankCandidates(ctx context.Context) {
	if len(st.cands) == 0 {
		return
	}
	st.sorted = sortByBound(st.sorted, st.cands)
	st.cands = st.cands[:0]
	ranked := 0
	for n, c := range st.sorted {
		if n%256 == 255 && ctx.Err() != nil {
			return
		}
		path, ok, stop := st.admit(c)
		if stop {
			break
		}
		if !ok {
			continue
		}
		if ranked == st.k {
			st.later = append(st.later, c)
			continue
		}
		ranked++
		st.rankPath(entry{length: c.length, idx: c.idx}, path, st.src.Mask(int(c.idx)), false)
	}
}

// rankShared ranks the candidates every worker left after the scan,
// sorted best bound first, claiming them a block at a time with next.
func (st *scanState) rankShared(ctx context.Context, sorted []entry, next *atomic.Int64) {
	const block = 16
	for {
		lo := int(next.Add(block) - block)
		if lo >= len(sorted) || ctx.Err() != nil {
			return
		}
		for _, c := range sorted[lo:min(lo+block, len(sorted))] {
			path, ok, stop := st.admit(c)
			if stop {
				return // sorted: nothing later can enter either
			}
			if ok {
				st.rankPath(entry{length: c.length, idx: c.idx}, path, st.src.Mask(int(c.idx)), false)
			}
		}
	}
}

// admit reports whether candidate c (raw holding its bound) may still
// enter the heap, with its path; stop reports that it cannot and that no
// candidate sorted after it can either.
func (st *scanState) admit(c entry) (path string, ok, stop bool) {
	thr := max(st.floor.Load(), st.best.worstRaw())
	if c.raw < thr {
		// Bounds from 0 to the top bucket's have buckets of their own:
		// below such a one, everything later is as low.
		return "", false, c.raw >= 0 && c.raw < candBuckets-1
	}
	path = st.src.Path(int(c.idx))
	if !st.best.mayEnter(c.raw, c) {
		return "", false, false
	}
	return path, true, false
}

// candBuckets bounds the counting sort of candidates: bounds above it
// share the top bucket, and bounds up to 0 the bottom one.
const candBuckets = 1 << 10

// sortByBound returns cands sorted best bound first (a counting sort,
// stable), in dst's memory.
func sortByBound(dst, cands []entry) []entry {
	var hist [candBuckets + 1]int32
	bucket := func(ub int32) int32 { return candBuckets - 1 - min(max(ub, 0), candBuckets-1) }
	for _, c := range cands {
		hist[bucket(c.raw)+1]++
	}
	for b := 1; b <= candBuckets; b++ {
		hist[b] += hist[b-1]
	}
	dst = slices.Grow(dst[:0], len(cands))[:len(cands)]
	for _, c := range cands {
		b := bucket(c.raw)
		dst[hist[b]] = c
		hist[b]++
	}
	return dst
}

// resolve runs the DPs that phase 1 deferred, best bound first, and stops
// when the bounds fall below the heap's threshold.
func (st *scanState) resolve(ctx context.Context) {
	// Most bounds fell below the threshold while phase 1 went on: drop
	// them before sorting the rest.
	d := st.deferred[:0]
	for _, e := range st.deferred {
		if e.raw >= max(st.floor.Load(), st.best.worstRaw()) {
			d = append(d, e)
		}
	}
	slices.SortFunc(d, func(a, b entry) int {
		if c := cmp.Compare(b.raw, a.raw); c != 0 {
			return c
		}
		if c := cmp.Compare(a.length, b.length); c != 0 {
			return c
		}
		return cmp.Compare(a.idx, b.idx)
	})
	for n, e := range d {
		if n%256 == 255 && ctx.Err() != nil {
			return
		}
		if e.raw < max(st.floor.Load(), st.best.worstRaw()) {
			break // sorted: every later bound is as low
		}
		i := int(e.idx)
		st.rankPath(entry{length: e.length, idx: e.idx}, st.src.Path(i), st.src.Mask(i), false)
	}
}

// offer puts e into the shared best entries if it ranks among them, and
// raises the floor to their minimum once there are k.
func (st *scanState) offer(e entry) {
	if worst, full := st.best.offer(e); full {
		st.publishFloor(worst)
	}
}

// publishFloor raises the shared floor to m: k paths are known to score at
// least m.
func (st *scanState) publishFloor(m int32) {
	for {
		cur := st.floor.Load()
		if m <= cur || st.floor.CompareAndSwap(cur, m) {
			return
		}
	}
}

// Set is a set of path indexes (a bitset over [0, n)).
type Set struct {
	words []uint64
	n     int
}

// NewSet returns an empty set for indexes in [0, n).
func NewSet(n int) *Set {
	return &Set{words: make([]uint64, (n+63)/64), n: n}
}

// Add puts i in the set; it must not run concurrently with other methods.
func (s *Set) Add(i int) { s.words[i>>6] |= 1 << (i & 63) }

// Has reports whether i is in the set.
func (s *Set) Has(i int) bool {
	return i >= 0 && i < s.n && s.words[i>>6]&(1<<(i&63)) != 0
}

// each calls f for every index of the set in [lo, hi), in order.
func (s *Set) each(lo, hi int, f func(i int)) {
	for w := lo / 64; w < (hi+63)/64 && w < len(s.words); w++ {
		for word := s.words[w]; word != 0; word &= word - 1 {
			i := w*64 + bits.TrailingZeros64(word)
			if i < lo {
				continue
			}
			if i >= hi {
				break
			}
			f(i)
		}
	}
}

// Count returns the number of indexes in the set.
func (s *Set) Count() int {
	c := 0
	for _, w := range s.words {
		c += bits.OnesCount64(w)
	}
	return c
}

// Cap returns n, the bound the set was made for.
func (s *Set) Cap() int { return s.n }
