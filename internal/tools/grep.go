package tools

import (
	"context"
	_ "embed" // grep.md is the tool's description
	"encoding/json"
	"fmt"
	"regexp"
	"sync"

	"github.com/ferry-dev/ferry/internal/tools/grepscan"
)

//go:embed grep.md
var grepDescription string

// Grep searches file contents with a regular expression, as Claude
// Code's Grep tool does with ripgrep, in Go (RE2). See grep.md for what the
// agent is told and docs/tools.md for the rules.
//
// Its guarantees:
//   - It searches what Glob would list (ignore files honoured, ignored
//     directories never read, no special files, nothing outside the roots
//     through symlinks), skipping binary files (a NUL in the first 8 KB).
//   - Files are read streaming through a fixed buffer; a line longer than
//     the buffer is matched through a rune reader and only an excerpt is
//     kept, so memory does not grow with the file or its lines.
//   - It stops reading as soon as the requested page of results is full,
//     and when ctx is cancelled.
//   - At most Limits.MaxSearchResults entries (files, lines or counts) per
//     call; offset pages further.
type Grep struct{}

var _ Tool = Grep{}

// Name implements Tool.
func (Grep) Name() string { return "Grep" }

// Description implements Tool.
func (Grep) Description() string { return grepDescription }

// ReadOnly implements Tool: Grep never writes.
func (Grep) ReadOnly() bool { return true }

var grepSchema = sync.OnceValue(inputSchema[grepParams]) // built on first use, not at start-up

// InputSchema implements Tool.
func (Grep) InputSchema() json.RawMessage { return grepSchema() }

type grepParams struct {
	Pattern    *string `json:"pattern" jsonschema:"required" jsonschema_description:"The regular expression to search for in file contents (RE2 syntax)."`
	Path       string  `json:"path" jsonschema_description:"File or directory to search in, relative to the workspace root or absolute. Defaults to the workspace root."`
	Glob       string  `json:"glob" jsonschema_description:"Glob pattern to filter files, e.g. \"*.js\", \"*.{ts,tsx}\", \"src/**/*.go\"; several separated by spaces; a leading ! excludes."`
	Type       string  `json:"type" jsonschema_description:"File type to search, e.g. \"go\", \"js\", \"py\", \"rust\" (several separated by commas)."`
	OutputMode string  `json:"output_mode" jsonschema:"enum=content,enum=files_with_matches,enum=count" jsonschema_description:"\"content\" shows matching lines, \"files_with_matches\" (default) the files that match, \"count\" the number of matching lines per file."`
	I          bool    `json:"-i" jsonschema_description:"Case-insensitive search."`
	N          *bool   `json:"-n" jsonschema_description:"Show line numbers in content mode (default true)."`
	A          *int    `json:"-A" jsonschema:"minimum=0" jsonschema_description:"Lines of context after each match (content mode)."`
	B          *int    `json:"-B" jsonschema:"minimum=0" jsonschema_description:"Lines of context before each match (content mode)."`
	C          *int    `json:"-C" jsonschema:"minimum=0" jsonschema_description:"Lines of context before and after each match (content mode)."`
	Multiline  bool    `json:"multiline" jsonschema_description:"Let the pattern span lines; . matches newlines too. Default false."`
	HeadLimit  *int    `json:"head_limit" jsonschema:"minimum=0" jsonschema_description:"Return at most this many entries (lines, files or counts); default and maximum 1000."`
	Offset     *int    `json:"offset" jsonschema:"minimum=0" jsonschema_description:"Skip this many entries first (for paging with head_limit)."`
}

const (
	grepContent = "content"
	grepFiles   = "files_with_matches"
	grepCount   = "count"
)

// grepRequest is a validated call.
type grepRequest struct {
	re            *regexp.Regexp
	mode          string
	lineNumbers   bool
	before, after int
	offset, limit int
	multiline     bool
	filter        grepFilter
}

func (p grepParams) validate(l Limits) (grepRequest, error) {
	var r grepRequest
	if p.Pattern == nil {
		return r, Errorf(CodeInvalidInput, `invalid input: field "pattern" is required`)
	}
	r.mode = p.OutputMode
	switch r.mode {
	case "":
		r.mode = grepFiles
	case grepContent, grepFiles, grepCount:
	default:
		return r, Errorf(CodeInvalidInput, `invalid input: field "output_mode" must be "content", "files_with_matches" or "count", got %q`, p.OutputMode)
	}
	for _, f := range []struct {
		name string
		v    *int
	}{{"-A", p.A}, {"-B", p.B}, {"-C", p.C}, {"head_limit", p.HeadLimit}, {"offset", p.Offset}} {
		if f.v != nil && *f.v < 0 {
			return r, Errorf(CodeInvalidInput, "invalid input: field %q must be 0 or more, got %d", f.name, *f.v)
		}
	}
	r.lineNumbers = p.N == nil || *p.N
	r.multiline = p.Multiline
	if r.mode == grepContent {
		c := 0
		if p.C != nil {
			c = *p.C
		}
		r.before, r.after = c, c
		if p.B != nil {
			r.before = *p.B
		}
		if p.A != nil {
			r.after = *p.A
		}
	}
	r.limit = searchLimit(l)
	if p.HeadLimit != nil && *p.HeadLimit > 0 {
		r.limit = min(*p.HeadLimit, r.limit)
	}
	if p.Offset != nil {
		r.offset = *p.Offset
	}
	var err error
	if r.re, err = compileGrep(*p.Pattern, p.I, p.Multiline); err != nil {
		return r, err
	}
	if r.filter, err = newGrepFilter(p.Glob, p.Type); err != nil {
		return r, err
	}
	return r, nil
}

// Run implements Tool.
func (Grep) Run(ctx context.Context, env *Env, input json.RawMessage) (*Result, error) {
	var p grepParams
	if err := DecodeInput(input, &p); err != nil {
		return nil, err
	}
	req, err := p.validate(env.Limits)
	if err != nil {
		return nil, err
	}
	info, err := searchPath(env, "Grep", "path", p.Path)
	if err != nil {
		return nil, err
	}
	g := &grepRun{
		env: env, req: req, workspace: searchWorkspace(env.FS),
		out: &grepOutput{req: req},
		sc: &grepscan.Scanner{
			Re: req.re, Multiline: req.multiline,
			Before: req.before, After: req.after, WantLines: req.mode == grepContent,
		},
	}
	res := &Result{Path: info.Path, Rel: searchDisplay(g.workspace, info.Path)}
	if !info.IsDir {
		f := searchFile{path: info.Path, display: searchDisplay(g.workspace, info.Path)}
		outcome, err := g.file(ctx, f)
		if err != nil {
			return nil, err
		}
		if outcome.Binary {
			res.Blocks = Text(fmt.Sprintf("%s is a binary file (a NUL byte in its first 8 KB); Grep does not search binary files.", f.display))
			return res, nil
		}
	} else {
		tree, err := newSearchTree(env, info)
		if err != nil {
			return nil, err
		}
		if req.mode == grepFiles {
			err = g.filesByAge(ctx, tree)
		} else {
			err = g.inOrder(ctx, tree)
		}
		if err != nil {
			return nil, err
		}
	}
	res.Blocks = Text(g.out.render())
	return res, nil
}
