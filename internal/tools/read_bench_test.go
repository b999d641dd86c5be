package tools_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/tokencount"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/internal/vfs"
)

// rdBenchLine is the line the big fixtures repeat: code-like, 40 bytes.
const rdBenchLine = "\tresult = append(result, item.Value())\n"

// rdBenchFile returns a workspace holding name, a file of about size bytes
// made of line repeated (or one line of size bytes when line is ""), and
// its line count. The file is generated on first use and kept under
// os.TempDir()/ferry-read-bench, keyed by its size, so repeated benchmark
// runs do not write a gigabyte each time.
func rdBenchFile(b *testing.B, name string, size int64, line string) (string, int64) {
	b.Helper()
	dir := filepath.Join(os.TempDir(), "ferry-read-bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(dir, name)
	lines, want := int64(1), size
	if line != "" {
		lines = size / int64(len(line))
		want = lines * int64(len(line))
	}
	if fi, err := os.Stat(p); err == nil && fi.Size() == want {
		return dir, lines
	}
	b.Logf("generating %s (%d MB)", p, want>>20)
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if line == "" {
		chunk := []byte(strings.Repeat("0123456789abcdef", 4096))
		for n := int64(0); n < want; n += int64(len(chunk)) {
			w.Write(chunk[:min(int64(len(chunk)), want-n)])
		}
	} else {
		for range lines {
			w.WriteString(line)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return dir, lines
}

// rdPeakHeap runs f while sampling the heap (live and not yet swept
// objects) every 100 µs, and returns the highest sample in bytes.
func rdPeakHeap(f func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak atomic.Uint64
	read := func() {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > peak.Load() {
			peak.Store(v)
		}
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(100 * time.Microsecond)
		defer t.Stop()
		for {
			read()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(stop)
	<-done
	read()
	return peak.Load()
}

func rdBenchEnv(b *testing.B, dir string) *tools.Env {
	b.Helper()
	fsys, err := vfs.NewLocal(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { fsys.Close() })
	return &tools.Env{FS: fsys, State: tools.NewReadState(), Limits: tools.DefaultLimits()}
}

func rdBenchRead(b *testing.B, env *tools.Env, input string) *tools.Result {
	env.State.ResetDedup() // every iteration reads, none is a stub
	res, err := tools.Read{}.Run(context.Background(), env, []byte(input))
	if err != nil {
		b.Fatal(err)
	}
	return res
}

// BenchmarkReadWindow1GB reads a 2000-line window of a 1 GB file at its
// start, at 25/50/75 % and at its end. Goals: the peak heap stays under
// 16 MB (peak-heap-MB, which includes the test binary's own heap and the
// BPE vocabulary, ~3.5 MB) and the time grows linearly with the offset
// (MB/s, the bytes before the window over the time, stays flat).
//
// The window is ~30K tokens of code-like lines (8-digit line numbers
// tokenize poorly), so the gate's limit is raised to 50,000: the benchmark
// measures a read that returns, with stage 2 (BPE) counting the window.
func BenchmarkReadWindow1GB(b *testing.B) {
	dir, lines := rdBenchFile(b, "window-1073741824.txt", 1<<30, rdBenchLine)
	env := rdBenchEnv(b, dir)
	env.Limits.MaxReadTokens = 50_000
	// Load the BPE vocabulary once, as a long-running process has.
	if _, err := tokencount.Default().CountTokens(context.Background(), "warm up"); err != nil {
		b.Fatal(err)
	}
	for _, pos := range []struct {
		name   string
		offset int64
	}{
		{"start", 1},
		{"25pct", lines / 4},
		{"50pct", lines / 2},
		{"75pct", lines * 3 / 4},
		{"end", lines - 1999},
	} {
		b.Run(pos.name, func(b *testing.B) {
			input := fmt.Sprintf(`{"file_path":"window-1073741824.txt","offset":%d}`, pos.offset)
			b.SetBytes((pos.offset - 1) * int64(len(rdBenchLine)))
			b.ReportAllocs()
			var res *tools.Result
			peak := rdPeakHeap(func() {
				for b.Loop() {
					res = rdBenchRead(b, env, input)
				}
			})
			if want := fmt.Sprintf("%d\t%s", pos.offset, rdBenchLine[:10]); !strings.Contains(res.Blocks[0].Text, want) {
				b.Fatalf("window does not start at line %d", pos.offset)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
		})
	}
}

// BenchmarkReadLongLine200MB reads a file that is one 200 MB line: only
// MaxLineRunes runes of it are kept.
func BenchmarkReadLongLine200MB(b *testing.B) {
	dir, _ := rdBenchFile(b, "oneline-209715200.txt", 200<<20, "")
	env := rdBenchEnv(b, dir)
	b.SetBytes(200 << 20)
	b.ReportAllocs()
	peak := rdPeakHeap(func() {
		for b.Loop() {
			rdBenchRead(b, env, `{"file_path":"oneline-209715200.txt"}`)
		}
	})
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}

// BenchmarkReadTokenGate1MB reads all ~27,000 lines of a 1 MB file (1.2 MB
// of output), once passing stage 1 (a limit above the output's size), once
// counted by stage 2 with the local BPE, once by stage 2 with a provider
// counter that answers at once (the read's cost without counting), and
// times the BPE count of the same output alone.
func BenchmarkReadTokenGate1MB(b *testing.B) {
	dir, lines := rdBenchFile(b, "gate-1048576.txt", 1<<20, rdBenchLine)
	input := fmt.Sprintf(`{"file_path":"gate-1048576.txt","limit":%d}`, lines)
	env := rdBenchEnv(b, dir)
	text := rdBenchRead(b, rdWithLimit(env, 1<<30), input).Blocks[0].Text
	if _, err := tokencount.Default().CountTokens(context.Background(), "warm up"); err != nil {
		b.Fatal(err)
	}
	b.Run("stage1", func(b *testing.B) {
		env := rdWithLimit(env, 2_000_000) // over the output's 1.2 MB: no count
		b.SetBytes(1 << 20)
		for b.Loop() {
			rdBenchRead(b, env, input)
		}
	})
	b.Run("stage2-bpe", func(b *testing.B) {
		env := rdWithLimit(env, 1_000_000) // under the output's size: counted
		b.SetBytes(1 << 20)
		for b.Loop() {
			rdBenchRead(b, env, input)
		}
	})
	b.Run("stage2-provider", func(b *testing.B) {
		env := rdWithLimit(env, 1_000_000)
		env.Tokens = rdConstCounter(300_000)
		b.SetBytes(1 << 20)
		for b.Loop() {
			rdBenchRead(b, env, input)
		}
	})
	b.Run("bpe-count-only", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		var n int
		for b.Loop() {
			var err error
			if n, err = tokencount.Default().CountTokens(context.Background(), text); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n), "tokens")
	})
}

func rdWithLimit(env *tools.Env, maxTokens int) *tools.Env {
	e := *env
	e.State = tools.NewReadState()
	e.Limits.MaxReadTokens = maxTokens
	return &e
}

type rdConstCounter int

func (c rdConstCounter) CountTokens(context.Context, string) (int, error) { return int(c), nil }
