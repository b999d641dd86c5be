package ignore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// FS is what a walk reads: directory listings and ignore files. Names are
// file paths as the implementation understands them (the walk joins them
// with filepath.Join).
type FS interface {
	// ReadDir lists a directory sorted by name, without following
	// symlinks among its entries (a symlink's DirEntry says so).
	ReadDir(name string) ([]fs.DirEntry, error)
	// ReadFile reads a regular file (an ignore file) whole.
	ReadFile(name string) ([]byte, error)
}

// OS is the operating system's file system.
func OS() FS { return osFS{} }

type osFS struct{}

func (osFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }
func (osFS) ReadFile(name string) ([]byte, error)       { return readRegular(name, false) }

// WalkFunc is called for every entry a walk does not ignore. rel is the
// entry's path relative to the walked directory, "/"-separated. For a
// directory, returning fs.SkipDir skips its contents; fs.SkipAll ends the
// walk without error; any other error ends it with that error.
//
// When a directory cannot be read, fn is called a second time for it
// with the error (and d the directory's entry); returning nil goes on
// with the rest of the walk.
type WalkFunc func(rel string, d fs.DirEntry, err error) error

// MaxDepth bounds how deep a walk descends (a guard against bind-mount
// loops, which symlink-free walking cannot otherwise see).
const MaxDepth = 512

// Walk walks the directory dir (an absolute path at or below the root),
// calling fn for every entry that is not ignored, directories before
// their contents, in name order. Ignored directories are not read, nor is
// anything under them. Symlinks are reported, never followed. The
// entries of dir are matched with the rules of dir's ancestors even when
// dir itself would be ignored: a walk goes where it is asked to.
func (m *Matcher) Walk(ctx context.Context, fsys FS, dir string, fn WalkFunc) error {
	parent, name, err := m.start(dir)
	if err != nil {
		return err
	}
	w := &walker{m: m, ctx: ctx, fsys: fsys, fn: fn}
	err = w.dir(parent, name, dir, "", nil, 0)
	if errors.Is(err, fs.SkipAll) || errors.Is(err, fs.SkipDir) {
		return nil
	}
	return err
}

// start finds where a walk of dir begins: the rules of its parent (nil
// for the root) and its name.
func (m *Matcher) start(dir string) (*Dir, string, error) {
	rel, err := filepath.Rel(m.root, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, "", fmt.Errorf("walk %s: outside the tree %s", dir, m.root)
	}
	rel = cleanRel(rel)
	if rel == "" {
		return nil, "", nil
	}
	parentRel, name := "", rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		parentRel, name = rel[:i], rel[i+1:]
	}
	return m.DirAt(parentRel), name, nil
}

type walker struct {
	m    *Matcher
	ctx  context.Context
	fsys FS
	fn   WalkFunc
}

// list reads the directory at path (rel from the walk's start), whose
// parent's rules are parent (nil: path is the tree's root), and calls
// visit for each entry that is not ignored, with the directory's rules.
// d is the directory's own entry (nil for the start); a failure to read
// it goes to fn.
func (w *walker) list(parent *Dir, name, path, rel string, d fs.DirEntry,
	visit func(here *Dir, rel string, e fs.DirEntry) error) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	entries, err := w.fsys.ReadDir(path)
	if err != nil {
		if d == nil {
			return err
		}
		return w.fn(rel, d, err)
	}
	var files Files
	for _, e := range entries {
		// Only regular files count: not symlinks, as git does.
		if !e.Type().IsRegular() {
			continue
		}
		switch e.Name() {
		case GitignoreName:
			files.Gitignore = w.readIgnore(filepath.Join(path, GitignoreName))
		case IgnoreName:
			files.Ignore = w.readIgnore(filepath.Join(path, IgnoreName))
		}
	}
	var here *Dir
	if parent == nil {
		// The root's rules come from the files this walk read.
		here = w.m.newDir(nil, "", files)
	} else {
		here = parent.Enter(name, files)
	}
	for _, e := range entries {
		if here.Match(e.Name(), e.IsDir()) {
			continue
		}
		if err := visit(here, joinRel(rel, e.Name()), e); err != nil {
			if errors.Is(err, fs.SkipDir) && !e.IsDir() {
				return nil // as fs.WalkDir: skip the rest of this directory
			}
			return err
		}
	}
	return nil
}

// dir walks the directory at path depth-first, in name order.
func (w *walker) dir(parent *Dir, name, path, rel string, d fs.DirEntry, depth int) error {
	return w.list(parent, name, path, rel, d, func(here *Dir, childRel string, e fs.DirEntry) error {
		err := w.fn(childRel, e, nil)
		if e.IsDir() && errors.Is(err, fs.SkipDir) {
			return nil
		}
		if err != nil || !e.IsDir() || depth+1 >= MaxDepth {
			return err
		}
		return w.dir(here, e.Name(), filepath.Join(path, e.Name()), childRel, e, depth+1)
	})
}

func (w *walker) readIgnore(name string) []byte {
	data, err := w.fsys.ReadFile(name)
	if err != nil {
		return nil
	}
	if data == nil {
		data = []byte{}
	}
	if len(data) > MaxFileSize {
		data = data[:MaxFileSize]
	}
	return data
}

// WalkParallel is Walk with workers goroutines reading directories at
// once (runtime.GOMAXPROCS when workers <= 0), for walks where order does
// not matter, such as building an index. fn is called concurrently, in no
// particular order, but for a directory before anything inside it.
// fs.SkipDir from fn skips a directory; fs.SkipAll or another error stops
// the walk (calls already running finish first). A directory that cannot
// be read goes to fn as in Walk.
func (m *Matcher) WalkParallel(ctx context.Context, fsys FS, dir string, workers int, fn WalkFunc) error {
	parent, name, err := m.start(dir)
	if err != nil {
		return err
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	type job struct {
		parent     *Dir
		name, path string
		rel        string
		d          fs.DirEntry
		depth      int
	}
	var (
		mu       sync.Mutex
		wake     = sync.NewCond(&mu)
		queue    = []job{{parent: parent, name: name, path: dir}}
		pending  = 1 // jobs queued or running
		firstErr error
	)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &walker{m: m, ctx: wctx, fsys: fsys, fn: fn}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				for len(queue) == 0 && pending > 0 && firstErr == nil {
					wake.Wait()
				}
				if firstErr != nil || len(queue) == 0 {
					mu.Unlock()
					return
				}
				j := queue[len(queue)-1]
				queue = queue[:len(queue)-1]
				mu.Unlock()

				var subdirs []job
				err := w.list(j.parent, j.name, j.path, j.rel, j.d, func(here *Dir, rel string, e fs.DirEntry) error {
					err := fn(rel, e, nil)
					if e.IsDir() && errors.Is(err, fs.SkipDir) {
						return nil
					}
					if err == nil && e.IsDir() && j.depth+1 < MaxDepth {
						subdirs = append(subdirs, job{parent: here, name: e.Name(),
							path: filepath.Join(j.path, e.Name()), rel: rel, d: e, depth: j.depth + 1})
					}
					return err
				})
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
					cancel()
				}
				queue = append(queue, subdirs...)
				pending += len(subdirs) - 1
				wake.Broadcast()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if errors.Is(firstErr, fs.SkipAll) {
		return nil
	}
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}
