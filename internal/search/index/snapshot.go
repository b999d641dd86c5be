package index

import (
	"cmp"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ferry-dev/ferry/internal/search/fuzzy"
)

// Storage. A Snapshot is a list of chunks of 2048 to 4096 entries.
// Each chunk keeps its paths in one string (no separators; ends[j] is
// where path j stops) and its metadata in parallel arrays, so one entry
// costs 24 bytes beyond its text: 4 (end offset) + 8 (mtime) + 4 (size)
// + 8 (mask). Chunks are immutable and shared between snapshots: an
// update copies only the chunks it touches (copy-on-write), so one file
// changing in a 78k-file tree copies one chunk of ~3k entries (~0.2 MB)
// and the chunk list, not the whole index. Chunks this large keep the
// allocator's rounding of each chunk's text (to 8 KiB pages) near 1 byte
// per entry.
//
// Finding entry i is O(1): lut[i>>lutShift] names the block that holds
// the index i&^(lutStep-1), and since every block but a lone one has at
// least chunkMin = lutStep entries, i is in that block or a following
// one (at most one step in practice).
const (
	chunkTarget = 4096
	chunkMin    = 2048
	lutShift    = 11
	lutStep     = 1 << lutShift

	// sizeOverflow marks a size of 4 GiB - 1 or more, kept exactly in
	// chunk.big.
	sizeOverflow = math.MaxUint32
)

type chunk struct {
	text  string
	ends  []uint32
	mtime []int64
	size  []uint32
	mask  []uint64
	big   map[int]int64 // position → size, for sizes >= sizeOverflow
}

func (c *chunk) len() int { return len(c.ends) }

func (c *chunk) path(j int) string {
	start := uint32(0)
	if j > 0 {
		start = c.ends[j-1]
	}
	return c.text[start:c.ends[j]]
}

func (c *chunk) sizeAt(j int) int64 {
	if c.size == nil {
		return 0 // FromLines: no sizes
	}
	if s := c.size[j]; s != sizeOverflow {
		return int64(s)
	}
	return c.big[j]
}

// mtimeAt is entry j's time in Unix nanoseconds, 0 when unknown.
func (c *chunk) mtimeAt(j int) int64 {
	if c.mtime == nil {
		return 0 // FromLines: no times
	}
	return c.mtime[j]
}

func (c *chunk) entry(j int) entry {
	return entry{path: c.path(j), mtime: c.mtimeAt(j), size: c.sizeAt(j), mask: c.mask[j]}
}

// entry is one file while a chunk is being built.
type entry struct {
	path  string
	mtime int64 // Unix nanoseconds; 0 when unknown
	size  int64
	mask  uint64
}

func newChunk(es []entry) *chunk {
	n := 0
	for i := range es {
		n += len(es[i].path)
	}
	var b strings.Builder
	b.Grow(n)
	c := &chunk{
		ends:  make([]uint32, len(es)),
		mtime: make([]int64, len(es)),
		size:  make([]uint32, len(es)),
		mask:  make([]uint64, len(es)),
	}
	for j := range es {
		e := &es[j]
		b.WriteString(e.path)
		c.ends[j] = uint32(b.Len()) //nolint:gosec // a chunk's text is far below 4 GiB
		c.mtime[j] = e.mtime
		c.mask[j] = e.mask
		if e.size >= 0 && e.size < sizeOverflow {
			c.size[j] = uint32(e.size)
		} else {
			c.size[j] = sizeOverflow
			if c.big == nil {
				c.big = make(map[int]int64)
			}
			c.big[j] = e.size
		}
	}
	c.text = b.String()
	return c
}

// Block is a run of consecutive entries of a Snapshot stored together:
// entries Base to Base+Len()-1. Scanning block by block (Snapshot.Blocks)
// is the fastest way through a snapshot, and blocks are natural units to
// split a scan between goroutines.
type Block struct {
	c *chunk
	// Base is the snapshot index of the block's first entry.
	Base int
}

// Len is the number of entries in the block.
func (b Block) Len() int { return b.c.len() }

// Path is the path of the block's entry j (snapshot index Base+j).
func (b Block) Path(j int) string { return b.c.path(j) }

// Mask is the fuzzy.MaskOf prefilter mask of the block's entry j.
func (b Block) Mask(j int) uint64 { return b.c.mask[j] }

// Snapshot is an immutable list of files: what one search reads. Entries
// are numbered 0 to Len()-1; an index stays valid for the life of the
// snapshot (a later update makes a new snapshot and leaves this one
// alone), so a search can narrow the result set of the previous
// keystroke by index. A Snapshot is safe for concurrent use.
//
// Snapshots of an Index are sorted by path (byte order, so every
// directory's subtree is a contiguous range and ties broken by index are
// broken by path); FromPaths keeps the order it is given.
type Snapshot struct {
	blocks []Block
	lut    []int32
	n      int
	gen    uint64
	root   string
	sorted bool
	meta   bool

	recentOnce sync.Once
	recent     []int32 // the recentCache most recent entries, newest first
}

// Len is the number of files.
func (s *Snapshot) Len() int { return s.n }

// Generation numbers the snapshots of one Index: 0 before the first
// listing completes, then one more for every snapshot that differs from
// the previous one. A service can key caches on it.
func (s *Snapshot) Generation() uint64 { return s.gen }

// HasMetadata reports whether ModTime and Size are known. The first
// snapshot of an Index lists paths only, so that search can start before
// every file is stat'ed; the next one (signalled on Changes) has them.
// FromPaths snapshots have none.
func (s *Snapshot) HasMetadata() bool { return s.meta }

// Root is the absolute, symlink-free path of the indexed directory ("" for
// FromPaths).
func (s *Snapshot) Root() string { return s.root }

// Blocks lists the snapshot's storage blocks in index order. The slice
// is shared: do not modify it.
func (s *Snapshot) Blocks() []Block { return s.blocks }

func (s *Snapshot) locate(i int) (*chunk, int) {
	b := int(s.lut[i>>lutShift])
	for b+1 < len(s.blocks) && i >= s.blocks[b+1].Base {
		b++
	}
	blk := s.blocks[b]
	return blk.c, i - blk.Base
}

// Path is the path of entry i: relative to the root, "/"-separated, as
// the file system spells it (no normalisation).
func (s *Snapshot) Path(i int) string {
	c, j := s.locate(i)
	return c.path(j)
}

// Mask is fuzzy.MaskOf(Path(i)), computed once when the entry was indexed.
func (s *Snapshot) Mask(i int) uint64 {
	c, j := s.locate(i)
	return c.mask[j]
}

// RunAt returns the storage block that holds entry i as a fuzzy.Run, so
// that a search reads the block's paths and masks without a lookup per
// entry.
func (s *Snapshot) RunAt(i int) fuzzy.Run {
	c, j := s.locate(i)
	return fuzzy.Run{Base: i - j, Text: c.text, Ends: c.ends, Masks: c.mask}
}

var _ fuzzy.RunSource = (*Snapshot)(nil)

// ModTime is entry i's modification time (for a symlink, its target's);
// the zero Time when unknown (FromPaths).
func (s *Snapshot) ModTime(i int) time.Time {
	c, j := s.locate(i)
	if ns := c.mtimeAt(j); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// ModTimeUnixNano is ModTime as Unix nanoseconds (0 when unknown), for
// cheap comparisons.
func (s *Snapshot) ModTimeUnixNano(i int) int64 {
	c, j := s.locate(i)
	return c.mtimeAt(j)
}

// Size is entry i's size in bytes (for a symlink, its target's); 0 when
// unknown.
func (s *Snapshot) Size(i int) int64 {
	c, j := s.locate(i)
	return c.sizeAt(j)
}

// Find returns the index of path, and whether it is there.
func (s *Snapshot) Find(path string) (int, bool) {
	if !s.sorted {
		for i := range s.n {
			if s.Path(i) == path {
				return i, true
			}
		}
		return s.n, false
	}
	i := s.lowerBound(path)
	return i, i < s.n && s.Path(i) == path
}

// lowerBound is the first index whose path is >= key (sorted snapshots).
func (s *Snapshot) lowerBound(key string) int {
	return sort.Search(s.n, func(i int) bool { return s.Path(i) >= key })
}

// subtree is the index range of the paths under the directory dir ("" is
// the root: everything).
func (s *Snapshot) subtree(dir string) (lo, hi int) {
	if dir == "" {
		return 0, s.n
	}
	// Every path with the prefix dir+"/" sorts between dir+"/" and
	// dir+"0" ('0' follows '/').
	return s.lowerBound(dir + "/"), s.lowerBound(dir + "0")
}

// recentCache is how many of the most recent entries a snapshot keeps
// once asked (max_results is at most 50).
const recentCache = 64

// RecentTop returns the indices of the k most recently modified files,
// newest first; equal times keep index order. The first call with
// k <= 64 computes and keeps the answer for the snapshot's life.
func (s *Snapshot) RecentTop(k int) []int {
	if k <= recentCache {
		s.recentOnce.Do(func() {
			top := s.RecentTopFunc(recentCache, nil)
			s.recent = make([]int32, len(top))
			for i, v := range top {
				s.recent[i] = int32(v) //nolint:gosec // indices fit: entries are far fewer than 2^31
			}
		})
		out := make([]int, 0, min(k, len(s.recent)))
		for _, v := range s.recent[:min(k, len(s.recent))] {
			out = append(out, int(v))
		}
		return out
	}
	return s.RecentTopFunc(k, nil)
}

// RecentTopFunc is RecentTop among the entries for which keep returns
// true (all when keep is nil): the empty query with filters.
func (s *Snapshot) RecentTopFunc(k int, keep func(i int) bool) []int {
	if k <= 0 {
		return nil
	}
	type item struct {
		t int64
		i int
	}
	// newer reports whether a ranks before b.
	newer := func(a, b item) bool { return a.t > b.t || (a.t == b.t && a.i < b.i) }
	top := make([]item, 0, k) // sorted, best first
	for _, blk := range s.blocks {
		c := blk.c
		for j := range c.len() {
			t := c.mtimeAt(j)
			if len(top) == k && t <= top[k-1].t {
				continue // cannot beat the last (equal loses: higher index)
			}
			i := blk.Base + j
			if keep != nil && !keep(i) {
				continue
			}
			it := item{t, i}
			pos := sort.Search(len(top), func(x int) bool { return newer(it, top[x]) })
			if len(top) < k {
				top = append(top, item{})
			}
			copy(top[pos+1:], top[pos:len(top)-1])
			top[pos] = it
		}
	}
	out := make([]int, len(top))
	for x, it := range top {
		out[x] = it.i
	}
	return out
}

// FromPaths is a Snapshot of the given paths, in the given order (index i
// is paths[i]), with no file system behind it: no times, no sizes, no
// root. ferry search --stdin ranks standard input with it. Masks are
// computed in parallel for long lists.
func FromPaths(paths []string) *Snapshot {
	n := len(paths)
	nChunks := (n + chunkTarget - 1) / chunkTarget
	chunks := make([]*chunk, nChunks)
	bounds := func(c int) (int, int) { return c * n / nChunks, (c + 1) * n / nChunks }
	workers := min(runtime.GOMAXPROCS(0), nChunks)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			var es []entry
			for c := w; c < nChunks; c += workers {
				lo, hi := bounds(c)
				es = es[:0]
				for _, p := range paths[lo:hi] {
					es = append(es, entry{path: p, mask: fuzzy.MaskOf(p)})
				}
				chunks[c] = newChunk(es)
			}
		})
	}
	wg.Wait()
	s := fromChunks(chunks, 0, "")
	s.sorted = false
	return s
}

// fromChunks assembles a snapshot from its chunks, in order.
func fromChunks(chunks []*chunk, gen uint64, root string) *Snapshot {
	s := &Snapshot{blocks: make([]Block, len(chunks)), gen: gen, root: root, sorted: true}
	for i, c := range chunks {
		s.blocks[i] = Block{c: c, Base: s.n}
		s.n += c.len()
	}
	s.lut = make([]int32, (s.n+lutStep-1)>>lutShift)
	b := 0
	for x := range s.lut {
		i := x << lutShift
		for i >= s.blocks[b].Base+s.blocks[b].c.len() {
			b++
		}
		s.lut[x] = int32(b) //nolint:gosec // block counts are small
	}
	return s
}

// chunkEntries cuts sorted entries into chunks of near-equal size, each
// at most chunkTarget (and at least chunkMin when there is more than
// one).
func chunkEntries(dst []*chunk, es []entry) []*chunk {
	if len(es) == 0 {
		return dst
	}
	k := (len(es) + chunkTarget - 1) / chunkTarget
	for c := range k {
		dst = append(dst, newChunk(es[c*len(es)/k:(c+1)*len(es)/k]))
	}
	return dst
}

// fromSorted builds a snapshot from entries sorted by path.
func fromSorted(es []entry, gen uint64, root string) *Snapshot {
	return fromChunks(chunkEntries(nil, es), gen, root)
}

// splice replaces the entries [lo, hi) of a sorted snapshot with add
// (sorted, and fitting between the neighbours of the range). key orders
// splices that insert at the same index: it is a lower bound of the paths
// in add.
type splice struct {
	lo, hi int
	key    string
	add    []entry
}

// apply returns a new snapshot with the splices made, copying only the
// chunks they touch (and a neighbour where a chunk would get too small).
// Splices must not overlap. s itself is not changed.
func (s *Snapshot) apply(sps []splice, gen uint64) *Snapshot {
	sps = slices.DeleteFunc(sps, func(sp splice) bool { return sp.lo == sp.hi && len(sp.add) == 0 })
	slices.SortFunc(sps, func(a, b splice) int {
		return cmp.Or(cmp.Compare(a.lo, b.lo), strings.Compare(a.key, b.key))
	})
	if len(s.blocks) == 0 {
		var es []entry
		for _, sp := range sps {
			es = append(es, sp.add...)
		}
		out := fromSorted(es, gen, s.root)
		out.meta = s.meta
		return out
	}
	// Mark the blocks that a splice touches: those its range overlaps,
	// or the one it inserts into (the last block for an append).
	dirty := make([]bool, len(s.blocks))
	blockOf := func(i int) int {
		b := int(s.lut[i>>lutShift])
		for b+1 < len(s.blocks) && i >= s.blocks[b+1].Base {
			b++
		}
		return b
	}
	for _, sp := range sps {
		first := blockOf(min(sp.lo, s.n-1))
		last := first
		if sp.hi > sp.lo {
			last = blockOf(sp.hi - 1)
		}
		for b := first; b <= last; b++ {
			dirty[b] = true
		}
	}
	need := chunkTarget // room to take in a neighbour
	for b, d := range dirty {
		if d {
			need += s.blocks[b].c.len()
		}
	}
	for _, sp := range sps {
		need += len(sp.add)
	}
	pend := make([]entry, 0, min(need, 3*chunkTarget)) // grows for a long run
	out := make([]*chunk, 0, len(s.blocks)+1)
	next := 0 // next splice
	pos := 0  // next old entry to copy
	appendOld := func(from, to int) {
		for from < to {
			c, j := s.locate(from)
			for ; j < c.len() && from < to; j++ {
				pend = append(pend, c.entry(j))
				from++
			}
		}
	}
	last := len(s.blocks) - 1
	for b, blk := range s.blocks {
		lo, hi := blk.Base, blk.Base+blk.c.len()
		if !dirty[b] {
			if len(pend) == 0 || len(pend) >= chunkMin {
				out = chunkEntries(out, pend)
				pend = pend[:0]
				out = append(out, blk.c)
			} else {
				// The rebuilt run before is too short for a chunk of its
				// own: take this clean block in (no splice touches it).
				appendOld(lo, hi)
			}
			pos = hi
			continue
		}
		// pos is past lo when a splice from an earlier block covers the
		// start of this one (every block a splice covers is dirty).
		pos = max(pos, lo)
		for next < len(sps) && (sps[next].lo < hi || (b == last && sps[next].lo <= hi)) {
			sp := sps[next]
			appendOld(pos, sp.lo)
			pend = append(pend, sp.add...)
			pos = max(pos, sp.hi)
			next++
		}
		appendOld(pos, hi)
		pos = max(pos, hi)
	}
	if len(pend) > 0 && len(pend) < chunkMin && len(out) > 0 {
		// Too short at the end: merge with the chunk before.
		prev := out[len(out)-1]
		out = out[:len(out)-1]
		merged := make([]entry, 0, prev.len()+len(pend))
		for j := range prev.len() {
			merged = append(merged, prev.entry(j))
		}
		pend = append(merged, pend...)
	}
	out = chunkEntries(out, pend)
	ns := fromChunks(out, gen, s.root)
	ns.meta = s.meta
	return ns
}
