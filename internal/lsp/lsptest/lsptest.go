// Package lsptest finds the real language servers tests run against.
package lsptest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// GoplsInstall is the step that installs the pinned gopls.
const GoplsInstall = "GOBIN=/tmp/ferry-ci-gopls-v0.23.0 go install golang.org/x/tools/gopls@v0.23.0 " +
	"and set FERRY_TEST_GOPLS=/tmp/ferry-ci-gopls-v0.23.0/gopls (.ci/run's gopls step)"

// Gopls returns the gopls binary FERRY_TEST_GOPLS names, or skips the
// test naming the install step; with FERRY_REQUIRE_GOPLS=1 (CI) a
// missing one fails instead.
func Gopls(t testing.TB) string {
	t.Helper()
	path := os.Getenv("FERRY_TEST_GOPLS")
	if path == "" {
		if os.Getenv("FERRY_REQUIRE_GOPLS") == "1" {
			t.Fatalf("FERRY_REQUIRE_GOPLS=1 but FERRY_TEST_GOPLS is not set: %s", GoplsInstall)
		}
		t.Skipf("no gopls: %s", GoplsInstall)
	}
	if _, err := exec.LookPath(path); err != nil {
		t.Fatalf("FERRY_TEST_GOPLS=%s: %v (%s)", path, err, GoplsInstall)
	}
	return path
}

// GoModule makes dir a Go module (example.com/m) with no files yet.
func GoModule(t testing.TB, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/m\n\ngo 1.26\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}
