package filehistory

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ferry-dev/ferry/internal/contentstore"
	"github.com/ferry-dev/ferry/internal/tools"
)

// A Journal is one session's file history: every change the session's agent
// made to a file, in order, with the content before and after it, so that
// one change, one file or everything since a turn can be undone.
//
// Guarantees:
//
//   - Each change is recorded with its session, turn, tool call, path and
//     the SHA-256 of the content before and after (an empty hash: the file
//     did not exist). Contents are kept once each, by hash, in blobs/ (a
//     contentstore.Store, which checks the hash when a content is read).
//   - The content a write replaces is on disk (fsynced) before Track
//     returns, so ferry's tools write only once the old version is safe.
//   - The journal (journal.jsonl) is append-only and replayed by
//     OpenJournal, so the history survives a restart of the client.
//   - The contents kept stay under the quota: when a new change pushes them
//     over it, the oldest changes are dropped first (their contents deleted
//     once no kept change needs them). A dropped change can no longer be
//     undone, and a rewind that would need it is refused.
//   - While a journal is open, Prune (prune.go) never drops its folder,
//     and a second OpenJournal of it fails with ErrInUse.
//   - Restoring (Restore) checks every file first and changes nothing when
//     one of them is not what the agent left (ConflictError names it): not
//     its content, or reached through a symbolic link now (the file or a
//     folder on its path: a restore never writes or deletes through a link
//     it did not make), or another file (device and inode) than the one
//     the agent's last change, or the last restore, left. Each write then
//     goes through the vfs (confined, atomic, under the file's write lock,
//     checked again there, right before the rename or removal). Journals
//     of older versions lack the identity; their files are checked by
//     links and content. A file deleted and made again may get its inode
//     back: then the content and the links decide.
type Journal struct {
	dir, session, workspace string
	quota                   int64
	release                 func() // the folder's claim (prune.go)
	blobs                   *contentstore.Store

	mu      sync.Mutex
	f       *os.File
	seq     int64
	turn    string // the running turn
	turns   []turnMark
	entries []*Entry
	pending map[pendingKey]*Entry // tracked, not yet written
	dropped int64                 // entries with Seq <= dropped are gone
	sizes   map[string]int64      // blob hash → size, of the blobs kept

	beforeWrite func() // tests: runs between Restore's checks and its writes
}

// DefaultQuota is how many bytes of file contents one session's history
// keeps by default (64 MiB).
const DefaultQuota = 64 << 20

// Entry is one recorded change of one file.
type Entry struct {
	Seq     int64     `json:"seq"`
	Time    time.Time `json:"time"`
	Session string    `json:"session"`
	Turn    string    `json:"turn_id"`
	Call    string    `json:"tool_use_id"`
	Tool    string    `json:"tool,omitempty"`
	// Path is canonical and absolute; Rel is relative to the workspace
	// ("/"-separated), or Path when it lies outside.
	Path string `json:"path"`
	Rel  string `json:"rel"`
	// Before and After are content hashes, "" when the file did not exist.
	Before string `json:"before_hash"`
	After  string `json:"after_hash"`
	// File is the identity of the file the change left (nil: unknown, as
	// in journals of older versions): a restore refuses to write where
	// another file stands now.
	File *FileID `json:"file_id,omitempty"`
	// Undone is set once the change was undone (or rewound).
	Undone bool `json:"undone,omitempty"`
	// written is false while a tracked write has not happened yet.
	written bool
}

type turnMark struct {
	id  string
	seq int64 // entries after this seq belong to the turn or later ones
}

type pendingKey struct{ path, call string }

// journal lines
type line struct {
	Op    string  `json:"op"`
	Turn  string  `json:"turn_id,omitempty"`
	Seq   int64   `json:"seq,omitempty"`
	Seqs  []int64 `json:"seqs,omitempty"`
	After string  `json:"after_hash,omitempty"`
	File  *FileID `json:"file_id,omitempty"`
	Entry *Entry  `json:"entry,omitempty"`
	// Files: after an undo, the file each restored path now holds, as the
	// identity of the change it went back to.
	Files []seqFile `json:"files,omitempty"`
}

// seqFile is the file a change's path holds (a line's Files).
type seqFile struct {
	Seq  int64   `json:"seq"`
	File *FileID `json:"file_id,omitempty"`
}

// OpenJournal opens (creating) the journal of session in dir; workspace is
// the canonical workspace path (for relative names); quota bounds the
// contents kept (DefaultQuota when < 1).
func OpenJournal(dir, session, workspace string, quota int64) (*Journal, error) {
	if quota < 1 {
		quota = DefaultQuota
	}
	// The claim keeps Prune from dropping the folder while it is open
	// (and waits for a drop in progress).
	release, err := claimJournal(context.Background(), dir)
	if err != nil {
		return nil, err
	}
	j, err := openJournal(dir, session, workspace, quota)
	if err != nil {
		release()
		return nil, err
	}
	j.release = release
	return j, nil
}

func openJournal(dir, session, workspace string, quota int64) (*Journal, error) {
	blobs, err := contentstore.Open(filepath.Join(dir, "blobs"))
	if err != nil {
		return nil, fmt.Errorf("file history: %w", err)
	}
	j := &Journal{dir: dir, session: session, workspace: workspace, quota: quota, blobs: blobs,
		pending: map[pendingKey]*Entry{}, sizes: map[string]int64{}}
	if err := j.replay(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "journal.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600) //nolint:gosec // inside the client's state directory
	if err != nil {
		return nil, fmt.Errorf("file history: %w", err)
	}
	j.f = f
	return j, nil
}

func (j *Journal) replay() error {
	data, err := os.ReadFile(filepath.Join(j.dir, "journal.jsonl"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("file history: %w", err)
	}
	bySeq := map[int64]*Entry{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l line
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue // a line cut by a crash
		}
		switch l.Op {
		case "turn":
			j.turns = append(j.turns, turnMark{id: l.Turn, seq: l.Seq})
		case "change":
			if l.Entry != nil {
				e := l.Entry
				j.entries = append(j.entries, e)
				bySeq[e.Seq] = e
				j.seq = max(j.seq, e.Seq)
			}
		case "written":
			if e := bySeq[l.Seq]; e != nil {
				e.After, e.File, e.written = l.After, l.File, true
			}
		case "undo":
			for _, s := range l.Seqs {
				if e := bySeq[s]; e != nil {
					e.Undone = true
				}
			}
			for _, f := range l.Files {
				if e := bySeq[f.Seq]; e != nil {
					e.File = f.File
				}
			}
		case "drop":
			j.dropped = max(j.dropped, l.Seq)
		}
	}
	// A change whose write never completed (the write failed, or the
	// client died in between) is no change.
	kept := j.entries[:0]
	for _, e := range j.entries {
		if e.written && e.Seq > j.dropped {
			kept = append(kept, e)
		}
	}
	j.entries = kept
	for _, e := range j.entries {
		j.keepBlob(e.Before)
		j.keepBlob(e.After)
	}
	return nil
}

func (j *Journal) keepBlob(h string) {
	if h == "" {
		return
	}
	if _, ok := j.sizes[h]; ok {
		return
	}
	if n, err := j.blobs.Size(h); err == nil {
		j.sizes[h] = n
	}
}

// Close closes the journal file.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	j.release()
	return err
}

// BeginTurn marks the start of a turn: the changes recorded from now on
// belong to it, and a rewind to it undoes them and every later one.
func (j *Journal) BeginTurn(turnID string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.turn = turnID
	clear(j.pending)
	j.turns = append(j.turns, turnMark{id: turnID, seq: j.seq})
	return j.append(line{Op: "turn", Turn: turnID, Seq: j.seq})
}

// Track implements tools.FileHistory: it keeps old, the content of path a
// write of the running tool call (tools.ToolUseID) is about to replace.
// Written completes the record once the write happened.
func (j *Journal) Track(ctx context.Context, path string, old []byte, existed bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	before := ""
	if existed {
		var err error
		if before, err = j.putBlob(old); err != nil {
			return err
		}
	}
	e := j.newEntry(tools.ToolUseID(ctx), path, before)
	j.pending[pendingKey{path, e.Call}] = e
	return j.append(line{Op: "change", Entry: e})
}

// Written implements the tools' optional write hook: the write Track was
// told of happened, and data is what path holds now.
func (j *Journal) Written(ctx context.Context, path string, data []byte) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	k := pendingKey{path, tools.ToolUseID(ctx)}
	e := j.pending[k]
	if e == nil {
		return nil
	}
	delete(j.pending, k)
	return j.written(e, data, true)
}

// Record records a change made outside ferry's tools (Claude Code's own
// Write and Edit), after it happened: before is what the file held (nil
// with existed false: it did not exist), after what it holds now.
func (j *Journal) Record(_ context.Context, call, tool, path string, before []byte, existed bool, after []byte) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	h := ""
	if existed {
		var err error
		if h, err = j.putBlob(before); err != nil {
			return err
		}
	}
	e := j.newEntry(call, path, h)
	e.Tool = tool
	if err := j.append(line{Op: "change", Entry: e}); err != nil {
		return err
	}
	return j.written(e, after, true)
}

func (j *Journal) newEntry(call, path, before string) *Entry {
	j.seq++
	return &Entry{Seq: j.seq, Time: time.Now().UTC(), Session: j.session, Turn: j.turn, Call: call,
		Path: path, Rel: j.rel(path), Before: before}
}

func (j *Journal) written(e *Entry, data []byte, exists bool) error {
	after := ""
	var id *FileID
	if exists {
		var err error
		if after, err = j.putBlob(data); err != nil {
			return err
		}
		// Right after the write: the file the agent's change left.
		id = recordedID(e.Path)
	}
	e.After, e.File, e.written = after, id, true
	// Keep seq order: two calls' writes may complete out of order.
	i := len(j.entries)
	for i > 0 && j.entries[i-1].Seq > e.Seq {
		i--
	}
	j.entries = slices.Insert(j.entries, i, e)
	if err := j.append(line{Op: "written", Seq: e.Seq, After: after, File: id}); err != nil {
		return err
	}
	return j.enforceQuota()
}

func (j *Journal) rel(path string) string {
	if j.workspace == "" {
		return path
	}
	r, err := filepath.Rel(j.workspace, path)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return path
	}
	return filepath.ToSlash(r)
}

func (j *Journal) append(l line) error {
	if j.f == nil {
		return errors.New("file history: the journal is closed")
	}
	b, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("file history: %w", err)
	}
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("file history: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("file history: %w", err)
	}
	return nil
}

// HashOf is the content hash the journal records.
func HashOf(b []byte) string { return contentstore.HashOf(b) }

func (j *Journal) putBlob(b []byte) (string, error) {
	h := HashOf(b)
	if _, ok := j.sizes[h]; ok {
		return h, nil
	}
	if _, err := j.blobs.Put(b); err != nil {
		return "", fmt.Errorf("file history: %w", err)
	}
	j.sizes[h] = int64(len(b))
	return h, nil
}

// blob returns the content h (nil for ""), checked against its hash.
func (j *Journal) blob(h string) ([]byte, error) {
	if h == "" {
		return nil, nil
	}
	b, err := j.blobs.Read(h)
	if err != nil {
		return nil, fmt.Errorf("file history: %w", err)
	}
	return b, nil
}

func (j *Journal) used() int64 {
	var n int64
	for _, s := range j.sizes {
		n += s
	}
	return n
}

// enforceQuota drops the oldest changes while the kept contents exceed the
// quota, then deletes the contents no kept change needs.
func (j *Journal) enforceQuota() error {
	if j.used() <= j.quota {
		return nil
	}
	for len(j.entries) > 0 && j.used() > j.quota {
		e := j.entries[0]
		j.entries = j.entries[1:]
		j.dropped = e.Seq
		j.sizes = map[string]int64{}
		for _, k := range j.entries {
			j.keepBlob(k.Before)
			j.keepBlob(k.After)
		}
		for _, p := range j.pending {
			j.keepBlob(p.Before)
		}
	}
	if err := j.append(line{Op: "drop", Seq: j.dropped}); err != nil {
		return err
	}
	if _, err := j.blobs.Sweep(func(h string) bool { _, ok := j.sizes[h]; return ok }); err != nil {
		return fmt.Errorf("file history: %w", err)
	}
	return nil
}

// Used is how many bytes of contents the journal keeps now.
func (j *Journal) Used() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.used()
}

// Entries returns a copy of the kept changes, oldest first (undone ones
// included, marked).
func (j *Journal) Entries() []Entry {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]Entry, len(j.entries))
	for i, e := range j.entries {
		out[i] = *e
	}
	return out
}

// Dropped reports whether the quota has dropped changes of this session.
func (j *Journal) Dropped() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.dropped > 0
}
