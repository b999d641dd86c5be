package filehistory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/ferry-dev/ferry/internal/textdiff"
	"github.com/ferry-dev/ferry/internal/vfs"
	"github.com/ferry-dev/ferry/protocol"
)

// Selection says which changes Restore undoes; exactly one field is set.
type Selection struct {
	// Call undoes the change(s) one tool call made.
	Call string
	// Rel undoes every kept change of the session to one file (its path
	// relative to the workspace, as Entry.Rel).
	Rel string
	// Turn rewinds the files to before the turn: its changes and every
	// later one are undone.
	Turn string
}

// Restored is one file a restore put back.
type Restored struct {
	Rel  string
	Path string
	// Deleted: the agent had created the file, so restoring removed it.
	Deleted bool
}

// ConflictError is a refusal: the file is not what the agent's last change
// left, so restoring it would lose someone's work. Nothing was changed.
type ConflictError struct {
	Rel string
	// Later is set when the newer content is the agent's own later change
	// (undo that one first).
	Later bool
	// Link is set when the path, or a folder on it, is now a symbolic
	// link: ferry made none there, and restoring would write through it.
	Link bool
	// Replaced is set when another file (another device or inode) now
	// stands where the agent's change left one.
	Replaced bool
}

func (e *ConflictError) Error() string {
	switch {
	case e.Later:
		return fmt.Sprintf("%s was changed again by a later change of the agent; undo that one first", e.Rel)
	case e.Link:
		return fmt.Sprintf("%s is now a symbolic link, or a folder on its path is: ferry made none there and never writes through one", e.Rel)
	case e.Replaced:
		return fmt.Sprintf("%s was replaced by another file since the agent's edit (a file moved over it, as some editors save)", e.Rel)
	}
	return fmt.Sprintf("%s changed since the agent's edit", e.Rel)
}

// Errors of Restore besides *ConflictError.
var (
	// ErrNoChange: no kept change matches the selection.
	ErrNoChange = errors.New("file history: no recorded change matches")
	// ErrUndone: the matching changes were undone already.
	ErrUndone = errors.New("file history: already undone")
	// ErrDropped: a change the restore needs was dropped by the quota.
	ErrDropped = errors.New("file history: the change is no longer kept (the history's size quota dropped it)")
	// ErrUnknownTurn: the journal has no such turn.
	ErrUnknownTurn = errors.New("file history: no such turn")
)

// maxRestoreRead bounds the current content read to compare hashes.
const maxRestoreRead = 512 << 20

// plan is one file to put back.
type plan struct {
	rel, path      string
	target, expect string  // hashes: what to restore, what must be there now
	file           *FileID // the file that must be there now (nil: unknown)
}

// Restore undoes the selected changes on fsys (the session's workspace):
// every file is checked first and nothing is written when one of them
// changed since the agent's change (a *ConflictError naming it). Changed
// means another content, and also a path that is now reached through a
// symbolic link (the file or a folder on its path: ConflictError.Link)
// or that holds another file than the one the agent's change left
// (ConflictError.Replaced): a restore never writes or deletes through a
// link it did not make. The checks run again under the file's write lock
// right before each write. A turn with no file changes restores nothing
// and succeeds.
func (j *Journal) Restore(ctx context.Context, fsys *vfs.Local, sel Selection) ([]Restored, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	sel1, err := j.selectLocked(sel)
	if err != nil {
		return nil, err
	}
	plans, err := j.planLocked(sel1)
	if err != nil {
		return nil, err
	}
	for _, p := range plans {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := checkSame(p.rel, p.path, p.file); err != nil {
			return nil, err
		}
		cur, err := currentHash(fsys, p.path)
		if err != nil {
			return nil, err
		}
		if cur != p.expect {
			return nil, &ConflictError{Rel: p.rel}
		}
	}
	if j.beforeWrite != nil {
		j.beforeWrite()
	}
	var out []Restored
	left := make([]*FileID, len(plans)) // the files the restore left
	for i, p := range plans {
		id, err := j.put(fsys, p.path, p.target, p.expect, p.file)
		if err != nil {
			// Put back what was already restored: all or nothing.
			for k, q := range plans[:i] {
				_, _ = j.put(fsys, q.path, q.expect, q.target, left[k])
			}
			var ce *ConflictError
			if errors.As(err, &ce) {
				ce.Rel = p.rel
			}
			return nil, err
		}
		left[i] = id
		out = append(out, Restored{Rel: p.rel, Path: p.path, Deleted: p.target == ""})
	}
	seqs := make([]int64, len(sel1))
	for i, e := range sel1 {
		e.Undone = true
		seqs[i] = e.Seq
	}
	// The file a restore wrote is the one the change before it (now the
	// file's last live one) left, as far as a later restore is concerned.
	var files []seqFile
	for i, p := range plans {
		if e := j.lastLive(p.path); e != nil {
			e.File = left[i]
			files = append(files, seqFile{Seq: e.Seq, File: left[i]})
		}
	}
	if len(seqs) > 0 {
		if err := j.append(line{Op: "undo", Seqs: seqs, Files: files}); err != nil {
			return out, err
		}
	}
	return out, nil
}

// lastLive is the last kept change to path not undone, nil when none.
func (j *Journal) lastLive(path string) *Entry {
	for i := len(j.entries) - 1; i >= 0; i-- {
		if e := j.entries[i]; e.Path == path && !e.Undone {
			return e
		}
	}
	return nil
}

// selectLocked returns the live entries sel names.
func (j *Journal) selectLocked(sel Selection) ([]*Entry, error) {
	var out []*Entry
	matched := false
	switch {
	case sel.Turn != "":
		i := slices.IndexFunc(j.turns, func(t turnMark) bool { return t.id == sel.Turn })
		if i < 0 {
			return nil, ErrUnknownTurn
		}
		if j.dropped > j.turns[i].seq {
			return nil, ErrDropped
		}
		for _, e := range j.entries {
			if e.Seq > j.turns[i].seq && !e.Undone {
				out = append(out, e)
			}
		}
		return out, nil
	case sel.Call != "":
		for _, e := range j.entries {
			if e.Call == sel.Call {
				matched = true
				if !e.Undone {
					out = append(out, e)
				}
			}
		}
	case sel.Rel != "":
		for _, e := range j.entries {
			if e.Rel == sel.Rel {
				matched = true
				if !e.Undone {
					out = append(out, e)
				}
			}
		}
	}
	switch {
	case len(out) > 0:
		return out, nil
	case matched:
		return nil, ErrUndone
	case j.dropped > 0:
		return nil, ErrDropped
	}
	return nil, ErrNoChange
}

// planLocked groups the selected entries by file: each goes back to the
// content before its first selected change, and must now hold what its
// last kept change left.
func (j *Journal) planLocked(sel []*Entry) ([]plan, error) {
	var plans []plan
	idx := map[string]int{}
	for _, e := range sel {
		if _, ok := idx[e.Path]; ok {
			continue
		}
		idx[e.Path] = len(plans)
		plans = append(plans, plan{rel: e.Rel, path: e.Path, target: e.Before})
	}
	for i := range plans {
		last := j.lastLive(plans[i].path)
		if !slices.Contains(sel, last) {
			return nil, &ConflictError{Rel: plans[i].rel, Later: true}
		}
		plans[i].expect, plans[i].file = last.After, last.File
	}
	return plans, nil
}

// put makes path hold the blob target ("": not exist), under the vfs's
// write lock and only if it still holds expect, in the file id (nil: any
// file), reached through no symbolic link. It returns the identity of the
// file it wrote (nil when it removed the file).
func (j *Journal) put(fsys *vfs.Local, path, target, expect string, id *FileID) (*FileID, error) {
	rel := j.rel(path)
	check := func(cur vfs.Info, ok bool) error {
		// The vfs followed any link to reach cur; the recorded path is
		// canonical, so a link on it shows as another path.
		if ok && cur.Path != path {
			return &ConflictError{Rel: rel, Link: true}
		}
		if ok && !id.same(cur.Stamp) {
			return &ConflictError{Rel: rel, Replaced: true}
		}
		if err := checkSame(rel, path, id); err != nil {
			return err
		}
		h := ""
		if ok {
			var err error
			if h, err = currentHash(fsys, cur.Path); err != nil {
				return err
			}
		}
		if h != expect {
			return &ConflictError{Rel: rel}
		}
		return nil
	}
	if target == "" {
		return nil, fsys.Remove(path, check)
	}
	data, err := j.blob(target)
	if err != nil {
		return nil, err
	}
	info, err := fsys.WriteFile(path, data, vfs.WriteOptions{Check: check})
	if err != nil {
		return nil, fmt.Errorf("file history: restore %s: %w", rel, err)
	}
	return idOf(info.Stamp), nil
}

// currentHash is the hash of what path holds now, "" when it does not
// exist.
func currentHash(fsys vfs.FS, path string) (string, error) {
	f, err := fsys.Open(path)
	if errors.Is(err, vfs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("file history: %w", err)
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, maxRestoreRead))
	if err != nil {
		return "", fmt.Errorf("file history: %w", err)
	}
	return HashOf(b), nil
}

// FileChange is one file the session's agent changed, with its kept
// changes combined.
type FileChange struct {
	Rel, Path string
	// Calls are the tool calls that changed it, oldest first; Turns their
	// turns.
	Calls, Turns []string
	// Created: the file did not exist before the first kept change.
	Created bool
	// Modified: it changed since the agent's last change, or is now
	// reached through a symbolic link or another file (an undo would be
	// refused).
	Modified bool
	// Diff is the combined change: before the first kept change → after
	// the last.
	Diff *protocol.FileDiff
}

// Changes lists every file with changes that are kept and not undone, in
// the order of their first change.
func (j *Journal) Changes(fsys vfs.FS) ([]FileChange, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []FileChange
	idx := map[string]int{}
	first := map[string]string{}
	last := map[string]*Entry{}
	for _, e := range j.entries {
		if e.Undone {
			continue
		}
		i, ok := idx[e.Path]
		if !ok {
			i = len(out)
			idx[e.Path] = i
			out = append(out, FileChange{Rel: e.Rel, Path: e.Path, Created: e.Before == ""})
			first[e.Path] = e.Before
		}
		out[i].Calls = append(out[i].Calls, e.Call)
		if !slices.Contains(out[i].Turns, e.Turn) {
			out[i].Turns = append(out[i].Turns, e.Turn)
		}
		last[e.Path] = e
	}
	for i := range out {
		fc := &out[i]
		before, err := j.blob(first[fc.Path])
		if err != nil {
			return nil, err
		}
		after, err := j.blob(last[fc.Path].After)
		if err != nil {
			return nil, err
		}
		fc.Diff = textdiff.Diff(fc.Rel, string(before), string(after), 3)
		fc.Diff.IsNewFile = fc.Created
		if err := checkSame(fc.Rel, fc.Path, last[fc.Path].File); err != nil {
			var ce *ConflictError
			if !errors.As(err, &ce) {
				return nil, err
			}
			fc.Modified = true // a link or another file: an undo is refused
			continue
		}
		cur, err := currentHash(fsys, fc.Path)
		if err != nil {
			return nil, err
		}
		fc.Modified = cur != last[fc.Path].After
	}
	return out, nil
}
