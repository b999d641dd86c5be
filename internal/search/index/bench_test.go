package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/search/fuzzy"

	"github.com/ferry-dev/ferry/internal/ignore"
)

// The benchmarks run on a generated tree shaped like the Linux kernel
// (~80k files in 5k directories, a root .gitignore of ~90 rules like the
// kernel's, small .gitignore files in a few percent of the directories,
// ignored build output to prune), made once per process under the
// temporary directory and removed by TestMain; and, when
// FERRY_KERNEL_TREE names one, on the real kernel source tree:
//
//	apt-get download linux-source-6.1
//	dpkg-deb -x linux-source-6.1_*.deb x
//	mkdir tree && tar -C tree -xf x/usr/src/linux-source-6.1.tar.xz
//	cd tree/linux-source-6.1
//	sed -i '/^# Debian packaging/,$d' .gitignore   # Debian appends "/*"
//	git init -q
//	FERRY_KERNEL_TREE=$PWD go test -run '^$' -bench . ./internal/search/index
//
// Each build benchmark runs `git ls-files -o --exclude-standard` on the
// same tree in the same loop and reports both, and their ratio.

const kernelLikeGitignore = `.*
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
	once sync.Once
	root string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchTree.root != "" {
		os.RemoveAll(filepath.Dir(benchTree.root))
	}
	os.Exit(code)
}

// generatedTree makes the tree once (a git repository without commits).
func generatedTree(b *testing.B) string {
	b.Helper()
	benchTree.once.Do(func() {
		dir, err := os.MkdirTemp("", "ferry-index-bench-")
		if err != nil {
			benchTree.err = err
			return
		}
		benchTree.root = filepath.Join(dir, "tree")
		benchTree.err = genTree(benchTree.root)
		if benchTree.err == nil {
			benchTree.err = exec.Command("git", "init", "-q", benchTree.root).Run()
		}
	})
	if benchTree.err != nil {
		b.Fatal(benchTree.err)
	}
	return benchTree.root
}

func genTree(root string) error {
	rng := rand.New(rand.NewPCG(1, 2))
	write := func(p string) error { return os.WriteFile(p, []byte("x"), 0o644) }
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, ".gitignore"), []byte(kernelLikeGitignore), 0o644); err != nil {
		return err
	}
	dirs := []string{root}
	words := []string{"drivers", "net", "fs", "arch", "core", "mm", "sound", "usb", "pci", "gpu", "media", "crypto"}
	for len(dirs) < 5000 {
		parent := dirs[rng.IntN(len(dirs))]
		if strings.Count(parent[len(root):], "/") >= 7 {
			continue
		}
		d := filepath.Join(parent, fmt.Sprintf("%s%d", words[rng.IntN(len(words))], len(dirs)))
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
		dirs = append(dirs, d)
	}
	exts := []string{".c", ".c", ".c", ".h", ".h", ".S", ".rs", ".py", ".txt", ".rst"}
	for i, d := range dirs {
		for j := range 16 {
			if err := write(filepath.Join(d, fmt.Sprintf("file_%d_%d%s", i, j, exts[rng.IntN(len(exts))]))); err != nil {
				return err
			}
		}
		if rng.IntN(4) == 0 {
			for _, n := range []string{"a.o", ".a.o.cmd", "x.mod.c", "modules.order", "y.ko"} {
				if err := write(filepath.Join(d, n)); err != nil {
					return err
				}
			}
		}
		if i > 0 && rng.IntN(30) == 0 {
			rules := localRules[rng.IntN(len(localRules))]
			if err := os.WriteFile(filepath.Join(d, ".gitignore"), []byte(strings.Join(rules, "\n")+"\n"), 0o644); err != nil {
				return err
			}
		}
		if rng.IntN(200) == 0 {
			gen := filepath.Join(d, "generated")
			if err := os.MkdirAll(gen, 0o755); err != nil {
				return err
			}
			for k := range 100 {
				if err := write(filepath.Join(gen, fmt.Sprintf("g%d.h", k))); err != nil {
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
		if err := write(filepath.Join(build, fmt.Sprintf("o%d.o", k))); err != nil {
			return err
		}
	}
	return nil
}

// benchBuild opens an index of root per iteration, timing the listing
// (Ready: paths searchable) and the metadata (every file stat'ed), then
// times git ls-files on the same tree; Static lists only, Watch also
// adds a watch per directory.
func benchBuild(b *testing.B, root string) {
	for _, mode := range []Mode{Static, Watch} {
		b.Run(mode.String(), func(b *testing.B) { benchBuildMode(b, root, mode) })
	}
}

func benchBuildMode(b *testing.B, root string, mode Mode) {
	env := &ignore.Env{} // no user configuration, as for git below
	gitCmd := func() *exec.Cmd {
		cmd := exec.Command("git", "ls-files", "-o", "--exclude-standard")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "XDG_CONFIG_HOME=/nonexistent")
		return cmd
	}
	// Warm the caches: the goal is a warm build.
	if out, err := gitCmd().Output(); err != nil {
		b.Fatalf("git ls-files: %v", err)
	} else if len(out) == 0 {
		b.Fatal("git lists no files")
	}
	var ready, meta, git time.Duration
	files := 0
	for b.Loop() {
		start := time.Now()
		ix, err := Open(context.Background(), root, Options{Env: env, Mode: mode})
		if err != nil {
			b.Fatal(err)
		}
		if err := ix.Wait(context.Background()); err != nil {
			b.Fatal(err)
		}
		ready += time.Since(start)
		if err := ix.WaitMetadata(context.Background()); err != nil {
			b.Fatal(err)
		}
		meta += time.Since(start)
		files = ix.Snapshot().Len()
		ix.Close()

		start = time.Now()
		if err := gitCmd().Run(); err != nil {
			b.Fatal(err)
		}
		git += time.Since(start)
	}
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / n }
	b.ReportMetric(float64(files), "files")
	b.ReportMetric(ms(ready), "ms-ready")
	b.ReportMetric(ms(meta), "ms-metadata")
	b.ReportMetric(ms(git), "ms-git")
	b.ReportMetric(float64(git)/float64(ready), "git/ready")
	b.ReportMetric(float64(git)/float64(meta), "git/metadata")
}

func BenchmarkBuildGenerated(b *testing.B) { benchBuild(b, generatedTree(b)) }

func BenchmarkBuildKernel(b *testing.B) {
	root := os.Getenv("FERRY_KERNEL_TREE")
	if root == "" {
		b.Skip("FERRY_KERNEL_TREE is not set (see bench_test.go)")
	}
	benchBuild(b, root)
}

// benchRetained measures what an open index keeps on the heap beyond the
// text of its paths, per path: the snapshot alone (Static) and with the
// watcher's bookkeeping (Watch).
func benchRetained(b *testing.B, root string) {
	for _, mode := range []Mode{Static, Watch} {
		b.Run(mode.String(), func(b *testing.B) {
			var perPath float64
			files := 0
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.GC()
				runtime.ReadMemStats(&before)
				ix, err := Open(context.Background(), root, Options{Env: &ignore.Env{}, Mode: mode})
				if err != nil {
					b.Fatal(err)
				}
				if err := ix.WaitMetadata(context.Background()); err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				runtime.GC()
				runtime.ReadMemStats(&after)
				s := ix.Snapshot()
				text := 0
				for i := range s.Len() {
					text += len(s.Path(i))
				}
				files = s.Len()
				perPath = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)-int64(text)) / float64(files)
				runtime.KeepAlive(s)
				ix.Close()
			}
			b.ReportMetric(float64(files), "files")
			b.ReportMetric(perPath, "B/path-beyond-text")
		})
	}
}

func BenchmarkRetainedGenerated(b *testing.B) { benchRetained(b, generatedTree(b)) }

func BenchmarkRetainedKernel(b *testing.B) {
	root := os.Getenv("FERRY_KERNEL_TREE")
	if root == "" {
		b.Skip("FERRY_KERNEL_TREE is not set (see bench_test.go)")
	}
	benchRetained(b, root)
}

// BenchmarkUpdateOneFile is the cost of publishing a one-file change:
// copy-on-write of the one chunk it touches, beside rebuilding the whole
// snapshot (what a flat array would copy).
func BenchmarkUpdateOneFile(b *testing.B) {
	root := generatedTree(b)
	l, err := newLister(root, ignore.Env{})
	if err != nil {
		b.Fatal(err)
	}
	es, err := l.all(context.Background(), 0)
	if err != nil {
		b.Fatal(err)
	}
	s := fromSorted(es, 1, root)
	i := len(es) / 2
	e := es[i]
	b.Run("copy-on-write", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			e.mtime++
			s.apply([]splice{{lo: i, hi: i + 1, key: e.path, add: []entry{e}}}, 2)
		}
	})
	b.Run("full-rebuild", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			es[i].mtime++
			fromSorted(es, 2, root)
		}
	})
}

// BenchmarkEventToSnapshot is the time from writing a new file to its
// being in a snapshot, with the default debounce (75 ms of it is the
// debounce window).
func BenchmarkEventToSnapshot(b *testing.B) {
	root := generatedTree(b)
	ix, err := Open(context.Background(), root, Options{Env: &ignore.Env{}})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	if err := ix.WaitMetadata(context.Background()); err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(root, "bench-events")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	k := 0
	for b.Loop() {
		k++
		rel := fmt.Sprintf("bench-events/f%d.txt", k)
		if err := os.WriteFile(filepath.Join(root, rel), nil, 0o644); err != nil {
			b.Fatal(err)
		}
		deadline := time.After(5 * time.Second)
		for {
			if _, ok := ix.Snapshot().Find(rel); ok {
				break
			}
			select {
			case <-ix.Changes():
			case <-deadline:
				b.Fatalf("%s not indexed within 5s", rel)
			}
		}
	}
}

// BenchmarkScan compares reading every path and mask through the
// Snapshot's index accessors and through its Blocks.
func BenchmarkScan(b *testing.B) {
	paths := make([]string, 100000)
	for i := range paths {
		paths[i] = fmt.Sprintf("src/module%d/file%d.go", i%977, i)
	}
	s := FromPaths(paths)
	q := fuzzy.MaskOf("mod") & 0xff // any cheap test of the stored mask
	b.Run("Path(i)", func(b *testing.B) {
		for b.Loop() {
			n := 0
			for i := range s.Len() {
				if s.Mask(i)&q == q {
					n += len(s.Path(i))
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(s.Len()), "ns/path")
	})
	b.Run("Blocks", func(b *testing.B) {
		for b.Loop() {
			n := 0
			for _, blk := range s.Blocks() {
				for j := range blk.Len() {
					if blk.Mask(j)&q == q {
						n += len(blk.Path(j))
					}
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(s.Len()), "ns/path")
	})
}

// BenchmarkFromPaths is building a snapshot of a million paths, as
// ferry search --stdin does.
func BenchmarkFromPaths(b *testing.B) {
	paths := make([]string, 1000000)
	for i := range paths {
		paths[i] = fmt.Sprintf("%02d/src/module%d/file%d.go", i%13, i%977, i)
	}
	b.ReportAllocs()
	for b.Loop() {
		FromPaths(paths)
	}
}
