package fuzzy

import (
	"sync"
	"sync/atomic"
)

// best holds the k best entries TopK's workers have found, shared by all
// of them so that each prunes against the k-th best of every path seen so
// far (a heap per worker would prune against a lower one). Offers are
// rare next to the checks, which read the worst entry's score and length
// without the lock; only an exact tie on both takes it.
type best struct {
	mu   sync.Mutex
	k    int
	src  Source
	heap []entry // min-heap: the worst entry on top
	// worst packs heap[0]'s raw (high half) and length (low half) once
	// the heap holds k entries, else neg and 0.
	worst atomic.Uint64
}

func newBest(k int, src Source) *best {
	b := &best{k: k, src: src, heap: make([]entry, 0, k)}
	b.worst.Store(packWorst(neg, 0))
	return b
}

func packWorst(raw, length int32) uint64 {
	return uint64(uint32(raw))<<32 | uint64(uint32(length))
}

// worstRaw is the score an entry must reach to enter, neg until there are
// k entries.
func (b *best) worstRaw() int32 { return int32(b.worst.Load() >> 32) }

// threshold is the least score a path of length bytes must reach to
// enter, given floor: the worst entry's score, plus one when the path is
// longer than that entry (a tie would rank it below), or floor if higher.
func (b *best) threshold(floor int32, length int) int32 {
	w := b.worst.Load()
	raw, wl := int32(w>>32), int32(uint32(w))
	switch {
	case raw < floor || raw == neg:
		return floor
	case int32(length) > wl: //nolint:gosec // a path's length fits
		return raw + 1
	}
	return raw
}

// mayEnter reports whether entry e scoring up to ub could enter.
func (b *best) mayEnter(ub int32, e entry) bool {
	w := b.worst.Load()
	raw, length := int32(w>>32), int32(uint32(w))
	if ub != raw {
		return ub > raw
	}
	if e.length != length {
		return e.length < length
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	e.raw = ub
	return len(b.heap) < b.k || b.better(e, b.heap[0])
}

// better reports whether x ranks above y (see compareEntries).
func (b *best) better(x, y entry) bool { return compareEntries(b.src, x, y) < 0 }

// offer adds e if it ranks among the k best, and returns the worst score
// among them and whether there are k.
func (b *best) offer(e entry) (worst int32, full bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.heap
	worse := func(i, j int) bool { return b.better(h[j], h[i]) }
	switch {
	case len(h) < b.k:
		h = append(h, e)
		for j := len(h) - 1; j > 0; {
			parent := (j - 1) / 2
			if !worse(j, parent) {
				break
			}
			h[j], h[parent] = h[parent], h[j]
			j = parent
		}
	case b.better(e, h[0]):
		h[0] = e
		for j := 0; ; {
			l, r, w := 2*j+1, 2*j+2, j
			if l < len(h) && worse(l, w) {
				w = l
			}
			if r < len(h) && worse(r, w) {
				w = r
			}
			if w == j {
				break
			}
			h[j], h[w] = h[w], h[j]
			j = w
		}
	}
	b.heap = h
	if len(h) < b.k {
		return neg, false
	}
	b.worst.Store(packWorst(h[0].raw, h[0].length))
	return h[0].raw, true
}
