package tools

import (
	"crypto/sha256"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/ferry-dev/ferry/internal/vfs"
)

// Hash is the content hash the read-before-write contract compares.
type Hash = [sha256.Size]byte

// HashBytes hashes content.
func HashBytes(b []byte) Hash { return sha256.Sum256(b) }

// hashFile hashes a file's current content, streaming.
func hashFile(fsys vfs.FS, path string) (Hash, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return Hash{}, fmt.Errorf("hash %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return Hash{}, fmt.Errorf("hash %s: %w", path, err)
	}
	var sum Hash
	h.Sum(sum[:0])
	return sum, nil
}

// ReadEntry is what a Read recorded of one file.
type ReadEntry struct {
	// Path is the canonical path (the state's key).
	Path  string
	Stamp vfs.Stamp
	Hash  Hash
	// Partial is set when the Read saw only part of the file (offset, limit,
	// PDF pages); such a read does not permit a write.
	Partial bool
	// View names what was returned ("lines 1-2000", "pages 3-5"), so a
	// repeated identical Read can be answered with a stub.
	View string
	// ReadAt is when the Read saw the file (Record fills it when zero).
	ReadAt time.Time
	// generation is the state's dedup generation when recorded.
	generation uint64
}

// racyWindow: a file changed this shortly before it was observed may change
// again within the same tick of the kernel's coarse timestamps, leaving the
// stamp unchanged. Such a "racily clean" stamp (git's term) is not trusted:
// the content hash decides.
const racyWindow = time.Second

// Racy reports whether stamp s, observed at time at, cannot vouch for the
// content on its own.
func Racy(s vfs.Stamp, at time.Time) bool {
	return at.Sub(s.ChangeTime) < racyWindow || at.Sub(s.ModTime) < racyWindow
}

// ReadState is one session's memory of what it read: the read-before-write
// contract and Read's dedup. Safe for concurrent use by parallel tool calls.
type ReadState struct {
	mu         sync.Mutex
	entries    map[string]ReadEntry
	generation uint64
}

// NewReadState returns an empty state.
func NewReadState() *ReadState { return &ReadState{entries: map[string]ReadEntry{}} }

// Record stores what a Read (or a successful write, as a full view) saw.
func (s *ReadState) Record(e ReadEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.generation = s.generation
	if e.ReadAt.IsZero() {
		e.ReadAt = time.Now()
	}
	s.entries[e.Path] = e
}

// Lookup returns the entry of a canonical path.
func (s *ReadState) Lookup(path string) (ReadEntry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[path]
	return e, ok
}

// Dedupable reports whether a Read of the same view of an unchanged file
// may be answered with a short stub: only while the earlier content is still
// in the agent's context, i.e. no compaction happened since. When the stamp
// was racily clean at the earlier Read, hash (the file's current content
// hash) decides; a partial view, which keeps no hash, is then not deduped.
func (s *ReadState) Dedupable(e ReadEntry, hash func() (Hash, error)) bool {
	s.mu.Lock()
	cur, ok := s.entries[e.Path]
	ok = ok && cur.generation == s.generation && cur.View == e.View && cur.Stamp == e.Stamp
	s.mu.Unlock()
	if !ok || !Racy(cur.Stamp, cur.ReadAt) {
		return ok
	}
	if cur.Hash == (Hash{}) || hash == nil {
		return false
	}
	h, err := hash()
	return err == nil && h == cur.Hash
}

// ResetDedup is called by the agent runtime when compaction removes file
// contents from the context: later Reads return the content again. The
// entries stay, so writes remain allowed on files read before.
func (s *ReadState) ResetDedup() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.generation++
}

// Forget drops everything (the /clear command).
func (s *ReadState) Forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = map[string]ReadEntry{}
	s.generation++
}

// CheckWrite enforces the contract for writing the existing file whose
// current state is cur. hash computes the file's current content hash; it
// is called only when the stamp moved (or was racily clean when read), so an
// untouched file costs a stat.
func (s *ReadState) CheckWrite(rel string, cur vfs.Info, hash func() (Hash, error)) error {
	e, ok := s.Lookup(cur.Path)
	if !ok {
		return Errorf(CodeNotRead, "%s has not been read in this session. Read the whole file first, then write it.", rel)
	}
	if e.Partial {
		return Errorf(CodeNotRead, "%s was only read in part (%s). Read the whole file (no offset or limit) before writing it.", rel, e.View)
	}
	if e.Stamp == cur.Stamp && !Racy(e.Stamp, e.ReadAt) {
		return nil
	}
	h, err := hash()
	if err != nil {
		return err
	}
	if h != e.Hash {
		return Errorf(CodeStale, "%s was modified since it was read (by the user or another process). Read it again and redo the change on its current content.", rel)
	}
	return nil
}
