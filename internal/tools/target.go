package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/ferry-dev/ferry/internal/vfs"
	"github.com/ferry-dev/ferry/protocol"
)

// This file holds what Write and Edit share: loading the file they change
// together with the contract pre-check, the final check under the vfs's
// per-file lock, the write itself and the mapping of file system errors.

// maxWriteFileBytes bounds the file Write and Edit load into memory. A file
// this large could not have passed Read's token gate as a full read anyway.
const maxWriteFileBytes = 256 << 20

// readAttempts bounds the retries when a file changes while it is read.
const readAttempts = 3

// writeTarget is the file a Write or Edit changes, as it was when the call
// computed its change. The final check compares the file against this, not
// against the latest ReadState entry: another call may have recorded a newer
// version since, and this call's change is based on this one.
type writeTarget struct {
	// path is canonical; rel is relative to its root; shown names it in
	// messages (workspace-relative, or absolute in an extra root).
	path, rel, shown string
	exists           bool
	info             vfs.Info // when exists
	data             []byte   // the content, when exists
	readAt           time.Time
	sum              *Hash
	// sawWhole: the agent had seen every line of the file (or it is new),
	// so the written version counts as fully seen too.
	sawWhole bool
}

// hash is the content hash of data, computed once.
func (t *writeTarget) hash() Hash {
	if t.sum == nil {
		h := HashBytes(t.data)
		t.sum = &h
	}
	return *t.sum
}

// loadTarget resolves name, reads the file if it exists and runs Edit's
// read-before-write contract on it (codes 2 and 3: a current Read of any
// window), before anything is computed or asked.
func loadTarget(env *Env, name string) (*writeTarget, error) { return loadTargetFor(env, name, false) }

// loadWholeTarget is loadTarget with Write's contract: every line of the current
// version seen.
func loadWholeTarget(env *Env, name string) (*writeTarget, error) {
	return loadTargetFor(env, name, true)
}

func loadTargetFor(env *Env, name string, whole bool) (*writeTarget, error) {
	info, err := env.FS.Stat(name)
	switch {
	case errors.Is(err, vfs.ErrNotExist):
		p, err := env.FS.Resolve(name)
		if err != nil {
			return nil, writeFSError(name, err)
		}
		rel := relPath(env.FS, p)
		return &writeTarget{path: p, rel: rel, shown: shownPath(env.FS, p, rel), sawWhole: true}, nil
	case err != nil:
		return nil, writeFSError(name, err)
	case info.IsDir:
		return nil, Errorf(CodeIsDirectory, "%s is a directory, not a file. Give the path of a file inside it.", name)
	case info.Path == vfs.DevNull:
		// Served as empty for reading; never a write target.
		return nil, Errorf(CodeNotRegular, "%s is a device; Write and Edit only change regular files.", name)
	case info.Links > 1:
		// Refused before anything is computed or asked; the vfs refuses
		// it again under its lock.
		return nil, hardLinked(shownPath(env.FS, info.Path, info.Rel), nil)
	}
	t := &writeTarget{path: info.Path, rel: info.Rel, shown: shownPath(env.FS, info.Path, info.Rel), exists: true}
	state := env.State
	if state == nil {
		state = NewReadState() // no state: nothing was read
	}
	check := state.CheckEdit
	if whole {
		check = state.CheckWrite
	}
	if !state.Read(info.Path) {
		// Code 2 needs no content: do not load a file that was never read.
		if err := check(t.shown, info, func() (Hash, error) { return Hash{}, nil }); err != nil {
			return nil, err
		}
	}
	if err := t.read(env.FS, name); err != nil {
		return nil, err
	}
	if err := check(t.shown, t.info, func() (Hash, error) { return t.hash(), nil }); err != nil {
		return nil, err
	}
	t.sawWhole = state.SawWhole(info.Path)
	return t, nil
}

// read loads the content with a stamp that belongs to it: the stamp is taken
// before and after reading, and the read is repeated if they differ, so the
// content is never paired with the stamp of another version.
func (t *writeTarget) read(fsys vfs.FS, name string) error {
	for range readAttempts {
		before, err := fsys.Stat(t.path)
		if err != nil {
			return writeFSError(name, err)
		}
		if before.Stamp.Size > maxWriteFileBytes {
			return Errorf(CodeTooLarge, "%s is %d MiB, over the %d MiB that Write and Edit handle. Change it with a shell command instead.", t.shown, before.Stamp.Size>>20, maxWriteFileBytes>>20)
		}
		data, err := readWhole(fsys, t.path, before.Stamp.Size)
		if err != nil {
			return writeFSError(name, err)
		}
		after, err := fsys.Stat(t.path)
		if err != nil {
			return writeFSError(name, err)
		}
		if after.Stamp == before.Stamp && int64(len(data)) == after.Stamp.Size {
			t.info, t.data, t.readAt = after, data, time.Now()
			return nil
		}
	}
	return Errorf(CodeStale, "%s kept changing while it was read (another process is writing it). Wait until it is stable, Read it again, then retry.", t.shown)
}

// readWhole reads a file of the expected size in one allocation.
func readWhole(fsys vfs.FS, path string, size int64) ([]byte, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, 0, size+1) // +1: see EOF without growing
	for {
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
		if len(buf) == cap(buf) {
			if int64(len(buf)) > maxWriteFileBytes {
				return nil, fmt.Errorf("%s grew past %d bytes while read", path, maxWriteFileBytes)
			}
			buf = append(buf, 0)[:len(buf)] // the file grew: let append pick a bigger buffer
		}
	}
}

// finalCheck is the last contract check, run by the vfs under the file's
// write lock right before the rename: the file must still be the version
// this call read and computed its change from (same stamp, or same content
// after a touch), and a file that did not exist must still not exist.
func (t *writeTarget) finalCheck(fsys vfs.FS) func(cur vfs.Info, ok bool) error {
	return func(cur vfs.Info, ok bool) error {
		if !t.exists {
			if ok {
				return Errorf(CodeStale, "%s was created by someone else while this call ran. Read it, then redo the change on its content.", t.shown)
			}
			return nil
		}
		if !ok {
			return Errorf(CodeStale, "%s was deleted since it was read. Check with the user whether it should exist; to create it anew, use Write.", t.shown)
		}
		if cur.Stamp == t.info.Stamp && !Racy(t.info.Stamp, t.readAt) {
			return nil
		}
		h, err := hashFile(fsys, cur.Path)
		if err != nil {
			return err
		}
		if h != t.hash() {
			return Errorf(CodeStale, "%s was modified since it was read (by the user or another process). Read it again and redo the change on its current content.", t.shown)
		}
		return nil
	}
}

// commit runs the common tail of Write and Edit once the new content is
// known: ask for permission, record the history, write under the final
// check, and record the written version (as a full view when the agent had
// seen the whole file), so the agent can change the file again without
// reading it.
func (t *writeTarget) commit(ctx context.Context, env *Env, tool string, data []byte, diff *protocol.FileDiff) (vfs.Info, error) {
	if env.Approve != nil {
		if err := env.Approve(ctx, Approval{Tool: tool, Path: t.path, Rel: t.rel, IsNew: !t.exists, Diff: diff}); err != nil {
			return vfs.Info{}, err
		}
	}
	if err := ctx.Err(); err != nil {
		return vfs.Info{}, err
	}
	if env.History != nil {
		if err := env.History.Track(ctx, t.path, t.data, t.exists); err != nil {
			return vfs.Info{}, fmt.Errorf("record the history of %s: %w", t.path, err)
		}
	}
	info, err := env.FS.WriteFile(t.path, data, vfs.WriteOptions{Check: t.finalCheck(env.FS)})
	if err != nil {
		return vfs.Info{}, writeFSError(t.shown, err)
	}
	if wh, ok := env.History.(WriteHistory); ok {
		_ = wh.Written(ctx, t.path, data)
	}
	if env.State != nil {
		// After an Edit based on a window, the agent still has not seen the
		// rest: the new version permits Edit, and Write only after a Read.
		env.State.Record(ReadEntry{Path: info.Path, Stamp: info.Stamp, Hash: HashBytes(data), Partial: !t.sawWhole, View: "written by " + tool})
	}
	return info, nil
}

// relPath is path relative to the root holding it ("/"-separated).
func relPath(fsys vfs.FS, path string) string {
	for _, r := range fsys.Roots() {
		if rel, err := filepath.Rel(r, path); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return filepath.ToSlash(rel)
		}
	}
	return path
}

// shownPath names a file in messages: relative inside the workspace,
// absolute elsewhere, so a name is never ambiguous between roots.
func shownPath(fsys vfs.FS, path, rel string) string {
	roots := fsys.Roots()
	if len(roots) > 0 && rel != "" && rel != "." {
		if r, err := filepath.Rel(roots[0], path); err == nil && filepath.ToSlash(r) == rel {
			return rel
		}
	}
	return path
}

// diffContext is the context lines around each change in Write and Edit
// diffs.
const diffContext = 3
