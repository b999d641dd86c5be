package ignore

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// The benchmarks walk a generated tree shaped like a large C project (the
// Linux kernel has ~78k files in ~5k directories): ~80k files, a root
// .gitignore of ~90 rules like the kernel's, small .gitignore files in a
// few percent of the directories, and ignored build output that a walk
// must prune. It is generated once per process under the temporary
// directory and removed by TestMain.

// kernelLikeGitignore is modelled on the rules big C projects use.
const kernelLikeGitignore = `# build artifacts
.*
*.a
*.asn1.[ch]
*.bin
*.bz2
*.c.[012]*.*
*.dt.yaml
*.dtb
*.dtbo
*.dtb.S
*.dwo
*.elf
*.gcno
*.gz
*.i
*.ko
*.lex.c
*.ll
*.lst
*.lz4
*.lzma
*.lzo
*.mod
*.mod.c
*.o
*.o.*
*.patch
*.rmeta
*.rpm
*.rsi
*.s
*.so
*.so.dbg
*.su
*.symtypes
*.tab.[ch]
*.tar
*.xz
*.zst
Module.symvers
modules.order
/linux
/modules-only.symvers
/vmlinux
/vmlinux.32
/vmlinux.map
/vmlinux.symvers
/vmlinux-gdb.py
/vmlinuz
/System.map
/Module.markers
/modules.builtin
/modules.builtin.modinfo
/modules.nsdeps
/debian/
/snap/
/tar-install/
/tags
/TAGS
/cscope.*
/ncscope.*
/GPATH
/GRTAGS
/GSYMS
/GTAGS
/compile_commands.json
/rust-project.json
*.orig
*~
\#*#
/build/
/out/
**/generated/**
!.clang-format
!.cocciconfig
!.get_maintainer.ignore
!.gitattributes
!.gitignore
!.mailmap
!.rustfmt.toml
`

var localRules = [][]string{
	{"/gen-table.h", "/mkconfig"},
	{"*.tab.c", "!keep.tab.c", "/fixdep"},
	{"/conf", "/[gmnq]conf", "/[gmnq]conf-cfg", "/qconf-moc.cc"},
	{"vdso*.so*", "!vdso.lds.S"},
	{"/generated_*.h", "test_*", "!test_keep.c"},
}

var benchTree struct {
	once  sync.Once
	root  string
	files int // files a walk lists
	err   error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchTree.root != "" {
		os.RemoveAll(filepath.Dir(benchTree.root))
	}
	os.Exit(code)
}

// benchRoot generates the tree once.
func benchRoot(b *testing.B) string {
	b.Helper()
	benchTree.once.Do(func() {
		dir, err := os.MkdirTemp("", "ferry-ignore-bench-")
		if err != nil {
			benchTree.err = err
			return
		}
		benchTree.root = filepath.Join(dir, "tree")
		benchTree.err = genTree(benchTree.root)
	})
	if benchTree.err != nil {
		b.Fatal(benchTree.err)
	}
	return benchTree.root
}

func genTree(root string) error {
	rng := rand.New(rand.NewPCG(1, 2))
	write := func(p, content string) error {
		return os.WriteFile(p, []byte(content), 0o644)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	if err := write(filepath.Join(root, ".gitignore"), kernelLikeGitignore); err != nil {
		return err
	}
	dirs := []string{root}
	for len(dirs) < 5000 {
		parent := dirs[rng.IntN(len(dirs))]
		if strings.Count(parent[len(root):], "/") >= 7 {
			continue
		}
		d := filepath.Join(parent, fmt.Sprintf("d%d", len(dirs)))
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
		dirs = append(dirs, d)
	}
	exts := []string{".c", ".c", ".c", ".h", ".h", ".S", ".rs", ".py", ".txt", ".rst"}
	for i, d := range dirs {
		for j := range 16 {
			name := fmt.Sprintf("f%d_%d%s", i, j, exts[rng.IntN(len(exts))])
			if err := write(filepath.Join(d, name), ""); err != nil {
				return err
			}
		}
		// Build leftovers, which the rules ignore.
		if rng.IntN(4) == 0 {
			for _, n := range []string{"a.o", ".a.o.cmd", "x.mod.c", "modules.order", "y.ko"} {
				if err := write(filepath.Join(d, n), ""); err != nil {
					return err
				}
			}
		}
		if i > 0 && rng.IntN(30) == 0 {
			rules := localRules[rng.IntN(len(localRules))]
			if err := write(filepath.Join(d, ".gitignore"), strings.Join(rules, "\n")+"\n"); err != nil {
				return err
			}
		}
		if rng.IntN(200) == 0 {
			gen := filepath.Join(d, "generated")
			if err := os.MkdirAll(gen, 0o755); err != nil {
				return err
			}
			for k := range 100 {
				if err := write(filepath.Join(gen, fmt.Sprintf("g%d.h", k)), ""); err != nil {
					return err
				}
			}
		}
	}
	build := filepath.Join(root, "build")
	if err := os.MkdirAll(build, 0o755); err != nil {
		return err
	}
	for k := range 2000 {
		if err := write(filepath.Join(build, fmt.Sprintf("o%d.o", k)), ""); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkWalkKernelSized walks the whole tree, as the search index of
// the next issue will: the figure to keep under 250 ms.
func BenchmarkWalkKernelSized(b *testing.B) {
	root := benchRoot(b)
	m, err := New(Config{Root: root})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	files := 0
	for b.Loop() {
		files = 0
		err := m.Walk(context.Background(), OS(), root, func(rel string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				files++
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(files), "files")
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/walk")
}

// BenchmarkMatchKernelRules is the matching alone: one entry against the
// kernel-like rules (what a walk pays per entry beyond the I/O).
func BenchmarkMatchKernelRules(b *testing.B) {
	root := b.TempDir()
	if err := os.WriteFile(filepath.Join(root, ".gitignore"), []byte(kernelLikeGitignore), 0o644); err != nil {
		b.Fatal(err)
	}
	m, err := New(Config{Root: root})
	if err != nil {
		b.Fatal(err)
	}
	d := m.Top().Enter("drivers", Files{}).Enter("net", Files{Gitignore: []byte("/gen-table.h\n*.tab.c\n")})
	names := []string{"e1000_main.c", "e1000.h", "Makefile", "a.o", ".a.o.cmd", "x.mod.c", "Kconfig", "vdso.so.dbg", "y.tab.c", "README.rst"}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		d.Match(names[i%len(names)], false)
	}
}

// BenchmarkWalkParallelKernelSized is the same walk with WalkParallel.
func BenchmarkWalkParallelKernelSized(b *testing.B) {
	root := benchRoot(b)
	m, err := New(Config{Root: root})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var files atomic.Int64
	for b.Loop() {
		files.Store(0)
		err := m.WalkParallel(context.Background(), OS(), root, 0, func(rel string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				files.Add(1)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(files.Load()), "files")
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/walk")
}
