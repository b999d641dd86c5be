package filehistory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/ferry-dev/ferry/internal/vfs"
)

// FileID is the identity of the file a change left: its device and inode.
// A file renamed over the path, or a copy put in its place, has another.
type FileID struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// idOf is the identity a stamp carries, nil where the platform has none.
func idOf(s vfs.Stamp) *FileID {
	if s.Inode == 0 && s.Device == 0 {
		return nil
	}
	return &FileID{Dev: s.Device, Ino: s.Inode}
}

// same reports whether id names the file s describes; an unknown id (an
// older journal, a platform without inodes) matches any file.
func (id *FileID) same(s vfs.Stamp) bool {
	return id == nil || (id.Dev == s.Device && id.Ino == s.Inode)
}

// errLinked: a component of a recorded path is now a symbolic link.
var errLinked = errors.New("a symbolic link is on the path")

// lstatNoLinks is os.Lstat of the absolute, canonical path p, failing with
// errLinked when p or any folder on it is now a symbolic link. A recorded
// path was canonical (every link resolved) when the change was made, so a
// link on it now is one somebody else put there, and following it would
// write where the agent never did. A missing component gives
// fs.ErrNotExist.
func lstatNoLinks(p string) (fs.FileInfo, error) {
	if !filepath.IsAbs(p) {
		return nil, &fs.PathError{Op: "lstat", Path: p, Err: fs.ErrInvalid}
	}
	cur := filepath.VolumeName(p) + string(filepath.Separator)
	var fi fs.FileInfo
	for _, c := range strings.Split(strings.TrimPrefix(p, cur), string(filepath.Separator)) {
		if c == "" {
			continue
		}
		cur = filepath.Join(cur, c)
		var err error
		if fi, err = os.Lstat(cur); err != nil {
			return nil, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, errLinked
		}
	}
	if fi == nil {
		return os.Lstat(cur)
	}
	return fi, nil
}

// recordedID is the identity of the file at the canonical path p right
// after a change wrote it; nil when it cannot be had (then only the links
// and the content are checked when restoring).
func recordedID(p string) *FileID {
	fi, err := lstatNoLinks(p)
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	return idOf(vfs.StampOf(fi))
}

// checkSame refuses, with a *ConflictError, a path that is now reached
// through a symbolic link or holds another file than id (the identity the
// agent's last change left). A missing file is no refusal here: the
// content check decides.
func checkSame(rel, path string, id *FileID) error {
	fi, err := lstatNoLinks(path)
	switch {
	case errors.Is(err, errLinked):
		return &ConflictError{Rel: rel, Link: true}
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, syscall.ENOTDIR):
		return &ConflictError{Rel: rel} // a folder on the path is a file now
	case err != nil:
		return fmt.Errorf("file history: %w", err)
	case fi.Mode().IsRegular() && !id.same(vfs.StampOf(fi)):
		return &ConflictError{Rel: rel, Replaced: true}
	}
	return nil
}
