// Grep's results: paging with offset and head_limit, and the text the
// agent gets.

package tools

import (
	"fmt"
	"strings"

	"github.com/ferry-dev/ferry/internal/tools/grepscan"
)

// grepOutput collects the page of entries the call returns.
type grepOutput struct {
	req grepRequest
	// seen counts entries so far, those before offset included.
	seen  int
	lines []string
	// shown counts the entries in lines (separators excluded).
	shown int
	// more: an entry past the page exists.
	more bool
	// lastFile and lastNo place the last content line, for separators.
	lastFile string
	lastNo   int64
	// files and total are count mode's totals; tooLarge counts files
	// multiline mode skipped.
	files    int
	total    int64
	tooLarge int
}

// entry adds one entry; it reports whether the page is full.
func (o *grepOutput) entry(s string) bool {
	if o.more {
		return true
	}
	o.seen++
	if o.seen <= o.req.offset {
		return false
	}
	if o.shown >= o.req.limit {
		o.more = true
		return true
	}
	o.lines = append(o.lines, s)
	o.shown++
	return false
}

// line adds a content line of file; it reports whether the page is full.
func (o *grepOutput) line(file string, l grepscan.Line) bool {
	sep := ":"
	if !l.Match {
		sep = "-"
	}
	var s string
	if o.req.lineNumbers {
		s = fmt.Sprintf("%s%s%d%s%s", file, sep, l.No, sep, l.Text)
	} else {
		s = file + sep + l.Text
	}
	contiguous := file == o.lastFile && l.No == o.lastNo+1
	o.lastFile, o.lastNo = file, l.No
	if o.req.before+o.req.after > 0 && !contiguous && o.shown > 0 && o.seen >= o.req.offset && o.shown < o.req.limit {
		o.lines = append(o.lines, "--")
	}
	return o.entry(s)
}

func (o *grepOutput) render() string {
	var b strings.Builder
	if len(o.lines) == 0 {
		switch {
		case o.seen > 0:
			fmt.Fprintf(&b, "No results at offset %d: there are only %d.", o.req.offset, o.seen)
		case o.req.mode == grepContent:
			b.WriteString("No matches found")
		default:
			b.WriteString("No files found")
		}
	} else {
		b.WriteString(strings.Join(o.lines, "\n"))
	}
	next := o.req.offset + o.shown
	switch {
	case o.more:
		what := map[string]string{grepContent: "matching lines", grepFiles: "files match", grepCount: "files match"}[o.req.mode]
		fmt.Fprintf(&b, "\n\n(More %s: showing %d from offset %d. Call again with offset=%d to see more, or narrow the search.)",
			what, o.shown, o.req.offset, next)
	case o.req.mode == grepCount && o.files > 0:
		what := pluralWord(int(o.total), "matching line", "matching lines")
		if o.req.multiline {
			what = pluralWord(int(o.total), "match", "matches")
		}
		fmt.Fprintf(&b, "\n\nFound %d %s in %d %s.", o.total, what, o.files, pluralWord(o.files, "file", "files"))
	}
	if o.tooLarge > 0 {
		fmt.Fprintf(&b, "\n(%d %s over %d MB not searched: multiline mode reads files whole.)",
			o.tooLarge, pluralWord(o.tooLarge, "file", "files"), grepscan.MultilineMaxBytes>>20)
	}
	return b.String()
}
