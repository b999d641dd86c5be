package fuzzy

import (
	"context"
	"errors"
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
			for _, workers := range []int{1, 2, 3} {
				out, err := TopK(context.Background(), p, l, Options{K: k, Workers: workers, Accept: accept, Collect: true})
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
		for n := 1; n <= len(typed); n++ {
			q := string(typed[:n])
			p := Compile(q)
			opt := Options{K: 20, Collect: true}
			if prevMatches != nil && p.Refines(prev) {
				opt.Within = prevMatches
				narrowed++
			}
			out, err := TopK(context.Background(), p, l, opt)
			if err != nil {
				t.Fatal(err)
			}
			want, total := bruteForce(p, l, 20, nil)
			checkSame(t, q, l, out, want, total)
			prev, prevMatches = p, out.Matches
		}
	}
	if narrowed < 60 {
		t.Errorf("only %d narrowed searches: the test does not exercise narrowing", narrowed)
	}
}

// TestTopKOnKernelList checks pruning against the brute force on real paths
// when bench/corpus.sh has been run.
func TestTopKOnKernelList(t *testing.T) {
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

// countingSource counts path reads, to observe where a scan stopped.
type countingSource struct {
	*List
	reads atomic.Int64
	stop  func()
}

func (c *countingSource) Mask(i int) uint64 {
	if c.reads.Add(1) == 2*chunkSize && c.stop != nil {
		c.stop()
	}
	return c.List.Mask(i)
}

func TestCancelStopsTheScan(t *testing.T) {
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
	src := &countingSource{List: l, stop: cancel}
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

func TestEmptyPatternMatchesAll(t *testing.T) {
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
