package fuzzy

import (
	"bufio"
	"context"
	"os"
	"testing"
)

// The benchmarks use bench/corpus (made by bench/corpus.sh) when present;
// the side-by-side comparison with fzf lives in bench/.
func loadCorpus(b testing.TB, name string) *List {
	f, err := os.Open("../../../bench/corpus/" + name)
	if err != nil {
		b.Skip("no corpus: run bench/corpus.sh")
	}
	defer f.Close()
	var paths []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		paths = append(paths, sc.Text())
	}
	l, err := NewList(paths)
	if err != nil {
		b.Fatal(err)
	}
	return l
}

var benchQueries = []string{"router", "mm/page_alloc", "drivers net eth", "kconfig", "readme", "Makefile", "sched core"}

func benchReplay(b *testing.B, l *List, qs []string) {
	for b.Loop() {
		for _, q := range qs {
			r := []rune(q)
			for i := 1; i <= len(r); i++ {
				if _, err := TopK(context.Background(), Compile(string(r[:i])), l, Options{K: 20, Workers: 2}); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}

func BenchmarkReplay100k(b *testing.B) { benchReplay(b, loadCorpus(b, "k100.txt"), benchQueries) }

func BenchmarkReplayUnicode(b *testing.B) {
	benchReplay(b, loadCorpus(b, "unicode.txt"), []string{"café", "résumé", "日本語", "emoji", "STRASSE"})
}

// BenchmarkQuery times single queries on one worker. Beside ns/op it
// reports cpu-ns/op, the process's CPU time per search, which other jobs on
// a shared machine disturb less than wall time.
func BenchmarkQuery(b *testing.B) {
	l := loadCorpus(b, "k100.txt")
	for _, q := range []string{"r", "d", "dr", "dri", "drivers ne", "rou", "read", "inc", "drvi", "drvie", "drvier", "Doc",
		"fs/", "mm/pa", "Documentation ad", "shced", "kconfig", "netwrok"} { //nolint:misspell // typed misspellings are the point
		p := Compile(q)
		b.Run(q, func(b *testing.B) {
			c0 := cpuTime()
			for b.Loop() {
				if _, err := TopK(context.Background(), p, l, Options{K: 20, Workers: 1}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
		})
	}
}

func BenchmarkAlign(b *testing.B) {
	l := loadCorpus(b, "k100.txt")
	for _, q := range []string{"drvie", "doc", "inc"} {
		p := Compile(q)
		var paths []string
		var s Slab
		for i := range l.Len() {
			if _, ok := p.raw(l.Path(i), &s, false); ok {
				paths = append(paths, l.Path(i))
			}
			if len(paths) == 2000 {
				break
			}
		}
		b.Run(q, func(b *testing.B) {
			for b.Loop() {
				for _, path := range paths {
					p.raw(path, &s, false)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(paths)), "ns/path")
		})
	}
}

func BenchmarkQuery1M(b *testing.B) {
	l := loadCorpus(b, "kernel13.txt")
	for _, q := range []string{"r", "inc"} {
		p := Compile(q)
		b.Run(q, func(b *testing.B) {
			for b.Loop() {
				if _, err := TopK(context.Background(), p, l, Options{K: 20, Workers: 1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
