package ignore

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestGitRandomTrees builds random trees with random ignore files (nested
// .gitignore files, info/exclude, sometimes core.ignorecase) and compares
// every path with git check-ignore, and every walk with git ls-files.
func TestGitRandomTrees(t *testing.T) {
	e := newGitEnv(t)
	// More with FERRY_IGNORE_ITERATIONS=n (thousands have been run).
	iterations := 60
	if testing.Short() {
		iterations = 15
	}
	if n, err := strconv.Atoi(os.Getenv("FERRY_IGNORE_ITERATIONS")); err == nil {
		iterations = n
	}
	for i := range iterations {
		seed := uint64(i)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 0x5eed))
			root := t.TempDir()
			gitInit(t, e, root)
			fold := rng.IntN(3) == 0
			if fold {
				// Appended by hand, so the Matcher's config parser is tested
				// too (a subsection and a comment around the setting).
				appendFile(t, filepath.Join(root, ".git", "config"),
					"[remote \"x\"]\n\tignorecase = false\n[core]  # here\n\tIgnoreCase = yes\n")
			}
			f, dirs := randomTree(rng)
			for _, dir := range append([]string{""}, dirs...) {
				if rng.IntN(2) == 0 && dir != "" {
					continue
				}
				var rules []string
				for range 1 + rng.IntN(8) {
					rules = append(rules, randomRule(rng))
				}
				f.files[filepath.ToSlash(filepath.Join(dir, ".gitignore"))] = strings.Join(rules, "\n") + "\n"
			}
			f.build(t, root)
			var exclude []string
			for range rng.IntN(3) {
				exclude = append(exclude, randomRule(rng))
			}
			if err := os.WriteFile(filepath.Join(root, ".git", "info", "exclude"), []byte(strings.Join(exclude, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
			compareWithGit(t, e, root, Config{})
			if t.Failed() {
				for name, content := range f.files {
					if strings.HasSuffix(name, ".gitignore") {
						t.Logf("%s:\n%s", name, content)
					}
				}
				t.Logf("info/exclude:\n%s\nfold %v", strings.Join(exclude, "\n"), fold)
			}
		})
	}
}

var randomNames = []string{"a", "b", "ab", "ba", "A", "aB", ".a", "a.b", "x y", "b\\a", "a*", "[a]", "c"}

// randomTree makes 20-60 file paths (and the directories holding them)
// with no name both a file and a directory.
func randomTree(rng *rand.Rand) (fixture, []string) {
	f := fixture{files: map[string]string{}}
	isDir := map[string]bool{}
	var dirs []string
	for range 20 + rng.IntN(40) {
		depth := 1 + rng.IntN(4)
		var parts []string
		for range depth {
			parts = append(parts, randomNames[rng.IntN(len(randomNames))])
		}
		ok := true
		for i := range parts[:len(parts)-1] {
			p := strings.Join(parts[:i+1], "/")
			if _, isFile := f.files[p]; isFile {
				ok = false
			}
		}
		p := strings.Join(parts, "/")
		if isDir[p] || !ok {
			continue
		}
		if _, dup := f.files[p]; dup {
			continue
		}
		f.files[p] = ""
		for i := range parts[:len(parts)-1] {
			d := strings.Join(parts[:i+1], "/")
			if !isDir[d] {
				isDir[d] = true
				dirs = append(dirs, d)
			}
		}
	}
	return f, dirs
}

var ruleAtoms = []string{
	"a", "b", "ab", "A", "*", "**", "?", "[ab]", "[!a]", "[^b]", "[a-b]", "[A-Z]",
	"a*", "*b", "\\a", "\\*", "a\\*", "[[:upper:]]", "[[:alpha:]]*", "x y", "x\\ y",
	".a", "*.b", "b\\\\a", "[]]", "a?", "**a", "a**", "c",
}

func randomRule(rng *rand.Rand) string {
	var b strings.Builder
	if rng.IntN(4) == 0 {
		b.WriteString("!")
	}
	if rng.IntN(4) == 0 {
		b.WriteString("/")
	}
	n := 1 + rng.IntN(3)
	for i := range n {
		if i > 0 {
			b.WriteString("/")
		}
		b.WriteString(ruleAtoms[rng.IntN(len(ruleAtoms))])
	}
	if rng.IntN(4) == 0 {
		b.WriteString("/")
	}
	if rng.IntN(8) == 0 {
		b.WriteString("  ")
	}
	return b.String()
}

func appendFile(t *testing.T, name, text string) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
