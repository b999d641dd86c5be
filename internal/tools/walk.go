package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/ferry-dev/ferry/internal/ignore"
	"github.com/ferry-dev/ferry/internal/vfs"
)

// This file is the walk Glob and Grep share: it resolves the search
// directory, builds the ignore rules of the repository that holds it, and
// lists the files under it through the confined vfs.FS.
//
// What a search sees:
//   - Regular files, and symlinks to regular files inside the roots. Never
//     devices, FIFOs or sockets (not even opened), never a symlink that
//     leads outside the roots, and never a directory through a symlink
//     (so symlink loops cannot trap a walk).
//   - Nothing ignored: .gitignore, .ignore, info/exclude and the global
//     excludes file, with git's semantics (package ignore). An ignored
//     directory is not even listed. Version-control directories (.git,
//     .svn, .hg, .bzr, .jj, .sl) are always skipped.
//   - The directory the agent names is searched even when it is itself
//     ignored (the agent asked for it); the rules of its ancestors still
//     apply to what is inside it.

// searchIgnoreEnv locates the user's git configuration (the global
// excludes file); tests replace it to sandbox the machine's own settings.
var searchIgnoreEnv = ignore.OSEnv

// vcsDirs are skipped wherever they are.
var vcsDirs = map[string]bool{".git": true, ".svn": true, ".hg": true, ".bzr": true, ".jj": true, ".sl": true}

// searchFile is one file a walk found.
type searchFile struct {
	// path is the file's absolute path inside the roots (the link's own
	// path for a symlink), to open through the vfs.
	path string
	// rel is relative to the searched directory, "/"-separated.
	rel string
	// display is how the agent is shown it: relative to the workspace when
	// inside it, else absolute.
	display string
	modTime time.Time
	size    int64
}

// searchTree is a resolved search directory and its rules.
type searchTree struct {
	fsys vfs.FS
	// dir is the canonical absolute directory searched.
	dir       string
	workspace string
	m         *ignore.Matcher
	// hidden is Env.Hidden: what the permission rules keep from a search.
	hidden func(path string) bool
}

// searchPath resolves the path argument of Glob or Grep (default: the
// workspace) and stats it. field names the argument in messages.
func searchPath(env *Env, tool, field, name string) (vfs.Info, error) {
	given := name
	if name == "" {
		name, given = ".", "the workspace"
	}
	info, err := env.FS.Stat(name)
	if err != nil {
		return vfs.Info{}, searchFSError(env.FS, tool, field, given, err)
	}
	return info, nil
}

// newSearchTree prepares the walk of the directory info.
func newSearchTree(env *Env, info vfs.Info) (*searchTree, error) {
	m, err := ignore.ForDir(info.Path, searchIgnoreEnv())
	if err != nil {
		return nil, fmt.Errorf("ignore rules for %s: %w", info.Path, err)
	}
	return &searchTree{fsys: env.FS, dir: info.Path, workspace: searchWorkspace(env.FS), m: m, hidden: env.Hidden}, nil
}

// searchDisplay is how the agent is shown the absolute path p.
func searchDisplay(workspace, p string) string {
	if rel, err := filepath.Rel(workspace, p); err == nil && rel != ".." &&
		!strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return filepath.ToSlash(rel)
	}
	return p
}

// walkOptions tune a walk.
type walkOptions struct {
	// descend, when set, is asked before a directory is entered (rel from
	// the searched directory): false skips it. Only an optimisation; it
	// never makes an ignored directory visible.
	descend func(rel string) bool
}

// walk calls fn for every file under the tree, in path order. An error
// from fn other than fs.SkipAll ends the walk with it; unreadable
// directories are skipped.
func (s *searchTree) walk(ctx context.Context, opts walkOptions, fn func(searchFile) error) error {
	err := s.m.Walk(ctx, vfsWalkFS{s.fsys}, s.dir, func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			// An unreadable directory: search what can be read.
			return nil //nolint:nilerr // skipped on purpose, as ripgrep does
		}
		if d.IsDir() {
			if vcsDirs[d.Name()] || (opts.descend != nil && !opts.descend(rel)) {
				return fs.SkipDir
			}
			if rel != "." && rel != "" && s.hidden != nil && s.hidden(filepath.Join(s.dir, filepath.FromSlash(rel))) {
				return fs.SkipDir
			}
			return nil
		}
		f, ok := s.file(rel, d)
		if !ok || (s.hidden != nil && s.hidden(f.path)) {
			return nil
		}
		return fn(f)
	})
	if errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

// file describes the entry d, or ok false when a search must skip it.
func (s *searchTree) file(rel string, d fs.DirEntry) (searchFile, bool) {
	p := filepath.Join(s.dir, filepath.FromSlash(rel))
	f := searchFile{path: p, rel: rel, display: searchDisplay(s.workspace, p)}
	switch t := d.Type(); {
	case t.IsRegular():
		fi, err := d.Info()
		if err != nil || !fi.Mode().IsRegular() {
			return f, false
		}
		f.modTime, f.size = fi.ModTime(), fi.Size()
	case t&fs.ModeSymlink != 0:
		// Followed through the vfs, which refuses targets outside the
		// roots and anything but regular files and directories.
		info, err := s.fsys.Stat(p)
		if err != nil || info.IsDir || !info.Mode.IsRegular() {
			return f, false
		}
		f.modTime, f.size = info.Stamp.ModTime, info.Stamp.Size
	default:
		return f, false
	}
	return f, true
}

// vfsWalkFS lets package ignore walk through a vfs.FS.
type vfsWalkFS struct{ fsys vfs.FS }

func (v vfsWalkFS) ReadDir(name string) ([]fs.DirEntry, error) { return v.fsys.ReadDir(name) }

func (v vfsWalkFS) ReadFile(name string) ([]byte, error) {
	f, err := v.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, ignore.MaxFileSize))
}

// searchWorkspace is the workspace (the first root) of fsys.
func searchWorkspace(fsys vfs.FS) string {
	if r := fsys.Roots(); len(r) > 0 {
		return r[0]
	}
	return "."
}

// searchArgName names a path argument in messages.
func searchArgName(p string) string {
	if p == "" || p == "." {
		return "the workspace"
	}
	return p
}

// searchLimit is the cap on results.
func searchLimit(l Limits) int {
	if l.MaxSearchResults > 0 {
		return l.MaxSearchResults
	}
	return DefaultLimits().MaxSearchResults
}
