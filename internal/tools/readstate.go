package tools

import (
	"crypto/sha256"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
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
	// Hash is the whole file's content hash; zero when the Read did not
	// compute it (a window of a large file).
	Hash Hash
	// Partial is set when the Read saw only part of the file (offset, limit,
	// a cut line, PDF pages, notebook cells). Edit accepts any current read;
	// Write needs the whole file seen (see Lines).
	Partial bool
	// Lines is the line window a partial text Read showed, so that windows
	// of the same version together can cover the file for Write; nil for
	// other views, which count only in full.
	Lines *LineWindow
	// View names what was returned ("lines 1-2000", "pages 3-5"), so a
	// repeated identical Read can be answered with a stub.
	View string
	// ReadAt is when the Read saw the file (Record fills it when zero).
	ReadAt time.Time
	// generation is the state's dedup generation when recorded.
	generation uint64
}

// LineWindow is what a text Read showed of a file.
type LineWindow struct {
	// First and Last are the lines shown (1-based, inclusive).
	First, Last int
	// Cut lists the lines of the window shown cut (longer than Read shows):
	// they were not seen whole, so they do not count as seen.
	Cut []int
	// Total is the file's line count, -1 when the Read did not learn it.
	Total int
}

// lineSpan is a range of lines, inclusive.
type lineSpan struct{ first, last int }

// coverage is what the agent has seen of one version of a file, over all
// its Reads of that version: the whole file, or a set of line spans.
type coverage struct {
	stamp  vfs.Stamp
	hash   Hash // zero when unknown
	readAt time.Time
	// whole: every line seen. A partial view that is no line window
	// (pages, cells, an Edit after a partial read) adds no spans: it
	// permits Edit, never Write.
	whole bool
	seen  []lineSpan // sorted, disjoint, not adjacent
	cut   []int      // lines seen only cut, sorted
	total int        // -1 when unknown
}

// coverageOf is the coverage a single Read gives.
func coverageOf(e ReadEntry) coverage {
	c := coverage{stamp: e.Stamp, hash: e.Hash, readAt: e.ReadAt, whole: !e.Partial, total: -1}
	if e.Partial && e.Lines != nil {
		w := e.Lines
		c.total = w.Total
		next := w.First
		for _, l := range append(slices.Sorted(slices.Values(w.Cut)), w.Last+1) {
			if l > next {
				c.seen = append(c.seen, lineSpan{next, l - 1})
			}
			next = l + 1
		}
		c.cut = slices.Sorted(slices.Values(w.Cut))
		c.settle()
	}
	return c
}

// sameVersion reports whether n was read from the same content as c: equal
// hashes when both are known, else the same stamp when c's stamp was not
// racily clean (a later change would have moved it).
func (c *coverage) sameVersion(n coverage) bool {
	if c.hash != (Hash{}) && n.hash != (Hash{}) {
		return c.hash == n.hash
	}
	return c.stamp == n.stamp && !Racy(c.stamp, c.readAt)
}

// merge adds n, a read of the same version.
func (c *coverage) merge(n coverage) {
	if c.hash == (Hash{}) {
		c.hash = n.hash
	}
	c.stamp, c.readAt = n.stamp, n.readAt
	c.whole = c.whole || n.whole
	if n.total >= 0 {
		c.total = n.total
	}
	c.seen = append(c.seen, n.seen...)
	c.cut = append(c.cut, n.cut...)
	c.settle()
}

// settle normalises the spans, drops cut lines seen whole elsewhere and
// notes when the spans cover the file.
func (c *coverage) settle() {
	slices.SortFunc(c.seen, func(a, b lineSpan) int { return a.first - b.first })
	merged := c.seen[:0]
	for _, s := range c.seen {
		if n := len(merged); n > 0 && s.first <= merged[n-1].last+1 {
			merged[n-1].last = max(merged[n-1].last, s.last)
			continue
		}
		merged = append(merged, s)
	}
	c.seen = merged
	slices.Sort(c.cut)
	c.cut = slices.Compact(slices.DeleteFunc(c.cut, c.hasSeen))
	if c.total >= 0 && len(c.cut) == 0 && len(c.missing()) == 0 {
		c.whole = true
	}
}

func (c *coverage) hasSeen(line int) bool {
	for _, s := range c.seen {
		if s.first <= line && line <= s.last {
			return true
		}
	}
	return false
}

// missing lists the lines not seen, cut lines included; the last span ends
// at -1 when the file's length is unknown.
func (c *coverage) missing() []lineSpan {
	var gaps []lineSpan
	next := 1
	for _, s := range c.seen {
		if s.first > next {
			gaps = append(gaps, lineSpan{next, s.first - 1})
		}
		next = s.last + 1
	}
	switch {
	case c.total < 0:
		gaps = append(gaps, lineSpan{next, -1})
	case next <= c.total:
		gaps = append(gaps, lineSpan{next, c.total})
	}
	return gaps
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
	covers     map[string]*coverage
	generation uint64
}

// NewReadState returns an empty state.
func NewReadState() *ReadState {
	return &ReadState{entries: map[string]ReadEntry{}, covers: map[string]*coverage{}}
}

// Record stores what a Read (or a successful write, as a full view) saw.
func (s *ReadState) Record(e ReadEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.generation = s.generation
	if e.ReadAt.IsZero() {
		e.ReadAt = time.Now()
	}
	s.entries[e.Path] = e
	n := coverageOf(e)
	if c, ok := s.covers[e.Path]; ok && c.sameVersion(n) {
		c.merge(n)
		return
	}
	s.covers[e.Path] = &n
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
// hash) decides; a view that kept no hash is then not deduped.
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
	s.covers = map[string]*coverage{}
	s.generation++
}

// Read reports whether path has a read recorded (any view, any version).
func (s *ReadState) Read(path string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.covers[path]
	return ok
}

// SawWhole reports whether the agent has seen every line of the version of
// path it last read.
func (s *ReadState) SawWhole(path string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.covers[path]
	return ok && c.whole
}

// CheckEdit enforces Edit's contract on the existing file whose current
// state is cur: a Read of it, any window, that is still current. Edit
// matches old_string against the file itself, so it cannot clobber text
// the agent did not see. hash computes the file's current content hash; it
// is called only when the stamp moved (or was racily clean when read).
func (s *ReadState) CheckEdit(rel string, cur vfs.Info, hash func() (Hash, error)) error {
	_, err := s.check(rel, cur, hash, "Read it first (any part of it will do), then edit it.")
	return err
}

// CheckWrite enforces Write's contract on the existing file whose current
// state is cur: every line of it seen, in one Read or in windows of the
// current version that together cover it. A line Read showed cut does not
// count: Write would have to retype text the agent never saw.
func (s *ReadState) CheckWrite(rel string, cur vfs.Info, hash func() (Hash, error)) error {
	c, err := s.check(rel, cur, hash, "Read the whole file first, then write it.")
	if err != nil || c.whole {
		return err
	}
	if len(c.seen) == 0 && len(c.cut) == 0 {
		return Errorf(CodeNotRead, "%s was only read in part since it last changed. Read the whole file (or windows that together cover every line) before writing it.", rel)
	}
	gaps := c.missing()
	var unread []lineSpan
	var cut []int
	for _, g := range gaps {
		first := g.first
		for _, l := range c.cut {
			if l < first || g.last >= 0 && l > g.last {
				continue
			}
			if l > first {
				unread = append(unread, lineSpan{first, l - 1})
			}
			cut = append(cut, l)
			first = l + 1
		}
		if g.last < 0 || first <= g.last {
			unread = append(unread, lineSpan{first, g.last})
		}
	}
	if len(cut) > 0 {
		which := "line " + lineList(cut) + " of " + rel + " is"
		if len(cut) > 1 {
			which = "lines " + lineList(cut) + " of " + rel + " are"
		}
		return Errorf(CodeNotRead, "%s too long for Read to show whole (Read cuts it), so you have not seen all of %s and cannot replace it with Write. Change it with Edit instead (it matches old_string against the file itself).", which, rel)
	}
	g := unread[0]
	if g.last < 0 {
		return Errorf(CodeNotRead, "lines %d to the end of %s have not been read since it last changed; Read them (offset %d) before writing it.", g.first, rel, g.first)
	}
	verb, them := "have", "them"
	if g.first == g.last {
		verb, them = "has", "it"
	}
	msg := fmt.Sprintf("%s of %s %s not been read since it last changed; Read %s (offset %d, limit %d) before writing it.",
		spanName(g), rel, verb, them, g.first, g.last-g.first+1)
	if len(unread) > 1 {
		var rest []string
		for _, u := range unread[1:] {
			if u.last < 0 {
				rest = append(rest, fmt.Sprintf("lines %d to the end", u.first))
			} else {
				rest = append(rest, spanName(u))
			}
		}
		msg += " Also unread: " + strings.Join(rest, ", ") + "."
	}
	return Errorf(CodeNotRead, "%s", msg)
}

// check finds the file's coverage and makes sure it is current (codes 2
// and 3).
func (s *ReadState) check(rel string, cur vfs.Info, hash func() (Hash, error), notRead string) (coverage, error) {
	s.mu.Lock()
	p, ok := s.covers[cur.Path]
	var c coverage
	if ok {
		c = *p
		c.seen, c.cut = slices.Clone(c.seen), slices.Clone(c.cut)
	}
	s.mu.Unlock()
	if !ok {
		return c, Errorf(CodeNotRead, "%s has not been read in this session. %s", rel, notRead)
	}
	if c.stamp == cur.Stamp && !Racy(c.stamp, c.readAt) {
		return c, nil
	}
	if c.hash == (Hash{}) {
		return c, Errorf(CodeStale, "%s may have been modified since it was read (its size or timestamps moved, or had just moved when it was read, and the Read did not fingerprint the whole large file to tell). Read it again and redo the change on its current content.", rel)
	}
	h, err := hash()
	if err != nil {
		return c, err
	}
	if h != c.hash {
		return c, Errorf(CodeStale, "%s was modified since it was read (by the user or another process). Read it again and redo the change on its current content.", rel)
	}
	return c, nil
}

// spanName is "line 7" or "lines 2001–3000".
func spanName(g lineSpan) string {
	if g.first == g.last {
		return fmt.Sprintf("line %d", g.first)
	}
	return fmt.Sprintf("lines %d–%d", g.first, g.last)
}

// lineList names up to five line numbers.
func lineList(lines []int) string {
	var parts []string
	for i, l := range lines {
		if i == 5 {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, strconv.Itoa(l))
	}
	return strings.Join(parts, ", ")
}
