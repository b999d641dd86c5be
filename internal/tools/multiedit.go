package tools

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/ferry-dev/ferry/internal/textdiff"
	"github.com/ferry-dev/ferry/internal/textenc"
)

//go:embed multiedit.md
var multiEditDescription string

// maxMultiEdits bounds the edits of one MultiEdit: each is matched against
// the whole file, so the count multiplies the cost.
const maxMultiEdits = 100

// MultiEdit makes several exact replacements in one file, in order, all or
// none. Each edit follows Edit's rules (matching steps, uniqueness,
// replace_all, trailing whitespace, encodings) against the text the edits
// before it left; an edit may not touch text an earlier edit wrote or
// replaced (CodeOverlap), so every replacement is a span of the file as it
// was read, and the file keeps every byte outside them. Nothing is written
// unless every edit applies; the change is one diff, one permission ask
// and one undo step.
type MultiEdit struct{}

var _ Tool = MultiEdit{}

// Name implements Tool.
func (MultiEdit) Name() string { return "MultiEdit" }

// Description implements Tool.
func (MultiEdit) Description() string { return multiEditDescription }

// ReadOnly implements Tool.
func (MultiEdit) ReadOnly() bool { return false }

var multiEditSchema = sync.OnceValue(inputSchema[multiEditParams]) // built on first use, not at start-up

// InputSchema implements Tool.
func (MultiEdit) InputSchema() json.RawMessage { return multiEditSchema() }

type multiEditParams struct {
	FilePath *string         `json:"file_path" jsonschema:"required,minLength=1" jsonschema_description:"The file to edit, relative to the workspace or absolute."`
	Edits    []multiEditItem `json:"edits" jsonschema:"required,minItems=1,maxItems=100" jsonschema_description:"The edits, applied in order, each to the result of the ones before; all succeed or nothing is written."`
}

type multiEditItem struct {
	OldString  *string `json:"old_string" jsonschema:"required" jsonschema_description:"The exact text to replace; \"\" only in the first edit, to create a new file."`
	NewString  *string `json:"new_string" jsonschema:"required" jsonschema_description:"The text to replace it with (must differ from old_string)."`
	ReplaceAll bool    `json:"replace_all" jsonschema:"default=false" jsonschema_description:"Replace every match of old_string instead of requiring exactly one."`
}

// editAt names edit i in messages, as the model's input indexes it.
func editAt(i, n int) string { return fmt.Sprintf("edits[%d] (edit %d of %d)", i, i+1, n) }

// atEdit prefixes a refusal with the edit it is about and says that nothing
// was written; other errors pass unchanged.
func atEdit(err error, i, n int) error {
	var te *Error
	if !errors.As(err, &te) {
		return err
	}
	return &Error{Code: te.Code, Err: te.Err, Message: fmt.Sprintf("%s: %s No edit was applied: MultiEdit writes all of its edits or none.", editAt(i, n), te.Message)}
}

// Run implements Tool.
func (MultiEdit) Run(ctx context.Context, env *Env, input json.RawMessage) (*Result, error) {
	var p multiEditParams
	if err := DecodeInput(input, &p); err != nil {
		return nil, err
	}
	switch {
	case p.FilePath == nil || *p.FilePath == "":
		return nil, Errorf(CodeInvalidInput, "invalid input: file_path is required")
	case len(p.Edits) == 0:
		return nil, Errorf(CodeInvalidInput, "invalid input: edits is required: a list of at least one {old_string, new_string} object")
	case len(p.Edits) > maxMultiEdits:
		return nil, Errorf(CodeInvalidInput, "invalid input: %d edits, over the %d one MultiEdit takes. Split them into several calls.", len(p.Edits), maxMultiEdits)
	}
	n := len(p.Edits)
	olds, repls := make([]string, n), make([]string, n)
	for i, e := range p.Edits {
		switch {
		case e.OldString == nil:
			return nil, Errorf(CodeInvalidInput, "invalid input: %s has no old_string", editAt(i, n))
		case e.NewString == nil:
			return nil, Errorf(CodeInvalidInput, "invalid input: %s has no new_string", editAt(i, n))
		case i > 0 && *e.OldString == "":
			return nil, Errorf(CodeInvalidInput, "invalid input: %s has an empty old_string; only the first edit may, to create the file", editAt(i, n))
		}
		// The view has LF line endings; so do old_string and new_string.
		olds[i], repls[i] = textenc.ToLF(*e.OldString), textenc.ToLF(*e.NewString)
		if olds[i] == repls[i] {
			return nil, atEdit(Errorf(CodeNoChange, "old_string and new_string are the same, so there is nothing to change."), i, n)
		}
	}
	strip := !isMarkdown(*p.FilePath)
	t, err := loadTarget(env, *p.FilePath)
	if err != nil {
		return nil, err
	}
	creating := olds[0] == ""
	if !t.exists && !creating {
		return nil, Errorf(CodeNotFound, "%s does not exist. To create it, use Write, or give the first edit an empty old_string.", t.shown)
	}
	var txt *textenc.Text
	legacy := false
	base := ""
	if t.exists {
		if txt, err = editableText(t); err != nil {
			return nil, err
		}
		legacy = txt.Encoding == textenc.Legacy
		for i := range olds {
			if err := legacyASCII(t, legacy, olds[i], repls[i]); err != nil {
				return nil, atEdit(err, i, n)
			}
		}
		base = txt.View
	}
	first := 0
	if creating {
		if base != "" {
			return nil, atEdit(Errorf(CodeExists, "%s already has content, and an empty old_string only creates or fills an empty file. Give the text to replace in old_string.", t.shown), 0, n)
		}
		base = repls[0]
		if strip {
			base = stripTrailingSpace(base) // the new file's lines all end
		}
		first = 1
	}
	plan := &editPlan{base: base, view: base, shown: t.shown}
	for i := first; i < n; i++ {
		if err := plan.apply(i, olds[i], repls[i], p.Edits[i].ReplaceAll, !legacy, strip); err != nil {
			return nil, atEdit(err, i, n)
		}
	}
	if !t.exists {
		return createWith(ctx, env, t, "MultiEdit", plan.view)
	}
	spans := plan.editSpans()
	if creating {
		spans = []editSpan{{repl: plan.view}} // an empty file filled
	} else if legacy {
		if err := splitsNoChar(t, txt, spans); err != nil {
			return nil, err
		}
	}
	data, dEdits, err := applySpans(txt, spans)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(data, t.data) {
		return nil, Errorf(CodeNoChange, "the edits leave %s unchanged (they matched text that already reads as their new_string). Nothing was written.", t.shown)
	}
	diff := textdiff.Splice(t.shown, txt.View, dEdits, diffContext)
	info, err := t.commit(ctx, env, "MultiEdit", data, diff)
	if err != nil {
		return nil, err
	}
	return &Result{Blocks: Text(plan.summary(n, creating)), Path: info.Path, Rel: info.Rel, Diff: diff, Changed: true}, nil
}

// placedSpan is a replacement an edit made, in the coordinates of the
// plan's base text.
type placedSpan struct {
	editSpan
	edit int // the index of the edit that made it
}

// editPlan applies edits in order to a base text in memory. Every
// replacement is kept as a span of the base (an edit touching what an
// earlier one wrote is refused), so the whole change is one set of
// ascending, non-overlapping spans of the file as it was read.
type editPlan struct {
	base, shown string
	spans       []placedSpan // ascending in base, not overlapping
	view        string       // base with spans applied
	steps       []matchStep  // per applied edit, for the result's notes
}

// current is where span j of the plan lies in the view: [start, end).
func (p *editPlan) current() [][2]int {
	out := make([][2]int, len(p.spans))
	shift := 0
	for j, s := range p.spans {
		cs := s.start + shift
		out[j] = [2]int{cs, cs + len(s.repl)}
		shift += len(s.repl) - (s.end - s.start)
	}
	return out
}

// apply adds edit i: old is matched in the view as Edit matches it.
func (p *editPlan) apply(i int, old, repl string, all, quotes, strip bool) error {
	m := locateOld(p.view, old, repl, quotes)
	if m.count == 0 {
		if j, line, ok := p.changedBy(old, repl, quotes); ok {
			return Errorf(CodeOverlap, "old_string is no longer in %s after the edits before it: edits[%d] already changed that text (at line %d of the file as read). Each edit applies to the result of the ones before, and two edits may not change the same text: merge them into one edit.", p.shown, j, line)
		}
		return noMatchError(p.shown, p.view, old)
	}
	cur := p.current()
	for _, ms := range m.spans {
		for j, c := range cur {
			// Strict on both sides: a match next to an earlier edit is
			// fine, one across a deletion point (c[0] == c[1]) is not.
			if ms.start < c[1] && c[0] < ms.end {
				line := lineNumbersOf(p.view, []int{ms.start})[0]
				return Errorf(CodeOverlap, "old_string matches text that edits[%d] wrote (at line %d after the edits before it). An edit may not change what an earlier edit of the same call replaced or inserted: merge the two into one edit, or give the final text in the earlier edit.", p.spans[j].edit, line)
			}
		}
	}
	if m.count > 1 && !all {
		return ambiguousError(p.shown, p.view, m)
	}
	if strip {
		stripSpanLineEnds(p.view, m.spans)
	}
	for _, ms := range m.spans {
		start, end := ms.start, ms.end
		for j, c := range cur {
			d := len(p.spans[j].repl) - (p.spans[j].end - p.spans[j].start)
			if c[1] <= ms.start {
				start -= d
			}
			if c[0] < ms.end {
				end -= d
			}
		}
		p.spans = append(p.spans, placedSpan{editSpan: editSpan{start: start, end: end, repl: ms.repl}, edit: i})
	}
	sort.SliceStable(p.spans, func(a, b int) bool { return p.spans[a].start < p.spans[b].start })
	p.view = p.render()
	p.steps = append(p.steps, m.step)
	return nil
}

// changedBy finds the earlier edit that replaced the text old matches in
// the base, when old matches there but not in the view any more.
func (p *editPlan) changedBy(old, repl string, quotes bool) (edit, line int, ok bool) {
	mo := locateOld(p.base, old, repl, quotes)
	for _, s := range mo.spans {
		for _, ps := range p.spans {
			if s.start < ps.end && ps.start < s.end {
				return ps.edit, lineNumbersOf(p.base, []int{s.start})[0], true
			}
		}
	}
	return 0, 0, false
}

// render is the base with the plan's spans applied.
func (p *editPlan) render() string {
	var sb strings.Builder
	at := 0
	for _, s := range p.spans {
		sb.WriteString(p.base[at:s.start])
		sb.WriteString(s.repl)
		at = s.end
	}
	sb.WriteString(p.base[at:])
	return sb.String()
}

func (p *editPlan) editSpans() []editSpan {
	out := make([]editSpan, len(p.spans))
	for i, s := range p.spans {
		out[i] = s.editSpan
	}
	return out
}

// summary is the result's text: per edit, the lines of the new file it
// changed (where its first replacements start).
func (p *editPlan) summary(n int, created bool) string {
	cur := p.current()
	starts := make([]int, len(cur))
	for i, c := range cur {
		starts[i] = c[0]
	}
	lines := lineNumbersOf(p.view, starts)
	byEdit := map[int][]int{}
	for i, s := range p.spans {
		byEdit[s.edit] = append(byEdit[s.edit], lines[i])
	}
	var sb strings.Builder
	what := fmt.Sprintf("applied %s (%s)", countOf(n, "edit", "edits"), countOf(len(p.spans), "replacement", "replacements"))
	if created {
		what = "filled the empty file, then " + what
	}
	fmt.Fprintf(&sb, "Edited %s: %s.", p.shown, what)
	step := 0
	for i := range n {
		ls, ok := byEdit[i]
		if !ok {
			continue // the first edit of a fill
		}
		var where []string
		for _, l := range ls[:min(len(ls), 10)] {
			where = append(where, fmt.Sprint(l))
		}
		if len(ls) > 10 {
			where = append(where, "…")
		}
		fmt.Fprintf(&sb, "\n- edits[%d]: %s at %s %s%s", i, countOf(len(ls), "replacement", "replacements"),
			pluralWord(len(ls), "line", "lines"), strings.Join(where, ", "), p.steps[step].note())
		step++
	}
	sb.WriteString("\nRead the file to see the result around these lines; you may edit it again without reading it.")
	return sb.String()
}
