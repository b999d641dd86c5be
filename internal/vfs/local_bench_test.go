//go:build unix

package vfs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/vfs"
)

// deepFile makes ws/d1/.../d10/f.go and returns its relative name.
func deepFile(b *testing.B) (ws, rel string) {
	b.Helper()
	ws, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	var parts []string
	for i := range 10 {
		parts = append(parts, "d"+string(rune('0'+i)))
	}
	rel = strings.Join(append(parts, "f.go"), "/")
	if err := os.MkdirAll(filepath.Join(ws, filepath.Dir(rel)), 0o750); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, rel), []byte("package f\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	return ws, rel
}

// BenchmarkStatDeep: the per-file cost Glob and Grep pay, for a file 10
// directories down.
func BenchmarkStatDeep(b *testing.B) {
	ws, rel := deepFile(b)
	l, err := vfs.NewLocal(ws)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for b.Loop() {
		if _, err := l.Stat(rel); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenDeep: resolve, type check, open, fstat, close.
func BenchmarkOpenDeep(b *testing.B) {
	ws, rel := deepFile(b)
	l, err := vfs.NewLocal(ws)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for b.Loop() {
		f, err := l.Open(rel)
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// BenchmarkWriteFileSmall: the atomic write of a small file (two fsyncs).
func BenchmarkWriteFileSmall(b *testing.B) {
	ws, rel := deepFile(b)
	l, err := vfs.NewLocal(ws)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	data := []byte("package f\n\nfunc F() {}\n")
	for b.Loop() {
		if _, err := l.WriteFile(rel, data, vfs.WriteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
