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

//go:embed write.md
var writeDescription string

// Write replaces a file's whole content or creates it. Existing files need
// every line seen by prior Reads of the current version (ReadState); content is stored with LF line endings, in
// the existing file's encoding (UTF-8 BOM and UTF-16 kept; a file that was
// not UTF-8 becomes UTF-8). Writing the content the file already has is a
// successful no-op.
type Write struct{}

var _ Tool = Write{}

// Name implements Tool.
func (Write) Name() string { return "Write" }

// Description implements Tool.
func (Write) Description() string { return writeDescription }

// ReadOnly implements Tool.
func (Write) ReadOnly() bool { return false }

var writeSchema = sync.OnceValue(inputSchema[writeParams]) // built on first use, not at start-up

// InputSchema implements Tool.
func (Write) InputSchema() json.RawMessage { return writeSchema() }

type writeParams struct {
	FilePath *string `json:"file_path" jsonschema:"required,minLength=1" jsonschema_description:"The file to write, relative to the workspace or absolute."`
	Content  *string `json:"content" jsonschema:"required" jsonschema_description:"The complete new content of the file."`
}

// Run implements Tool.
func (Write) Run(ctx context.Context, env *Env, input json.RawMessage) (*Result, error) {
	var p writeParams
	if err := DecodeInput(input, &p); err != nil {
		return nil, err
	}
	switch {
	case p.FilePath == nil || *p.FilePath == "":
		return nil, Errorf(CodeInvalidInput, "invalid input: file_path is required")
	case p.Content == nil:
		return nil, Errorf(CodeInvalidInput, "invalid input: content is required (use \"\" for an empty file)")
	}
	t, err := loadWholeTarget(env, *p.FilePath)
	if err != nil {
		return nil, err
	}
	content := textenc.ToLF(*p.Content)
	var notes []string
	if content != *p.Content {
		notes = append(notes, "line endings converted to LF")
	}
	enc, oldView := textenc.UTF8, ""
	if t.exists {
		oldView = string(t.data)
		if txt, err := textenc.Decode(t.data); err == nil {
			oldView = txt.View
			switch txt.Encoding {
			case textenc.UTF8BOM, textenc.UTF16LE, textenc.UTF16BE:
				enc = txt.Encoding
				notes = append(notes, "kept "+enc.String())
			case textenc.Legacy:
				notes = append(notes, "stored as UTF-8 (the file was not UTF-8 before)")
			}
		}
	}
	data, err := textenc.Encode(enc, content)
	if err != nil {
		return nil, err
	}
	lines := countLines(content)
	if t.exists && bytes.Equal(data, t.data) {
		if env.State != nil {
			env.State.Record(ReadEntry{Path: t.path, Stamp: t.info.Stamp, Hash: t.hash(), View: "written by Write"})
		}
		return &Result{
			Blocks: Text(fmt.Sprintf("No changes: %s already has this content (%s).", t.shown, countOf(lines, "line", "lines"))),
			Path:   t.path, Rel: t.rel,
		}, nil
	}
	diff := textdiff.Diff(t.shown, oldView, content, diffContext)
	diff.IsNewFile = !t.exists
	info, err := t.commit(ctx, env, "Write", data, diff)
	if err != nil {
		return nil, err
	}
	verb := "Wrote"
	if !t.exists {
		verb = "Created"
	}
	msg := fmt.Sprintf("%s %s (%s).", verb, t.shown, countOf(lines, "line", "lines"))
	if len(notes) > 0 {
		msg = fmt.Sprintf("%s %s (%s; %s).", verb, t.shown, countOf(lines, "line", "lines"), strings.Join(notes, "; "))
	}
	return &Result{Blocks: Text(msg), Path: info.Path, Rel: info.Rel, Diff: diff, Changed: true}, nil
}
