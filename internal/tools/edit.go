package tools

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/ferry-dev/ferry/internal/textdiff"
	"github.com/ferry-dev/ferry/internal/textenc"
)

//go:embed edit.md
var editDescription string

// Edit replaces exact text in a file. It keeps the file's encoding and line
// endings and every byte outside the replaced spans; see edit.md for the
// rules the agent sees and docs/tools.md for the reasons.
type Edit struct{}

var _ Tool = Edit{}

// Name implements Tool.
func (Edit) Name() string { return "Edit" }

// Description implements Tool.
func (Edit) Description() string { return editDescription }

// ReadOnly implements Tool.
func (Edit) ReadOnly() bool { return false }

var editSchema = sync.OnceValue(inputSchema[editParams]) // built on first use, not at start-up

// InputSchema implements Tool.
func (Edit) InputSchema() json.RawMessage { return editSchema() }

type editParams struct {
	FilePath   *string `json:"file_path" jsonschema:"required,minLength=1" jsonschema_description:"The file to edit, relative to the workspace or absolute."`
	OldString  *string `json:"old_string" jsonschema:"required" jsonschema_description:"The exact text to replace; \"\" creates a new file."`
	NewString  *string `json:"new_string" jsonschema:"required" jsonschema_description:"The text to replace it with (must differ from old_string)."`
	ReplaceAll bool    `json:"replace_all" jsonschema:"default=false" jsonschema_description:"Replace every match of old_string instead of requiring exactly one."`
}

// Run implements Tool.
func (Edit) Run(ctx context.Context, env *Env, input json.RawMessage) (*Result, error) {
	var p editParams
	if err := DecodeInput(input, &p); err != nil {
		return nil, err
	}
	switch {
	case p.FilePath == nil || *p.FilePath == "":
		return nil, Errorf(CodeInvalidInput, "invalid input: file_path is required")
	case p.OldString == nil:
		return nil, Errorf(CodeInvalidInput, "invalid input: old_string is required (\"\" to create a file)")
	case p.NewString == nil:
		return nil, Errorf(CodeInvalidInput, "invalid input: new_string is required")
	}
	// The view has LF line endings; so do old_string and new_string.
	old, repl := textenc.ToLF(*p.OldString), textenc.ToLF(*p.NewString)
	if old == repl {
		return nil, Errorf(CodeNoChange, "old_string and new_string are the same, so there is nothing to change. Give the new text in new_string.")
	}
	strip := !isMarkdown(*p.FilePath)
	t, err := loadTarget(env, *p.FilePath)
	if err != nil {
		return nil, err
	}
	if !t.exists {
		if old != "" {
			return nil, Errorf(CodeNotFound, "%s does not exist. To create it, use Write, or Edit with an empty old_string.", t.shown)
		}
		if strip {
			repl = stripTrailingSpace(repl) // the new file's lines all end
		}
		return editCreate(ctx, env, t, repl)
	}
	txt, err := editableText(t)
	if err != nil {
		return nil, err
	}
	legacy := txt.Encoding == textenc.Legacy
	if err := legacyASCII(t, legacy, old, repl); err != nil {
		return nil, err
	}

	var m editMatch
	if old == "" {
		if txt.View != "" {
			return nil, Errorf(CodeExists, "%s already has content, and an empty old_string only creates or fills an empty file. Give the text to replace in old_string, or use Write to replace the whole file.", t.shown)
		}
		m = editMatch{spans: []editSpan{{repl: repl}}, count: 1}
	} else {
		m = locateOld(txt.View, old, repl, !legacy)
		switch {
		case m.count == 0:
			return nil, noMatchError(t.shown, txt.View, old)
		case m.count > 1 && !p.ReplaceAll:
			return nil, ambiguousError(t.shown, txt.View, m)
		}
	}
	if strip {
		stripSpanLineEnds(txt.View, m.spans)
	}
	if legacy {
		if err := splitsNoChar(t, txt, m.spans); err != nil {
			return nil, err
		}
	}
	data, dEdits, err := applySpans(txt, m.spans)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(data, t.data) {
		return nil, Errorf(CodeNoChange, "the replacement leaves %s unchanged (old_string matched text that already reads as new_string%s). Nothing was written.", t.shown, m.step.note())
	}
	diff := textdiff.Splice(t.shown, txt.View, dEdits, diffContext)
	info, err := t.commit(ctx, env, "Edit", data, diff)
	if err != nil {
		return nil, err
	}
	first := m.spans[0]
	line := lineNumbersOf(txt.View, []int{first.start})[0]
	what := "replaced " + countOf(len(m.spans), "occurrence", "occurrences")
	if old == "" {
		what = "filled the empty file"
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Edited %s: %s%s.", t.shown, what, m.step.note())
	if len(m.spans) > 1 {
		fmt.Fprintf(&sb, " The first edited region:")
	} else {
		fmt.Fprintf(&sb, " The edited region:")
	}
	sb.WriteString("\n")
	sb.WriteString(editSnippet(txt.View, first, line))
	return &Result{Blocks: Text(sb.String()), Path: info.Path, Rel: info.Rel, Diff: diff, Changed: true}, nil
}

// editableText decodes the file an Edit or MultiEdit changes, refusing
// what cannot be edited as text without changing other bytes (code 13).
func editableText(t *writeTarget) (*textenc.Text, error) {
	txt, err := textenc.Decode(t.data)
	if err != nil {
		return nil, &Error{Code: CodeEncoding, Err: err, Message: fmt.Sprintf("%s has a UTF-16 byte-order mark but is not valid UTF-16 (%v), so it cannot be edited as text without changing other bytes. Use Write to replace it entirely.", t.shown, err)}
	}
	if txt.Encoding != textenc.UTF16LE && txt.Encoding != textenc.UTF16BE && bytes.IndexByte(t.data, 0) >= 0 {
		return nil, Errorf(CodeEncoding, "%s contains NUL bytes: it is binary, or UTF-16 without a byte-order mark. Edit only changes text files; nothing was changed.", t.shown)
	}
	return txt, nil
}

// legacyASCII refuses non-ASCII old or new text in a file that is not
// UTF-8: only ASCII is the same bytes in every such encoding.
func legacyASCII(t *writeTarget, legacy bool, old, repl string) error {
	if legacy && (!isASCII(old) || !isASCII(repl)) {
		return Errorf(CodeEncoding, "%s is not UTF-8 (a legacy encoding such as cp1252 or Shift-JIS), so Edit can only replace plain ASCII text with plain ASCII text there, byte for byte; old_string or new_string has other characters. Nothing was changed. To change non-ASCII text, rewrite the file with Write (it will be stored as UTF-8) if the user agrees.", t.shown)
	}
	return nil
}

// splitsNoChar refuses spans of a legacy-encoded file that start inside
// what may be a double-byte character.
func splitsNoChar(t *writeTarget, txt *textenc.Text, spans []editSpan) error {
	starts := make([]int, len(spans))
	for i, s := range spans {
		starts[i] = s.start
	}
	if at, ok := txt.SplitsChar(starts); ok {
		return Errorf(CodeEncoding, "%s is not UTF-8, and the match at line %d starts right after a non-ASCII byte, where it may split a double-byte character (Shift-JIS, GBK, Big5). Nothing was changed. Start old_string at a space, punctuation or a line start, or rewrite the file with Write (as UTF-8) if the user agrees.", t.shown, lineNumbersOf(txt.View, []int{at})[0])
	}
	return nil
}

// applySpans replaces spans (ascending, not overlapping) of txt's view and
// returns the file's new bytes and the edits for its diff.
func applySpans(txt *textenc.Text, spans []editSpan) ([]byte, []textdiff.Edit, error) {
	edits := make([]textenc.Edit, len(spans))
	dEdits := make([]textdiff.Edit, len(spans))
	for i, s := range spans {
		edits[i] = textenc.Edit{Start: s.start, End: s.end, Text: s.repl}
		dEdits[i] = textdiff.Edit{Start: s.start, End: s.end, New: s.repl}
	}
	data, err := txt.Apply(edits)
	return data, dEdits, err
}

// editCreate creates a missing file with content (old_string "").
func editCreate(ctx context.Context, env *Env, t *writeTarget, content string) (*Result, error) {
	return createWith(ctx, env, t, "Edit", content)
}

// createWith creates a missing file with content for tool.
func createWith(ctx context.Context, env *Env, t *writeTarget, tool, content string) (*Result, error) {
	diff := textdiff.Diff(t.shown, "", content, diffContext)
	diff.IsNewFile = true
	info, err := t.commit(ctx, env, tool, []byte(content), diff)
	if err != nil {
		return nil, err
	}
	return &Result{
		Blocks: Text(fmt.Sprintf("Created %s (%s).", t.shown, countOf(countLines(content), "line", "lines"))),
		Path:   info.Path, Rel: info.Rel, Diff: diff, Changed: true,
	}, nil
}
