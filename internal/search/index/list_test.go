package index

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// nestedTree has rules of every kind at several depths.
func nestedTree(t *testing.T, sb sandbox, root string) {
	files := map[string]string{
		".gitignore":                  "*.o\n/build/\nnode_modules/\n!keep.o\n*.log\ndocs/**/gen/\ntmp*\n!tmp_keep\n",
		"main.c":                      "",
		"main.o":                      "",
		"keep.o":                      "",
		"a.log":                       "",
		"build/out.bin":               "",
		"src/build/real.c":            "", // /build/ is anchored: this one stays
		"src/node_modules/x.js":       "",
		"src/lib/.gitignore":          "*.c\n!wanted.c\n/local/\n",
		"src/lib/x.c":                 "",
		"src/lib/wanted.c":            "",
		"src/lib/x.h":                 "",
		"src/lib/local/y.h":           "",
		"src/lib/deep/local/z.h":      "", // /local/ anchored to src/lib
		"src/lib/deep/.gitignore":     "!*.c\n",
		"src/lib/deep/back.c":         "", // re-included deeper down
		"docs/a/gen/x.md":             "",
		"docs/a/gen.md":               "",
		"docs/readme.md":              "",
		"tmp1/x":                      "",
		"tmp_keep":                    "",
		"spaces in name/file one.txt": "",
		"unicode/café.txt":            "",
		"unicode/日本.md":               "",
		"excluded/by/info.txt":        "",
		"global.secret":               "",
		"dir.d/file":                  "",
		"dir/file":                    "",
		"dir-x/file":                  "",
		"a.b":                         "",
	}
	for p, c := range files {
		write(t, root, p, c)
	}
	sb.git(t, root, "init", "-q")
	write(t, root, ".git/info/exclude", "excluded/\n")
	write(t, sb.xdg, "git/ignore", "*.secret\n")
}

func TestListingMatchesGit(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	root := t.TempDir()
	nestedTree(t, sb, root)
	want := sb.gitFiles(t, root)
	ix := open(t, root, Options{Env: sb.env(), Mode: Static})
	got := paths(ix.Snapshot())
	if !slices.Equal(got, want) {
		t.Fatalf("listing differs from git ls-files:\n got %q\nwant %q", got, want)
	}
	t.Logf("%d files, as git lists them: %q", len(got), got)
	// The listing is in byte order (what the snapshot promises).
	if !slices.IsSorted(got) {
		t.Fatalf("not sorted: %q", got)
	}
	if !ix.Snapshot().HasMetadata() {
		t.Fatal("no metadata after WaitMetadata")
	}
}

// TestListingMatchesGitRandom builds random trees from a small vocabulary
// of names and rules, where the rules interact, and compares with git.
func TestListingMatchesGitRandom(t *testing.T) {
	t.Parallel()
	names := []string{"a", "b", "a.b", "a-b", "x.o", "y.log", "build", "gen", "keep.o", "n m", "é"}
	rules := []string{"*.o", "!keep.o", "build/", "/gen", "a*", "!a.b", "**/b", "*.log", "!y.log", "x", "b/", "[ab]-*", "gen/**", "!*/"}
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			sb := newSandbox(t)
			root := t.TempDir()
			var dirs []string
			dirs = append(dirs, "")
			for range 40 {
				parent := dirs[rng.IntN(len(dirs))]
				if strings.Count(parent, "/") > 3 {
					continue
				}
				d := filepath.Join(parent, names[rng.IntN(len(names))]) + "d"
				dirs = append(dirs, d)
				mkdirs(t, filepath.Join(root, d))
			}
			for range 150 {
				write(t, root, filepath.Join(dirs[rng.IntN(len(dirs))], names[rng.IntN(len(names))]), "")
			}
			for _, d := range dirs {
				if rng.IntN(3) == 0 {
					var rs []string
					for range 1 + rng.IntN(4) {
						rs = append(rs, rules[rng.IntN(len(rules))])
					}
					write(t, root, filepath.Join(d, ".gitignore"), strings.Join(rs, "\n")+"\n")
				}
			}
			sb.git(t, root, "init", "-q")
			want := sb.gitFiles(t, root)
			ix := open(t, root, Options{Env: sb.env(), Mode: Static})
			if got := paths(ix.Snapshot()); !slices.Equal(got, want) {
				t.Fatalf("listing differs from git ls-files:\n got %q\nwant %q", got, want)
			}
		})
	}
}

func TestDotIgnore(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	root := t.TempDir()
	write(t, root, ".ignore", "vendor/\n!*.keep\n")
	write(t, root, ".gitignore", "*.keep\n")
	write(t, root, "vendor/lib.go", "")
	write(t, root, "x.keep", "") // .ignore beats .gitignore
	write(t, root, "main.go", "")
	ix := open(t, root, Options{Env: sb.env(), Mode: Static})
	want := []string{".gitignore", ".ignore", "main.go", "x.keep"}
	if got := paths(ix.Snapshot()); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestWorkspaceInsideRepo: a workspace below the repository's top obeys
// the rules above it, and its paths are relative to the workspace.
func TestWorkspaceInsideRepo(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	repo := t.TempDir()
	write(t, repo, ".gitignore", "*.tmp\nsub/skip/\n")
	write(t, repo, "sub/a.go", "")
	write(t, repo, "sub/b.tmp", "")
	write(t, repo, "sub/skip/c.go", "")
	write(t, repo, "top.go", "")
	sb.git(t, repo, "init", "-q")
	ix := open(t, filepath.Join(repo, "sub"), Options{Env: sb.env(), Mode: Static})
	if got := paths(ix.Snapshot()); !slices.Equal(got, []string{"a.go"}) {
		t.Fatalf("got %q", got)
	}
}

func TestSymlinks(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	root := t.TempDir()
	outside := t.TempDir()
	write(t, root, "real/file.txt", "hello")
	write(t, outside, "secret.txt", "x")
	links := map[string]string{
		"link-to-file":    "real/file.txt",                          // kept
		"link-to-dir":     "real",                                   // never followed
		"loop":            ".",                                      // a loop: harmless
		"real/up":         "..",                                     // another loop
		"dangling":        "missing",                                // no target
		"link-outside":    filepath.Join(outside, "secret.txt"),     // leaves the workspace
		"chain":           "link-to-file",                           // link to a link to a file
		"self":            "self",                                   // points at itself
		"real/sub/parent": filepath.Join("..", "..", "link-to-dir"), // to a dir link
	}
	mkdirs(t, filepath.Join(root, "real/sub"))
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	ix := open(t, root, Options{Env: sb.env(), Mode: Static})
	s := ix.Snapshot()
	want := []string{"chain", "link-to-file", "real/file.txt"}
	if got := paths(s); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if i, _ := s.Find("link-to-file"); s.Size(i) != 5 {
		t.Fatalf("a link's size is its target's: %d", s.Size(i))
	}
}

// TestAssembleOrder: the listing's merge of directories into their
// parents' files gives byte order for names around "/" ('-', '.', '0').
func TestAssembleOrder(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	root := t.TempDir()
	var want []string
	for _, p := range []string{"a", "a-", "a.", "a0", "a/x", "a./y", "a-/z", "a.b/c", "ab", "a/b/c", "a/b.c", "a/b-c/d", "b"} {
		if strings.HasSuffix(p, "-") || strings.HasSuffix(p, ".") {
			p += "/f" // a directory named "a-" or "a."
		}
		if p == "a" {
			continue // "a" is a directory here
		}
		write(t, root, p, "")
		want = append(want, p)
	}
	slices.Sort(want)
	ix := open(t, root, Options{Env: sb.env(), Mode: Static})
	if got := paths(ix.Snapshot()); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
