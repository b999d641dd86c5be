package index

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"

	"github.com/ferry-dev/ferry/internal/ignore"
)

// What a changed path turned out to be.
type opKind int

const (
	opGone opKind = iota // missing, ignored, or not a file the index keeps
	opFile               // a file to index
	opDir                // a directory to list again, with its subtree
)

type op struct {
	rel  string
	kind opKind
	file entry   // opFile
	sub  []entry // opDir: the files under it, sorted
}

// rel turns an absolute path from the watcher into a workspace-relative
// one; ok is false outside the workspace.
func (ix *Index) rel(abs string) (string, bool) { return relPath(ix.root, abs) }

// targets turns changed paths into the workspace-relative paths to look
// at again: an ignore file stands for its directory's subtree, and a path
// inside another target's subtree is covered by it. It returns nil and
// true when the root itself is a target.
func (ix *Index) targets(abs []string) ([]string, bool) {
	set := make(map[string]bool, len(abs))
	for _, a := range abs {
		rel, ok := ix.rel(a)
		if !ok {
			continue
		}
		if b := path.Base(rel); b == ignore.GitignoreName || b == ignore.IgnoreName {
			rel = path.Dir(rel)
			if rel == "." {
				rel = ""
			}
		}
		if rel == "" {
			return nil, true
		}
		set[rel] = true
	}
	out := make([]string, 0, len(set))
	for rel := range set {
		if !hasAncestorIn(set, rel) {
			out = append(out, rel)
		}
	}
	slices.Sort(out)
	return out, false
}

// updatePaths brings the paths abs (and their subtrees) up to date: each
// is looked at on disk again, whatever the events said about it.
func (ix *Index) updatePaths(ctx context.Context, abs []string) error {
	targets, root := ix.targets(abs)
	if root {
		return ix.rescan(ctx)
	}
	if len(targets) == 0 {
		return nil
	}
	l, ws, err := ix.newLister()
	if err != nil {
		return fmt.Errorf("index %s: %w", ix.root, err)
	}
	ops := make([]op, len(targets))
	for k, rel := range targets {
		ops[k] = classify(l, rel)
	}
	// Drop the watches of every target's subtree before adding any: the
	// watcher keeps one watch per inode under the first name it was
	// given, so a directory renamed from one target to another must lose
	// its old watch first. A listed directory is watched again before it
	// is read, so nothing is missed in between.
	ix.unwatchTargets(targets)
	for k := range ops {
		if ops[k].kind != opDir {
			continue
		}
		sub, err := l.subtree(ctx, ops[k].rel)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			ops[k].kind = opGone // vanished while listed: its parent's event follows
			continue
		}
		if err := l.statAll(ctx, sub, 1); err != nil {
			return err
		}
		ops[k].sub = sub
	}
	ix.finishWatch(ws)

	cur := ix.cur.Load()
	var sps []splice
	for _, o := range ops {
		i, found := cur.Find(o.rel)
		switch {
		case o.kind == opFile && found:
			if c, j := cur.locate(i); c.entry(j) != o.file {
				sps = append(sps, splice{lo: i, hi: i + 1, key: o.rel, add: []entry{o.file}})
			}
		case o.kind == opFile:
			sps = append(sps, splice{lo: i, hi: i, key: o.rel, add: []entry{o.file}})
		case found:
			sps = append(sps, splice{lo: i, hi: i + 1, key: o.rel})
		}
		lo, hi := cur.subtree(o.rel)
		if !sameEntries(cur, lo, hi, o.sub) {
			sps = append(sps, splice{lo: lo, hi: hi, key: o.rel + "/", add: o.sub})
		}
	}
	if len(sps) == 0 {
		return nil
	}
	ix.gen++
	ix.publish(cur.apply(sps, ix.gen))
	return nil
}

// unwatchTargets removes the watches of the targets and everything under
// them.
func (ix *Index) unwatchTargets(targets []string) {
	ref := ix.w.Load()
	if ref == nil {
		return
	}
	set := make(map[string]bool, len(targets))
	for _, t := range targets {
		set[t] = true
	}
	ref.w.RemoveWhere(func(p string) bool {
		rel, ok := ix.rel(p)
		return ok && rel != "" && (set[rel] || hasAncestorIn(set, rel))
	})
}

// classify looks at the workspace-relative path rel on disk.
func classify(l *lister, rel string) op {
	o := op{rel: rel}
	fi, err := os.Lstat(l.abs(rel))
	switch {
	case err != nil:
	case fi.IsDir():
		if !l.ignored(rel, true) {
			o.kind = opDir
		}
	case !l.ignored(rel, false):
		if e, ok := l.stat(rel, fs.FileInfoToDirEntry(fi), false); ok {
			o.kind, o.file = opFile, e
		}
	}
	return o
}

// hasAncestorIn reports whether a directory above rel is in set.
func hasAncestorIn(set map[string]bool, rel string) bool {
	for i := len(rel) - 1; i > 0; i-- {
		if rel[i] == '/' && set[rel[:i]] {
			return true
		}
	}
	return false
}
