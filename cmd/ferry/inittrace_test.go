package main

import (
	"bufio"
	"bytes"
	"debug/buildinfo"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Start-up budgets (issue 37). Every ferry process runs the package
// initialisation of every linked package, whatever the command: ferry
// version, each ferry mcp or ferry acp an editor spawns, each hook. Bytes
// allocated are counted exactly by the runtime, so these hold on any
// machine; the clock bound is only a generous backstop against a busy CI.
const (
	// totalInitBytes keeps initialisation under the 4 MiB heap at which
	// the runtime starts its first GC cycle: a GC during start-up costs a
	// mark and a sweep of everything allocated so far.
	totalInitBytes = 3 << 20
	// packageInitBytes bounds any one package, ours or a dependency's: a
	// table built or a schema compiled at init crosses it (the JSON-schema
	// validator that compiled its meta-schemas at init allocated 1.7 MB).
	packageInitBytes = 256 << 10
	// ferryInitBytes bounds each of ferry's own packages: what they need
	// at start is a few maps; anything else is built on first use
	// (sync.OnceValue, internal/lazyregexp).
	ferryInitBytes = 48 << 10
	// packageInitClock bounds one package's initialisation in wall time,
	// loosely: on a quiet machine the slowest takes under 2 ms.
	packageInitClock = 25.0 // ms
)

// heavyModules must not be linked: each cost milliseconds of package
// initialisation in every process for a feature that does not need it.
var heavyModules = []string{
	"github.com/santhosh-tekuri/jsonschema/v6",  // meta-schemas compiled at init (16 ms)
	"github.com/openai/openai-go/v3",            // ~3 ms of union registration, 53 MB of binary
	"github.com/anthropics/anthropic-sdk-go/v2", // ~2 ms with OpenTelemetry, 32 MB of binary
	"github.com/prometheus/client_golang",       // default collectors registered at init, protobuf
	"google.golang.org/protobuf",
}

// initRecord is one line of GODEBUG=inittrace=1.
type initRecord struct {
	pkg     string
	clockMS float64
	bytes   int64
	allocs  int64
}

var initLine = regexp.MustCompile(`^init (\S+) @[0-9.]+ ms, ([0-9.]+) ms clock, ([0-9]+) bytes, ([0-9]+) allocs$`)

// parseInitTrace reads the runtime's inittrace lines from r, ignoring
// every other line.
func parseInitTrace(r io.Reader) ([]initRecord, error) {
	var out []initRecord
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "init ") {
			continue
		}
		m := initLine.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("unrecognised inittrace line %q", line)
		}
		clock, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return nil, fmt.Errorf("line %q: %w", line, err)
		}
		b, _ := strconv.ParseInt(m[3], 10, 64)
		a, _ := strconv.ParseInt(m[4], 10, 64)
		out = append(out, initRecord{pkg: m[1], clockMS: clock, bytes: b, allocs: a})
	}
	return out, sc.Err()
}

func TestParseInitTrace(t *testing.T) {
	in := "ferry dev\n" +
		"init internal/bytealg @0.009 ms, 0 ms clock, 0 bytes, 0 allocs\n" +
		"init github.com/ferry-dev/ferry/internal/cli @52 ms, 2.3 ms clock, 166320 bytes, 821 allocs\n" +
		"init github.com/nats-io/nats%2ego @41 ms, 0.65 ms clock, 22984 bytes, 12 allocs\n"
	got, err := parseInitTrace(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []initRecord{
		{"internal/bytealg", 0, 0, 0},
		{"github.com/ferry-dev/ferry/internal/cli", 2.3, 166320, 821},
		{"github.com/nats-io/nats%2ego", 0.65, 22984, 12},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if _, err := parseInitTrace(strings.NewReader("init x @1 ms, garbled\n")); err == nil {
		t.Fatal("a garbled line was accepted")
	}
}

// TestStartupBudget builds the real binary, runs `ferry version` under
// GODEBUG=inittrace=1 and holds every package's initialisation to the
// budgets above; it also checks that no heavy module is linked at all.
func TestStartupBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	bin := filepath.Join(t.TempDir(), "ferry")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}

	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, d := range info.Deps {
		linked[d.Path] = true
	}
	for _, m := range heavyModules {
		if linked[m] {
			t.Errorf("%s is linked into ferry: its package initialisation runs in every process", m)
		}
	}

	// Bytes are the same in every run; the clock is each package's
	// fastest of three, so that a stall of a busy machine is not charged
	// to a package.
	var recs []initRecord
	for run := range 3 {
		cmd := exec.Command(bin, "version")
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("ferry version: %v\n%s", err, stderr.Bytes())
		}
		got, err := parseInitTrace(&stderr)
		if err != nil {
			t.Fatal(err)
		}
		if run == 0 {
			recs = got
			continue
		}
		if len(got) != len(recs) {
			t.Fatalf("run %d initialised %d packages, run 1 %d", run+1, len(got), len(recs))
		}
		for i := range recs {
			if got[i].pkg != recs[i].pkg {
				t.Fatalf("run %d initialised %s where run 1 initialised %s", run+1, got[i].pkg, recs[i].pkg)
			}
			recs[i].clockMS = min(recs[i].clockMS, got[i].clockMS)
		}
	}
	if len(recs) < 50 {
		t.Fatalf("only %d inittrace lines: is GODEBUG=inittrace=1 honoured?", len(recs))
	}
	var total int64
	for _, r := range recs {
		total += r.bytes
		budget := int64(packageInitBytes)
		if strings.HasPrefix(r.pkg, "github.com/ferry-dev/ferry/") {
			budget = ferryInitBytes
		}
		if r.bytes > budget {
			t.Errorf("%s allocates %d bytes at init (budget %d): build it on first use", r.pkg, r.bytes, budget)
		}
		if r.clockMS > packageInitClock {
			t.Errorf("%s takes %.1f ms at init (bound %.0f ms)", r.pkg, r.clockMS, packageInitClock)
		}
	}
	if total > totalInitBytes {
		sort.Slice(recs, func(i, j int) bool { return recs[i].bytes > recs[j].bytes })
		var top strings.Builder
		for _, r := range recs[:min(10, len(recs))] {
			fmt.Fprintf(&top, "\n  %8d bytes  %s", r.bytes, r.pkg)
		}
		t.Errorf("package initialisation allocates %d bytes in all (budget %d); the largest:%s", total, totalInitBytes, top.String())
	}
	t.Logf("%d packages initialised, %d bytes allocated", len(recs), total)
}
