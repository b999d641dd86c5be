package index

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/ferry-dev/ferry/internal/search/fuzzy"
)

// model is the plain sorted list a snapshot must equal.
type model []entry

// checkSnapshot compares s with m entry by entry, through every accessor,
// and checks the storage invariants.
func checkSnapshot(t *testing.T, s *Snapshot, m model) {
	t.Helper()
	if s.Len() != len(m) {
		t.Fatalf("Len %d, want %d", s.Len(), len(m))
	}
	for i, e := range m {
		if s.Path(i) != e.path || s.ModTimeUnixNano(i) != e.mtime || s.Size(i) != e.size || s.Mask(i) != e.mask {
			t.Fatalf("entry %d: %q %d %d %#x, want %+v", i, s.Path(i), s.ModTimeUnixNano(i), s.Size(i), s.Mask(i), e)
		}
	}
	n := 0
	for b, blk := range s.Blocks() {
		if blk.Base != n {
			t.Fatalf("block %d base %d, want %d", b, blk.Base, n)
		}
		if len(s.Blocks()) > 1 && (blk.Len() < chunkMin || blk.Len() > chunkTarget) {
			t.Fatalf("block %d has %d entries", b, blk.Len())
		}
		for j := range blk.Len() {
			if blk.Path(j) != m[n].path || blk.Mask(j) != m[n].mask {
				t.Fatalf("block %d entry %d: %q, want %q", b, j, blk.Path(j), m[n].path)
			}
			n++
		}
	}
	if n != len(m) {
		t.Fatalf("blocks hold %d entries, want %d", n, len(m))
	}
	for i := 0; i < len(m); i += 1 + len(m)/500 {
		e := m[i]
		if j, ok := s.Find(e.path); !ok || j != i {
			t.Fatalf("Find(%q) = %d %v, want %d", e.path, j, ok, i)
		}
	}
}

func mkEntry(p string, rng *rand.Rand) entry {
	size := rng.Int64N(1 << 20)
	if rng.IntN(50) == 0 {
		size = 5 << 30 // over 4 GiB: kept exactly
	}
	return entry{path: p, mtime: rng.Int64N(1e18), size: size, mask: fuzzy.MaskOf(p)}
}

// randomPath draws from a small namespace so that edits hit existing
// paths and subtrees.
func randomPath(rng *rand.Rand) string {
	parts := make([]string, 1+rng.IntN(3))
	for k := range parts {
		parts[k] = []string{"a", "b", "a.b", "a-b", "c", "dd", "é"}[rng.IntN(7)] + fmt.Sprint(rng.IntN(6))
	}
	return strings.Join(parts, "/")
}

// randomBatch makes edits the way updatePaths does: for distinct target
// paths none under another, the path itself becomes a file, disappears,
// or becomes a directory holding new files.
func randomBatch(rng *rand.Rand, s *Snapshot, m model, ntargets int) ([]splice, model) {
	set := map[string]bool{}
	for range ntargets {
		if rng.IntN(3) == 0 && len(m) > 0 {
			p := m[rng.IntN(len(m))].path
			if rng.IntN(2) == 0 {
				if i := strings.LastIndexByte(p, '/'); i > 0 {
					p = p[:i]
				}
			}
			set[p] = true
		} else {
			set[randomPath(rng)] = true
		}
	}
	var targets []string
	for p := range set {
		if !hasAncestorIn(set, p) {
			targets = append(targets, p)
		}
	}
	slices.Sort(targets)
	var sps []splice
	next := model{}
	for _, p := range targets {
		var file *entry
		var sub []entry
		switch rng.IntN(3) {
		case 0:
			e := mkEntry(p, rng)
			file = &e
		case 1:
			for range rng.IntN(40) {
				sub = append(sub, mkEntry(p+"/"+randomPath(rng), rng))
			}
			if rng.IntN(5) == 0 {
				for k := range 5000 { // big enough to span chunks
					sub = append(sub, mkEntry(fmt.Sprintf("%s/big/%05d", p, k), rng))
				}
			}
			sortEntries(sub)
			sub = slices.CompactFunc(sub, func(a, b entry) bool { return a.path == b.path })
		}
		i, found := s.Find(p)
		switch {
		case file != nil && found:
			sps = append(sps, splice{lo: i, hi: i + 1, key: p, add: []entry{*file}})
		case file != nil:
			sps = append(sps, splice{lo: i, hi: i, key: p, add: []entry{*file}})
		case found:
			sps = append(sps, splice{lo: i, hi: i + 1, key: p})
		}
		lo, hi := s.subtree(p)
		sps = append(sps, splice{lo: lo, hi: hi, key: p + "/", add: sub})
		// The model: drop p and its subtree, add the new ones.
		if file != nil {
			next = append(next, *file)
		}
		next = append(next, sub...)
	}
	// Rebuild the model: keep what no target covers.
	keep := model{}
	for _, e := range m {
		covered := false
		for _, p := range targets {
			if e.path == p || strings.HasPrefix(e.path, p+"/") {
				covered = true
				break
			}
		}
		if !covered {
			keep = append(keep, e)
		}
	}
	keep = append(keep, next...)
	sortEntries(keep)
	return sps, keep
}

func TestApplyMatchesModel(t *testing.T) {
	t.Parallel()
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			var m model
			for k := range rng.IntN(12000) {
				m = append(m, mkEntry(fmt.Sprintf("%s/%d", randomPath(rng), k), rng))
			}
			sortEntries(m)
			m = slices.CompactFunc(m, func(a, b entry) bool { return a.path == b.path })
			s := fromSorted(m, 1, "/r")
			checkSnapshot(t, s, m)
			for step := range 25 {
				sps, next := randomBatch(rng, s, m, 1+rng.IntN(8))
				s2 := s.apply(sps, uint64(step+2))
				checkSnapshot(t, s2, next)
				checkSnapshot(t, s, m) // the old snapshot is untouched
				s, m = s2, next
			}
		})
	}
}

// TestApplyCopiesOneChunk: a one-file change shares every chunk but the
// one it touches.
func TestApplyCopiesOneChunk(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 1))
	var m model
	for k := range 80000 {
		m = append(m, mkEntry(fmt.Sprintf("d%03d/f%06d.c", k%500, k), rng))
	}
	sortEntries(m)
	s := fromSorted(m, 1, "")
	i := 40000
	e := m[i]
	e.mtime++
	s2 := s.apply([]splice{{lo: i, hi: i + 1, key: e.path, add: []entry{e}}}, 2)
	shared := 0
	old := map[*chunk]bool{}
	for _, b := range s.Blocks() {
		old[b.c] = true
	}
	for _, b := range s2.Blocks() {
		if old[b.c] {
			shared++
		}
	}
	if shared != len(s.Blocks())-1 || len(s2.Blocks()) != len(s.Blocks()) {
		t.Fatalf("%d of %d chunks shared after a one-file change", shared, len(s2.Blocks()))
	}
	if s2.ModTimeUnixNano(i) != e.mtime || s.ModTimeUnixNano(i) != m[i].mtime {
		t.Fatal("the change is not in the new snapshot only")
	}
}

// TestSnapshotBytesPerPath counts the memory a snapshot holds beyond the
// text of its paths, exactly, from the sizes of what it allocated.
func TestSnapshotBytesPerPath(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 1))
	var m model
	text := 0
	for k := range 78000 {
		p := fmt.Sprintf("drivers/net/d%03d/file_%06d.c", k%700, k)
		m = append(m, mkEntry(p, rng))
		text += len(p)
	}
	sortEntries(m)
	for k := range m {
		m[k].size %= 1 << 30 // no overflow map: count the common case
	}
	s := fromSorted(m, 1, "")
	total := int(unsafe.Sizeof(*s)) + cap(s.blocks)*int(unsafe.Sizeof(Block{})) + cap(s.lut)*4
	for _, b := range s.Blocks() {
		c := b.c
		total += int(unsafe.Sizeof(*c)) + len(c.text) + cap(c.ends)*4 + cap(c.mtime)*8 + cap(c.size)*4 + cap(c.mask)*8
	}
	per := float64(total-text) / float64(len(m))
	t.Logf("snapshot: %.2f bytes per path beyond the text (%d paths, %d chunks)", per, len(m), len(s.Blocks()))
	if per > 32 {
		t.Fatalf("%.2f bytes per path beyond the text; the budget is 32", per)
	}
}

func TestFromPaths(t *testing.T) {
	t.Parallel()
	paths := []string{"z.go", "a/b.go", "a/b.go", "Café.md", ""}
	for k := range 3000 {
		paths = append(paths, fmt.Sprintf("gen/%d.txt", 3000-k))
	}
	s := FromPaths(paths)
	if s.Len() != len(paths) {
		t.Fatalf("Len %d, want %d", s.Len(), len(paths))
	}
	for i, p := range paths {
		if s.Path(i) != p || s.Mask(i) != fuzzy.MaskOf(p) || s.Size(i) != 0 || !s.ModTime(i).IsZero() {
			t.Fatalf("entry %d: %q %#x %d %v", i, s.Path(i), s.Mask(i), s.Size(i), s.ModTime(i))
		}
	}
	if i, ok := s.Find("gen/1.txt"); !ok || s.Path(i) != "gen/1.txt" {
		t.Fatalf("Find in an unsorted snapshot: %d %v", i, ok)
	}
	if _, ok := s.Find("nope"); ok {
		t.Fatal("Find found a missing path")
	}
	if FromPaths(nil).Len() != 0 {
		t.Fatal("FromPaths(nil) is not empty")
	}
}

func TestRecentTop(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 3))
	var m model
	for k := range 5000 {
		e := mkEntry(fmt.Sprintf("f%05d", k), rng)
		e.mtime = rng.Int64N(300) // many ties
		m = append(m, e)
	}
	s := fromSorted(m, 1, "")
	want := make([]int, len(m))
	for i := range want {
		want[i] = i
	}
	slices.SortStableFunc(want, func(a, b int) int { return -int(m[a].mtime - m[b].mtime) })
	for _, k := range []int{0, 1, 20, 50, 64, 65, 200, 6000} {
		got := s.RecentTop(k)
		w := want[:min(max(k, 0), len(want))]
		if !slices.Equal(got, w) {
			t.Fatalf("RecentTop(%d) = %v..., want %v...", k, got[:min(5, len(got))], w[:min(5, len(w))])
		}
	}
	even := s.RecentTopFunc(10, func(i int) bool { return i%2 == 0 })
	var w []int
	for _, i := range want {
		if i%2 == 0 && len(w) < 10 {
			w = append(w, i)
		}
	}
	if !slices.Equal(even, w) {
		t.Fatalf("RecentTopFunc = %v, want %v", even, w)
	}
	if got := s.ModTime(want[0]); !got.Equal(time.Unix(0, m[want[0]].mtime)) {
		t.Fatalf("ModTime %v", got)
	}
}

// FuzzApply drives the copy-on-write update with arbitrary edit
// sequences and compares every snapshot with a plain sorted list.
func FuzzApply(f *testing.F) {
	f.Add(uint64(1), uint16(100), uint8(5))
	f.Add(uint64(2), uint16(0), uint8(1))
	f.Add(uint64(3), uint16(9000), uint8(30))
	f.Fuzz(func(t *testing.T, seed uint64, n uint16, steps uint8) {
		rng := rand.New(rand.NewPCG(seed, uint64(n)))
		var m model
		for k := range int(n) % 20000 {
			m = append(m, mkEntry(fmt.Sprintf("%s/%d", randomPath(rng), k), rng))
		}
		sortEntries(m)
		m = slices.CompactFunc(m, func(a, b entry) bool { return a.path == b.path })
		s := fromSorted(m, 1, "")
		for step := range int(steps) % 40 {
			sps, next := randomBatch(rng, s, m, 1+rng.IntN(6))
			s = s.apply(sps, uint64(step+2))
			m = next
		}
		checkSnapshot(t, s, m)
	})
}

// TestSnapshotRuns checks that a search over a snapshot of many blocks,
// which the scan reads a block at a time (RunAt), finds what a search over
// a fuzzy.List of the same paths finds.
func TestSnapshotRuns(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(4, 2))
	words := []string{"src", "lib", "drivers", "net", "include", "linux", "Makefile", "main", "café", "test"}
	paths := make([]string, 20000)
	for i := range paths {
		var b strings.Builder
		for range 1 + r.IntN(4) {
			b.WriteString(words[r.IntN(len(words))] + "/")
		}
		fmt.Fprintf(&b, "%s_%d.c", words[r.IntN(len(words))], i)
		paths[i] = b.String()
	}
	s := FromPaths(paths)
	if len(s.Blocks()) < 4 {
		t.Fatalf("%d blocks: the test needs several", len(s.Blocks()))
	}
	l, err := fuzzy.NewList(paths)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"dr", "drv net", "inc/", "make", "café", "lnx main", "e"} {
		p := fuzzy.Compile(q)
		got, err := fuzzy.TopK(t.Context(), p, s, fuzzy.Options{K: 20, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		want, err := fuzzy.TopK(t.Context(), p, l, fuzzy.Options{K: 20, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		if got.Total != want.Total || len(got.Hits) != len(want.Hits) {
			t.Fatalf("%q: %d matches, %d hits; the list: %d, %d", q, got.Total, len(got.Hits), want.Total, len(want.Hits))
		}
		for i := range want.Hits {
			if got.Hits[i].Index != want.Hits[i].Index || got.Hits[i].Raw != want.Hits[i].Raw {
				t.Fatalf("%q hit %d: %q, the list: %q", q, i, s.Path(got.Hits[i].Index), l.Path(want.Hits[i].Index))
			}
		}
		if want.Total == 0 {
			t.Fatalf("%q matches nothing: the test checks nothing", q)
		}
	}
}
