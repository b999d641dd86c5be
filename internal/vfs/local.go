//go:build unix

package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"
)

// maxLinks bounds the symlinks followed while resolving one path, as the
// kernel's own limit does, so a loop is an error and never a hang.
const maxLinks = 40

// openFlags never block on a FIFO or a device swapped in after the type
// check, and never make a terminal the controlling one.
const openFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY

// Local is the FS on the local disk, confined by os.Root to the workspace and
// the extra roots. It is safe for concurrent use.
type Local struct {
	roots []localRoot // roots[0] is the workspace
	// stopSweep ends the workspace's sweep of leftover temporary files
	// and waits for it; sweepDone is closed when it is over (sweepTree).
	stopSweep func()
	sweepDone <-chan struct{}
}

var _ FS = (*Local)(nil)

type localRoot struct {
	path string // canonical absolute path
	r    *os.Root
}

// NewLocal opens the workspace and the extra roots. Each must be an existing
// directory; it is canonicalised (absolute, symlinks resolved) so paths
// reported back are canonical.
func NewLocal(workspace string, extraRoots ...string) (*Local, error) {
	l := &Local{}
	for i, dir := range append([]string{workspace}, extraRoots...) {
		what := "workspace"
		if i > 0 {
			what = "extra root"
		}
		p, err := canonicalDir(dir)
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("vfs: %s %q: %w", what, dir, err)
		}
		if slices.ContainsFunc(l.roots, func(r localRoot) bool { return r.path == p }) {
			continue
		}
		r, err := os.OpenRoot(p)
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("vfs: %s %q: %w", what, dir, err)
		}
		l.roots = append(l.roots, localRoot{path: p, r: r})
	}
	l.stopSweep, l.sweepDone = sweepTree(&l.roots[0])
	return l, nil
}

func canonicalDir(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("empty path")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	p, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", p)
	}
	return p, nil
}

// Close releases the roots' directory handles.
func (l *Local) Close() error {
	if l.stopSweep != nil {
		l.stopSweep()
	}
	var errs []error
	for _, r := range l.roots {
		errs = append(errs, r.r.Close())
	}
	l.roots = nil
	return errors.Join(errs...)
}

// Roots lists the canonical roots; the first is the workspace.
func (l *Local) Roots() []string {
	out := make([]string, len(l.roots))
	for i, r := range l.roots {
		out[i] = r.path
	}
	return out
}

// target is a resolved path: a file inside a root, or /dev/null (root nil).
type target struct {
	path string     // canonical absolute path
	root *localRoot // nil for /dev/null
	rel  string     // path relative to root, OS-separated, "." for the root
	// lstat is the walk's Lstat of path when its last step found it (nil
	// otherwise): a hint for a type check that saves a stat, never trusted
	// for what is served.
	lstat fs.FileInfo
}

func (t target) devNull() bool { return t.root == nil }

// Resolve implements FS.
func (l *Local) Resolve(name string) (string, error) {
	t, err := l.resolve(name)
	if err != nil {
		return "", err
	}
	return t.path, nil
}

// resolve walks name component by component, like realpath -m: symlinks are
// followed wherever they point (at most maxLinks), ".." goes to the physical
// parent, and components past the first missing one are taken literally. The
// result must lie inside a root; only then is anything opened, and then
// through that root's os.Root, which refuses escapes on its own should the
// tree change under us. The walk itself only reads metadata (Lstat and
// Readlink on the absolute path, one call per component rather than an
// os.Root walk per component), never below /dev, /proc or /sys, so resolving
// never blocks.
func (l *Local) resolve(name string) (target, error) {
	if strings.IndexByte(name, 0) >= 0 {
		return target{}, fmt.Errorf("%q: invalid path: %w", name, fs.ErrInvalid)
	}
	if name == "" {
		name = "."
	}
	cur := l.roots[0].path
	rest := name
	if filepath.IsAbs(name) {
		cur = string(filepath.Separator)
		// A path that starts with a root needs no walk through the root's
		// ancestors: the root is canonical already.
		for _, r := range l.roots {
			if rel, ok := within(name, r.path); ok {
				cur, rest = r.path, rel
				break
			}
		}
	}
	comps := splitPath(rest)
	links, missing := 0, 0 // missing: literal components past the first that does not exist
	var last fs.FileInfo   // Lstat of cur, when the last step found it
	for len(comps) > 0 {
		c := comps[0]
		comps = comps[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur, last = filepath.Dir(cur), nil
			if missing > 0 {
				missing--
			}
			continue
		}
		next := filepath.Join(cur, c)
		if missing > 0 {
			cur = next
			missing++
			continue
		}
		if l.special(next) {
			return target{}, specialError(name, next)
		}
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			cur, last = next, nil
			missing = 1
			continue
		}
		if err != nil {
			return target{}, l.mapErr(name, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur, last = next, fi
			continue
		}
		last = nil
		links++
		if links > maxLinks {
			return target{}, fmt.Errorf("%s: more than %d symbolic links: %w", name, maxLinks, syscall.ELOOP)
		}
		dest, err := os.Readlink(next)
		if err != nil {
			return target{}, l.mapErr(name, err)
		}
		if dest == "" {
			return target{}, fmt.Errorf("%s: empty symbolic link %s: %w", name, next, fs.ErrNotExist)
		}
		if filepath.IsAbs(dest) {
			cur = string(filepath.Separator)
		}
		comps = append(splitPath(dest), comps...)
	}
	if cur == DevNull {
		return target{path: DevNull}, nil
	}
	if l.special(cur) {
		return target{}, specialError(name, cur)
	}
	if r, rel := l.rootOf(cur); r != nil {
		if missing > 0 {
			last = nil
		}
		return target{path: cur, root: r, rel: rel, lstat: last}, nil
	}
	return target{}, l.outsideError(name, cur)
}

// within reports whether p is root or below it, and the rest of p.
func within(p, root string) (string, bool) {
	if p == root {
		return "", true
	}
	if root == string(filepath.Separator) {
		return p[1:], true
	}
	if strings.HasPrefix(p, root) && p[len(root)] == filepath.Separator {
		return p[len(root)+1:], true
	}
	return "", false
}

func splitPath(p string) []string {
	return strings.Split(filepath.ToSlash(p), "/")
}

// special reports whether p is a device or pseudo file system path (below
// /dev, /proc or /sys). /dev/null is not special: it is served as an empty
// file. Nor is a path in a root the user placed below those directories
// (such as /dev/shm/ws), or an ancestor of one; a root such as / does not
// make /dev/zero or /proc servable.
func (l *Local) special(p string) bool {
	if p == DevNull || !belowPseudo(p) {
		return false
	}
	for _, r := range l.roots {
		if _, ok := within(p, r.path); ok && belowPseudo(r.path) {
			return false
		}
		if _, ok := within(r.path, p); ok {
			return false
		}
	}
	return true
}

func belowPseudo(p string) bool {
	for _, dir := range []string{"/dev", "/proc", "/sys"} {
		if rest, ok := within(p, dir); ok && rest != "" {
			return true
		}
	}
	return false
}

func specialError(name, resolved string) error {
	via := ""
	if _, ok := within(filepath.Clean(name), resolved); !ok {
		via = " (it resolves to " + resolved + ")"
	}
	return fmt.Errorf("%s is a device or special file%s; only regular files and directories inside the workspace are served (%w; %w)",
		name, via, ErrNotRegular, ErrOutside)
}

func (l *Local) outsideError(name, resolved string) error {
	via := ""
	if name != resolved {
		via = " resolves to " + resolved + ", which"
	}
	allowed := "the workspace " + l.roots[0].path
	if len(l.roots) > 1 {
		allowed += " or the allowed roots " + strings.Join(l.Roots()[1:], ", ")
	}
	return fmt.Errorf("%s%s is not inside %s: %w", name, via, allowed, ErrOutside)
}

// rootOf returns the root holding the canonical path p and p relative to it.
func (l *Local) rootOf(p string) (*localRoot, string) {
	for i := range l.roots {
		if rel, ok := within(p, l.roots[i].path); ok {
			if rel == "" {
				rel = "."
			}
			return &l.roots[i], rel
		}
	}
	return nil, ""
}

// mapErr wraps err with name; os.Root's "path escapes from parent" (the tree
// changed under us so that a path now leaves its root) becomes ErrOutside.
func (l *Local) mapErr(name string, err error) error {
	if err == nil {
		return nil
	}
	if isEscape(err) {
		return fmt.Errorf("%s leads outside the workspace and the allowed roots: %w (%w)", name, ErrOutside, err)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// isEscape recognises os.Root's escape error, which os does not export.
func isEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

// Stat implements FS.
func (l *Local) Stat(name string) (Info, error) {
	t, err := l.resolve(name)
	if err != nil {
		return Info{}, err
	}
	if t.devNull() {
		return devNullInfo(), nil
	}
	fi, err := t.root.r.Stat(t.rel)
	if err != nil {
		return Info{}, l.mapErr(name, err)
	}
	if err := servable(name, fi); err != nil {
		return Info{}, err
	}
	return t.info(fi), nil
}

// servable refuses everything but regular files and directories.
func servable(name string, fi fs.FileInfo) error {
	if fi.Mode().IsRegular() || fi.IsDir() {
		return nil
	}
	return fmt.Errorf("%s is a %s, not a regular file; only regular files and directories are served: %w",
		name, kind(fi.Mode()), ErrNotRegular)
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	default:
		return "special file"
	}
}

func (t target) info(fi fs.FileInfo) Info {
	stamp, links := sysStamp(fi)
	return Info{
		Path:  t.path,
		Rel:   filepath.ToSlash(t.rel),
		Mode:  fi.Mode(),
		IsDir: fi.IsDir(),
		Links: links,
		Stamp: stamp,
	}
}

func devNullInfo() Info {
	return Info{Path: DevNull, Rel: DevNull, Mode: 0o666, Links: 1}
}

// Open implements FS. The type is checked before opening, so a FIFO is never
// opened; the open itself is non-blocking and re-checked on the descriptor,
// so a file swapped for a FIFO or device in between cannot block either.
func (l *Local) Open(name string) (File, error) {
	t, err := l.resolve(name)
	if err != nil {
		return nil, err
	}
	return l.openTarget(name, t)
}

func (l *Local) openTarget(name string, t target) (File, error) {
	if t.devNull() {
		return &nullFile{Reader: bytes.NewReader(nil)}, nil
	}
	var err error
	fi := t.lstat
	if fi == nil {
		if fi, err = t.root.r.Stat(t.rel); err != nil {
			return nil, l.mapErr(name, err)
		}
	}
	if err := servable(name, fi); err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%s: %w", name, ErrIsDir)
	}
	f, err := t.root.r.OpenFile(t.rel, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, l.mapErr(name, err)
	}
	fi, err = f.Stat()
	if err == nil {
		err = servable(name, fi)
	}
	if err == nil && fi.IsDir() {
		err = fmt.Errorf("%s: %w", name, ErrIsDir)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &localFile{File: f, info: t.info(fi)}, nil
}

type localFile struct {
	*os.File
	info Info
}

func (f *localFile) Info() Info { return f.info }

// nullFile is /dev/null: empty, never the device itself.
type nullFile struct{ *bytes.Reader }

func (*nullFile) Close() error { return nil }
func (*nullFile) Info() Info   { return devNullInfo() }

// ReadDir implements FS.
func (l *Local) ReadDir(name string) ([]fs.DirEntry, error) {
	t, err := l.resolve(name)
	if err != nil {
		return nil, err
	}
	if t.devNull() {
		return nil, fmt.Errorf("%s: %w", name, syscall.ENOTDIR)
	}
	// O_DIRECTORY fails on anything but a directory without opening it.
	f, err := t.root.r.OpenFile(t.rel, os.O_RDONLY|syscall.O_DIRECTORY|openFlags, 0)
	if err != nil {
		return nil, l.mapErr(name, err)
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, l.mapErr(name, err)
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, nil
}

// WriteFile implements FS; see the package doc for the policies.
func (l *Local) WriteFile(name string, data []byte, opts WriteOptions) (Info, error) {
	t, err := l.resolve(name)
	if err != nil {
		return Info{}, err
	}
	if t.devNull() {
		return Info{}, fmt.Errorf("%s: ferry does not write to devices: %w", name, ErrNotRegular)
	}
	if t.rel == "." {
		return Info{}, fmt.Errorf("%s: %w", name, ErrIsDir)
	}
	defer writeLocks.lock(t.path)()

	cur, err := t.root.r.Lstat(t.rel)
	exists := err == nil
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return Info{}, l.mapErr(name, err)
	case cur.IsDir():
		return Info{}, fmt.Errorf("%s: %w", name, ErrIsDir)
	case !cur.Mode().IsRegular():
		// Also a symlink that appeared after resolve: never replace it.
		return Info{}, servable(name, cur)
	}
	if exists {
		if err := writable(name, cur); err != nil {
			return Info{}, err
		}
		if _, links := sysStamp(cur); links > 1 {
			return Info{}, hardLinkedError(name, links)
		}
	}
	return l.writeAtomic(name, t, data, opts, cur)
}

// Writable is the check WriteFile makes of an existing file's mode (see
// writable), for another FS that writes the files Local serves.
func Writable(name string, fi fs.FileInfo) error { return writable(name, fi) }

// writable refuses a file the user could not write in place: never a file
// without any write bit (even for root, which the kernel would let through),
// and for other users the owner/group/other bit that applies to them. The
// atomic rename would otherwise replace a file its mode protects.
func writable(name string, fi fs.FileInfo) error {
	mode := fi.Mode()
	if mode&0o222 == 0 {
		return fmt.Errorf("%s is read-only (mode %s); ferry does not override a file's read-only mode: change the mode first if it should be written: %w",
			name, mode.Perm(), ErrPermission)
	}
	euid := os.Geteuid()
	uid, gid, ok := owner(fi)
	if euid == 0 || !ok {
		return nil
	}
	bit := fs.FileMode(0o002)
	switch {
	case uid == euid:
		bit = 0o200
	case inGroup(gid):
		bit = 0o020
	}
	if mode&bit == 0 {
		return fmt.Errorf("%s is not writable by this user (mode %s): %w", name, mode.Perm(), ErrPermission)
	}
	return nil
}

func inGroup(gid int) bool {
	if gid == os.Getegid() {
		return true
	}
	groups, _ := os.Getgroups()
	return slices.Contains(groups, gid)
}

// writeAtomic writes a temporary file beside the target and renames it over.
// old is the target's Lstat (nil when it does not exist).
func (l *Local) writeAtomic(name string, t target, data []byte, opts WriteOptions, old fs.FileInfo) (Info, error) {
	dir := filepath.Dir(t.rel)
	if err := t.root.r.MkdirAll(dir, 0o755); err != nil {
		return Info{}, l.mapErr(name, err)
	}
	perm := opts.Perm.Perm()
	if perm == 0 {
		perm = 0o644
	}
	createPerm := perm // new files: the umask applies, as to any created file
	if old != nil {
		createPerm = 0o600 // set exactly below, once the content is there
	}
	sweepDir(t.root, dir) // leftovers of writers killed mid-way
	// An executable must not be open for writing in a child this process
	// forks meanwhile: that child holds the fd until its exec, and running
	// the new file then fails with "text file busy" (a script the agent
	// writes and its next Bash runs). Forks wait while the file is open.
	unlockFork := func() {}
	if perm&0o111 != 0 || (old != nil && old.Mode()&0o111 != 0) {
		syscall.ForkLock.RLock()
		unlockFork = sync.OnceFunc(syscall.ForkLock.RUnlock)
	}
	defer unlockFork()
	tmp, f, release, err := createTemp(t.root, dir, filepath.Base(t.rel), createPerm)
	if err != nil {
		return Info{}, l.mapErr(name, err)
	}
	renamed := false
	defer func() { // also when Check panics
		if f != nil {
			f.Close()
		}
		unlockFork()
		if !renamed {
			_ = t.root.r.Remove(tmp) // best effort; the name says what it is
		}
		release()
	}()
	if _, err := f.Write(data); err != nil {
		return Info{}, l.mapErr(name, err)
	}
	if old != nil {
		keepOwner(f, old)
		// Chmod after Chown, which may clear setuid/setgid bits.
		if err := f.Chmod(old.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)); err != nil {
			return Info{}, l.mapErr(name, err)
		}
	}
	if err := f.Sync(); err != nil {
		return Info{}, l.mapErr(name, err)
	}
	err = f.Close()
	f = nil
	unlockFork()
	if err != nil {
		return Info{}, l.mapErr(name, err)
	}

	// Stat, not Lstat: rel is canonical, so this is the file itself.
	fi, serr := t.root.r.Stat(t.rel)
	var cur Info
	ok := serr == nil
	if ok {
		cur = t.info(fi)
	} else if !errors.Is(serr, fs.ErrNotExist) {
		return Info{}, l.mapErr(name, serr)
	}
	if cur.Links > 1 { // linked since the first look
		return Info{}, hardLinkedError(name, cur.Links)
	}
	if opts.Check != nil {
		if err := opts.Check(cur, ok); err != nil {
			return Info{}, err
		}
	}
	if err := t.root.r.Rename(tmp, t.rel); err != nil {
		return Info{}, l.mapErr(name, err)
	}
	renamed = true
	syncDir(t.root.r, dir)
	fi, err = t.root.r.Stat(t.rel)
	if err != nil {
		// The content is in place; only the report failed.
		return Info{}, l.mapErr(name, err)
	}
	return t.info(fi), nil
}

// createTemp creates ".BASE.ferry-tmp-PID-NS-RANDOM" in dir with O_EXCL
// (see tempName) and registers it as live until release is called.
func createTemp(root *localRoot, dir, base string, perm fs.FileMode) (string, *os.File, func(), error) {
	// Stay well below NAME_MAX (255 bytes) with the prefix and suffix.
	for len(base) > 200 {
		_, size := utf8.DecodeLastRuneInString(base)
		base = base[:len(base)-size]
	}
	for range 10 {
		name := filepath.Join(dir, tempName(base))
		// Live before it exists: a sweep that sees it on disk must find
		// it here.
		release := registerTemp(filepath.Join(root.path, name))
		f, err := root.r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			release()
			continue
		}
		if err != nil {
			release()
			return "", nil, nil, err
		}
		return name, f, release, nil
	}
	return "", nil, nil, fmt.Errorf("cannot create a temporary file in %s: %w", dir, fs.ErrExist)
}

// keepOwner gives the new file the replaced file's owner and group, best
// effort: only root may give a file away; a member of the group may at least
// keep the group.
func keepOwner(f *os.File, old fs.FileInfo) {
	uid, gid, ok := owner(old)
	if !ok || (uid == os.Geteuid() && gid == os.Getegid()) {
		return
	}
	if f.Chown(uid, gid) != nil {
		_ = f.Chown(-1, gid)
	}
}

// syncDir makes the rename durable. Best effort: the rename has happened
// and is visible, so a file system that cannot sync a directory must not
// turn a done write into a reported failure.
func syncDir(r *os.Root, dir string) {
	d, err := r.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return
	}
	_ = d.Sync()
	d.Close()
}

// hardLinkedError refuses a file with links other names: they may be
// outside every root.
func hardLinkedError(name string, links uint64) error {
	return fmt.Errorf("%s has %d hard links; ferry does not write a file that has other names, which may lie outside the workspace: %w",
		name, links, ErrHardLinked)
}

// ResolveExisting resolves the symlinks of the longest existing prefix of
// abs (an absolute path) and appends the rest unchanged: where a path
// would really land, even when its last parts do not exist yet. Callers
// check the result against their root to confine a path.
func ResolveExisting(abs string) string {
	rest := ""
	for dir := abs; ; {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}
