package index

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ferry-dev/ferry/internal/search/fuzzy"

	"github.com/ferry-dev/ferry/internal/ignore"
)

// lister lists the files of the workspace under one Matcher (the rules as
// they stand when it is made: a listing makes a fresh one).
type lister struct {
	root   string // absolute, symlink-free workspace root
	prefix string // root relative to the Matcher's root, "/"-separated ("" when equal)
	m      *ignore.Matcher
	// watch, when set, is called with the absolute path of every
	// directory before it is read, so nothing created in it after the
	// listing is missed. An error from it is ignored by the listing.
	watch func(dir string) error

	// For progress: files found, directories found (the root counts),
	// directories read, files whose metadata was read.
	files, dirs, read, stated atomic.Int64

	// What a walk found, by directory (workspace-relative, "" for the
	// root): assembled into path order at the end without a sort.
	mu      sync.Mutex
	batches map[string]*dirBatch
}

// dirBatch is what a walk found directly inside one directory, in the
// order the walk reported it (by name). Only the goroutine that read the
// directory adds to it.
type dirBatch struct {
	abs   string // the directory's absolute path
	files []entry
	dirs  []string // workspace-relative
}

func newLister(root string, env ignore.Env) (*lister, error) {
	m, err := ignore.ForDir(root, env)
	if err != nil {
		return nil, err
	}
	l := &lister{root: root, m: m}
	if r := m.Root(); r != root {
		rel, err := filepath.Rel(r, root)
		if err != nil {
			return nil, err
		}
		l.prefix = filepath.ToSlash(rel)
	}
	return l, nil
}

// pending is how many directories were found and not yet read.
func (l *lister) pending() int { return int(max(0, l.dirs.Load()-l.read.Load())) }

// relPath is the root-relative, "/"-separated path of abs ("" for root
// itself); ok is false outside root.
func relPath(root, abs string) (string, bool) {
	if abs == root {
		return "", true
	}
	rest, ok := strings.CutPrefix(abs, root+string(filepath.Separator))
	if !ok || rest == "" {
		return "", false
	}
	return filepath.ToSlash(rest), true
}

func (l *lister) abs(rel string) string {
	if rel == "" {
		return l.root
	}
	return l.root + string(filepath.Separator) + filepath.FromSlash(rel)
}

// all lists the whole workspace with workers goroutines and returns the
// files sorted by path.
func (l *lister) all(ctx context.Context, workers int) ([]entry, error) {
	l.batches = make(map[string]*dirBatch)
	l.dirs.Store(1)
	l.watchDir("")
	err := l.m.WalkParallel(ctx, listFS{l}, l.root, workers, func(rel string, d fs.DirEntry, err error) error {
		return l.fn(rel, d, err)
	})
	if err != nil {
		return nil, err
	}
	return l.assemble("", make([]entry, 0, l.files.Load())), nil
}

// subtree lists the directory dir (workspace-relative, not the root) and
// returns the files under it sorted by path. The caller has checked that
// dir is a directory that is not ignored.
func (l *lister) subtree(ctx context.Context, dir string) ([]entry, error) {
	l.batches = make(map[string]*dirBatch)
	l.dirs.Add(1)
	l.watchDir(dir)
	err := l.m.Walk(ctx, listFS{l}, l.abs(dir), func(rel string, d fs.DirEntry, err error) error {
		return l.fn(dir+"/"+rel, d, err)
	})
	if err != nil {
		return nil, err
	}
	return l.assemble(dir, nil), nil
}

func (l *lister) watchDir(dir string) {
	if l.watch != nil {
		_ = l.watch(l.abs(dir))
	}
}

// assemble appends the files under dir to out in path (byte) order. A
// directory's files come sorted by name; a subdirectory "b" sorts as
// "b/" among them, so its subtree is merged in where "b/" falls.
func (l *lister) assemble(dir string, out []entry) []entry {
	b := l.batches[dir]
	if b == nil {
		return out
	}
	skip := len(dir) + 1
	if dir == "" {
		skip = 0
	}
	slices.SortFunc(b.dirs, func(x, y string) int { return cmpDirNames(x[skip:], y[skip:]) })
	i, j := 0, 0
	for i < len(b.files) || j < len(b.dirs) {
		if j == len(b.dirs) || (i < len(b.files) && fileBeforeDir(b.files[i].path[skip:], b.dirs[j][skip:])) {
			out = append(out, b.files[i])
			i++
			continue
		}
		out = l.assemble(b.dirs[j], out)
		j++
	}
	return out
}

// fileBeforeDir reports whether the file name f sorts before d+"/".
func fileBeforeDir(f, d string) bool {
	n := min(len(f), len(d))
	if c := strings.Compare(f[:n], d[:n]); c != 0 {
		return c < 0
	}
	return len(f) <= len(d) || f[len(d)] < '/'
}

// cmpDirNames compares x+"/" with y+"/".
func cmpDirNames(x, y string) int {
	n := min(len(x), len(y))
	if c := strings.Compare(x[:n], y[:n]); c != 0 || len(x) == len(y) {
		return c
	}
	if len(x) < len(y) {
		return cmp.Compare('/', y[n])
	}
	return cmp.Compare(x[n], '/')
}

// fn is the walk's callback; rel is workspace-relative. It may run on
// several goroutines at once.
func (l *lister) fn(rel string, d fs.DirEntry, err error) error {
	if err != nil {
		return nil //nolint:nilerr // an unreadable directory: list the rest
	}
	de, ok := d.(*dirent)
	if !ok {
		return fmt.Errorf("index: walk entry %s of type %T", rel, d)
	}
	b := de.batch
	if d.IsDir() {
		l.dirs.Add(1)
		l.watchDir(rel)
		b.dirs = append(b.dirs, rel)
		return nil
	}
	e, ok := l.stat(rel, d, true)
	if !ok {
		return nil
	}
	l.files.Add(1)
	b.files = append(b.files, e)
	return nil
}

// stat makes the entry of a file the walk found, or says it is not one
// the index keeps. Listings pass lazy: a regular file's metadata is read
// later, by statAll, so that the paths are searchable sooner (a stat
// costs more than listing a file's directory).
func (l *lister) stat(rel string, d fs.DirEntry, lazy bool) (entry, bool) {
	t := d.Type()
	var fi fs.FileInfo
	var err error
	switch {
	case t.IsRegular() && lazy:
		return entry{path: rel, mask: fuzzy.MaskOf(rel)}, true
	case t.IsRegular():
		fi, err = d.Info()
	case t&fs.ModeSymlink != 0:
		fi, err = l.statLink(rel)
	default:
		return entry{}, false // FIFOs, sockets, devices
	}
	if err != nil || !fi.Mode().IsRegular() {
		return entry{}, false // gone since the listing, or a link to a non-file
	}
	return entry{path: rel, mtime: fi.ModTime().UnixNano(), size: fi.Size(), mask: fuzzy.MaskOf(rel)}, true
}

// errOutside: a symlink whose target leaves the workspace is not indexed.
var errOutside = errors.New("symlink target outside the workspace")

// statLink follows the symlink rel: it is indexed when its target is a
// regular file inside the workspace, with the target's time and size.
// Links to directories are never followed (their files are reachable by
// their real path, and a loop is impossible).
func (l *lister) statLink(rel string) (fs.FileInfo, error) {
	abs := l.abs(rel)
	fi, err := os.Stat(abs)
	if err != nil || !fi.Mode().IsRegular() {
		return fi, err
	}
	target, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(target, l.root+string(filepath.Separator)) {
		return nil, errOutside
	}
	return fi, nil
}

// ignored reports whether the workspace-relative path rel is ignored,
// itself or through a directory above it, the way a listing from the
// workspace root decides (the root itself is never ignored: a listing
// goes where it is asked to).
func (l *lister) ignored(rel string, isDir bool) bool {
	dir := l.prefix
	d := l.m.DirAt(dir)
	for {
		name, rest, more := strings.Cut(rel, "/")
		if !more {
			return d.Match(name, isDir)
		}
		if d.Match(name, true) {
			return true
		}
		if dir != "" {
			dir += "/"
		}
		dir += name
		d = l.m.DirAt(dir)
		rel = rest
	}
}

// statAll fills in the time and size of the entries, with workers
// goroutines. An entry that vanished keeps zeros: its removal event
// follows.
func (l *lister) statAll(ctx context.Context, es []entry, workers int) error {
	workers = max(1, min(workers, len(es)/256))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			part := es[w*len(es)/workers : (w+1)*len(es)/workers]
			for k := range part {
				if k%256 == 0 {
					if ctx.Err() != nil {
						return
					}
					l.stated.Add(int64(min(256, len(part)-k)))
				}
				e := &part[k]
				abs := l.abs(e.path)
				fi, err := os.Lstat(abs)
				if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
					fi, err = os.Stat(abs)
				}
				if err == nil {
					e.mtime, e.size = fi.ModTime().UnixNano(), fi.Size()
				}
			}
		})
	}
	wg.Wait()
	return ctx.Err()
}

func sortEntries(es []entry) {
	slices.SortFunc(es, func(a, b entry) int { return strings.Compare(a.path, b.path) })
}
