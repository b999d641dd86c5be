package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/vfs"
)

// The Edit goal: an Edit of a 10 MB file costs at most 3× a plain read plus
// write of the same file. BenchmarkEdit10MB measures both in the same loop
// (alternating, so disk and cache state are shared) and reports the ratio;
// BenchmarkReadWrite10MB is the baseline alone.

const benchFileBytes = 10 << 20

// benchSetup writes a 10 MB source file with a unique marker line in the
// middle and records a full read of it.
func benchSetup(b *testing.B) (*Env, string) {
	b.Helper()
	dir := b.TempDir()
	fsys, err := vfs.NewLocal(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { fsys.Close() })
	var sb strings.Builder
	for i := 0; sb.Len() < benchFileBytes; i++ {
		if i == 120000 {
			sb.WriteString("\tmarker := \"MARKER-A\" // the line the benchmark edits\n")
			continue
		}
		fmt.Fprintf(&sb, "\tvalue%07d := compute(%d) // some ordinary source line\n", i, i)
	}
	p := fsys.Roots()[0] + "/big.go"
	if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	env := &Env{FS: fsys, State: NewReadState(), Limits: DefaultLimits()}
	info, err := fsys.Stat(p)
	if err != nil {
		b.Fatal(err)
	}
	env.State.Record(ReadEntry{Path: info.Path, Stamp: info.Stamp, Hash: HashBytes([]byte(sb.String()))})
	return env, p
}

// benchEdit flips the marker between A and B; each Edit records the new
// version, so the next one needs no Read.
func benchEdit(b *testing.B, env *Env, i int) {
	from, to := "MARKER-A", "MARKER-B"
	if i%2 == 1 {
		from, to = to, from
	}
	in, _ := json.Marshal(map[string]any{"file_path": "big.go", "old_string": `marker := "` + from + `"`, "new_string": `marker := "` + to + `"`})
	if _, err := (Edit{}).Run(context.Background(), env, in); err != nil {
		b.Fatal(err)
	}
}

// benchReadWrite is the baseline: read the file and write the same bytes
// back through the vfs (atomic: temp file, fsync, rename).
func benchReadWrite(b *testing.B, fsys vfs.FS, p string) {
	data, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := fsys.WriteFile(p, data, vfs.WriteOptions{}); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkEdit10MB(b *testing.B) {
	env, p := benchSetup(b)
	var edit, base time.Duration
	n := 0
	b.SetBytes(benchFileBytes)
	for b.Loop() {
		t0 := time.Now()
		benchReadWrite(b, env.FS, p)
		t1 := time.Now()
		benchEdit(b, env, n)
		edit += time.Since(t1)
		base += t1.Sub(t0)
		n++
	}
	b.ReportMetric(float64(edit.Nanoseconds())/float64(n), "edit-ns/op")
	b.ReportMetric(float64(base.Nanoseconds())/float64(n), "readwrite-ns/op")
	b.ReportMetric(float64(edit)/float64(base), "edit/readwrite")
}

func BenchmarkReadWrite10MB(b *testing.B) {
	env, p := benchSetup(b)
	b.SetBytes(benchFileBytes)
	for b.Loop() {
		benchReadWrite(b, env.FS, p)
	}
}
