// Package binarytest builds the real ferry binary for tests that run it as
// a process (crash recovery, descriptor limits, log redaction, `ferry run`
// and `ferry mcp` end to end).
//
// Guarantees: Build returns the path of a binary built from this module's
// cmd/ferry, or skips the test with a message naming what is missing
// (-short, or no go command); a failing build fails the test with go's
// output. In a package whose TestMain runs its tests through Main, the
// tests share one build (linking takes seconds, tens on a loaded machine),
// removed when the tests end; a build that failed or skipped is tried again
// by the next caller, so each test skips or fails as it would alone.
// Elsewhere each call builds into the test's own temporary directory.
// Under `go test -race` the binary is built with -race too, so the race
// detector also watches the processes the tests start.
package binarytest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

var shared struct {
	mu   sync.Mutex
	dir  string // set by Main
	path string // the shared build, once one succeeded
}

// Main runs m with one shared build for every Build call in the package
// and returns m's exit code: call it from TestMain as os.Exit(Main(m)).
func Main(m *testing.M) int {
	d, err := os.MkdirTemp("", "ferry-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(d) }()
	shared.mu.Lock()
	shared.dir = d
	shared.mu.Unlock()
	return m.Run()
}

// Build builds cmd/ferry for t and returns the binary's path.
func Build(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the ferry binary; run without -short")
	}
	shared.mu.Lock()
	defer shared.mu.Unlock() // also when the build ends t (Fatal, Skip)
	if shared.path != "" {
		return shared.path
	}
	if shared.dir == "" {
		return build(t, t.TempDir())
	}
	shared.path = build(t, shared.dir)
	return shared.path
}

// build builds cmd/ferry into dir; it returns only on success.
func build(t testing.TB, dir string) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build ferry with (install Go 1.26): %v", err)
	}
	bin := filepath.Join(dir, "ferry")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := []string{"build", "-o", bin}
	if raceBuild {
		args = append(args, "-race")
	}
	out, err := exec.CommandContext(ctx, goCmd, append(args, "github.com/ferry-dev/ferry/cmd/ferry")...).CombinedOutput() //nolint:gosec // the go found on PATH, building this module
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
