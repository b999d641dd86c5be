// Package binarytest builds the real ferry binary for tests that run it as
// a process (crash recovery, descriptor limits, log redaction, `ferry run`
// and `ferry mcp` end to end).
//
// Guarantees: Build returns the path of a binary built from this module's
// cmd/ferry into the test's own temporary directory (removed with the
// test), or skips the test with a message naming what is missing (-short,
// or no go command); a failing build fails the test with go's output.
package binarytest

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Build builds cmd/ferry for t and returns the binary's path.
func Build(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the ferry binary; run without -short")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build ferry with (install Go 1.26): %v", err)
	}
	bin := filepath.Join(t.TempDir(), "ferry")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, goCmd, "build", "-o", bin, "github.com/ferry-dev/ferry/cmd/ferry").CombinedOutput() //nolint:gosec // the go found on PATH, building this module
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
