package cli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/search"
	"github.com/ferry-dev/ferry/internal/search/index"
)

// referenceReadLines is how ferry search --stdin read its input before
// index.FromLines: one string per line from a bufio.Scanner with a 1 MiB
// buffer. The tests hold the new reader to its output.
func referenceReadLines(r io.Reader) ([]string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var out []string
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line != "" {
			out = append(out, line)
		}
	}
	return out, sc.Err()
}

var queryIDField = regexp.MustCompile(`"query_id": "[^"]*"`)

// searchStdinOutput runs ferry search --stdin args over input, from a
// regular file when asFile (the size is known) and a plain reader
// otherwise; the JSON query_id (random) is blanked.
func searchStdinOutput(t *testing.T, input []byte, asFile bool, args ...string) (string, error) {
	t.Helper()
	var in io.Reader = bytes.NewReader(input)
	if asFile {
		p := filepath.Join(t.TempDir(), "list")
		if err := os.WriteFile(p, input, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p) //nolint:gosec // the test's own file
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		in = f
	}
	var out bytes.Buffer
	err := runSearch(context.Background(), Env{Stdin: in, Stdout: &out, Stderr: io.Discard}, append([]string{"--stdin"}, args...))
	return queryIDField.ReplaceAllString(out.String(), `"query_id": ""`), err
}

// referenceOutput is searchStdinOutput with the reference reader.
func referenceOutput(t *testing.T, input []byte, args ...string) (string, error) {
	t.Helper()
	paths, err := referenceReadLines(bytes.NewReader(input))
	if err != nil {
		return "", fmt.Errorf("ferry search: read standard input: %w", err)
	}
	cmd, err := parseSearch(Env{Stdout: io.Discard, Stderr: io.Discard}, append([]string{"--stdin"}, args...))
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	ws := &search.Workspace{Name: "stdin", Index: search.Static{Snap: index.FromPaths(paths)}}
	var out bytes.Buffer
	err = printSearch(context.Background(), &out, ws, cmd.req, cmd.asJSON)
	return queryIDField.ReplaceAllString(out.String(), `"query_id": ""`), err
}

// generatedList is n paths with what standard input brings: CRLF and
// CRCR LF ends, lone CRs, blank lines, duplicates, non-ASCII and invalid
// UTF-8 (unless asciiOnly), and a last line with no newline.
func generatedList(n int, asciiOnly bool) []byte {
	rng := rand.New(rand.NewPCG(37, 1))
	words := []string{"drivers", "net", "ethernet", "router", "mm", "page_alloc", "sched", "core", "Kconfig",
		"fs", "ext4", "inode", "x", "test", "main", "README", "a b"}
	if !asciiOnly {
		words = append(words, "Ünïcode", "файл", "\xff\xfe")
	}
	exts := []string{".c", ".h", ".go", ".md", "", ".S", ".rs"}
	ends := []string{"\n", "\n", "\n", "\n", "\r\n", "\r\r\n", "\r\r\r\n", "\n\n", "\n\r\n"}
	var b bytes.Buffer
	var last string
	for i := range n {
		if i > 0 && rng.IntN(50) == 0 {
			b.WriteString(last) // a duplicate
		} else {
			var p strings.Builder
			for d := range 1 + rng.IntN(5) {
				if d > 0 {
					p.WriteByte('/')
				}
				p.WriteString(words[rng.IntN(len(words))])
			}
			p.WriteString(exts[rng.IntN(len(exts))])
			last = p.String()
			b.WriteString(last)
		}
		b.WriteString(ends[rng.IntN(len(ends))])
	}
	b.WriteString("tail/without/newline.c")
	return b.Bytes()
}

var stdinQueries = [][]string{
	{"router"}, {"mm/page_alloc"}, {"drivers", "net", "eth"}, {"kconfig"}, {"sched", "core"},
	{""}, {"ünï"}, {"x"}, {"newline"}, {"\r"}, {"zzzzqqq"},
	{"--json", "router"}, {"--json", "--limit", "50", "core"}, {"--json", ""},
	{"--limit", "50", "--ext", ".c,.h", "net"}, {"--exclude", "drivers/**", "--limit", "3", "main"},
}

// TestSearchStdinSameAnswers holds ferry search --stdin to the answers of
// the reader it replaced, byte for byte, on a generated list full of
// awkward lines and (when present) on the kernel's path list.
func TestSearchStdinSameAnswers(t *testing.T) {
	t.Parallel()
	inputs := map[string][]byte{
		"generated": generatedList(20000, false),
		"small":     []byte("a\r\n\r\n\r\r\nb\n"),
		"empty":     nil,
		"crs only":  []byte("\r\r\n\r\n\r"),
	}
	if k, err := os.ReadFile("../../bench/corpus/kernel.txt"); err == nil {
		inputs["kernel.txt"] = k
	} else {
		t.Logf("kernel.txt left out (%v): run bench/corpus.sh to fetch the corpus", err)
	}
	for name, input := range inputs {
		for _, args := range stdinQueries {
			want, wantErr := referenceOutput(t, input, args...)
			for _, asFile := range []bool{true, false} {
				got, err := searchStdinOutput(t, input, asFile, args...)
				if fmt.Sprint(err) != fmt.Sprint(wantErr) || got != want {
					t.Errorf("%s %q (file %v):\n got %v %q\nwant %v %q", name, args, asFile, err, trimmed(got), wantErr, trimmed(want))
				}
			}
		}
	}
}

func trimmed(s string) string {
	if len(s) > 600 {
		return s[:600] + "…"
	}
	return s
}

// TestSearchStdinLongLines keeps the 1 MiB line limit where it was, with
// the same error, with and without a final newline and with CRs.
func TestSearchStdinLongLines(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("p", n) }
	for _, input := range []string{
		"a\n" + long(1<<20-1) + "\nb\n",
		"a\n" + long(1<<20) + "\nb\n",
		"a\n" + long(1<<20-2) + "\r\nb\n",
		"a\n" + long(1<<20-1) + "\r\nb\n",
		"a\n" + long(1<<20-1),
		"a\n" + long(1<<20),
		long(1<<20 + 5),
	} {
		want, wantErr := referenceOutput(t, []byte(input), "p")
		for _, asFile := range []bool{true, false} {
			got, err := searchStdinOutput(t, []byte(input), asFile, "p")
			if fmt.Sprint(err) != fmt.Sprint(wantErr) || len(got) != len(want) || got != want {
				t.Errorf("line of %d bytes (file %v): got %v (%d bytes out), want %v (%d bytes out)", len(input), asFile, err, len(got), wantErr, len(want))
			}
		}
	}
}

// TestSearchStdinMemoryPerLine holds --stdin's memory to the input and a
// few bytes per line: no string, no slice header and no entry copy per
// line (the reader it replaced allocated once per line and copied the
// text twice). The list is ASCII: fuzzy.MaskOf allocates for a path with
// other characters, which is the matcher's business.
func TestSearchStdinMemoryPerLine(t *testing.T) {
	input := generatedList(100000, true)
	lines := bytes.Count(input, []byte{'\n'})
	// The system's MIME tables, which the search reads once per process
	// in the background (search.PreloadMIME), are not the search's cost
	// per line: read them before measuring.
	mime.TypeByExtension(".txt")
	measure := func(asFile bool) (allocs, bytes uint64) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if _, err := searchStdinOutput(t, input, asFile, "--limit", "50", "net"); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.Mallocs - before.Mallocs, after.TotalAlloc - before.TotalAlloc
	}
	for _, asFile := range []bool{true, false} {
		allocs, total := measure(asFile)
		t.Logf("file %v: %d lines, %d bytes: %d allocations, %d bytes allocated (%.1f per line beyond the text)",
			asFile, lines, len(input), allocs, total, float64(int(total)-len(input))/float64(lines))
		if allocs > uint64(lines/10) {
			t.Errorf("file %v: %d allocations for %d lines: more than one per 10 lines", asFile, allocs, lines)
		}
		// A file is read into a buffer of its size; a pipe grows one (so
		// up to about twice the text is allocated in all).
		budget := uint64(len(input)) + 24*uint64(lines) + 1<<20
		if !asFile {
			budget += 2 * uint64(len(input))
		}
		if total > budget {
			t.Errorf("file %v: %d bytes allocated for %d bytes of %d lines, over the budget of %d", asFile, total, len(input), lines, budget)
		}
	}
}

// BenchmarkSearchStdin is ferry search --stdin in process (no start-up)
// over the corpus lists, beside the reader it replaced ("reference"):
// go test ./internal/cli -run '^$' -bench SearchStdin -benchmem.
func BenchmarkSearchStdin(b *testing.B) {
	for _, name := range []string{"kernel.txt", "kernel13.txt"} {
		p := filepath.Join("../../bench/corpus", name)
		if _, err := os.Stat(p); err != nil {
			b.Logf("%s left out (%v): run bench/corpus.sh to fetch the corpus", name, err)
			continue
		}
		args := []string{"--stdin", "--limit", "20", "drivers net eth"}
		b.Run(name+"/reference", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f, err := os.Open(p) //nolint:gosec // a corpus file
				if err != nil {
					b.Fatal(err)
				}
				paths, err := referenceReadLines(f)
				_ = f.Close()
				if err != nil {
					b.Fatal(err)
				}
				cmd, err := parseSearch(Env{Stdout: io.Discard, Stderr: io.Discard}, args)
				if err != nil {
					b.Fatal(err)
				}
				ws := &search.Workspace{Name: "stdin", Index: search.Static{Snap: index.FromPaths(paths)}}
				if err := printSearch(context.Background(), io.Discard, ws, cmd.req, false); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/now", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f, err := os.Open(p) //nolint:gosec // a corpus file
				if err != nil {
					b.Fatal(err)
				}
				err = runSearch(context.Background(), Env{Stdin: f, Stdout: io.Discard, Stderr: io.Discard}, args)
				_ = f.Close()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSearchStdinRestoresGC: the collector's setting that --stdin turns
// off for its one search is back as it was afterwards, also when two
// searches overlap.
func TestSearchStdinRestoresGC(t *testing.T) {
	percent, limit := debug.SetGCPercent(77), debug.SetMemoryLimit(1<<40)
	defer func() { debug.SetGCPercent(percent); debug.SetMemoryLimit(limit) }()
	first := oneShotGC()
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Errorf("GC percent during a search: %d, want -1 (off)", p)
	}
	second := oneShotGC()
	first()
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Errorf("GC percent while a second search runs: %d, want -1 (off)", p)
	}
	second()
	if _, err := searchStdinOutput(t, []byte("a\nb\n"), true, "a"); err != nil {
		t.Fatal(err)
	}
	if p, l := debug.SetGCPercent(77), debug.SetMemoryLimit(1<<40); p != 77 || l != 1<<40 {
		t.Errorf("after the searches: GC percent %d, memory limit %d; want 77 and %d", p, l, int64(1<<40))
	}
}
