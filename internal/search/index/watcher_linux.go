package index

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"unsafe"
)

// newWatcher makes an inotify watcher that keeps directory names relative
// to root.
func newWatcher(root string) (watcher, error) { return newInotifyWatcher(root) }

// inotifyMask is what the index wants to hear of: the events fsnotify
// reports as Create, Write, Remove, Rename and Chmod.
const inotifyMask = syscall.IN_CREATE | syscall.IN_MODIFY | syscall.IN_ATTRIB | syscall.IN_DELETE |
	syscall.IN_MOVED_FROM | syscall.IN_MOVED_TO | syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF |
	syscall.IN_ONLYDIR | syscall.IN_DONT_FOLLOW

// inotifyWatcher reads inotify directly and keeps, per watch, 8 bytes and
// the directory's name relative to the root in a shared arena (a
// workspace has thousands of directories, one watch each).
type inotifyWatcher struct {
	f      *os.File
	fd     int
	prefix string // root + "/": names under it are kept without it
	events chan string
	errors chan error

	mu    sync.Mutex
	names []uint64 // by watch descriptor: arena offset << 24 | length, 0 for none
	arena []byte   // the names, one after the other
	dead  int      // arena bytes of removed watches
	live  int
}

var _ watcher = (*inotifyWatcher)(nil)

const nameLenBits = 24

func newInotifyWatcher(root string) (*inotifyWatcher, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("watch: inotify: %w", err)
	}
	w := &inotifyWatcher{
		f:      os.NewFile(uintptr(fd), "inotify"), // non-blocking: reads park in the runtime poller
		fd:     fd,
		prefix: strings.TrimSuffix(root, "/") + "/",
		events: make(chan string, 64),
		errors: make(chan error, 1),
	}
	go w.read()
	return w, nil
}

func (w *inotifyWatcher) Add(dir string) error {
	wd, err := syscall.InotifyAddWatch(w.fd, dir, inotifyMask)
	if err != nil {
		return fmt.Errorf("watch %s: %w", dir, err)
	}
	name := strings.TrimPrefix(dir, w.prefix)
	if dir+"/" == w.prefix {
		name = ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.names) <= wd {
		w.names = append(w.names, 0)
	}
	w.drop(wd) // the inode was watched under another name: renamed
	w.names[wd] = uint64(len(w.arena))<<nameLenBits | uint64(len(name)) | 1<<(nameLenBits-1)
	w.arena = append(w.arena, name...)
	w.live += len(name)
	return nil
}

// drop forgets watch wd's name; when most of the arena is dead it is
// rebuilt from the live names. w.mu is held.
func (w *inotifyWatcher) drop(wd int) {
	if wd >= len(w.names) || w.names[wd] == 0 {
		return
	}
	n := int(w.names[wd] & (1<<(nameLenBits-1) - 1))
	w.names[wd] = 0
	w.live -= n
	w.dead += n
	if w.dead > 1<<16 && w.dead > w.live {
		arena := make([]byte, 0, w.live)
		for i, e := range w.names {
			if e != 0 {
				off, n := int(e>>nameLenBits), int(e&(1<<(nameLenBits-1)-1))
				w.names[i] = uint64(len(arena))<<nameLenBits | uint64(n) | 1<<(nameLenBits-1)
				arena = append(arena, w.arena[off:off+n]...)
			}
		}
		w.arena, w.dead = arena, 0
	}
}

// dir returns the absolute path of watch wd's directory.
func (w *inotifyWatcher) dir(wd int) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dirLocked(wd)
}

func (w *inotifyWatcher) dirLocked(wd int) (string, bool) {
	if wd < 0 || wd >= len(w.names) || w.names[wd] == 0 {
		return "", false
	}
	e := w.names[wd]
	off, n := int(e>>nameLenBits), int(e&(1<<(nameLenBits-1)-1))
	if n == 0 {
		return strings.TrimSuffix(w.prefix, "/"), true
	}
	return w.prefix + string(w.arena[off:off+n]), true
}

func (w *inotifyWatcher) RemoveWhere(drop func(dir string) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for wd := range w.names {
		if d, ok := w.dirLocked(wd); ok && drop(d) {
			_, _ = syscall.InotifyRmWatch(w.fd, uint32(wd)) //nolint:gosec // a watch descriptor
			w.drop(wd)
		}
	}
}

func (w *inotifyWatcher) WatchList() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for wd := range w.names {
		if d, ok := w.dirLocked(wd); ok {
			out = append(out, d)
		}
	}
	return out
}

func (w *inotifyWatcher) Events() <-chan string { return w.events }
func (w *inotifyWatcher) Errors() <-chan error  { return w.errors }

func (w *inotifyWatcher) Close() error {
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	return nil
}

// read turns the kernel's events into paths until the watcher closes.
func (w *inotifyWatcher) read() {
	defer close(w.errors)
	defer close(w.events)
	buf := make([]byte, 64<<10)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				w.report(fmt.Errorf("watch: read: %w", err))
			}
			return
		}
		for b := buf[:n]; len(b) >= syscall.SizeofInotifyEvent; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&b[0])) //nolint:gosec // the kernel's record layout
			size := syscall.SizeofInotifyEvent + int(ev.Len)
			if size > len(b) {
				break
			}
			name := b[syscall.SizeofInotifyEvent:size]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			b = b[size:]
			switch {
			case ev.Mask&syscall.IN_Q_OVERFLOW != 0:
				w.report(errors.New("watch: events were lost (queue overflow)"))
				continue
			case ev.Mask&syscall.IN_IGNORED != 0:
				w.mu.Lock()
				w.drop(int(ev.Wd))
				w.mu.Unlock()
				continue
			}
			dir, ok := w.dir(int(ev.Wd))
			if !ok {
				continue
			}
			if len(name) > 0 {
				dir += "/" + string(name)
			}
			w.events <- dir
		}
	}
}

// report delivers err unless one is already waiting: one is enough to
// make the index rescan.
func (w *inotifyWatcher) report(err error) {
	select {
	case w.errors <- err:
	default:
	}
}
