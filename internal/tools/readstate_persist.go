package tools

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ferry-dev/ferry/internal/vfs"
)

// savedRead is one file's coverage as Export writes it.
type savedRead struct {
	Path       string    `json:"path"`
	Size       int64     `json:"size"`
	ModTime    time.Time `json:"mtime"`
	ChangeTime time.Time `json:"ctime"`
	Inode      uint64    `json:"inode,omitempty"`
	Device     uint64    `json:"device,omitempty"`
	Hash       string    `json:"hash,omitempty"` // hex; empty when unknown
	ReadAt     time.Time `json:"read_at"`
	Whole      bool      `json:"whole,omitempty"`
	Seen       [][2]int  `json:"seen,omitempty"`
	Cut        []int     `json:"cut,omitempty"`
	Total      int       `json:"total"`
}

// savedState is the document Export returns.
type savedState struct {
	Files []savedRead `json:"files"`
}

// maxSavedReads bounds what Export keeps (the most files a session is
// likely to have read; past it a file is simply read again).
const maxSavedReads = 10000

// Export returns the read-before-write record as a JSON document, for the
// agent to keep with its transcript. Read's dedup state is not part of it.
func (s *ReadState) Export() (json.RawMessage, error) {
	s.mu.Lock()
	doc := savedState{Files: make([]savedRead, 0, min(len(s.covers), maxSavedReads))}
	for p, c := range s.covers {
		if len(doc.Files) == maxSavedReads {
			break
		}
		r := savedRead{Path: p, Size: c.stamp.Size, ModTime: c.stamp.ModTime, ChangeTime: c.stamp.ChangeTime,
			Inode: c.stamp.Inode, Device: c.stamp.Device, ReadAt: c.readAt, Whole: c.whole, Cut: c.cut, Total: c.total}
		if c.hash != (Hash{}) {
			r.Hash = hex.EncodeToString(c.hash[:])
		}
		for _, sp := range c.seen {
			r.Seen = append(r.Seen, [2]int{sp.first, sp.last})
		}
		doc.Files = append(doc.Files, r)
	}
	s.mu.Unlock()
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("tools: export read state: %w", err)
	}
	return b, nil
}

// Import restores what Export wrote, keeping a file's record only while it
// is still current: the file exists with the content it had when read (the
// same hash when one was kept, else the same size and timestamps that were
// not racily clean). Anything else is dropped, never trusted: the agent
// must read that file again before changing it. It returns how many
// records were kept; a document that does not decode is an error and
// changes nothing.
func (s *ReadState) Import(fsys vfs.FS, doc json.RawMessage) (int, error) {
	var st savedState
	if err := json.Unmarshal(doc, &st); err != nil {
		return 0, fmt.Errorf("tools: import read state: %w", err)
	}
	kept := map[string]*coverage{}
	for _, r := range st.Files {
		if c, ok := restore(fsys, r); ok {
			kept[r.Path] = c
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, c := range kept {
		s.covers[p] = c
	}
	// The restored reads are not dedup entries: a repeated Read returns
	// the content again rather than a stub.
	s.generation++
	return len(kept), nil
}

// restore re-validates one saved record against the file.
func restore(fsys vfs.FS, r savedRead) (*coverage, bool) {
	if len(r.Seen) > 100000 || len(r.Cut) > 100000 {
		return nil, false
	}
	info, err := fsys.Stat(r.Path)
	if err != nil || info.IsDir || info.Path != r.Path {
		return nil, false
	}
	saved := vfs.Stamp{Size: r.Size, ModTime: r.ModTime, ChangeTime: r.ChangeTime, Inode: r.Inode, Device: r.Device}
	var h Hash
	if r.Hash != "" {
		b, err := hex.DecodeString(r.Hash)
		if err != nil || len(b) != len(h) {
			return nil, false
		}
		copy(h[:], b)
		cur, err := hashFile(fsys, r.Path)
		if err != nil || cur != h {
			return nil, false
		}
	} else if !sameStamp(saved, info.Stamp) || Racy(saved, r.ReadAt) {
		return nil, false
	}
	c := &coverage{stamp: info.Stamp, hash: h, readAt: r.ReadAt, whole: r.Whole, cut: r.Cut, total: r.Total}
	if sameStamp(saved, info.Stamp) {
		// The stamp is the one read; keep its racy judgement as it was.
		c.stamp = info.Stamp
	} else {
		// Same content under a moved stamp: only the hash may vouch for
		// it from now on (a read time before the stamp makes it racy).
		c.readAt = time.Time{}
	}
	for _, sp := range r.Seen {
		if sp[0] < 1 || sp[1] < sp[0] {
			return nil, false
		}
		c.seen = append(c.seen, lineSpan{sp[0], sp[1]})
	}
	c.settle()
	return c, true
}

// sameStamp compares stamps by instant (a decoded time has another
// location than a fresh one).
func sameStamp(a, b vfs.Stamp) bool {
	return a.Size == b.Size && a.Inode == b.Inode && a.Device == b.Device &&
		a.ModTime.Equal(b.ModTime) && a.ChangeTime.Equal(b.ChangeTime)
}
