package fuzzy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/text/unicode/norm"
)

// bruteForce ranks every path with Match alone: what TopK must return.
func bruteForce(p *Pattern, src Source, k int, accept func(int) bool) ([]Hit, int) {
	var all []Hit
	for i := range src.Len() {
		res, ok := p.Match(src.Path(i), nil)
		if !ok || accept != nil && !accept(i) {
			continue
		}
		all = append(all, Hit{Index: i, Result: res})
	}
	slices.SortFunc(all, func(a, b Hit) int {
		return compareEntries(src, entry{raw: a.Raw, length: int32(len(src.Path(a.Index))), idx: int32(a.Index)},
			entry{raw: b.Raw, length: int32(len(src.Path(b.Index))), idx: int32(b.Index)})
	})
	return all[:min(k, len(all))], len(all)
}

var (
	segWords = []string{"src", "lib", "test", "store", "router", "Makefile", "README", "readme", "main", "page_alloc",
		"mm", "net", "drivers", "e1000", "café", "cafe\u0301", "文档", "📁", "Ωmega", "x", "a-b", "CamelCase", "v2", "io"}
	exts = []string{".go", ".c", ".h", ".md", ".ts", ".txt", ""}
)

func randomPath(r *rand.Rand) string {
	var b strings.Builder
	for range r.IntN(5) {
		b.WriteString(segWords[r.IntN(len(segWords))])
		b.WriteByte('/')
	}
	b.WriteString(segWords[r.IntN(len(segWords))])
	if r.IntN(2) == 0 {
		b.WriteString("_" + segWords[r.IntN(len(segWords))])
	}
	b.WriteString(exts[r.IntN(len(exts))])
	if r.IntN(3) == 0 {
		return norm.NFD.String(b.String())
	}
	return b.String()
}

// randomQuery takes characters from a path (so that queries often match),
// changes their case or normal form, and adds spaces, slashes and noise.
func randomQuery(r *rand.Rand, path string) string {
	runes := []rune(path)
	var q []rune
	for len(q) < 1+r.IntN(8) && len(runes) > 0 {
		start := r.IntN(len(runes))
		n := 1 + r.IntN(4)
		q = append(q, runes[start:min(len(runes), start+n)]...)
		switch r.IntN(6) {
		case 0:
			q = append(q, ' ')
		case 1:
			q = append(q, '/')
		case 2:
			q = append(q, rune("abcxyz._"[r.IntN(8)]))
		}
	}
	s := string(q)
	switch r.IntN(4) {
	case 0:
		s = strings.ToUpper(s)
	case 1:
		s = norm.NFC.String(s)
	}
	return s
}

func TestTopKEqualsBruteForce(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 11))
	for round := range 16 {
		paths := make([]string, 500+r.IntN(3000))
		for i := range paths {
			paths[i] = randomPath(r)
		}
		l, err := NewList(paths)
		if err != nil {
			t.Fatal(err)
		}
		for range 25 {
			q := randomQuery(r, paths[r.IntN(len(paths))])
			p := Compile(q)
			k := 1 + r.IntN(30)
			var accept func(int) bool
			if round%4 == 3 {
				accept = func(i int) bool { return i%3 != 0 }
			}
			want, wantTotal := bruteForce(p, l, k, accept)
			var seeds []int // random guesses, repeated, out of range: the answer must not change
			for range r.IntN(3) * k {
				seeds = append(seeds, r.IntN(len(paths)+10)-5)
			}
			for workers, src := range sources(l, r) {
				out, err := TopK(context.Background(), p, src, Options{K: k, Workers: workers + 1, Accept: accept, Collect: true, Seeds: seeds})
				if err != nil {
					t.Fatal(err)
				}
				checkSame(t, q, l, out, want, wantTotal)
				if out.Matches.Count() != wantTotal {
					t.Fatalf("%q: %d collected matches, want %d", q, out.Matches.Count(), wantTotal)
				}
			}
		}
	}
}

func checkSame(t *testing.T, q string, src Source, out Outcome, want []Hit, wantTotal int) {
	t.Helper()
	if out.Total != wantTotal {
		t.Fatalf("%q: total %d, want %d", q, out.Total, wantTotal)
	}
	if len(out.Hits) != len(want) {
		t.Fatalf("%q: %d hits, want %d", q, len(out.Hits), len(want))
	}
	for i := range want {
		g, w := out.Hits[i], want[i]
		if g.Index != w.Index || g.Raw != w.Raw || g.Score != w.Score || !slices.Equal(g.Ranges, w.Ranges) {
			t.Fatalf("%q hit %d: got %q %d %v, want %q %d %v", q, i, src.Path(g.Index), g.Raw, g.Ranges,
				src.Path(w.Index), w.Raw, w.Ranges)
		}
	}
}

// TestNarrowingEqualsFullScan types queries one character at a time,
// scanning only the previous matches whenever the pattern refines the last.
func TestNarrowingEqualsFullScan(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 5))
	paths := make([]string, 3000)
	for i := range paths {
		paths[i] = randomPath(r)
	}
	l, err := NewList(paths)
	if err != nil {
		t.Fatal(err)
	}
	narrowed := 0
	for range 40 {
		typed := []rune(randomQuery(r, paths[r.IntN(len(paths))]))
		var prev *Pattern
		var prevMatches *Set
		var prevHits []int
		for n := 1; n <= len(typed); n++ {
			q := string(typed[:n])
			p := Compile(q)
			opt := Options{K: 20, Collect: true}
			if prevMatches != nil && p.Refines(prev) {
				opt.Within, opt.Seeds = prevMatches, prevHits
				narrowed++
			}
			src := sources(l, r)[n%3]
			out, err := TopK(context.Background(), p, src, opt)
			if err != nil {
				t.Fatal(err)
			}
			want, total := bruteForce(p, l, 20, nil)
			checkSame(t, q, l, out, want, total)
			prev, prevMatches, prevHits = p, out.Matches, nil
			for _, h := range out.Hits {
				prevHits = append(prevHits, h.Index)
			}
		}
	}
	if narrowed < 60 {
		t.Errorf("only %d narrowed searches: the test does not exercise narrowing", narrowed)
	}
}

// TestTopKOnKernelList checks pruning against the brute force on real paths
// when bench/corpus.sh has been run.
func TestTopKOnKernelList(t *testing.T) {
	t.Parallel()
	l := loadCorpus(t, "kernel.txt")
	for _, q := range []string{"router", "mm/page_alloc", "drivers net eth", "kconfig", "README", "Makefile",
		"sched core", "shced", "drvie", "Doc", "inc", "x86 kvm mmu", "e1000e", "/fs", "tcp_ipv4"} {
		p := Compile(q)
		want, total := bruteForce(p, l, 20, nil)
		out, err := TopK(context.Background(), p, l, Options{K: 20, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		checkSame(t, q, l, out, want, total)
	}
}

// countingSource counts path reads, to observe where a scan stopped. It
// is a plain Source (no RunAt): the scan calls Mask for every path.
type countingSource struct {
	l     *List
	reads atomic.Int64
	stop  func()
}

func (c *countingSource) Len() int          { return c.l.Len() }
func (c *countingSource) Path(i int) string { return c.l.Path(i) }

func (c *countingSource) Mask(i int) uint64 {
	if c.reads.Add(1) == 2*chunkSize && c.stop != nil {
		c.stop()
	}
	return c.l.Mask(i)
}

// plainSource hides List's RunAt, so that the scan reads path by path.
type plainSource struct{ l *List }

func (s plainSource) Len() int          { return s.l.Len() }
func (s plainSource) Path(i int) string { return s.l.Path(i) }
func (s plainSource) Mask(i int) uint64 { return s.l.Mask(i) }

// runsSource serves a List as runs of a few hundred paths, as the index's
// blocks do.
type runsSource struct {
	*List
	runs []Run
}

func newRunsSource(l *List, r *rand.Rand) *runsSource {
	s := &runsSource{List: l}
	for base := 0; base < l.Len(); {
		n := min(l.Len()-base, 1+r.IntN(700))
		run := Run{Base: base, Masks: l.masks[base : base+n]}
		var b strings.Builder
		for i := base; i < base+n; i++ {
			b.WriteString(l.Path(i))
			run.Ends = append(run.Ends, uint32(b.Len()))
		}
		run.Text = b.String()
		s.runs = append(s.runs, run)
		base += n
	}
	return s
}

func (s *runsSource) RunAt(i int) Run {
	k, _ := slices.BinarySearchFunc(s.runs, i, func(r Run, i int) int {
		if i < r.Base {
			return 1
		}
		if i >= r.Base+len(r.Ends) {
			return -1
		}
		return 0
	})
	return s.runs[k]
}

// sources returns l as a List, as a plain Source and as runs.
func sources(l *List, r *rand.Rand) []Source {
	return []Source{l, plainSource{l}, newRunsSource(l, r)}
}

func TestCancelStopsTheScan(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 1))
	paths := make([]string, 200*chunkSize)
	for i := range paths {
		paths[i] = randomPath(r)
	}
	l, err := NewList(paths)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	src := &countingSource{l: l, stop: cancel}
	_, err = TopK(ctx, Compile("e"), src, Options{Workers: 2})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	// Each worker finishes at most the chunk it is in.
	if n := src.reads.Load(); n > 6*chunkSize {
		t.Errorf("read %d masks after cancelling at %d", n, 2*chunkSize)
	}
	// An already cancelled search does no work.
	src.reads.Store(0)
	if _, err := TopK(ctx, Compile("e"), src, Options{}); !errors.Is(err, context.Canceled) || src.reads.Load() != 0 {
		t.Errorf("cancelled search: err %v, %d reads", err, src.reads.Load())
	}
}

// TestNegativeScores: a long gap makes a score negative; with fewer
// matches than K every match is still a hit.
func TestNegativeScores(t *testing.T) {
	t.Parallel()
	long := "a" + strings.Repeat("/xxxxxxxx", 60) + "/by/c.txt"
	l, err := NewList([]string{long, "zzz", "q/" + long})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"ab", "ac", "ay/", "a/xb"} {
		p := Compile(q)
		want, total := bruteForce(p, l, 20, nil)
		if len(want) == 0 || want[len(want)-1].Raw >= 0 {
			t.Fatalf("%q: the test needs a negative score among %v", q, want)
		}
		for _, src := range sources(l, rand.New(rand.NewPCG(1, 2))) {
			out, err := TopK(context.Background(), p, src, Options{K: 20})
			if err != nil {
				t.Fatal(err)
			}
			checkSame(t, q, l, out, want, total)
		}
	}
}

func TestEmptyPatternMatchesAll(t *testing.T) {
	t.Parallel()
	l, err := NewList([]string{"bb", "a", "ccc", "ab"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := TopK(context.Background(), Compile(" "), l, Options{K: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range out.Hits {
		got = append(got, l.Path(h.Index))
	}
	if out.Total != 4 || !slices.Equal(got, []string{"a", "ab", "bb"}) {
		t.Errorf("empty query: total %d, hits %q", out.Total, got)
	}
}

// TestTiesBreakByLengthThenPath checks the order of equal scores at the
// k-th place: thousands of paths tie on score, many on length too, listed
// so that the scan meets the later ones (shorter, or lexically smaller)
// after its best k are full of the others.
func TestTiesBreakByLengthThenPath(t *testing.T) {
	t.Parallel()
	var paths []string
	for i := 2999; i >= 0; i-- {
		paths = append(paths, fmt.Sprintf("src/mod%d/widget_%04d.go", i%7, i))
		if i%500 == 0 {
			paths = append(paths, fmt.Sprintf("src/mod%d/widget_%d.go", i%7, i)) // shorter
		}
	}
	l, err := NewList(paths)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 5))
	for _, q := range []string{"widget", "wdg", "mod widget", "src/mod"} {
		p := Compile(q)
		for _, k := range []int{1, 5, 20} {
			want, wantTotal := bruteForce(p, l, k, nil)
			for workers, src := range sources(l, r) {
				out, err := TopK(context.Background(), p, src, Options{K: k, Workers: workers + 1})
				if err != nil {
					t.Fatal(err)
				}
				checkSame(t, q, l, out, want, wantTotal)
			}
		}
	}
}
