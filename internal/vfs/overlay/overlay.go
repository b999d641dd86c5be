// Package overlay is the vfs.FS of one tool call in a session an editor is
// attached to (ferry acp): the content of text files comes from the editor
// (editorlink.Files: its unsaved buffers) and goes back through it, while
// everything else is ferry's own FS underneath.
//
// Guarantees:
//
//   - Every path is resolved and checked by the base FS first (confinement,
//     symlinks, special files, hard links, read-only modes); the editor is
//     only ever asked about the canonical path of a regular file inside the
//     roots. A path the base refuses never reaches the editor.
//   - Only plain UTF-8 text goes through the editor (tools.EditorText of
//     the file's head on disk, and of the new content for a write). PDFs,
//     images, notebooks, binary files and text in other encodings are read
//     and written on ferry's disk, as without an editor.
//   - A read the editor fails with an error wrapping fs.ErrNotExist (it has
//     no such file) falls back to the disk; any other failure is reported
//     as tools.CodeEditor (the editor's own text is not passed on), never
//     silently replaced by what the disk holds.
//   - The Stamp of a file the editor serves is the disk's, with Size the
//     text's length and Device a hash of the text: an unsaved change in the
//     editor changes the stamp as a write on disk would, so the tools'
//     read-before-write checks see it.
//   - Text the editor read, or a write it is about to make, for a path that
//     now resolves elsewhere than when it was checked (a link swapped in)
//     is refused. The instant between that check and the editor's own
//     open cannot be closed: the editor follows links, and cannot be
//     pinned to a directory as Local's os.Root is.
//   - WriteFile holds vfs.LockPath of the file (as vfs.Local does), refuses
//     what Local refuses (directories, hard links, read-only files), runs
//     WriteOptions.Check against the editor's current text, writes through
//     the editor, and then stats the disk for the new stamp. A new file the
//     editor did not create on disk is reported (tools.CodeEditor); a new
//     file whose directory does not exist yet, or that asks for a mode
//     (WriteOptions.Perm), is created by the base: an editor need not
//     create directories and cannot be given a mode.
//   - An FS serves one tool call (its context cancels the editor's
//     requests). It keeps nothing: every Stat and Open asks the editor
//     again, so what it serves is never older than the editor's buffer.
package overlay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ferry-dev/ferry/internal/editorlink"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/internal/vfs"
)

// sniffBytes is how much of a file's head decides whether it is text (as
// the tools decide it).
const sniffBytes = 8 << 10

// FS serves file content from an editor over a base FS.
type FS struct {
	base  vfs.FS
	files editorlink.Files
	ctx   context.Context
}

var _ vfs.FS = (*FS)(nil)

// entry is where one file's content comes from.
type entry struct {
	text   string
	editor bool // false: the disk serves the file
}

// New returns the FS of one tool call: base checks every path, files
// serves text content; ctx is the call's.
func New(ctx context.Context, base vfs.FS, files editorlink.Files) *FS {
	return &FS{base: base, files: files, ctx: ctx}
}

// Resolve implements vfs.FS (the base's).
func (o *FS) Resolve(name string) (string, error) { return o.base.Resolve(name) }

// ReadDir implements vfs.FS (the base's).
func (o *FS) ReadDir(name string) ([]fs.DirEntry, error) { return o.base.ReadDir(name) }

// Roots implements vfs.FS (the base's).
func (o *FS) Roots() []string { return o.base.Roots() }

// Stat implements vfs.FS: the base's Info, with the stamp of the editor's
// text when the editor serves the file.
func (o *FS) Stat(name string) (vfs.Info, error) {
	info, err := o.base.Stat(name)
	if err != nil || !regular(info) {
		return info, err
	}
	e, err := o.lookup(info, nil)
	if err != nil {
		return vfs.Info{}, err
	}
	if e.editor {
		info.Stamp = Stamp(info.Stamp, e.text)
	}
	return info, nil
}

// Open implements vfs.FS: the editor's text when it serves the file, the
// disk's file otherwise.
func (o *FS) Open(name string) (vfs.File, error) {
	f, err := o.base.Open(name)
	if err != nil {
		return nil, err
	}
	info := f.Info()
	if !regular(info) {
		return f, nil
	}
	e, err := o.lookup(info, f)
	if err != nil || !e.editor {
		if err != nil {
			_ = f.Close()
			return nil, err
		}
		return f, nil
	}
	_ = f.Close() // checked and classified: the editor has the content
	info.Stamp = Stamp(info.Stamp, e.text)
	return &file{Reader: bytes.NewReader([]byte(e.text)), info: info}, nil
}

// WriteFile implements vfs.FS: text goes through the editor, anything else
// (and anything the base would refuse, which it then does) to the base.
func (o *FS) WriteFile(name string, data []byte, opts vfs.WriteOptions) (vfs.Info, error) {
	p, err := o.base.Resolve(name)
	if err != nil {
		return vfs.Info{}, err
	}
	if !o.viaEditor(p, data, opts.Perm) {
		info, err := o.base.WriteFile(name, data, opts)
		if err == nil && tools.EditorText(data, p) {
			// The stamp Stat gives when the editor serves what was written.
			info.Stamp = Stamp(info.Stamp, string(data))
		}
		return info, err
	}
	unlock := vfs.LockPath(p)
	defer unlock()
	cur, exists, err := o.current(name, p)
	if err != nil {
		return vfs.Info{}, err
	}
	if opts.Check != nil {
		if err := opts.Check(cur, exists); err != nil {
			return vfs.Info{}, err
		}
	}
	// The editor follows links as it writes: checked last, right before.
	if err := o.samePath(name, p); err != nil {
		return vfs.Info{}, err
	}
	if err := o.files.WriteTextFile(o.ctx, p, string(data)); err != nil {
		return vfs.Info{}, o.editorError("write", p, err)
	}
	info, err := o.base.Stat(p)
	if errors.Is(err, vfs.ErrNotExist) {
		return vfs.Info{}, &tools.Error{Code: tools.CodeEditor, Err: err, Message: fmt.Sprintf(
			"the editor accepted the new file %s but did not save it to disk. Ask the user to save it in the editor.", p)}
	}
	if err != nil {
		return vfs.Info{}, err
	}
	info.Stamp = Stamp(info.Stamp, string(data))
	return info, nil
}

// viaEditor decides where a write of data to p goes: the editor for text
// replacing text (or a new text file); the base for the rest, including
// every file the base refuses, so its refusal and message apply.
func (o *FS) viaEditor(p string, data []byte, perm fs.FileMode) bool {
	if !tools.EditorText(data, p) {
		return false
	}
	info, err := o.base.Stat(p)
	switch {
	case errors.Is(err, vfs.ErrNotExist):
		// An editor need not create directories, nor can it be given a
		// mode: a new file in a directory that does not exist yet, or
		// with a mode of its own, is ferry's to create.
		dir, derr := o.base.Stat(filepath.Dir(p))
		return derr == nil && dir.IsDir && (perm == 0 || perm == 0o644)
	case err != nil || !regular(info) || info.Links > 1 || info.Mode.Perm()&0o222 == 0:
		return false
	}
	f, err := o.base.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	text, err := isText(f, p)
	return err == nil && text
}

// current is the file at p as the write will replace it, under the lock:
// refused as vfs.Local refuses it, its stamp from the editor's text now.
func (o *FS) current(name, p string) (vfs.Info, bool, error) {
	info, err := o.base.Stat(p)
	switch {
	case errors.Is(err, vfs.ErrNotExist):
		return vfs.Info{}, false, nil
	case err != nil:
		return vfs.Info{}, false, err
	case info.IsDir:
		return vfs.Info{}, false, fmt.Errorf("%s: %w", name, vfs.ErrIsDir)
	case !regular(info):
		return vfs.Info{}, false, fmt.Errorf("%s: %w", name, vfs.ErrNotRegular)
	case info.Links > 1:
		return vfs.Info{}, false, fmt.Errorf("%s has %d hard links: %w", name, info.Links, vfs.ErrHardLinked)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return vfs.Info{}, false, fmt.Errorf("%s: %w", name, err)
	}
	if err := vfs.Writable(name, fi); err != nil {
		return vfs.Info{}, false, err
	}
	e, err := o.lookup(info, nil)
	if err != nil {
		return vfs.Info{}, false, err
	}
	if e.editor {
		info.Stamp = Stamp(info.Stamp, e.text)
	}
	return info, true, nil
}

// lookup says where info's content comes from now: the editor's text for
// a text file it has, else the disk. f is the file already open on the
// base, if any.
func (o *FS) lookup(info vfs.Info, f vfs.File) (entry, error) {
	if f == nil {
		var err error
		if f, err = o.base.Open(info.Path); err != nil {
			return entry{}, err
		}
		defer f.Close()
	}
	text, err := isText(f, info.Path)
	if err != nil {
		return entry{}, err
	}
	var e entry
	if text {
		s, err := o.files.ReadTextFile(o.ctx, info.Path)
		switch {
		case err == nil:
			// The editor followed links as it read: text from a path that
			// a swapped-in link redirected is never served.
			if err := o.samePath(info.Path, info.Path); err != nil {
				return entry{}, err
			}
			e = entry{text: s, editor: true}
		case errors.Is(err, fs.ErrNotExist) && o.ctx.Err() == nil:
			// Not the editor's to serve: the disk has it.
		default:
			return entry{}, o.editorError("read", info.Path, err)
		}
	}
	return e, nil
}

// samePath refuses name when it no longer resolves to p, its canonical
// path when it was checked: a component replaced by a link since would
// lead the editor, which follows links, elsewhere (outside: the base's
// ErrOutside; inside: code 3). A swap in the instant between this check
// and the editor's own open remains possible: unlike Local's os.Root,
// the editor cannot be pinned to the directory ferry checked.
func (o *FS) samePath(name, p string) error {
	again, err := o.base.Resolve(name)
	if err != nil {
		return err
	}
	if again != p {
		return tools.Errorf(tools.CodeStale, "%s was moved or replaced by a link while this call ran. Read it again, then redo the change.", name)
	}
	return nil
}

// editorError is the tools' error for a failed editor request: the call's
// cancel as such, anything else CodeEditor without the editor's text.
func (o *FS) editorError(op, p string, err error) error {
	if o.ctx.Err() != nil {
		return fmt.Errorf("overlay: %s %s: %w", op, p, o.ctx.Err())
	}
	return &tools.Error{Code: tools.CodeEditor, Err: err, Message: fmt.Sprintf(
		"the editor attached to this session failed to %s %s. Try again; if it keeps failing, tell the user.", op, p)}
}

// isText reports whether the open file f is plain UTF-8 text by its head.
func isText(f vfs.File, p string) (bool, error) {
	head := make([]byte, sniffBytes)
	n, err := f.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("%s: %w", p, err)
	}
	return tools.EditorText(head[:n], p), nil
}

func regular(info vfs.Info) bool { return !info.IsDir && info.Path != vfs.DevNull }

// Stamp is the stamp of text served by an editor for a file whose disk
// stamp is disk: Size is the text's, Device a hash of it.
func Stamp(disk vfs.Stamp, text string) vfs.Stamp {
	h := fnv.New64a()
	_, _ = io.WriteString(h, text)
	disk.Size = int64(len(text))
	disk.Device = h.Sum64()
	return disk
}

// file is an editor's text opened for reading.
type file struct {
	*bytes.Reader
	info vfs.Info
}

func (f *file) Close() error   { return nil }
func (f *file) Info() vfs.Info { return f.info }
