// Command compare replays typed queries, keystroke by keystroke, through
// ferry's matcher and fzf's own matcher on the same path lists in one run,
// and prints latency percentiles and ratios; it also measures how fast a
// cancelled search goes idle, the memory ferry's path list keeps per path,
// and `ferry search --stdin` against the `fzf --filter` binary end to end.
// Run bench/corpus.sh first. See bench/README.md.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/ferry-dev/ferry/internal/search/fuzzy"
)

// queries are typed one character at a time; every prefix is a keystroke.
// They mix file names, directory paths, multi-term queries, upper case and
// misspellings (which match less, or differently).
var queries = []string{
	"router",
	"mm/page_alloc",
	"drivers net eth",
	"kconfig",
	"readme",
	"Makefile",
	"sched core",
	"shced core",   // misspelt
	"netw" + "rok", // misspelt (split so that spell checkers let it be)
	"drviers/usb",  // misspelt
	"page_aloc",    // misspelt
	"include/linux/sched.h",
	"Documentation admin",
	"tcp_ipv4",
	"usb storage",
	"arm64 dts",
	"fs/ext4/inode",
	"btrfs",
	"x86 kvm mmu",
	"e1000e",
}

func main() {
	dir := flag.String("corpus", "corpus", "directory made by corpus.sh")
	rounds := flag.Int("rounds", 5, "replays of all queries per size (fewer at 1M, see -rounds1m)")
	rounds1m := flag.Int("rounds1m", 2, "replays at 1M paths")
	workers := flag.Int("workers", 2, "CPUs (GOMAXPROCS) and scanning goroutines for both engines")
	e2e := flag.Bool("e2e", true, "compare `ferry search --stdin` with `fzf --filter`")
	memOnly := flag.Bool("mem", false, "only measure the memory a path list retains")
	repo := flag.String("repo", "..", "ferry's module root, to build cmd/ferry for -e2e")
	flag.Parse()
	runtime.GOMAXPROCS(*workers)
	if *memOnly {
		paths, err := readLines(filepath.Join(*dir, "kernel13.txt"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "compare:", err)
			os.Exit(1)
		}
		memoryPerPath(paths)
		return
	}
	if err := run(*dir, *rounds, *rounds1m, *workers, *e2e, *repo); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

func run(dir string, rounds, rounds1m, workers int, e2e bool, repo string) error {
	fmt.Printf("machine: %s, GOMAXPROCS=%d, %s/%s, %s\n\n", cpuModel(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, runtime.Version())
	k100, err := readLines(filepath.Join(dir, "k100.txt"))
	if err != nil {
		return err
	}
	k1m, err := readLines(filepath.Join(dir, "kernel13.txt"))
	if err != nil {
		return err
	}
	uni, err := readLines(filepath.Join(dir, "unicode.txt"))
	if err != nil {
		return err
	}

	// Measured first, while the heap holds nothing but the corpora.
	memoryPerPath(k1m)

	fmt.Println("## Per keystroke (every prefix of every query), milliseconds")
	fmt.Println()
	for _, c := range []struct {
		label  string
		paths  []string
		rounds int
	}{
		{"100k (kernel + part of 13x)", k100, rounds},
		{"1M (kernel 13x)", k1m, rounds1m},
	} {
		if err := replay(c.label, c.paths, queries, c.rounds, workers); err != nil {
			return err
		}
	}
	if err := replay(fmt.Sprintf("unicode (%d generated)", len(uni)), uni,
		[]string{"café", "cafe\u0301", "résumé", "日本語", "한글", "emoji", "STRASSE", "σίσυφος", "noel"}, rounds, workers); err != nil {
		return err
	}

	if err := quality(k100, workers); err != nil {
		return err
	}
	if err := cancelToIdle(k1m, workers); err != nil {
		return err
	}
	if e2e {
		if err := endToEnd(dir, repo); err != nil {
			return err
		}
	}
	return nil
}

func readLines(name string) ([]string, error) {
	f, err := os.Open(name) //nolint:gosec // the corpus directory is the user's
	if err != nil {
		return nil, fmt.Errorf("open corpus (run bench/corpus.sh first): %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if sc.Text() != "" {
			out = append(out, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return out, nil
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if name, ok := strings.CutPrefix(line, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
		}
	}
	return "unknown CPU"
}

// replay runs every prefix of every query through each engine, the engines
// taking turns (the order alternating per keystroke) so that noise on the
// shared machine hits them alike.
func replay(label string, paths, qs []string, rounds, workers int) error {
	list, err := fuzzy.NewList(paths)
	if err != nil {
		return fmt.Errorf("build list: %w", err)
	}
	engines := []engine{
		newFzfEngine(paths, workers),
		&ferryEngine{list: list, workers: workers},
		&narrowEngine{list: list, workers: workers},
	}
	times := make([][]time.Duration, len(engines))
	// Warm up caches and the Go runtime on one query.
	for _, e := range engines {
		if _, _, err := e.search("warm up"); err != nil {
			return err
		}
	}
	worst := make([]struct {
		d time.Duration
		q string
	}, len(engines))
	for r := range rounds {
		for qi, q := range qs {
			for _, e := range engines {
				e.reset()
			}
			keys := []rune(q)
			for l := 1; l <= len(keys); l++ {
				prefix := string(keys[:l])
				for k := range engines {
					ei := (k + r + qi + l) % len(engines)
					e := engines[ei]
					start := time.Now()
					_, _, err := e.search(prefix)
					d := time.Since(start)
					if err != nil {
						return err
					}
					times[ei] = append(times[ei], d)
					if d > worst[ei].d {
						worst[ei].d, worst[ei].q = d, prefix
					}
				}
			}
		}
	}
	fmt.Printf("### %s: %d paths, %d keystrokes x %d rounds\n\n", label, len(paths), len(times[0])/rounds, rounds)
	fmt.Println("| engine | p50 | p90 | p99 | max (query) | p50 ratio fzf/engine | p99 ratio fzf/engine |")
	fmt.Println("|---|---:|---:|---:|---|---:|---:|")
	base := percentiles(times[0])
	for i, e := range engines {
		p := percentiles(times[i])
		fmt.Printf("| %s | %.2f | %.2f | %.2f | %.2f (%q) | %.1fx | %.1fx |\n", e.name(), ms(p[0]), ms(p[1]), ms(p[2]), ms(worst[i].d), worst[i].q,
			float64(base[0])/float64(p[0]), float64(base[2])/float64(p[2]))
	}
	fmt.Println()
	return nil
}

func percentiles(ds []time.Duration) [3]time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return [3]time.Duration{at(0.50), at(0.90), at(0.99)}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// quality prints both engines' top 5 for the complete queries, to compare
// rankings by eye.
func quality(paths []string, workers int) error {
	list, err := fuzzy.NewList(paths)
	if err != nil {
		return fmt.Errorf("build list: %w", err)
	}
	fz := newFzfEngine(paths, workers)
	fe := &ferryEngine{list: list, workers: workers}
	fmt.Println("## Top 5 of the complete queries on the 100k list (ferry | fzf)")
	fmt.Println()
	for _, q := range queries {
		a, na, err := fe.search(q)
		if err != nil {
			return err
		}
		b, nb, err := fz.search(q)
		if err != nil {
			return err
		}
		fmt.Printf("`%s`: %d matches (ferry) / %d (fzf)\n\n", q, na, nb)
		for i := range 5 {
			var x, y string
			if i < len(a) {
				x = paths[a[i]]
			}
			if i < len(b) {
				y = paths[b[i]]
			}
			fmt.Printf("    %-58s | %s\n", x, y)
		}
		fmt.Println()
	}
	return nil
}

// cancelToIdle starts searches on the 1M list and cancels each after a
// random delay, timing from cancel() to TopK's return (when every worker
// has stopped).
func cancelToIdle(paths []string, workers int) error {
	list, err := fuzzy.NewList(paths)
	if err != nil {
		return fmt.Errorf("build list: %w", err)
	}
	r := rand.New(rand.NewPCG(1, 2)) //nolint:gosec // delays, not secrets
	var lat []time.Duration
	cancelled := 0
	for i := range 200 {
		q := queries[i%len(queries)][:3]
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan time.Time, 1)
		go func() {
			_, err := fuzzy.TopK(ctx, fuzzy.Compile(q), list, fuzzy.Options{K: topN, Workers: workers})
			if err != nil && !errors.Is(err, context.Canceled) {
				panic(err)
			}
			if err != nil {
				cancelled++
			}
			done <- time.Now()
		}()
		time.Sleep(time.Duration(r.IntN(3000)) * time.Microsecond)
		at := time.Now()
		cancel()
		end := <-done
		if end.After(at) {
			lat = append(lat, end.Sub(at))
		} else {
			lat = append(lat, 0)
		}
	}
	p := percentiles(lat)
	slices.Sort(lat)
	fmt.Println("## Cancel to idle (1M paths, cancel at a random point within 3 ms)")
	fmt.Println()
	fmt.Printf("%d searches, %d stopped by the cancel: p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms\n\n",
		len(lat), cancelled, ms(p[0]), ms(p[1]), ms(p[2]), ms(lat[len(lat)-1]))
	return nil
}

// memoryPerPath measures what fuzzy.List keeps beyond the path text.
func memoryPerPath(paths []string) {
	text := 0
	for _, p := range paths {
		text += len(p)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	list, err := fuzzy.NewList(paths)
	if err != nil {
		panic(err)
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	extra := int64(after.HeapAlloc) - int64(before.HeapAlloc) - int64(text)
	fmt.Println("## Retained memory (fuzzy.List, 1M paths)")
	fmt.Println()
	fmt.Printf("%d paths, %.1f MB of text; list retains %.1f MB in total: %.1f bytes per path beyond the text\n\n",
		list.Len(), float64(text)/1e6, float64(after.HeapAlloc-before.HeapAlloc)/1e6, float64(extra)/float64(list.Len()))
	runtime.KeepAlive(list)
	runtime.KeepAlive(paths) // else the collector frees them between the readings
}

// endToEnd times `ferry search --stdin --limit 20 Q` against
// `fzf --filter Q` on the same files, whole processes included.
func endToEnd(dir, repo string) error {
	fmt.Println("## End to end: `ferry search --stdin --limit 20` vs `fzf --filter` (wall time per run, ms)")
	fmt.Println()
	fzfBin, err := exec.LookPath("fzf")
	if err != nil {
		fmt.Println("skipped: no fzf binary (apt-get install fzf)")
		fmt.Println()
		return nil //nolint:nilerr // a missing peer skips this part
	}
	tmp, err := os.MkdirTemp("", "ferry-bench")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	ferryBin := filepath.Join(tmp, "ferry")
	build := exec.Command("go", "build", "-o", ferryBin, "./cmd/ferry") //nolint:gosec // go build of this repository
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Printf("skipped: cannot build cmd/ferry: %v\n%s\n", err, out)
		return nil
	}
	probe := exec.Command(ferryBin, "search", "--stdin", "--limit", "1", "x") //nolint:gosec // the binary just built
	probe.Stdin = strings.NewReader("x\n")
	if out, err := probe.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "x" {
		fmt.Printf("skipped: `ferry search --stdin` is not there yet (%v: %s)\n\n", err, strings.TrimSpace(string(out)))
		return nil
	}
	fmt.Println("| list | query | ferry | fzf | ratio |")
	fmt.Println("|---|---|---:|---:|---:|")
	for _, file := range []string{"k100.txt", "kernel13.txt"} {
		for _, q := range []string{"router", "mm/page_alloc", "drivers net eth", "kconfig", "sched core"} {
			f, err1 := timeRuns(filepath.Join(dir, file), ferryBin, "search", "--stdin", "--limit", "20", q)
			z, err2 := timeRuns(filepath.Join(dir, file), fzfBin, "--filter", q, "--scheme=path", "-i")
			if err := errors.Join(err1, err2); err != nil {
				return err
			}
			fmt.Printf("| %s | `%s` | %.0f | %.0f | %.1fx |\n", file, q, ms(f), ms(z), float64(z)/float64(f))
		}
	}
	fmt.Println()
	return nil
}

// timeRuns returns the median wall time of 5 runs of bin with input on stdin.
func timeRuns(input, bin string, args ...string) (time.Duration, error) {
	var ds []time.Duration
	for range 5 {
		in, err := os.Open(input) //nolint:gosec // a corpus file
		if err != nil {
			return 0, fmt.Errorf("open %s: %w", input, err)
		}
		cmd := exec.Command(bin, args...) //nolint:gosec // ferry or fzf, with the benchmark's arguments
		cmd.Stdin = in
		cmd.Env = append(os.Environ(), "GOMAXPROCS=2")
		start := time.Now()
		err = cmd.Run()
		d := time.Since(start)
		in.Close()
		var exit *exec.ExitError
		// fzf exits 1 when nothing matches.
		if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 1) {
			return 0, fmt.Errorf("%s %v: %w", bin, args, err)
		}
		ds = append(ds, d)
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}
