// Package index keeps an in-memory list of the files of one workspace,
// for the fuzzy file search behind the @ picker, and keeps it current.
//
// Guarantees:
//
//   - The listing follows git's ignore rules exactly (package ignore:
//     nested .gitignore and .ignore files, .git/info/exclude, the global
//     excludes file, negations, directory-only rules); ignored directories
//     are never read, nor watched; ".git" is skipped. Regular files are
//     indexed, and symlinks whose target is a regular file inside the
//     workspace (with the target's time and size); symlinks to
//     directories are never followed, so a symlink loop is harmless.
//   - Searches read a Snapshot: immutable, so a search never waits for
//     or races with an update. An update makes a new snapshot that shares
//     every chunk (a few thousand entries) it does not touch, so a
//     one-file change copies one chunk, not the index. Memory: 24 bytes
//     per file beyond the path's text (end offset, mtime, size, the fuzzy.MaskOf prefilter mask),
//     plus the allocator's rounding (about 1.5 bytes).
//   - The first listing publishes the paths as soon as they are listed
//     (Ready: searchable), then the same with times and sizes
//     (HasMetadata), because a stat per file costs more than the listing.
//   - With watching on (the default), files that appear, change or vanish
//     are in a snapshot within Debounce plus the time to list what
//     changed: inotify (fsnotify off Linux) watches every directory that is not ignored
//     (added before the directory is read, so nothing is missed), events
//     are hints and the file system is the truth (each changed path is
//     looked at again). A new directory is listed with its contents; an
//     edited .gitignore or .ignore relists its directory's subtree; a
//     removed or renamed directory leaves with its subtree and watches;
//     more than BurstLimit changed paths in one debounce window, or a
//     kernel queue overflow, trigger a full rescan. When the inotify
//     watch limit is reached the index drops its watches and polls every
//     PollInterval instead (Status and Warn say so); it never fails.
//     Changes to .git/info/exclude, the git configuration or the global
//     excludes file are seen at the next full rescan.
//   - Close stops every goroutine the index started before it returns.
package index

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ferry-dev/ferry/internal/ignore"
)

// Mode is how an index keeps up with the file system.
type Mode int

const (
	// Watch uses inotify (fsnotify off Linux), falling back to Poll at
	// the watch limit.
	Watch Mode = iota
	// Poll lists the whole workspace again every PollInterval.
	Poll
	// Static lists once and never updates (a one-shot search).
	Static
)

func (m Mode) String() string {
	switch m {
	case Watch:
		return "watch"
	case Poll:
		return "poll"
	case Static:
		return "static"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Defaults for Options.
const (
	DefaultDebounce         = 75 * time.Millisecond
	DefaultPollInterval     = 2 * time.Second
	DefaultBurstLimit       = 1000
	DefaultProgressInterval = 100 * time.Millisecond
)

// ErrWatchLimit is wrapped by the error that reports the fall back to
// polling when the inotify watch limit (fs.inotify.max_user_watches) or
// instance limit is reached.
var ErrWatchLimit = errors.New("file watch limit reached; polling instead")

// Options configure an Index. The zero value is a watching index with
// the defaults above and the user's git configuration.
type Options struct {
	// Env locates the git configuration (core.excludesFile,
	// core.ignorecase); nil means ignore.OSEnv().
	Env *ignore.Env
	// Mode is Watch (default), Poll or Static.
	Mode Mode
	// Debounce is how long changes gather before one update.
	Debounce time.Duration
	// PollInterval is the time between rescans in Poll mode and after a
	// fall back.
	PollInterval time.Duration
	// BurstLimit is how many changed paths one debounce window may hold
	// before a full rescan replaces the incremental update.
	BurstLimit int
	// Workers is how many goroutines a full listing uses; <= 0 means
	// GOMAXPROCS.
	Workers int
	// Progress, when set, is called during every full listing every
	// ProgressInterval and once at its end (Done set). It runs on the
	// index's goroutines: it must return quickly and not call Close.
	Progress func(Progress)
	// ProgressInterval defaults to DefaultProgressInterval.
	ProgressInterval time.Duration
	// Warn, when set, is told when the index degrades (the fall back to
	// polling, an error wrapping ErrWatchLimit) or a listing fails. Like
	// Progress, it must not call Close.
	Warn func(error)

	// addWatch, in tests, stands in for the watcher's Add.
	addWatch func(w watcher, dir string) error
}

// Progress reports a full listing under way. A listing first finds the
// files (Files grows, DirsPending falls to 0), then reads their times and
// sizes (Stated grows to Files).
type Progress struct {
	// Files is how many files were found so far.
	Files int
	// DirsPending is how many directories were found and not yet read.
	DirsPending int
	// Stated is how many files have their time and size read.
	Stated int
	// Elapsed is the time since the listing started.
	Elapsed time.Duration
	// Initial is set for the first listing (before Ready).
	Initial bool
	// Done is set on the last report of a listing.
	Done bool
}

// Status describes an index.
type Status struct {
	// Ready is set once the first listing has completed.
	Ready bool
	// Files and Generation are those of the current snapshot.
	Files      int
	Generation uint64
	// Mode is what the index does now: Watch, or Poll after a fall back.
	Mode Mode
	// Err is why the index fell back to polling (wrapping ErrWatchLimit),
	// or the error of the last listing; nil when all is well.
	Err error
	// Rescans counts full listings after the first.
	Rescans int
}

// Index is the live file list of one workspace. Its methods are safe for
// concurrent use.
type Index struct {
	root string
	env  ignore.Env
	opts Options

	cur      atomic.Pointer[Snapshot]
	ready    chan struct{}
	initErr  error         // set before ready closes
	meta     chan struct{} // closed when the first metadata lands, or run ends
	metaOnce sync.Once
	changes  chan struct{}

	cancel context.CancelFunc
	wg     sync.WaitGroup

	// Changed paths gathered by the event collector.
	pmu      sync.Mutex
	pending  map[string]struct{}
	overflow bool
	kick     chan struct{}

	smu    sync.Mutex
	status Status

	// w is set and cleared by the run goroutine; listings it runs read
	// it from their workers.
	w atomic.Pointer[watcherRef]
	// Owned by the run goroutine.
	fellBack bool
	gen      uint64
}

// Open starts indexing the directory root and returns at once; the first
// listing runs in the background (Wait, Ready). Until it completes,
// Snapshot returns an empty snapshot of generation 0. The index lives
// until Close or until ctx is done.
func Open(ctx context.Context, root string, opts Options) (*Index, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", root, err)
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, fmt.Errorf("index %s: %w", root, err)
	}
	fi, err := os.Stat(abs) //nolint:gosec // indexing the directory the caller names is the point
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", root, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("index %s: not a directory", root)
	}
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.BurstLimit <= 0 {
		opts.BurstLimit = DefaultBurstLimit
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = DefaultProgressInterval
	}
	env := ignore.OSEnv()
	if opts.Env != nil {
		env = *opts.Env
	}
	ix := &Index{
		root:    abs,
		env:     env,
		opts:    opts,
		ready:   make(chan struct{}),
		meta:    make(chan struct{}),
		changes: make(chan struct{}, 1),
		pending: make(map[string]struct{}),
		kick:    make(chan struct{}, 1),
	}
	ix.status.Mode = opts.Mode
	ix.cur.Store(&Snapshot{root: abs, sorted: true})
	ctx, ix.cancel = context.WithCancel(ctx)
	ix.wg.Add(1)
	go ix.run(ctx)
	return ix, nil
}

// Root is the absolute, symlink-free path of the workspace.
func (ix *Index) Root() string { return ix.root }

// Snapshot is the current list of files. It never blocks.
func (ix *Index) Snapshot() *Snapshot { return ix.cur.Load() }

// Ready is closed when the first listing has completed (or failed).
func (ix *Index) Ready() <-chan struct{} { return ix.ready }

// Wait waits for the first listing and returns its error, or ctx's.
func (ix *Index) Wait(ctx context.Context) error {
	select {
	case <-ix.ready:
		return ix.initErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WaitMetadata waits until a snapshot with times and sizes is published
// (HasMetadata), which follows Ready by the time it takes to stat every
// file, or until the index stops. It returns the first listing's error,
// or ctx's.
func (ix *Index) WaitMetadata(ctx context.Context) error {
	select {
	case <-ix.meta:
		return ix.initErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Changes receives a value after a new snapshot is published (at most
// one is buffered: a reader sees that something changed since it last
// looked, then reads Snapshot). It is meant for one reader.
func (ix *Index) Changes() <-chan struct{} { return ix.changes }

// Status describes the index now.
func (ix *Index) Status() Status {
	ix.smu.Lock()
	defer ix.smu.Unlock()
	s := ix.status
	snap := ix.cur.Load()
	s.Files, s.Generation = snap.Len(), snap.Generation()
	return s
}

// Close stops watching and every goroutine of the index, and waits for
// them. Snapshots already taken stay usable.
func (ix *Index) Close() error {
	ix.cancel()
	ix.wg.Wait()
	return nil
}

func (ix *Index) setStatus(f func(*Status)) {
	ix.smu.Lock()
	f(&ix.status)
	ix.smu.Unlock()
}

func (ix *Index) warn(err error) {
	if ix.opts.Warn != nil {
		ix.opts.Warn(err)
	}
}

func (ix *Index) publish(s *Snapshot) {
	ix.cur.Store(s)
	select {
	case ix.changes <- struct{}{}:
	default:
	}
}

// run is the index's main goroutine: the first listing, then updates
// until ctx is done.
func (ix *Index) run(ctx context.Context) {
	defer ix.wg.Done()
	defer ix.metaOnce.Do(func() { close(ix.meta) })
	defer func() {
		if ref := ix.w.Swap(nil); ref != nil {
			_ = ref.w.Close()
		}
	}()
	if ix.opts.Mode == Watch {
		ix.startWatcher()
	}
	err := ix.first(ctx)
	if err != nil || ix.opts.Mode == Static {
		return
	}

	var (
		debounce <-chan time.Time
		poll     <-chan time.Time
		ticker   *time.Ticker
	)
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
	for {
		if ticker == nil && (ix.opts.Mode == Poll || ix.fellBack) {
			ticker = time.NewTicker(ix.opts.PollInterval)
			poll = ticker.C
		}
		select {
		case <-ctx.Done():
			return
		case <-ix.kick:
			if debounce == nil {
				debounce = time.After(ix.opts.Debounce)
			}
		case <-debounce:
			debounce = nil
			ix.update(ctx)
		case <-poll:
			if err := ix.rescan(ctx); err != nil && ctx.Err() == nil {
				ix.warn(err)
			}
		}
	}
}

// startWatcher creates the watcher and its event collector; on failure
// (the inotify instance limit) the index polls.
func (ix *Index) startWatcher() {
	w, err := newWatcher(ix.root)
	if err != nil {
		ix.fallBack(fmt.Errorf("%w: %w", ErrWatchLimit, err))
		return
	}
	ix.w.Store(&watcherRef{w})
	ix.wg.Add(1)
	go ix.collect(w)
}

// collect gathers the watcher's events into the pending set until the
// watcher closes.
func (ix *Index) collect(w watcher) {
	defer ix.wg.Done()
	for {
		select {
		case name, ok := <-w.Events():
			if !ok {
				return
			}
			ix.note(name, false)
		case _, ok := <-w.Errors():
			if !ok {
				return
			}
			// A queue overflow lost events, and so may a failed read:
			// only a rescan is safe.
			ix.note("", true)
		}
	}
}

// watcherRef holds the index's watcher for an atomic pointer.
type watcherRef struct{ w watcher }

func (ix *Index) note(name string, overflow bool) {
	ix.pmu.Lock()
	if overflow || len(ix.pending) >= ix.opts.BurstLimit {
		ix.overflow = true
		clear(ix.pending)
	}
	if !ix.overflow {
		ix.pending[name] = struct{}{}
	}
	ix.pmu.Unlock()
	select {
	case ix.kick <- struct{}{}:
	default:
	}
}

// addWatch watches dir; at the watch limit it falls back to polling.
// Other failures (the directory vanished, permissions) are ignored: the
// listing sees the same.
func (ix *Index) addWatch(dir string) error {
	ref := ix.w.Load()
	if ref == nil {
		return nil
	}
	var err error
	if ix.opts.addWatch != nil {
		err = ix.opts.addWatch(ref.w, dir)
	} else {
		err = ref.w.Add(dir)
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EMFILE) {
		return fmt.Errorf("%w: watch %s: %w", ErrWatchLimit, dir, err)
	}
	return err
}

// fallBack stops watching for good and makes the index poll.
func (ix *Index) fallBack(err error) {
	if ix.fellBack {
		return
	}
	ix.fellBack = true
	if ref := ix.w.Swap(nil); ref != nil {
		_ = ref.w.Close()
	}
	ix.setStatus(func(s *Status) { s.Mode, s.Err = Poll, err })
	ix.warn(err)
}

// newLister makes a lister with the rules as they stand, wired to the
// watcher. Listings run on the run goroutine only; watch may be called
// from the walk's workers, so the fall back is recorded atomically and
// carried out by finishWatch.
func (ix *Index) newLister() (*lister, *watchState, error) {
	l, err := newLister(ix.root, ix.env)
	if err != nil {
		return nil, nil, err
	}
	ws := &watchState{}
	if ix.w.Load() != nil {
		l.watch = func(dir string) error {
			if ws.limit.Load() != nil {
				return nil
			}
			err := ix.addWatch(dir)
			if errors.Is(err, ErrWatchLimit) {
				ws.limit.CompareAndSwap(nil, &err)
			}
			return err
		}
	}
	return l, ws, nil
}

type watchState struct{ limit atomic.Pointer[error] }

func (ix *Index) finishWatch(ws *watchState) {
	if p := ws.limit.Load(); p != nil {
		ix.fallBack(*p)
	}
}

// first makes the first listing: it publishes the paths as soon as they
// are listed (Ready), then the same with times and sizes.
func (ix *Index) first(ctx context.Context) error {
	l, ws, err := ix.newLister()
	var es []entry
	var stop func()
	if err == nil {
		stop = ix.reportProgress(l, true)
		es, err = l.all(ctx, ix.opts.Workers)
		ix.finishWatch(ws)
	}
	if err != nil {
		err = fmt.Errorf("index %s: %w", ix.root, err)
		if stop != nil {
			stop()
		}
	} else {
		ix.gen++
		ix.publish(fromSorted(es, ix.gen, ix.root))
	}
	ix.initErr = err
	ix.setStatus(func(s *Status) {
		s.Ready = true
		if err != nil {
			s.Err = err
		}
	})
	close(ix.ready)
	if err != nil {
		return err
	}
	err = l.statAll(ctx, es, ix.opts.Workers)
	stop()
	if err != nil {
		return err
	}
	ix.gen++
	s := fromSorted(es, ix.gen, ix.root)
	s.meta = true
	ix.publish(s)
	ix.metaOnce.Do(func() { close(ix.meta) })
	return nil
}

// rescan lists the whole workspace again and publishes the result if it
// differs from the current snapshot.
func (ix *Index) rescan(ctx context.Context) error {
	ix.setStatus(func(s *Status) { s.Rescans++ })
	// Drop every watch first: a directory renamed while events were lost
	// would otherwise keep its old name in the watcher, which reuses a
	// watch for the same inode.
	ix.unwatchAll()
	l, ws, err := ix.newLister()
	if err != nil {
		return fmt.Errorf("index %s: %w", ix.root, err)
	}
	stop := ix.reportProgress(l, false)
	es, err := l.all(ctx, ix.opts.Workers)
	ix.finishWatch(ws)
	if err == nil {
		err = l.statAll(ctx, es, ix.opts.Workers)
	}
	stop()
	if err != nil {
		return fmt.Errorf("index %s: %w", ix.root, err)
	}
	cur := ix.cur.Load()
	if cur.meta && sameEntries(cur, 0, cur.Len(), es) {
		return nil
	}
	ix.gen++
	s := fromSorted(es, ix.gen, ix.root)
	s.meta = true
	ix.publish(s)
	return nil
}

// reportProgress calls the Progress option every ProgressInterval until
// the returned function is called, which makes the last report.
func (ix *Index) reportProgress(l *lister, initial bool) (stop func()) {
	if ix.opts.Progress == nil {
		return func() {}
	}
	start := time.Now()
	report := func(done bool) {
		ix.opts.Progress(Progress{Files: int(l.files.Load()), DirsPending: l.pending(),
			Stated: int(l.stated.Load()), Elapsed: time.Since(start), Initial: initial, Done: done})
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(ix.opts.ProgressInterval)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				report(false)
			}
		}
	})
	return func() {
		close(quit)
		wg.Wait()
		report(true)
	}
}

// takePending empties the pending set; all reports a burst or overflow.
func (ix *Index) takePending() (paths []string, all bool) {
	ix.pmu.Lock()
	defer ix.pmu.Unlock()
	if ix.overflow {
		ix.overflow = false
		clear(ix.pending)
		return nil, true
	}
	for p := range ix.pending {
		paths = append(paths, p)
	}
	clear(ix.pending)
	return paths, false
}

// update applies the changes gathered in the last debounce window.
func (ix *Index) update(ctx context.Context) {
	paths, all := ix.takePending()
	if ix.fellBack {
		return // the poll will see it
	}
	var err error
	if all {
		err = ix.rescan(ctx)
	} else {
		err = ix.updatePaths(ctx, paths)
	}
	if err != nil && ctx.Err() == nil {
		ix.setStatus(func(s *Status) { s.Err = err })
		ix.warn(err)
	}
}

// unwatchAll removes every watch.
func (ix *Index) unwatchAll() {
	if ref := ix.w.Load(); ref != nil {
		ref.w.RemoveWhere(func(string) bool { return true })
	}
}

// sameEntries reports whether the entries [lo, hi) of s are es.
func sameEntries(s *Snapshot, lo, hi int, es []entry) bool {
	if hi-lo != len(es) {
		return false
	}
	for k := range es {
		c, j := s.locate(lo + k)
		if c.entry(j) != es[k] {
			return false
		}
	}
	return true
}
