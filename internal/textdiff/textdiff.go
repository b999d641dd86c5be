// Package textdiff computes line diffs of text files as protocol.FileDiff
// hunks, for the UI and for permission prompts.
//
// Guarantees:
//
//   - Every hunk is valid under the protocol's rule: its header counts equal
//     its context+delete and context+add lines; line numbers are 1-based, and
//     an empty range starts at the line before it, as in unified diffs.
//   - The work is bounded by the changed region, not the file: Diff trims the
//     common leading and trailing lines before diffing, Splice diffs only the
//     lines around each replaced span, and a region too large to diff line by
//     line is shown as deleted and added whole.
//   - The output is capped (Options): past the cap the diff stops at a hunk
//     boundary or mid-hunk with consistent counts and Truncated set.
//   - Lines are shown without their terminator; bytes that are not UTF-8
//     become U+FFFD, so the diff always encodes as JSON text.
//
// The line diff of a region is gopls's bounded LCS (go-udiff's lcs package):
// deterministic, linear in the region's size for a bounded number of edits,
// and maintained; go-udiff's own unified output counts lines from the file's
// start for every edit, which is quadratic, so hunks are assembled here.
package textdiff

import (
	"strings"

	"github.com/aymanbagabas/go-udiff/lcs"

	"github.com/ferry-dev/ferry/protocol"
)

// Options bound a diff.
type Options struct {
	// Context lines around each change (3).
	Context int
	// MaxLines caps the lines of all hunks together (5,000).
	MaxLines int
	// MaxBytes caps the text of all lines together (512 KiB).
	MaxBytes int
	// MaxLineBytes cuts a longer line, marking the diff truncated (4 KiB).
	MaxLineBytes int
	// MaxHunks caps the number of hunks (1,000; the protocol allows 10,000).
	MaxHunks int
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options {
	return Options{Context: 3, MaxLines: 5000, MaxBytes: 512 << 10, MaxLineBytes: 4 << 10, MaxHunks: 1000}
}

// maxRegionLines is the largest region (old+new lines) diffed line by line;
// a larger one is shown as deleted and added whole (and the caps cut it).
const maxRegionLines = 20000

// Edit replaces old[Start:End] with New (byte offsets into the old text).
type Edit struct {
	Start, End int
	New        string
}

// Diff returns the line diff of old and new with the given context and the
// default caps.
func Diff(path, old, new string, context int) *protocol.FileDiff {
	o := DefaultOptions()
	o.Context = context
	return DiffWith(path, old, new, o)
}

// DiffWith is Diff with explicit options.
func DiffWith(path, old, new string, o Options) *protocol.FileDiff {
	if old == new {
		return &protocol.FileDiff{Path: path, Hunks: []protocol.DiffHunk{}}
	}
	// Trim the common head and tail to whole lines: the rest is one edit.
	p := commonPrefix(old, new)
	p = strings.LastIndexByte(old[:p], '\n') + 1
	s := commonSuffix(old[p:], new[p:])
	for s > 0 {
		lo, ln := len(old)-s, len(new)-s
		if (lo == p || old[lo-1] == '\n') && (ln == p || new[ln-1] == '\n') {
			break
		}
		// Drop the partial first line of the suffix.
		i := strings.IndexByte(old[lo:], '\n')
		if i < 0 {
			s = 0
			break
		}
		s -= i + 1
	}
	return SpliceWith(path, old, []Edit{{Start: p, End: len(old) - s, New: new[p : len(new)-s]}}, o)
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

func commonSuffix(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[len(a)-1-i] == b[len(b)-1-i] {
		i++
	}
	return i
}

// Splice returns the diff of replacing spans of old, without building or
// diffing the whole new text: only the lines around each span are looked
// at. edits must be ascending and not overlap.
func Splice(path, old string, edits []Edit, context int) *protocol.FileDiff {
	o := DefaultOptions()
	o.Context = context
	return SpliceWith(path, old, edits, o)
}

// SpliceWith is Splice with explicit options.
func SpliceWith(path, old string, edits []Edit, o Options) *protocol.FileDiff {
	b := &builder{old: old, o: o, d: &protocol.FileDiff{Path: path, Hunks: []protocol.DiffHunk{}}}
	b.run(regions(old, edits))
	return b.d
}

// region is a run of whole old lines [start,end) replaced by whole new lines.
type region struct {
	start, end int
	new        string
}

// regions widens each edit to whole lines and merges edits that share a
// line, so that each region's old and new text both end at a line boundary.
// Every scan is bounded by the distance to the neighbouring edit, so many
// edits on one long line cost one pass over it, not one each.
func regions(old string, edits []Edit) []region {
	var out []region
	prevEnd := 0
	for i := 0; i < len(edits); i++ {
		e := edits[i]
		// The edit's line starts after the previous region (which ends at a
		// line boundary), so the backward scan stops there.
		start := prevEnd + strings.LastIndexByte(old[prevEnd:e.Start], '\n') + 1
		var sb strings.Builder
		sb.WriteString(old[start:e.Start])
		sb.WriteString(e.New)
		var end int
		for {
			var next *Edit
			if i+1 < len(edits) {
				next = &edits[i+1]
			}
			merge := false
			switch head := sb.String(); {
			case atBoundary(old, e.End) && (head == "" || strings.HasSuffix(head, "\n")):
				end = e.End
				// The next edit's line starts before end: it shares a line.
				merge = next != nil && end > 0 && strings.IndexByte(old[end-1:next.Start], '\n') < 0
			case next != nil:
				if q := strings.IndexByte(old[e.End:next.Start], '\n'); q >= 0 {
					end = e.End + q + 1
				} else {
					merge = true // the next edit is on this line
				}
			default:
				end = len(old)
				if q := strings.IndexByte(old[e.End:], '\n'); q >= 0 {
					end = e.End + q + 1
				}
			}
			if !merge {
				break
			}
			sb.WriteString(old[e.End:next.Start])
			sb.WriteString(next.New)
			i++
			e = *next
		}
		sb.WriteString(old[e.End:end])
		prevEnd = end
		if start == end && sb.Len() == 0 {
			continue
		}
		out = append(out, region{start: start, end: end, new: sb.String()})
	}
	return out
}

// atBoundary: offset at is the start of a line or the end of the text.
func atBoundary(old string, at int) bool {
	return at == 0 || at == len(old) || old[at-1] == '\n'
}

// splitKeep splits s into lines that keep their "\n", so that a last line
// without a newline differs from the same line with one.
func splitKeep(s string) []string {
	if s == "" {
		return nil
	}
	return headLines(s, strings.Count(s, "\n")+1)
}

// op is one diff line.
type op struct {
	kind string // "context", "delete", "add"
	text string // with its "\n"
}

// regionOps diffs a region's old and new lines.
func regionOps(oldText, newText string) []op {
	a, b := splitKeep(oldText), splitKeep(newText)
	var ops []op
	if len(a)+len(b) > maxRegionLines {
		for _, l := range a {
			ops = append(ops, op{"delete", l})
		}
		for _, l := range b {
			ops = append(ops, op{"add", l})
		}
		return ops
	}
	ai, bi := 0, 0
	for _, d := range lcs.DiffLines(a, b) {
		for ; ai < d.Start; ai, bi = ai+1, bi+1 {
			ops = append(ops, op{"context", a[ai]})
		}
		for ; ai < d.End; ai++ {
			ops = append(ops, op{"delete", a[ai]})
		}
		for ; bi < d.ReplEnd; bi++ {
			ops = append(ops, op{"add", b[bi]})
		}
	}
	for ; ai < len(a); ai, bi = ai+1, bi+1 {
		ops = append(ops, op{"context", a[ai]})
	}
	return ops
}

// builder assembles hunks from a stream of lines: the unchanged lines
// between and inside regions, and each region's changes. Unchanged lines are
// held as pending (their first 2*ctx and last ctx, and their count) until the
// next change or the end decides how many of them a hunk shows.
type builder struct {
	old string
	o   Options
	d   *protocol.FileDiff

	lines, bytes int // emitted so far, for the caps
	full         bool

	cur              *protocol.DiffHunk
	oldLine, newLine int // 1-based numbers of the next old and new line

	// pending unchanged lines since the last change (or the start).
	head, tail []string
	n          int
}

func (b *builder) ctx() int { return max(b.o.Context, 0) }

func (b *builder) run(regs []region) {
	b.oldLine, b.newLine = 1, 1
	prev := 0 // end of the previous region in old
	for _, r := range regs {
		b.gap(b.old[prev:r.start])
		for _, o := range regionOps(b.old[r.start:r.end], r.new) {
			if b.full {
				return
			}
			if o.kind == "context" {
				b.unchanged(o.text)
			} else {
				b.change(o)
			}
		}
		prev = r.end
	}
	if b.full || b.cur == nil {
		return
	}
	// The end: show ctx lines after the last change.
	ctx := b.ctx()
	b.gap(strings.Join(headLines(b.old[prev:], max(ctx-b.n, 0)), ""))
	b.flushHead(ctx)
	b.close()
}

// unchanged records one unchanged line.
func (b *builder) unchanged(l string) {
	ctx := b.ctx()
	if len(b.head) < 2*ctx {
		b.head = append(b.head, l)
	}
	if ctx > 0 {
		if len(b.tail) == ctx {
			b.tail = append(b.tail[:0], b.tail[1:]...)
		}
		b.tail = append(b.tail, l)
	}
	b.n++
}

// gap records the unchanged old text s (whole lines) without looking at
// more of it than the hunks can show.
func (b *builder) gap(s string) {
	ctx := b.ctx()
	first := headLines(s, max(2*ctx-len(b.head), 0))
	for _, l := range first {
		b.unchanged(l)
	}
	used := 0
	for _, l := range first {
		used += len(l)
	}
	rest := s[used:]
	if rest == "" {
		return
	}
	n := strings.Count(rest, "\n")
	if !strings.HasSuffix(rest, "\n") {
		n++
	}
	b.n += n
	if ctx > 0 {
		b.tail = append(b.tail, tailLines(rest, ctx)...)
		if len(b.tail) > ctx {
			b.tail = append(b.tail[:0], b.tail[len(b.tail)-ctx:]...)
		}
	}
}

// change emits a deleted or added line, deciding the fate of the pending
// unchanged lines before it.
func (b *builder) change(o op) {
	ctx := b.ctx()
	if b.cur != nil && b.n > 2*ctx {
		// Too far from the last change: close its hunk after ctx lines;
		// the pending tail (distinct lines, as n > 2*ctx) opens the next.
		head := b.head[:ctx]
		b.head = nil
		b.n -= len(head)
		for _, l := range head {
			b.emit(op{"context", l})
		}
		b.close()
		if b.full {
			return
		}
	}
	if b.cur == nil {
		// Open a hunk with the last ctx pending lines as leading context.
		lead := b.tail
		if len(lead) > b.n {
			lead = lead[len(lead)-b.n:]
		}
		b.oldLine += b.n - len(lead)
		b.newLine += b.n - len(lead)
		b.cur = &protocol.DiffHunk{OldStart: b.oldLine, NewStart: b.newLine, Lines: []protocol.DiffLine{}}
		b.resetPending()
		for _, l := range lead {
			b.emit(op{"context", l})
		}
	} else {
		// Within 2*ctx of the last change: all pending lines are context.
		head := b.head
		b.resetPending()
		for _, l := range head {
			b.emit(op{"context", l})
		}
	}
	b.emit(o)
}

// flushHead emits up to ctx of the pending lines after a change, and
// accounts for the rest as skipped.
func (b *builder) flushHead(ctx int) {
	head := b.head
	if len(head) > ctx {
		head = head[:ctx]
	}
	skipped := b.n - len(head)
	b.resetPending()
	for _, l := range head {
		b.emit(op{"context", l})
	}
	b.oldLine += skipped
	b.newLine += skipped
}

func (b *builder) resetPending() {
	b.head, b.tail, b.n = nil, nil, 0
}

// emit appends one line to the open hunk, enforcing the caps.
func (b *builder) emit(o op) {
	if b.full {
		return
	}
	text := strings.TrimSuffix(o.text, "\n")
	if b.o.MaxLineBytes > 0 && len(text) > b.o.MaxLineBytes {
		cut := b.o.MaxLineBytes
		for cut > 0 && !isRuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + " …"
		b.d.Truncated = true
	}
	if (b.o.MaxLines > 0 && b.lines >= b.o.MaxLines) || (b.o.MaxBytes > 0 && b.bytes+len(text) > b.o.MaxBytes) {
		b.d.Truncated = true
		b.close()
		b.full = true
		return
	}
	b.lines++
	b.bytes += len(text)
	b.cur.Lines = append(b.cur.Lines, protocol.DiffLine{Op: o.kind, Text: strings.ToValidUTF8(text, "\uFFFD")})
	switch o.kind {
	case "context":
		b.oldLine++
		b.newLine++
	case "delete":
		b.oldLine++
	case "add":
		b.newLine++
	}
}

func isRuneStart(c byte) bool { return c&0xC0 != 0x80 }

// close finishes the open hunk, computing its counts from its lines, and
// stops when the hunk cap is reached.
func (b *builder) close() {
	h := b.cur
	b.cur = nil
	if h == nil || len(h.Lines) == 0 {
		return
	}
	for _, l := range h.Lines {
		switch l.Op {
		case "context":
			h.OldLines++
			h.NewLines++
		case "delete":
			h.OldLines++
		case "add":
			h.NewLines++
		}
	}
	if h.OldLines == 0 && h.OldStart > 0 {
		h.OldStart-- // unified diff: an empty range names the line before
	}
	if h.NewLines == 0 && h.NewStart > 0 {
		h.NewStart--
	}
	b.d.Hunks = append(b.d.Hunks, *h)
	if b.o.MaxHunks > 0 && len(b.d.Hunks) >= b.o.MaxHunks {
		b.d.Truncated = true
		b.full = true
	}
}

// headLines returns up to n first lines of s.
func headLines(s string, n int) []string {
	out := make([]string, 0, min(n, 64))
	for len(out) < n && s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// tailLines returns up to n last lines of s.
func tailLines(s string, n int) []string {
	out := make([]string, 0, n)
	end := len(s)
	for len(out) < n && end > 0 {
		start := 0
		if end >= 2 {
			start = strings.LastIndexByte(s[:end-1], '\n') + 1
		}
		out = append(out, s[start:end])
		end = start
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}
