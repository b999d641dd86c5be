package tools

import (
	"context"
	_ "embed" // read.md is the tool's description
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
)

//go:embed read.md
var readDescription string

// Read reads a file of the workspace: text as numbered lines, images, PDFs
// and Jupyter notebooks. See read.md for what the agent is told and
// docs/tools.md for the limits.
//
// Its guarantees:
//   - Memory is bounded by what is returned, not by the file: text is
//     streamed, lines before offset are scanned and dropped, a long line
//     keeps only Limits.MaxLineRunes runes.
//   - Output over Limits.MaxReadTokens is refused (CodeTooLarge) with a
//     range that fits, never truncated (the two-stage gate in tokengate.go).
//   - Every successful read is recorded in Env.State, marked Partial unless
//     the agent saw the whole file exactly (a text window keeps its line
//     range, so windows can cover a file for Write); a repeated read of the same view
//     of an unchanged file gets a short stub while the earlier result is
//     still in the agent's context.
type Read struct{}

var _ Tool = Read{}

// Name implements Tool.
func (Read) Name() string { return "Read" }

// Description implements Tool.
func (Read) Description() string { return readDescription }

// ReadOnly implements Tool: Read never writes.
func (Read) ReadOnly() bool { return true }

var readSchema = sync.OnceValue(inputSchema[readParams]) // built on first use, not at start-up

// InputSchema implements Tool.
func (Read) InputSchema() json.RawMessage { return readSchema() }

// readParams is Read's input as the agent sends it.
type readParams struct {
	FilePath string  `json:"file_path" jsonschema:"required" jsonschema_description:"The file to read: relative to the workspace root, or absolute."`
	Offset   *int    `json:"offset" jsonschema:"minimum=0" jsonschema_description:"The line number to start reading at (1-based; 0 means 1). For notebooks, the cell number."`
	Limit    *int    `json:"limit" jsonschema:"minimum=1" jsonschema_description:"How many lines to read (default 2000). For notebooks, how many cells."`
	Pages    *string `json:"pages" jsonschema_description:"PDF only: the pages to read, e.g. \"3\", \"1-5\" or \"1,3-4\" (at most 20 pages a call)."`
}

// maxLineNumber clamps offset and limit, so offset+limit cannot overflow;
// no file has that many lines.
const maxLineNumber = 1 << 40

// readRequest is a validated call.
type readRequest struct {
	path string
	// start is the first line (or cell), 1-based; count how many.
	start, count int
	// ranged is set when offset or limit was given.
	ranged bool
	// pages is the PDF page selection, nil when not given.
	pages []pageRange
	// pagesText is pages as given, normalised.
	pagesText string
}

func (p readParams) validate(l Limits) (readRequest, error) {
	r := readRequest{path: p.FilePath, start: 1, count: l.DefaultReadLines}
	if strings.TrimSpace(p.FilePath) == "" {
		return r, Errorf(CodeInvalidInput, "invalid input: field \"file_path\" is required: the file to read, relative to the workspace or absolute")
	}
	if p.Offset != nil {
		if *p.Offset < 0 {
			return r, Errorf(CodeInvalidInput, "invalid input: field \"offset\" must be a line number of 1 or more, got %d", *p.Offset)
		}
		r.start = min(max(*p.Offset, 1), maxLineNumber)
		r.ranged = true
	}
	if p.Limit != nil {
		if *p.Limit < 1 {
			return r, Errorf(CodeInvalidInput, "invalid input: field \"limit\" must be 1 or more, got %d; leave it out to read %d lines", *p.Limit, l.DefaultReadLines)
		}
		r.count = min(*p.Limit, maxLineNumber)
		r.ranged = true
	}
	if p.Pages != nil {
		ranges, err := parsePages(*p.Pages)
		if err != nil {
			return r, err
		}
		r.pages = ranges
		r.pagesText = formatPages(ranges)
	}
	return r, nil
}

// Run implements Tool.
func (Read) Run(ctx context.Context, env *Env, input json.RawMessage) (*Result, error) {
	var p readParams
	if err := DecodeInput(input, &p); err != nil {
		return nil, err
	}
	limits := withDefaults(env.Limits)
	req, err := p.validate(limits)
	if err != nil {
		return nil, err
	}
	info, err := env.FS.Stat(req.path)
	if err != nil {
		return nil, readFSError(env.FS, req.path, err)
	}
	if info.IsDir {
		return nil, isDirError(req.path, err)
	}
	f, err := env.FS.Open(req.path)
	if err != nil {
		return nil, readFSError(env.FS, req.path, err)
	}
	defer f.Close()
	info = f.Info()

	head := make([]byte, sniffBytes)
	n, err := f.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, readFSError(env.FS, req.path, err)
	}
	head = head[:n]
	kind, format := classifyFile(head, info.Path)

	if req.pages != nil && kind != kindPDF {
		return nil, Errorf(CodeInvalidInput, "invalid input: field \"pages\" applies only to PDF files, and %s is not one; leave it out (use offset and limit for text)", displayName(info, req.path))
	}
	if req.ranged && (kind == kindPDF || kind == kindImage) {
		hint := ""
		if kind == kindPDF {
			hint = ", and use pages to choose PDF pages"
		}
		return nil, Errorf(CodeInvalidInput, "invalid input: offset and limit apply to text files and notebooks; %s is a %s: leave them out%s",
			displayName(info, req.path), kindName(kind, format), hint)
	}

	rc := &readCall{ctx: ctx, env: env, limits: limits, req: req, f: f, info: info, head: head, name: displayName(info, req.path)}
	switch kind {
	case kindBinary:
		return nil, Errorf(CodeEncoding, "%s is a binary file (it contains NUL bytes), not text, an image, a PDF or a notebook; Read cannot show it. Use a command-line tool suited to its format if you need its content.", rc.name)
	case kindImage:
		return rc.image(format)
	case kindPDF:
		return rc.pdf()
	case kindNotebook:
		return rc.notebook()
	default:
		return rc.text()
	}
}
