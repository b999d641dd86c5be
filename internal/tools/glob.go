package tools

import (
	"context"
	_ "embed" // glob.md is the tool's description
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"
)

//go:embed glob.md
var globDescription string

// Glob finds files by name pattern. See glob.md for what the agent is
// told and docs/tools.md for the rules.
//
// Its guarantees:
//   - It lists regular files (and symlinks to regular files inside the
//     roots) under the search directory whose path relative to it matches
//     the pattern (doublestar syntax), honouring ignore files: ignored
//     files are not listed and ignored directories are not read.
//   - Newest first by modification time (ties by path), at most
//     Limits.MaxSearchResults, with a note saying how many were left out.
//   - Memory is bounded by the result cap, not by the tree.
type Glob struct{}

var _ Tool = Glob{}

// Name implements Tool.
func (Glob) Name() string { return "Glob" }

// Description implements Tool.
func (Glob) Description() string { return globDescription }

// ReadOnly implements Tool: Glob never writes.
func (Glob) ReadOnly() bool { return true }

var globSchema = sync.OnceValue(inputSchema[globParams]) // built on first use, not at start-up

// InputSchema implements Tool.
func (Glob) InputSchema() json.RawMessage { return globSchema() }

type globParams struct {
	Pattern *string `json:"pattern" jsonschema:"required" jsonschema_description:"The glob pattern to match file paths against, relative to path, e.g. \"**/*.go\" or \"src/**/*.{ts,tsx}\"."`
	Path    string  `json:"path" jsonschema_description:"The directory to search in, relative to the workspace root or absolute. Defaults to the workspace root."`
}

// Run implements Tool.
func (Glob) Run(ctx context.Context, env *Env, input json.RawMessage) (*Result, error) {
	var p globParams
	if err := DecodeInput(input, &p); err != nil {
		return nil, err
	}
	if p.Pattern == nil || *p.Pattern == "" {
		return nil, Errorf(CodeInvalidInput, `invalid input: field "pattern" is required, e.g. "**/*.go"`)
	}
	pattern, dirArg, err := splitGlob(*p.Pattern, p.Path)
	if err != nil {
		return nil, err
	}
	info, err := searchPath(env, "Glob", "path", dirArg)
	if err != nil {
		return nil, err
	}
	if !info.IsDir {
		return nil, Errorf(CodeInvalidInput,
			"%s is a file, not a directory; Glob searches a directory. Pass its directory as path, or Read the file.", searchArgName(dirArg))
	}
	tree, err := newSearchTree(env, info)
	if err != nil {
		return nil, err
	}
	limit := searchLimit(env.Limits)
	top := newNewestFiles(limit)
	total := 0
	err = tree.walk(ctx, walkOptions{descend: patternDescend(pattern)}, func(f searchFile) error {
		if ok, _ := doublestar.Match(pattern, f.rel); ok {
			total++
			top.add(f)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	files := top.sorted()
	res := &Result{Path: tree.dir, Rel: searchDisplay(tree.workspace, tree.dir)}
	if len(files) == 0 {
		res.Blocks = Text("No files found")
		return res, nil
	}
	var b strings.Builder
	for _, f := range files {
		b.WriteString(f.display)
		b.WriteByte('\n')
	}
	out := strings.TrimSuffix(b.String(), "\n")
	if total > len(files) {
		out += fmt.Sprintf("\n(Results are truncated: showing the %d most recently modified of %d matching files. Use a more specific path or pattern.)", len(files), total)
	}
	res.Blocks = Text(out)
	return res, nil
}
