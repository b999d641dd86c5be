// Command startup measures ferry's whole processes side by side with fzf
// in one run and prints Markdown tables: `ferry version` against
// `fzf --version` (wall time from fork to exit, user+sys CPU, peak RSS),
// `ferry search --stdin` against `fzf --filter` on the kernel path lists,
// and `ferry mcp` from spawn to its answer to `initialize`. Every figure
// is the median of -runs whole processes; the commands of one row take
// turns in every round, the order rotating, so noise on a shared machine
// hits them alike. It also prints the heaviest package initialisers from
// one GODEBUG=inittrace=1 run and, with -size, the binary's size and what
// each dependency module adds to it (go tool nm -size).
//
// It builds ferry from -repo (default ..), and with -before DIR a second
// ferry from another source tree, measured in the same rounds. -release
// measures builds made as a release is (-trimpath -ldflags='-s -w').
// Each build is dropped from the page cache and run once before the
// rounds (settle_linux.go), and every measured process is started by a
// small launcher, this binary re-run (child.go), so that peak RSS is the
// process's own and not the benchmark's. Run bench/corpus.sh first. See
// bench/README.md.
package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == childArg {
		runChild(os.Args[2])
		return
	}
	var o options
	flag.StringVar(&o.repo, "repo", "..", "ferry's module root, to build cmd/ferry")
	flag.StringVar(&o.before, "before", "", "another ferry source `DIR` (an older commit's tree) to measure in the same rounds")
	flag.StringVar(&o.corpus, "corpus", "corpus", "directory made by corpus.sh (kernel.txt, kernel13.txt)")
	flag.IntVar(&o.runs, "runs", 7, "whole processes per command and row; figures are their medians (use >= 5)")
	queries := flag.String("queries", "router,mm/page_alloc,drivers net eth,kconfig,sched core", "search queries, comma-separated")
	lists := flag.String("lists", "kernel.txt,kernel13.txt", "path lists under -corpus for the search rows, comma-separated")
	parts := flag.String("parts", "version,search,mcp,inittrace", "what to measure, comma-separated: version, search, mcp, inittrace")
	flag.BoolVar(&o.release, "release", false, "measure release builds (-trimpath -ldflags='-s -w') instead of the default go build")
	flag.BoolVar(&o.size, "size", false, "print the binary's size (default and release builds) and what each module adds")
	flag.StringVar(&o.fzf, "fzf", "fzf", "the fzf binary to compare with")
	flag.Parse()
	o.queries = splitList(*queries)
	o.lists = splitList(*lists)
	o.parts = map[string]bool{}
	for _, p := range splitList(*parts) {
		switch p {
		case "version", "search", "mcp", "inittrace":
			o.parts[p] = true
		default:
			fmt.Fprintf(os.Stderr, "startup: -parts: unknown part %q (want version, search, mcp, inittrace)\n", p)
			os.Exit(2)
		}
	}
	if o.runs < 1 {
		fmt.Fprintln(os.Stderr, "startup: -runs must be at least 1")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "startup:", err)
		os.Exit(1)
	}
}

type options struct {
	repo, before, corpus, fzf string
	runs                      int
	queries, lists            []string
	parts                     map[string]bool
	release, size             bool
}

func splitList(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// build is one ferry source tree and its binaries.
type build struct {
	label    string // "ferry", or "before" and "after"
	src      string
	bin, rel string // default and release builds ("" when not built)
}

// measured is the binary whose processes are timed.
func (b build) measured(release bool) string {
	if release {
		return b.rel
	}
	return b.bin
}

func run(o options) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	tmp, err := os.MkdirTemp("", "ferry-startup-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()

	builds := []build{{label: "ferry", src: o.repo}}
	if o.before != "" {
		builds = []build{{label: "before", src: o.before}, {label: "after", src: o.repo}}
	}
	for i := range builds {
		b := &builds[i]
		if !o.release || o.size {
			b.bin = filepath.Join(tmp, b.label)
			if err := goBuild(ctx, b.src, b.bin, false); err != nil {
				return err
			}
		}
		if o.release || o.size {
			b.rel = filepath.Join(tmp, b.label+"-release")
			if err := goBuild(ctx, b.src, b.rel, true); err != nil {
				return err
			}
		}
	}
	env, err := childEnv(tmp)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("the launcher (this binary): %w", err)
	}
	h := &harness{o: o, builds: builds, env: env, tmp: tmp, self: self}
	for _, b := range builds {
		// As installed: out of the page cache, then one run from disk.
		if err := settle(b.measured(o.release)); err != nil {
			return err
		}
		if _, err := h.launch(ctx, spec{Bin: b.measured(o.release), Args: []string{"version"}}); err != nil {
			return fmt.Errorf("first run of %s: %w", b.label, err)
		}
	}
	if o.parts["version"] || o.parts["search"] {
		if h.fzf, err = exec.LookPath(o.fzf); err != nil {
			return fmt.Errorf("no fzf to compare with (apt-get install fzf, or -parts mcp,inittrace): %w", err)
		}
		h.fzfVersion = h.fzfVersionString(ctx)
	}
	h.header()
	if o.parts["version"] {
		if err := h.version(ctx); err != nil {
			return err
		}
	}
	if o.parts["search"] {
		if err := h.search(ctx); err != nil {
			return err
		}
	}
	if o.parts["mcp"] {
		if err := h.mcp(ctx); err != nil {
			return err
		}
	}
	if o.parts["inittrace"] {
		if err := h.inittrace(ctx); err != nil {
			return err
		}
	}
	if h.launcherPeak > 0 {
		fmt.Printf("Peak RSS is the kernel's ru_maxrss of each process, started by a small launcher whose own peak was at most %.1f MiB:\n"+
			"Linux counts the parent's peak at vfork+exec, so no figure above can read lower than that.\n\n", mib(float64(h.launcherPeak)))
	}
	if o.size {
		if err := h.sizes(); err != nil {
			return err
		}
	}
	return nil
}

// goBuild builds cmd/ferry of the tree src into out, as a release does
// when release is set.
func goBuild(ctx context.Context, src, out string, release bool) error {
	args := []string{"build", "-o", out}
	if release {
		args = append(args, "-trimpath", "-ldflags=-s -w")
	}
	args = append(args, "./cmd/ferry")
	fmt.Fprintf(os.Stderr, "startup: go %s (in %s)\n", strings.Join(args, " "), src)
	cmd := exec.CommandContext(ctx, "go", args...) //nolint:gosec // the bench's own build
	cmd.Dir = src
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build ferry in %s: %w", src, err)
	}
	return nil
}

// childEnv is the environment of every measured process: the user's
// minus anything that would change what ferry or fzf do (a temporary
// HOME and XDG directories, so the user's config and state are neither
// read nor written; no FZF_* options, no GODEBUG).
func childEnv(tmp string) ([]string, error) {
	home := filepath.Join(tmp, "home")
	env := []string{"HOME=" + home}
	for _, x := range []string{"XDG_CONFIG_HOME=.config", "XDG_STATE_HOME=.local/state", "XDG_DATA_HOME=.local/share", "XDG_CACHE_HOME=.cache"} {
		k, v, _ := strings.Cut(x, "=")
		d := filepath.Join(home, v)
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("temp home: %w", err)
		}
		env = append(env, k+"="+d)
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || k == "GODEBUG" || strings.HasPrefix(k, "XDG_") || strings.HasPrefix(k, "FZF_") || strings.HasPrefix(k, "FERRY_") {
			continue
		}
		env = append(env, kv)
	}
	return env, nil
}

type harness struct {
	o          options
	builds     []build
	env        []string
	tmp        string
	fzf        string
	fzfVersion string
	self       string // this binary, the launcher of every measured process
	// launcherPeak is the largest peak RSS of a launcher when it started
	// a child: no child's peak RSS can read lower (see child.go).
	launcherPeak int64
}

func (h *harness) fzfVersionString(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, h.fzf, "--version").Output() //nolint:gosec // the peer binary
	if err != nil {
		return "unknown version"
	}
	return strings.TrimSpace(string(out))
}

func (h *harness) header() {
	kind := "default `go build`"
	if h.o.release {
		kind = "release build (`-trimpath -ldflags='-s -w'`)"
	}
	fmt.Printf("# ferry start-up, whole processes, side by side with fzf\n\n")
	fmt.Printf("%d CPUs, %s/%s, %s; ferry: %s", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), kind)
	if h.fzf != "" {
		fmt.Printf("; fzf %s", h.fzfVersion)
	}
	fmt.Printf(".\nEvery figure is the median of %d processes; the commands of a row take turns each round, the order rotating.\n", h.o.runs)
	if h.o.runs < 5 {
		fmt.Printf("(Fewer than 5 runs: a smoke test, not figures to publish.)\n")
	}
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Printf("Load average at the start: %s.\n", strings.Join(strings.Fields(string(la))[:3], " "))
	}
	fmt.Println()
}

// sample is one finished process.
type sample struct {
	wall, cpu time.Duration
	rss       int64 // peak resident set, bytes
	// anon and file split the live process's RSS at a moment of interest
	// (mcp: the initialize response): heap and stacks vs the binary's
	// mapped pages. Zero when not sampled.
	anon, file int64
	filePMD    int64 // of file, mapped as 2 MiB pages (large page-cache folios)
}

// command is one side of a row: a way to run one process and measure it.
type command struct {
	name string
	run  func(ctx context.Context) (sample, error)
}

// rounds runs every command o.runs times, the commands taking turns and
// the order rotating by one each round, and returns the samples of each.
func (h *harness) rounds(ctx context.Context, what string, cmds []command) ([][]sample, error) {
	out := make([][]sample, len(cmds))
	start := time.Now()
	for r := range h.o.runs {
		for k := range cmds {
			i := (r + k) % len(cmds)
			s, err := cmds[i].run(ctx)
			if err != nil {
				return nil, fmt.Errorf("%s, %s: %w", what, cmds[i].name, err)
			}
			out[i] = append(out[i], s)
		}
	}
	var meds []string
	for i, c := range cmds {
		meds = append(meds, fmt.Sprintf("%s %.1f ms", c.name, ms(median(out[i], wallOf))))
	}
	fmt.Fprintf(os.Stderr, "startup: %s: %d rounds in %.1fs: %s\n", what, h.o.runs, time.Since(start).Seconds(), strings.Join(meds, ", "))
	return out, nil
}

func wallOf(s sample) float64 { return float64(s.wall) }
func cpuOf(s sample) float64  { return float64(s.cpu) }
func rssOf(s sample) float64  { return float64(s.rss) }

func median(ss []sample, f func(sample) float64) float64 {
	vs := make([]float64, len(ss))
	for i, s := range ss {
		vs[i] = f(s)
	}
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}

func ms(ns float64) float64 { return ns / 1e6 }
func mib(b float64) float64 { return b / (1 << 20) }
func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// ferryCommands returns one command per build (before, then ferry).
func (h *harness) ferryCommands(f func(bin string) func(context.Context) (sample, error)) []command {
	var cs []command
	for _, b := range h.builds {
		cs = append(cs, command{name: b.label, run: f(b.measured(h.o.release))})
	}
	return cs
}

// ratioHeader heads the column of ferry's figure over fzf's ("ferry/fzf",
// or "after/fzf" with -before).
func (h *harness) ratioHeader() string { return h.builds[len(h.builds)-1].label + "/fzf" }

// columns is the header cells of the compared commands: before (if
// any), ferry, and the peer.
func (h *harness) columns(peer string) []string {
	var cs []string
	for _, b := range h.builds {
		cs = append(cs, b.label)
	}
	if peer != "" {
		cs = append(cs, peer)
	}
	return cs
}

func (h *harness) version(ctx context.Context) error {
	cmds := h.ferryCommands(func(bin string) func(context.Context) (sample, error) {
		return func(ctx context.Context) (sample, error) {
			return h.launch(ctx, spec{Bin: bin, Args: []string{"version"}})
		}
	})
	cmds = append(cmds, command{name: "fzf", run: func(ctx context.Context) (sample, error) {
		return h.launch(ctx, spec{Bin: h.fzf, Args: []string{"--version"}})
	}})
	res, err := h.rounds(ctx, "version", cmds)
	if err != nil {
		return err
	}
	cols := h.columns("fzf")
	fmt.Printf("## `ferry version` vs `fzf --version`\n\n")
	fmt.Printf("| measure | %s | %s | goal |\n|---|%s---:|---|\n", strings.Join(cols, " | "), h.ratioHeader(), strings.Repeat("---:|", len(cols)))
	n := len(res)
	for _, m := range []struct {
		name, goal string
		f          func(sample) float64
		unit       func(float64) float64
	}{
		{"wall, fork to exit (ms)", "≤ 25 ms", wallOf, ms},
		{"user+sys CPU (ms)", "", cpuOf, ms},
		{"peak RSS (MiB)", "≤ 16 MiB", rssOf, mib},
	} {
		var cells []string
		for _, r := range res {
			cells = append(cells, fmt.Sprintf("%.1f", m.unit(median(r, m.f))))
		}
		fmt.Printf("| %s | %s | %s | %s |\n", m.name, strings.Join(cells, " | "),
			ratio(median(res[n-2], m.f), median(res[n-1], m.f)), m.goal)
	}
	fmt.Println()
	return nil
}

// fzfFilterArgs is fzf's side of a search row; --scheme=path is dropped
// when this fzf does not know it (it came in 0.36).
func (h *harness) fzfFilterArgs(ctx context.Context) ([]string, string) {
	args := []string{"--filter", "", "--scheme=path", "-i"}
	probe := exec.CommandContext(ctx, h.fzf, "--filter", "x", "--scheme=path") //nolint:gosec // the peer binary
	probe.Stdin = strings.NewReader("x\n")
	probe.Env = h.env
	err := probe.Run()
	var exit *exec.ExitError
	if err == nil || errors.As(err, &exit) && exit.ExitCode() == 1 {
		return args, "`fzf --filter Q --scheme=path -i`"
	}
	return []string{"--filter", "", "-i"}, "`fzf --filter Q -i` (this fzf has no --scheme)"
}

func (h *harness) search(ctx context.Context) error {
	fzfArgs, fzfDesc := h.fzfFilterArgs(ctx)
	cols := h.columns("fzf")
	fmt.Printf("## `ferry search --stdin --limit 20 Q` vs %s\n\n", fzfDesc)
	fmt.Printf("Standard input is the list file, standard output discarded. Ratios below 1: ferry faster or smaller.\n\n")
	fmt.Printf("| list | query | %s | %s | %s | %s |\n", withUnit(cols, "ms"), h.ratioHeader(), withUnit(cols, "MiB"), h.ratioHeader())
	fmt.Printf("|---|---|%s---:|%s---:|\n", strings.Repeat("---:|", len(cols)), strings.Repeat("---:|", len(cols)))
	for _, list := range h.o.lists {
		input := filepath.Join(h.o.corpus, list)
		if _, err := os.Stat(input); err != nil {
			return fmt.Errorf("path list %s (run bench/corpus.sh, or set -corpus): %w", input, err)
		}
		lines, err := countLines(input)
		if err != nil {
			return err
		}
		for _, q := range h.o.queries {
			cmds := h.ferryCommands(func(bin string) func(context.Context) (sample, error) {
				return func(ctx context.Context) (sample, error) {
					return h.launch(ctx, spec{Bin: bin, Args: []string{"search", "--stdin", "--limit", "20", q}, Stdin: input})
				}
			})
			za := slices.Clone(fzfArgs)
			za[1] = q
			cmds = append(cmds, command{name: "fzf", run: func(ctx context.Context) (sample, error) {
				return h.launch(ctx, spec{Bin: h.fzf, Args: za, Stdin: input})
			}})
			res, err := h.rounds(ctx, fmt.Sprintf("search %s %q", list, q), cmds)
			if err != nil {
				return err
			}
			n := len(res)
			var walls, rsss []string
			for _, r := range res {
				walls = append(walls, fmt.Sprintf("%.1f", ms(median(r, wallOf))))
				rsss = append(rsss, fmt.Sprintf("%.1f", mib(median(r, rssOf))))
			}
			fmt.Printf("| %s (%s paths) | `%s` | %s | %s | %s | %s |\n", list, thousands(lines), q,
				strings.Join(walls, " | "), ratio(median(res[n-2], wallOf), median(res[n-1], wallOf)),
				strings.Join(rsss, " | "), ratio(median(res[n-2], rssOf), median(res[n-1], rssOf)))
		}
	}
	fmt.Println()
	return nil
}

func withUnit(cols []string, unit string) string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c + " " + unit
	}
	return strings.Join(out, " | ")
}

func countLines(name string) (int, error) {
	b, err := os.ReadFile(name) //nolint:gosec // a corpus file
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", name, err)
	}
	return bytes.Count(b, []byte("\n")), nil
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func (h *harness) mcp(ctx context.Context) error {
	ws := filepath.Join(h.tmp, "workspace")
	for name, text := range map[string]string{
		"README.md":       "# bench\n",
		"main.go":         "package main\n\nfunc main() {}\n",
		"internal/a/a.go": "package a\n",
		"docs/notes.txt":  "notes\n",
	} {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			return fmt.Errorf("mcp workspace: %w", err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			return fmt.Errorf("mcp workspace: %w", err)
		}
	}
	cmds := h.ferryCommands(func(bin string) func(context.Context) (sample, error) {
		return func(ctx context.Context) (sample, error) {
			return h.launch(ctx, spec{Kind: kindMCP, Bin: bin, Args: []string{"mcp", "--workspace", ws}})
		}
	})
	res, err := h.rounds(ctx, "mcp initialize", cmds)
	if err != nil {
		return err
	}
	cols := h.columns("")
	fmt.Printf("## `ferry mcp --workspace DIR`: spawn to the `initialize` response\n\n")
	fmt.Printf("The request is written as soon as the process is started; the time runs until its response is read.\n\n")
	fmt.Printf("| measure | %s | goal |\n|---|%s---|\n", strings.Join(cols, " | "), strings.Repeat("---:|", len(cols)))
	row := func(name, goal string, f func([]sample) float64) {
		var cells []string
		for _, r := range res {
			cells = append(cells, fmt.Sprintf("%.1f", f(r)))
		}
		fmt.Printf("| %s | %s | %s |\n", name, strings.Join(cells, " | "), goal)
	}
	row("spawn → response, median (ms)", "≤ 30 ms", func(r []sample) float64 { return ms(median(r, wallOf)) })
	row("spawn → response, slowest (ms)", "", func(r []sample) float64 {
		return ms(slices.Max(apply(r, wallOf)))
	})
	row("user+sys CPU to exit (ms)", "", func(r []sample) float64 { return ms(median(r, cpuOf)) })
	row("peak RSS to exit (MiB)", "", func(r []sample) float64 { return mib(median(r, rssOf)) })
	row("RSS at the response: anonymous (MiB)", "", func(r []sample) float64 {
		return mib(median(r, func(s sample) float64 { return float64(s.anon) }))
	})
	row("RSS at the response: file-backed, the binary's pages (MiB)", "", func(r []sample) float64 {
		return mib(median(r, func(s sample) float64 { return float64(s.file) }))
	})
	row("… of which mapped as 2 MiB pages (MiB)", "", func(r []sample) float64 {
		return mib(median(r, func(s sample) float64 { return float64(s.filePMD) }))
	})
	fmt.Println()
	return nil
}

func apply(ss []sample, f func(sample) float64) []float64 {
	out := make([]float64, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

func (h *harness) inittrace(ctx context.Context) error {
	// One run is at the mercy of the machine's other jobs: take the run
	// with the median total of a few, the builds taking turns.
	n := min(h.o.runs, 5)
	all := make([][]*initTrace, len(h.builds))
	for range n {
		for i, b := range h.builds {
			cmd := exec.CommandContext(ctx, b.measured(h.o.release), "version") //nolint:gosec // the bench's own build
			cmd.Env = append(slices.Clone(h.env), "GODEBUG=inittrace=1")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("GODEBUG=inittrace=1 %s version: %w", b.label, err)
			}
			t, err := parseInitTrace(&stderr)
			if err != nil {
				return fmt.Errorf("%s: %w", b.label, err)
			}
			all[i] = append(all[i], t)
		}
	}
	traces := make([]*initTrace, len(h.builds))
	for i, ts := range all {
		slices.SortFunc(ts, func(a, b *initTrace) int { return cmp.Compare(a.clock, b.clock) })
		traces[i] = ts[len(ts)/2]
		fmt.Fprintf(os.Stderr, "startup: inittrace %s: %d packages, median run %.1f ms (%d runs)\n",
			h.builds[i].label, len(traces[i].entries), traces[i].clock, n)
	}
	last := traces[len(traces)-1]
	fmt.Printf("## Package initialisation: `GODEBUG=inittrace=1 ferry version` (informative)\n\n")
	fmt.Printf("The run with the median total init clock of %d.\n\n", n)
	fmt.Printf("| package | init clock (ms) | bytes | allocs |\n|---|---:|---:|---:|\n")
	for _, e := range last.top(10) {
		fmt.Printf("| %s | %.2f | %s | %s |\n", e.pkg, e.clock, thousands(int(e.bytes)), thousands(int(e.allocs)))
	}
	fmt.Println()
	for i, t := range traces {
		fmt.Printf("- %s: %d packages initialised, %.1f ms init clock in total, %.2f MiB and %s allocations\n",
			h.builds[i].label, len(t.entries), t.clock, mib(float64(t.bytes)), thousands(int(t.allocs)))
	}
	fmt.Println()
	return nil
}

// topRows is how many modules the size table lists before "the rest".
const topRows = 25

func (h *harness) sizes() error {
	reports := make([]*sizeReport, len(h.builds))
	for i, b := range h.builds {
		fmt.Fprintf(os.Stderr, "startup: size of %s (go tool nm)\n", b.label)
		r, err := measureSize(b.label, b.bin, b.rel)
		if err != nil {
			return err
		}
		reports[i] = r
	}
	const mb = 1e6
	fmt.Printf("## Binary size (MB = 10⁶ bytes)\n\n")
	fmt.Printf("| build | default `go build` | release (`-trimpath -ldflags='-s -w'`) |\n|---|---:|---:|\n")
	for _, r := range reports {
		fmt.Printf("| %s | %.1f MB | %.1f MB |\n", r.label, float64(r.fileSize)/mb, float64(r.releaseSize)/mb)
	}
	fmt.Println()
	fmt.Printf("Sections (MB):\n\n")
	var hdr []string
	for _, r := range reports {
		hdr = append(hdr, r.label+" default", r.label+" release")
	}
	fmt.Printf("| section | %s |\n|---|%s\n", strings.Join(hdr, " | "), strings.Repeat("---:|", len(hdr)))
	for _, g := range sectionGroups {
		var cells []string
		for _, r := range reports {
			cells = append(cells, fmt.Sprintf("%.1f", float64(groupSize(r.sections, g.match))/mb),
				fmt.Sprintf("%.1f", float64(groupSize(r.releaseSecs, g.match))/mb))
		}
		fmt.Printf("| %s | %s |\n", g.name, strings.Join(cells, " | "))
	}
	fmt.Println()

	last := reports[len(reports)-1]
	var prev map[string]sizeRow
	if len(reports) > 1 {
		prev = map[string]sizeRow{}
		for _, r := range reports[0].rows {
			prev[r.name] = r
		}
	}
	fmt.Printf("What each module adds (symbols of `go tool nm -size` in the sections stored in the file, by module; MB):\n\n")
	if prev != nil {
		fmt.Printf("| # | module | code | data | total | share | before | change |\n|---:|---|---:|---:|---:|---:|---:|---:|\n")
	} else {
		fmt.Printf("| # | module | code | data | total | share |\n|---:|---|---:|---:|---:|---:|\n")
	}
	var rest sizeRow
	restN := 0
	for i, r := range last.rows {
		if i >= topRows {
			rest.text += r.text
			rest.data += r.data
			restN++
			continue
		}
		t := r.text + r.data
		fmt.Printf("| %d | %s | %.2f | %.2f | %.2f | %.1f%% |", i+1, r.name, float64(r.text)/mb, float64(r.data)/mb,
			float64(t)/mb, 100*float64(t)/float64(last.attributed))
		if prev != nil {
			p := prev[r.name]
			fmt.Printf(" %.2f | %+.2f |", float64(p.text+p.data)/mb, (float64(t)-float64(p.text+p.data))/mb)
		}
		fmt.Println()
	}
	if restN > 0 {
		t := rest.text + rest.data
		fmt.Printf("| | the other %d rows | %.2f | %.2f | %.2f | %.1f%% |", restN, float64(rest.text)/mb, float64(rest.data)/mb,
			float64(t)/mb, 100*float64(t)/float64(last.attributed))
		if prev != nil {
			fmt.Printf(" | |")
		}
		fmt.Println()
	}
	fmt.Printf("| | **total attributed** | | | **%.2f** | 100%% |", float64(last.attributed)/mb)
	if prev != nil {
		fmt.Printf(" %.2f | %+.2f |", float64(reports[0].attributed)/mb, (float64(last.attributed)-float64(reports[0].attributed))/mb)
	}
	fmt.Printf("\n\nThe symbols cover %.1f of the %.1f MB of sections loaded from the file; the rest is the\n"+
		"line tables (.gopclntab, %.1f MB) and type descriptors and strings, which nm does not list by package.\n\n",
		float64(last.attributed)/mb, float64(last.allocFileBytes)/mb, float64(groupSize(last.sections, isSection(".gopclntab")))/mb)
	return nil
}

// sectionGroups are the rows of the sections table.
var sectionGroups = []struct {
	name  string
	match func(elfSection) bool
}{
	{"text (code)", isSection(".text")},
	{"rodata", isSection(".rodata")},
	{"pclntab (line tables)", isSection(".gopclntab")},
	{"typelink, itablink", isSection(".typelink", ".itablink")},
	{"data, noptrdata", isSection(".data", ".noptrdata")},
	{"bss, noptrbss (memory, not in the file)", isSection(".bss", ".noptrbss")},
	{"DWARF (.debug_*, compressed)", func(s elfSection) bool { return strings.HasPrefix(s.name, ".debug_") }},
	{"symbol tables (.symtab, .strtab)", isSection(".symtab", ".strtab")},
}

func isSection(names ...string) func(elfSection) bool {
	return func(s elfSection) bool { return slices.Contains(names, s.name) }
}

func groupSize(secs []elfSection, match func(elfSection) bool) uint64 {
	var n uint64
	for _, s := range secs {
		if match(s) {
			n += s.size
		}
	}
	return n
}
