package filehistory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// This file bounds the file histories of all sessions together: the
// journals live in one folder (one sub-folder per session, as the client
// lays them out), and Prune drops whole journals that were not written for
// too long, then the least recently written ones until the total fits.
//
// Guarantees of Prune:
//
//   - A journal that is open (OpenJournal without Close, in this process)
//     is never dropped, and a journal is never opened while it is being
//     dropped: both take the journal folder's claim (claimDir), and
//     OpenJournal waits for a drop in progress to finish, then starts an
//     empty journal. The client's state-directory lock keeps other
//     processes out, so an in-process claim is enough.
//   - A dropped journal is first renamed away (to a ".trash-" name) and
//     then deleted, so a crash half-way leaves no half journal under the
//     session's name; the next Prune deletes what is left.
//   - Nothing outside the folder is touched: all access goes through an
//     os.Root, entries that are not folders (a symlink, say) are skipped,
//     and the walk never follows a symlink.
//   - A journal folder that cannot be read is skipped and reported
//     (PruneResult.Skipped), never a reason to fail the whole prune.

// PruneOptions say what Prune keeps.
type PruneOptions struct {
	// MaxAge drops every journal not written for longer (0: no age bound).
	MaxAge time.Duration
	// MaxTotal bounds the bytes of all journals together (journal and
	// contents); the least recently written are dropped first (< 1: no
	// bound).
	MaxTotal int64
	// Now is the time ages are measured from (zero: time.Now()).
	Now time.Time
}

// PruneResult says what Prune did.
type PruneResult struct {
	// Dropped are the journal folders dropped, with why.
	Dropped []PrunedJournal
	// Skipped are the folder entries left alone because they could not be
	// measured or are not journal folders, with why.
	Skipped []SkippedEntry
	// Total is the bytes of the journals kept.
	Total int64
	// Open is how many journals were open (kept whatever their age).
	Open int
	// OverCap is set when Total is still over MaxTotal because the
	// journals left are open (or could not be measured).
	OverCap bool
}

// PrunedJournal is one dropped journal.
type PrunedJournal struct {
	Name    string    // the folder's name (the session's, or its hash)
	Bytes   int64     // what it held
	Written time.Time // when it was last written
	Reason  string    // "age" or "total"
}

// SkippedEntry is one folder entry Prune left alone.
type SkippedEntry struct {
	Name string
	Err  error
}

// Errors of Prune and OpenJournal.
var (
	// ErrInUse: the journal folder is open already in this process.
	ErrInUse = errors.New("file history: the journal is open already")
	// ErrNotJournal wraps why a folder entry is not a journal Prune can
	// measure (a symlink, a file, an unreadable folder).
	ErrNotJournal = errors.New("file history: not a journal folder")
)

const trashPrefix = ".trash-"

// claims holds the journal folders in use, by absolute path: by an open
// Journal, or by a drop in progress (done is closed when it ends).
var claims = struct {
	mu   sync.Mutex
	held map[string]*claim
}{held: map[string]*claim{}}

type claim struct {
	journal bool
	done    chan struct{}
}

func claimKey(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return filepath.Clean(dir)
}

// claimJournal claims dir for an open journal, waiting for a drop in
// progress; ErrInUse when a journal holds it.
func claimJournal(ctx context.Context, dir string) (release func(), err error) {
	key := claimKey(dir)
	for {
		claims.mu.Lock()
		c := claims.held[key]
		if c == nil {
			c = &claim{journal: true, done: make(chan struct{})}
			claims.held[key] = c
			claims.mu.Unlock()
			return releaser(key, c), nil
		}
		claims.mu.Unlock()
		if c.journal {
			return nil, fmt.Errorf("%w: %s", ErrInUse, dir)
		}
		select {
		case <-c.done:
		case <-ctx.Done():
			return nil, fmt.Errorf("file history: %w", ctx.Err())
		}
	}
}

// claimDrop claims dir for dropping it; false when it is held.
func claimDrop(dir string) (release func(), ok bool) {
	key := claimKey(dir)
	claims.mu.Lock()
	defer claims.mu.Unlock()
	if claims.held[key] != nil {
		return nil, false
	}
	c := &claim{done: make(chan struct{})}
	claims.held[key] = c
	return releaser(key, c), true
}

func releaser(key string, c *claim) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			claims.mu.Lock()
			delete(claims.held, key)
			claims.mu.Unlock()
			close(c.done)
		})
	}
}

// journalInfo is one measured journal folder.
type journalInfo struct {
	name    string
	bytes   int64
	written time.Time
	open    bool
}

// Prune bounds the journals under dir (one folder per session) as opts
// says; see the file comment for what it guarantees. An error means dir
// itself could not be read (a missing dir is no error: nothing to prune).
func Prune(ctx context.Context, dir string, opts PruneOptions) (PruneResult, error) {
	var res PruneResult
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("file history: prune %s: %w", dir, err)
	}
	defer func() { _ = root.Close() }()
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return res, fmt.Errorf("file history: prune %s: %w", dir, err)
	}
	var js []journalInfo
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("file history: prune: %w", err)
		}
		name := e.Name()
		if strings.HasPrefix(name, trashPrefix) {
			// A drop cut short by a crash: finish it.
			if err := root.RemoveAll(name); err != nil {
				res.Skipped = append(res.Skipped, SkippedEntry{Name: name, Err: err})
			}
			continue
		}
		if !e.IsDir() { // a symlink or a file: not ours to follow or drop
			res.Skipped = append(res.Skipped, SkippedEntry{Name: name, Err: fmt.Errorf("%w: %s is a %s", ErrNotJournal, name, kindOf(e.Type()))})
			continue
		}
		ji, err := measure(root, name)
		if err != nil {
			res.Skipped = append(res.Skipped, SkippedEntry{Name: name, Err: err})
			continue
		}
		ji.open = held(filepath.Join(dir, name))
		js = append(js, ji)
	}
	// Oldest first: the age bound and then the total drop from the front.
	slices.SortFunc(js, func(a, b journalInfo) int { return a.written.Compare(b.written) })
	var total int64
	for _, j := range js {
		total += j.bytes
	}
	kept := js[:0]
	for _, j := range js {
		if j.open {
			res.Open++
		}
		if opts.MaxAge > 0 && !j.open && opts.Now.Sub(j.written) > opts.MaxAge {
			if res.drop(root, dir, j, "age") {
				total -= j.bytes
				continue
			}
		}
		kept = append(kept, j)
	}
	if opts.MaxTotal > 0 {
		for _, j := range kept {
			if total <= opts.MaxTotal {
				break
			}
			if err := ctx.Err(); err != nil {
				return res, fmt.Errorf("file history: prune: %w", err)
			}
			if j.open {
				continue
			}
			if res.drop(root, dir, j, "total") {
				total -= j.bytes
			}
		}
		res.OverCap = total > opts.MaxTotal
	}
	res.Total = total
	return res, nil
}

// drop drops j and records it; false when it was kept.
func (res *PruneResult) drop(root *os.Root, dir string, j journalInfo, reason string) bool {
	dropped, err := drop(root, dir, j)
	if err != nil {
		res.Skipped = append(res.Skipped, SkippedEntry{Name: j.name, Err: err})
	}
	if dropped {
		res.Dropped = append(res.Dropped, PrunedJournal{Name: j.name, Bytes: j.bytes, Written: j.written, Reason: reason})
	}
	return dropped
}

func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink (not followed)"
	case m.IsRegular():
		return "file"
	}
	return "special file"
}

// held reports whether a journal or a drop holds dir right now.
func held(dir string) bool {
	claims.mu.Lock()
	defer claims.mu.Unlock()
	return claims.held[claimKey(dir)] != nil
}

// measure returns the bytes of a journal folder and when its journal was
// last written (the folder's own time when it has none yet). Symlinks in
// it are neither followed nor counted.
func measure(root *os.Root, name string) (journalInfo, error) {
	ji := journalInfo{name: name}
	fi, err := root.Lstat(filepath.Join(name, "journal.jsonl"))
	switch {
	case err == nil && fi.Mode().IsRegular():
		ji.written = fi.ModTime()
	case err == nil:
		return ji, fmt.Errorf("%w: %s: journal.jsonl is not a regular file", ErrNotJournal, name)
	case errors.Is(err, fs.ErrNotExist):
		di, derr := root.Lstat(name)
		if derr != nil {
			return ji, fmt.Errorf("%w: %s: %w", ErrNotJournal, name, derr)
		}
		ji.written = di.ModTime()
	default:
		return ji, fmt.Errorf("%w: %s: %w", ErrNotJournal, name, err)
	}
	err = fs.WalkDir(root.FS(), name, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			ji.bytes += info.Size()
		}
		return nil
	})
	if err != nil {
		return ji, fmt.Errorf("%w: %s: %w", ErrNotJournal, name, err)
	}
	return ji, nil
}

// drop removes one journal folder unless it is open or was written since
// it was measured (false, nil then).
func drop(root *os.Root, dir string, j journalInfo) (bool, error) {
	release, ok := claimDrop(filepath.Join(dir, j.name))
	if !ok {
		return false, nil
	}
	now, err := measure(root, j.name)
	if err != nil {
		release()
		return false, err
	}
	if !now.written.Equal(j.written) {
		release()
		return false, nil // written meanwhile: not old after all
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	trash := trashPrefix + j.name + "-" + hex.EncodeToString(rnd[:])
	err = root.Rename(j.name, trash)
	// The session's name is free again: an OpenJournal waiting for it
	// starts an empty journal while the old one is deleted.
	release()
	if err != nil {
		return false, fmt.Errorf("file history: drop %s: %w", j.name, err)
	}
	if err := root.RemoveAll(trash); err != nil {
		return true, fmt.Errorf("file history: drop %s (the next prune retries): %w", j.name, err)
	}
	return true, nil
}
