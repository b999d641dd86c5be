package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	"github.com/junegunn/fzf/src/algo"
	"github.com/junegunn/fzf/src/util"

	"github.com/ferry-dev/ferry/internal/search/fuzzy"
)

// topN is the number of results both engines keep, as the @ popup does.
const topN = 20

// chunk is the unit of work both engines' workers claim, for the same
// parallel structure on both sides.
const chunk = 4096

// engine answers one keystroke: the top 20 paths (best first) and the
// number of matches.
type engine interface {
	name() string
	// reset forgets any state carried between the keystrokes of a query.
	reset()
	search(query string) ([]int, int, error)
}

// ferryEngine is ferry's matcher, always scanning every path.
type ferryEngine struct {
	list    *fuzzy.List
	workers int
}

func (f *ferryEngine) name() string { return "ferry" }
func (f *ferryEngine) reset()       {}

func (f *ferryEngine) search(query string) ([]int, int, error) {
	out, err := fuzzy.TopK(context.Background(), fuzzy.Compile(query), f.list, fuzzy.Options{K: topN, Workers: f.workers})
	if err != nil {
		return nil, 0, fmt.Errorf("ferry search %q: %w", query, err)
	}
	return hitIndexes(out.Hits), out.Total, nil
}

// narrowEngine is ferry's matcher as the service runs it: when the new
// query refines the previous one, only the previous matches are scanned.
type narrowEngine struct {
	list    *fuzzy.List
	workers int
	prev    *fuzzy.Pattern
	matches *fuzzy.Set
	hits    []int
}

func (f *narrowEngine) name() string { return "ferry+narrow" }
func (f *narrowEngine) reset()       { f.prev, f.matches, f.hits = nil, nil, nil }

func (f *narrowEngine) search(query string) ([]int, int, error) {
	p := fuzzy.Compile(query)
	opt := fuzzy.Options{K: topN, Workers: f.workers, Collect: true}
	if f.matches != nil && p.Refines(f.prev) {
		opt.Within, opt.Seeds = f.matches, f.hits // as the request service does
	}
	out, err := fuzzy.TopK(context.Background(), p, f.list, opt)
	if err != nil {
		return nil, 0, fmt.Errorf("ferry search %q: %w", query, err)
	}
	f.prev, f.matches, f.hits = p, out.Matches, hitIndexes(out.Hits)
	return f.hits, out.Total, nil
}

func hitIndexes(hits []fuzzy.Hit) []int {
	idx := make([]int, len(hits))
	for i, h := range hits {
		idx[i] = h.Index
	}
	return idx
}

// fzfEngine is fzf's own matcher: FuzzyMatchV2 with the path scheme,
// case-insensitive, with Unicode normalisation, every space-separated term
// required and the scores summed (fzf's extended-search AND), a top-20 heap
// per worker ordered by score then length (fzf's default tiebreak), and
// positions computed for the 20 winners only, as fzf does for display.
type fzfEngine struct {
	chars   []util.Chars
	workers int
	slabs   []*util.Slab
}

var initFzf sync.Once

func newFzfEngine(paths []string, workers int) *fzfEngine {
	initFzf.Do(func() {
		if !algo.Init("path") {
			panic("fzf: path scheme unknown")
		}
	})
	f := &fzfEngine{chars: make([]util.Chars, len(paths)), workers: workers}
	for i, p := range paths {
		f.chars[i] = util.ToChars([]byte(p))
	}
	for range workers {
		// The sizes fzf itself uses (src/constants.go).
		f.slabs = append(f.slabs, util.MakeSlab(100*1024, 2048))
	}
	return f
}

func (f *fzfEngine) name() string { return "fzf" }
func (f *fzfEngine) reset()       {}

type fzfEntry struct {
	score, length, idx int
}

func fzfWorse(a, b fzfEntry) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	if a.length != b.length {
		return a.length > b.length
	}
	return a.idx > b.idx
}

func (f *fzfEngine) search(query string) ([]int, int, error) {
	var pats [][]rune
	for _, t := range strings.Fields(query) {
		r := []rune(strings.Map(unicode.ToLower, t))
		pats = append(pats, algo.NormalizeRunes(r))
	}
	n := len(f.chars)
	chunks := (n + chunk - 1) / chunk
	var next atomic.Int64
	var wg sync.WaitGroup
	heaps := make([][]fzfEntry, f.workers)
	totals := make([]int, f.workers)
	for w := range f.workers {
		slab := f.slabs[w]
		wg.Go(func() {
			var h []fzfEntry
			total := 0
			for {
				c := int(next.Add(1) - 1)
				if c >= chunks {
					break
				}
				for i := c * chunk; i < min(n, (c+1)*chunk); i++ {
					score := 0
					ok := true
					for _, p := range pats {
						res, _ := algo.FuzzyMatchV2(false, true, true, &f.chars[i], p, false, slab)
						if res.Start < 0 {
							ok = false
							break
						}
						score += res.Score
					}
					if !ok {
						continue
					}
					total++
					h = pushTop(h, fzfEntry{score, f.chars[i].Length(), i})
				}
			}
			heaps[w], totals[w] = h, total
		})
	}
	wg.Wait()
	var all []fzfEntry
	total := 0
	for w := range f.workers {
		all = append(all, heaps[w]...)
		total += totals[w]
	}
	slices.SortFunc(all, func(a, b fzfEntry) int {
		if fzfWorse(a, b) {
			return 1
		}
		if fzfWorse(b, a) {
			return -1
		}
		return cmp.Compare(a.idx, b.idx)
	})
	if len(all) > topN {
		all = all[:topN]
	}
	idx := make([]int, len(all))
	for i, e := range all {
		for _, p := range pats {
			algo.FuzzyMatchV2(false, true, true, &f.chars[e.idx], p, true, f.slabs[0])
		}
		idx[i] = e.idx
	}
	return idx, total, nil
}

// pushTop keeps the topN best entries in a min-heap (worst on top).
func pushTop(h []fzfEntry, e fzfEntry) []fzfEntry {
	if len(h) < topN {
		h = append(h, e)
		for j := len(h) - 1; j > 0; {
			p := (j - 1) / 2
			if !fzfWorse(h[j], h[p]) {
				break
			}
			h[j], h[p] = h[p], h[j]
			j = p
		}
		return h
	}
	if !fzfWorse(h[0], e) {
		return h
	}
	h[0] = e
	for j := 0; ; {
		l, r, w := 2*j+1, 2*j+2, j
		if l < len(h) && fzfWorse(h[l], h[w]) {
			w = l
		}
		if r < len(h) && fzfWorse(h[r], h[w]) {
			w = r
		}
		if w == j {
			break
		}
		h[j], h[w] = h[w], h[j]
		j = w
	}
	return h
}
