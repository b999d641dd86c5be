// Package gittest helps tests use the real git: make a repository, run
// git in it, and capture everything a step must leave as it was (refs,
// status, worktrees, and every byte of the checkout and its index).
package gittest

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/exectest"
)

// Need skips the test when git is not installed.
func Need(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: apt-get install git")
	}
}

// Run runs git in dir with a clean environment and fails the test on error.
func Run(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...) //nolint:gosec // tests run git as they ask
	cmd.Env = append(os.Environ(), "LC_ALL=C", "GIT_OPTIONAL_LOCKS=0", "GIT_CONFIG_NOSYSTEM=1", "HOME="+os.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Write writes a file, making its folders.
func Write(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	if mode&0o111 != 0 { // a hook or script a test runs: see exectest
		exectest.WriteScript(t, path, content)
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// NewRepo makes a repository on branch main with files (path → content;
// a path under .ferry/ is made executable) in one commit.
func NewRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	Need(t)
	dir := filepath.Join(t.TempDir(), "repo")
	Run(t, t.TempDir(), "init", "-q", "-b", "main", dir)
	Run(t, dir, "config", "user.name", "Test User")
	Run(t, dir, "config", "user.email", "test@example.com")
	for p, c := range files {
		mode := os.FileMode(0o644)
		if strings.HasPrefix(p, ".ferry/") {
			mode = 0o755
		}
		Write(t, filepath.Join(dir, filepath.FromSlash(p)), c, mode)
	}
	Run(t, dir, "add", "-A")
	Run(t, dir, "commit", "-q", "-m", "first")
	return dir
}

// State is everything a refused step must leave as it was in the
// repository of checkout dir: its refs, worktree list and Checkout.
func State(t testing.TB, dir string) string {
	t.Helper()
	return Run(t, dir, "for-each-ref", "--format=%(refname) %(objectname)") +
		Run(t, dir, "worktree", "list", "--porcelain") + Checkout(t, dir)
}

// Checkout is the user's checkout dir byte for byte: its status, HEAD, and
// a hash of every file (.git/index included; the rest of .git left out).
func Checkout(t testing.TB, dir string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(Run(t, dir, "status", "--porcelain=v1", "--untracked-files=all"))
	b.WriteString(Run(t, dir, "rev-parse", "HEAD"))
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if rel == ".git" {
				data, err := os.ReadFile(filepath.Join(p, "index")) //nolint:gosec // the test's own repository
				if err != nil {
					return err
				}
				sum := sha256.Sum256(data)
				lines = append(lines, ".git/index "+hex.EncodeToString(sum[:]))
				return filepath.SkipDir
			}
			return nil
		}
		data, err := os.ReadFile(p) //nolint:gosec // the test's own repository
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		lines = append(lines, rel+" "+d.Type().String()+" "+hex.EncodeToString(sum[:]))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	b.WriteString(strings.Join(lines, "\n"))
	return b.String()
}

// Branches lists the repository's local branches, sorted.
func Branches(t testing.TB, dir string) []string {
	t.Helper()
	out := strings.Fields(Run(t, dir, "for-each-ref", "--format=%(refname:short)", "refs/heads"))
	sort.Strings(out)
	return out
}

// Worktrees lists the branches of the repository's worktrees, the main
// checkout's first ("(detached)" for a detached HEAD).
func Worktrees(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	for _, block := range strings.Split(strings.TrimSpace(Run(t, dir, "worktree", "list", "--porcelain")), "\n\n") {
		br := "(detached)"
		for _, l := range strings.Split(block, "\n") {
			if b, ok := strings.CutPrefix(l, "branch refs/heads/"); ok {
				br = b
			}
		}
		out = append(out, br)
	}
	return out
}
