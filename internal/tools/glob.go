package tools

import (
	"context"
	_ "embed" // glob.md is the tool's description
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

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

var globSchema = inputSchema[globParams]()

// InputSchema implements Tool.
func (Glob) InputSchema() json.RawMessage { return globSchema }

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
	top := newGlobNewest(limit)
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

// searchArgName names a path argument in messages.
func searchArgName(p string) string {
	if p == "" || p == "." {
		return "the workspace"
	}
	return p
}

// splitGlob validates the pattern and, when it is absolute, moves its
// literal leading directories into the search path.
func splitGlob(pattern, dir string) (string, string, error) {
	pattern = filepath.ToSlash(pattern)
	if !doublestar.ValidatePattern(pattern) {
		return "", "", &Error{Code: CodeBadPattern, Message: fmt.Sprintf(
			"invalid glob pattern %q: check that every [ and { is closed and every \\ escapes a character. Syntax: * (within one directory), ** (any depth), ?, [abc], {a,b}.", pattern)}
	}
	if strings.HasPrefix(pattern, "/") {
		base, rest := doublestar.SplitPattern(pattern)
		if dir != "" {
			return "", "", Errorf(CodeInvalidInput,
				"invalid input: pattern %q is absolute and path is set too; give a pattern relative to path, or an absolute pattern without path.", pattern)
		}
		if rest == "" {
			rest = "*"
		}
		return rest, filepath.FromSlash(base), nil
	}
	for strings.HasPrefix(pattern, "./") {
		pattern = pattern[2:]
	}
	if base, rest := doublestar.SplitPattern(pattern); pathHasDotDot(base) {
		// "../lib/*.go": the leading directories go into the search path,
		// where the vfs confines them like any path.
		if dir == "" {
			dir = "."
		}
		if rest == "" {
			rest = "*"
		}
		return rest, filepath.Join(dir, filepath.FromSlash(base)), nil
	}
	return pattern, dir, nil
}

func pathHasDotDot(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return true
		}
	}
	return false
}

// patternDescend prunes the walk to directories where pattern can match: not
// deeper than it reaches without "**", and inside its literal leading
// directories.
func patternDescend(pattern string) func(string) bool {
	base, _ := doublestar.SplitPattern(pattern)
	if base == "." || strings.ContainsAny(base, "\\*?[{") {
		base = "" // escapes: not worth unescaping for an optimisation
	}
	maxDepth := -1 // no limit
	if !strings.Contains(pattern, "**") {
		maxDepth = strings.Count(pattern, "/")
	}
	return func(rel string) bool {
		if maxDepth >= 0 && strings.Count(rel, "/")+1 > maxDepth {
			return false
		}
		if base == "" {
			return true
		}
		// Inside base, or one of base's own ancestors.
		return rel == base || strings.HasPrefix(rel, base+"/") || strings.HasPrefix(base, rel+"/")
	}
}

// searchLimit is the cap on results.
func searchLimit(l Limits) int {
	if l.MaxSearchResults > 0 {
		return l.MaxSearchResults
	}
	return DefaultLimits().MaxSearchResults
}

// globNewest keeps the n most recently modified files seen, in memory
// proportional to n.
type globNewest struct {
	n     int
	files []searchFile
}

func newGlobNewest(n int) *globNewest { return &globNewest{n: n} }

func (t *globNewest) add(f searchFile) {
	t.files = append(t.files, f)
	if len(t.files) >= 2*t.n+64 {
		t.trim()
	}
}

func (t *globNewest) trim() {
	sortSearchFiles(t.files)
	if len(t.files) > t.n {
		clear(t.files[t.n:])
		t.files = t.files[:t.n]
	}
}

func (t *globNewest) sorted() []searchFile {
	t.trim()
	return t.files
}

// sortSearchFiles orders files newest first, ties by path.
func sortSearchFiles(files []searchFile) {
	sort.Slice(files, func(i, j int) bool {
		a, b := files[i], files[j]
		if !a.modTime.Equal(b.modTime) {
			return a.modTime.After(b.modTime)
		}
		return a.display < b.display
	})
}
