// Package filehistory keeps the content a file tool is about to overwrite, so
// a person can get back what an agent replaced. Two kinds of store:
//
//   - Journal (journal.go, restore.go): one session's changes, in order,
//     with their turn and tool call and the content before and after each,
//     under a size quota; Restore undoes one change, every change to a
//     file, or everything since a turn, all or nothing. The client keeps
//     one per session (undo and rewind in the UI). It implements
//     tools.WriteHistory. Prune (prune.go) bounds all sessions' journals
//     together by age and total size, dropping whole journals, never an
//     open one.
//   - Store (this file): the newest versions of each file, by path, for
//     ferry mcp. It implements tools.FileHistory.
//
// Where they live (dirs.go): a state folder's history/<session>/ holds a
// session's journal, in the client's state folder for UI sessions and in
// ferry's own ($XDG_STATE_HOME/ferry) for ferry run; SessionDir refuses a
// session id that is not a plain name.
//
// Guarantees of Store: a version is on disk (written to a temporary file, fsynced and
// renamed) before Track returns, so the tool's write happens only after its
// predecessor is safe; each file keeps its newest MaxVersions versions; the
// store never follows a symlink out of its own folder; a failure to record is
// returned, and the tools then refuse the write rather than lose the old
// content.
package filehistory

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MaxVersions is how many versions of one file are kept by default.
const MaxVersions = 50

// Store is a history folder.
type Store struct {
	dir string
	max int
	mu  sync.Mutex
}

// Version is one recorded predecessor of a file.
type Version struct {
	// Path is the file's canonical path.
	Path string `json:"path"`
	// Time is when the version was replaced.
	Time time.Time `json:"time"`
	// Existed is false when the write created the file (there was no
	// content to keep); Content is then empty.
	Existed bool `json:"existed"`
	// Size of the content.
	Size int64 `json:"size"`
	// File holds the content.
	File string `json:"-"`
}

// Open opens (creating) the history folder dir, keeping max versions per
// file (MaxVersions when max < 1).
func Open(dir string, max int) (*Store, error) {
	if max < 1 {
		max = MaxVersions
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("file history folder: %w", err)
	}
	return &Store{dir: dir, max: max}, nil
}

// DefaultDir is where ferry keeps file history: $XDG_STATE_HOME/ferry/history,
// else ~/.local/state/ferry/history.
func DefaultDir() (string, error) {
	d, err := DefaultStateDir(os.Getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "history"), nil
}

func (s *Store) fileDir(path string) string {
	sum := sha256.Sum256([]byte(path))
	return filepath.Join(s.dir, hex.EncodeToString(sum[:12]))
}

// Track records old as the version of path being replaced now.
func (s *Store) Track(ctx context.Context, path string, old []byte, existed bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	dir := s.fileDir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("file history: %w", err)
	}
	meta, err := json.Marshal(struct {
		Path string `json:"path"`
	}{path})
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, "path.json"), meta); err != nil {
		return err
	}
	kind := "v"
	if !existed {
		kind = "n" // the write created the file
	}
	name := fmt.Sprintf("%019d-%s", time.Now().UnixNano(), kind)
	if err := writeAtomic(filepath.Join(dir, name), old); err != nil {
		return err
	}
	return s.prune(dir)
}

// Versions lists the recorded versions of path, newest first.
func (s *Store) Versions(path string) ([]Version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.versions(s.fileDir(path), path)
}

func (s *Store) versions(dir, path string) ([]Version, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("file history: %w", err)
	}
	var out []Version
	for _, e := range entries {
		stamp, kind, ok := strings.Cut(e.Name(), "-")
		if !ok || !e.Type().IsRegular() || (kind != "v" && kind != "n") {
			continue
		}
		ns, err := strconv.ParseInt(stamp, 10, 64)
		if err != nil {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, Version{Path: path, Time: time.Unix(0, ns), Existed: kind == "v", Size: info.Size(), File: filepath.Join(dir, e.Name())})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Time.After(out[j].Time) })
	return out, nil
}

// Content reads a version's bytes.
func (v Version) Content() ([]byte, error) {
	if !v.Existed {
		return nil, nil
	}
	b, err := os.ReadFile(v.File)
	if err != nil {
		return nil, fmt.Errorf("file history: %w", err)
	}
	return b, nil
}

func (s *Store) prune(dir string) error {
	vs, err := s.versions(dir, "")
	if err != nil {
		return err
	}
	for _, v := range vs[min(len(vs), s.max):] {
		if err := os.Remove(v.File); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("file history: prune: %w", err)
		}
	}
	return nil
}

func writeAtomic(name string, data []byte) error {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := name + ".tmp-" + hex.EncodeToString(rnd[:])
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600) //nolint:gosec // a name inside the store, built from a hash and a timestamp
	if err != nil {
		return fmt.Errorf("file history: %w", err)
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("file history: %w", err)
	}
	if err := os.Rename(tmp, name); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("file history: %w", err)
	}
	return nil
}
