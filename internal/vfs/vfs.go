// Package vfs is the file system ferry's file tools work on. The tools never
// touch os directly: every path goes through an FS, which confines it to the
// workspace root and the extra roots the user allowed.
//
// Guarantees of every implementation (checked by the shared suite in vfstest):
//
//   - A path is workspace-relative or absolute; "" and "." are the workspace,
//     whose Info.Rel is ".". "..", absolute paths and symlinks that lead
//     outside every root are refused with ErrOutside, never followed.
//     Symlinks that stay inside are followed.
//   - Only regular files and directories are served. A device, FIFO, socket or
//     a link to one is refused with ErrNotRegular at once, without blocking
//     (a FIFO is never opened for reading). The one exception is /dev/null,
//     which reads as an empty file.
//   - WriteFile is atomic: the new content goes to a temporary file in the
//     same directory, is fsynced and renamed over the target, so a reader sees
//     the old or the new content, never a mix (an implementation documents
//     Missing parent directories are created. An existing file keeps its
//     mode. A symlink is written through to its (confined) target and stays
//     a symlink.
//   - A regular file with more than one hard link is never written:
//     WriteFile refuses it with ErrHardLinked and leaves it untouched. Its
//     other names may lie outside every root (ln /etc/passwd ws/f), so
//     writing through it would escape, and replacing it would silently
//     split the links.
//   - Stamp identifies a version of a file cheaply (size, mtime, ctime, inode):
//     any write changes it, even one that restores the mtime.
//
// # Local
//
// Local is the implementation on the local disk. Its policies:
//
//   - Resolution works like realpath -m: component by component, symlinks
//     followed wherever they point (at most 40 per path, so a loop is an
//     error), ".." taken physically, components past the first missing one
//     literally. Only the result is confined: it must lie inside a root, and
//     it is then opened through that root's os.Root, which also refuses an
//     escape should the tree change in between. So "../ws/f" from inside ws,
//     a link into an extra root, and an absolute path that reaches a root
//     through a symlinked prefix (/tmp -> /private/tmp) are all served. When
//     roots nest, Info.Rel is relative to the first root that holds the file,
//     the workspace before the extra roots.
//   - Special paths: anything below /dev, /proc or /sys that no root covers
//     is refused while resolving, before it is even stat'ed, with an error
//     that says it is a device or special file and wraps both ErrNotRegular
//     and ErrOutside. This covers /dev/stdin, /dev/tty, /proc/self/fd/0 and
//     links to them, whatever they point at. /dev/null (also through a link)
//     reads as an empty file and Stat reports it as an empty regular-looking
//     file; writing to it is refused. Inside the roots a FIFO, socket or
//     device is refused by its type (ErrNotRegular), checked before opening
//     and again on the opened, non-blocking descriptor.
//   - Read-only files: an existing file with no write bit in its mode (0444)
//     is refused with an error wrapping ErrPermission, even for root: ferry
//     does not override a file's read-only mode. Other users are held to the
//     owner/group/other write bit that applies to them, since the rename
//     would otherwise replace a file they could not write.
//   - Hard links: a file with more than one link is refused (ErrHardLinked)
//     when it is first stat'ed under the path lock, and again right before
//     the rename (a link made meanwhile): the rename would only replace this
//     name, but a tool that wrote through the other names could reach a file
//     outside the roots, and one that replaced it would split them silently.
//   - Mode and owner: a replaced file keeps its permission bits (setuid,
//     setgid and sticky included) and, best effort, its owner and group (only
//     root may give a file away; a group member keeps the group). A new file
//     gets WriteOptions.Perm (0644 when zero) filtered by the umask, as any
//     created file; missing parents are created 0755 (umask applies).
//   - Temporary files are ".NAME.ferry-tmp-PID-NS-RANDOM" beside the
//     target (NS: the writer's PID namespace on Linux, else 0), created
//     with O_EXCL and removed on every failure; the directory is fsynced
//     after the rename, best effort (the write has happened by then). A
//     writer killed mid-way leaves its temporary file behind: WriteFile
//     sweeps the directory it writes in (at most every 10 minutes per
//     directory and process), and NewLocal sweeps the workspace in the
//     background (once per process; Close stops it). A sweep removes a
//     regular file with such a name when its writer is gone: this process
//     but not one of its writes in flight, or a PID of this namespace that
//     no longer runs; and any such file older than an hour (PIDs are
//     reused). It never removes a live writer's file, nor one from another
//     PID namespace younger than an hour. IsTempName tells listings to
//     skip them meanwhile.
//   - Locking: WriteFile holds a process-wide lock on the canonical path from
//     the first stat to the rename, so writers in one process (two sessions,
//     parallel Edits) serialise and WriteOptions.Check sees the file as the
//     rename will replace it. Check must not call WriteFile on the same file.
//     Other processes are not locked out; Check plus the Stamp still catch
//     most of their writes.
//   - A directory as the target is ErrIsDir; Open of a directory too.
//   - Local builds on Unix only (it relies on O_NONBLOCK, O_NOCTTY,
//     O_DIRECTORY and Stat_t); Stamp has ctime and inode on Linux and macOS.
package vfs

import (
	"errors"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"time"
)

// Errors every implementation returns (wrapped, with the path), so callers
// test them with errors.Is.
var (
	// ErrOutside: the path leaves every allowed root.
	ErrOutside = errors.New("path is outside the workspace")
	// ErrNotRegular: a device, FIFO, socket or other special file.
	ErrNotRegular = errors.New("not a regular file")
	// ErrIsDir: a directory where a file was wanted.
	ErrIsDir = errors.New("is a directory")
	// ErrHardLinked: a write target with other hard links.
	ErrHardLinked = errors.New("the file has other hard links")
	// ErrNotExist and ErrPermission are the io/fs ones.
	ErrNotExist   = fs.ErrNotExist
	ErrPermission = fs.ErrPermission
)

// tmpMarker is part of every temporary file name WriteFile creates
// (".NAME.ferry-tmp-PID-NS-RANDOM"), so a leftover from a crash is
// recognisable.
const tmpMarker = ".ferry-tmp-"

// IsTempName reports whether name (a base name) is a temporary file of
// WriteFile: ".NAME.ferry-tmp-" then PID-NS-RANDOM, or RANDOM alone (older
// versions), RANDOM being 16 lowercase hex digits. Listings (the @ search
// index, Glob, Grep) skip such names: they are half-written files or a
// crashed writer's leftovers, never the user's.
func IsTempName(name string) bool {
	_, ok := parseTempName(name)
	return ok
}

// tempOwner is who wrote a temporary file, as its name says.
type tempOwner struct {
	pid, ns uint64 // both 0: an older name that does not say
}

func parseTempName(name string) (tempOwner, bool) {
	i := strings.LastIndex(name, tmpMarker)
	if len(name) < 2 || name[0] != '.' || i < 2 {
		return tempOwner{}, false
	}
	parts := strings.Split(name[i+len(tmpMarker):], "-")
	random := parts[len(parts)-1]
	if len(random) != 16 || strings.Trim(random, "0123456789abcdef") != "" {
		return tempOwner{}, false
	}
	switch len(parts) {
	case 1:
		return tempOwner{}, true
	case 3:
		pid, err1 := strconv.ParseUint(parts[0], 10, 32)
		ns, err2 := strconv.ParseUint(parts[1], 10, 64)
		if err1 != nil || err2 != nil || pid == 0 || strings.HasPrefix(parts[0], "+") || strings.HasPrefix(parts[1], "+") {
			return tempOwner{}, false
		}
		return tempOwner{pid: pid, ns: ns}, true
	}
	return tempOwner{}, false
}

// DevNull is the one special path that is served: it reads as empty.
const DevNull = "/dev/null"

// Stamp is a cheap fingerprint of one version of a file. Two stamps are
// equal only if nothing wrote to the file in between: a write moves ctime
// even when the writer restores mtime. Stamps taken by one FS compare with ==
// (their times carry no monotonic reading).
type Stamp struct {
	Size       int64
	ModTime    time.Time
	ChangeTime time.Time
	Inode      uint64
	Device     uint64
}

// Info describes a file.
type Info struct {
	// Path is the canonical absolute path: symlinks resolved, inside a root.
	Path string
	// Rel is Path relative to the root that holds it, "/"-separated.
	Rel   string
	Mode  fs.FileMode
	IsDir bool
	// Links is the number of hard links (1 for most files).
	Links uint64
	Stamp Stamp
}

// File is an open regular file.
type File interface {
	io.Reader
	io.ReaderAt
	io.Seeker
	io.Closer
	Info() Info
}

// WriteOptions tune WriteFile.
type WriteOptions struct {
	// Perm is the mode of a file that does not exist yet (0644 when zero).
	Perm fs.FileMode
	// Check runs under the file's write lock, after the temporary file is
	// written and synced and right before the rename, with the current
	// Info of the target (ok false when it does not exist). An error aborts
	// the write and leaves the file untouched. This is where the tools'
	// final staleness check lives.
	Check func(current Info, ok bool) error
}

// FS is a confined file system.
type FS interface {
	// Resolve returns the canonical absolute path name refers to, resolving
	// symlinks inside the roots. The file itself need not exist (for a file
	// about to be created), but the path may not leave the roots.
	Resolve(name string) (string, error)
	// Stat follows symlinks (inside the roots).
	Stat(name string) (Info, error)
	// Open opens a regular file for reading; /dev/null opens as empty.
	Open(name string) (File, error)
	// ReadDir lists a directory, sorted by name.
	ReadDir(name string) ([]fs.DirEntry, error)
	// WriteFile replaces the file's content atomically (see the package doc)
	// and returns the new Info.
	WriteFile(name string, data []byte, opts WriteOptions) (Info, error)
	// Roots lists the allowed roots; the first is the workspace.
	Roots() []string
}

// StampOf is the Stamp of fi, for code that walks the disk itself (a
// script agent's before-and-after comparison) rather than through an FS.
func StampOf(fi fs.FileInfo) Stamp {
	s, _ := sysStamp(fi)
	return s
}
