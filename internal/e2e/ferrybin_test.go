package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ferry-dev/ferry/internal/binarytest"
)

// The tests that run the ferry binary share one build: linking it takes
// seconds (tens on a loaded machine), and each of them used to do it.
var (
	binDir   string // made by TestMain, removed when the tests end
	ferryBin struct {
		once sync.Once
		path string
	}
)

func TestMain(m *testing.M) {
	d, err := os.MkdirTemp("", "ferry-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = d
	code := m.Run()
	_ = os.RemoveAll(d)
	os.Exit(code)
}

// buildFerry is binarytest.Build, once per test binary: the first call
// builds into its test's temporary directory and keeps a copy in binDir
// for the others. When that build skipped or failed, every caller builds
// for itself, so each skips or fails as it did before.
func buildFerry(t *testing.T) string {
	t.Helper()
	ferryBin.once.Do(func() {
		built := binarytest.Build(t) // may end t (skip, fail): path stays ""
		b, err := os.ReadFile(built) //nolint:gosec // the binary just built
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(binDir, "ferry")
		if err := os.WriteFile(p, b, 0o700); err != nil { //nolint:gosec // an executable: it must be runnable
			t.Fatal(err)
		}
		ferryBin.path = p
	})
	if ferryBin.path == "" {
		return binarytest.Build(t)
	}
	return ferryBin.path
}
