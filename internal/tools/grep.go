package tools

import (
	"context"
	_ "embed" // grep.md is the tool's description
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"regexp/syntax"
	"sort"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

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

var grepSchema = inputSchema[grepParams]()

// InputSchema implements Tool.
func (Grep) InputSchema() json.RawMessage { return grepSchema }

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

// compileGrep compiles the pattern with ripgrep's defaults: "^" and "$"
// match at line ends; -i folds case; multiline lets "." match newlines.
func compileGrep(pattern string, fold, multiline bool) (*regexp.Regexp, error) {
	if _, err := regexp.Compile(pattern); err != nil {
		msg := fmt.Sprintf("invalid regular expression: %s.", strings.TrimPrefix(err.Error(), "regexp: "))
		if strings.Contains(err.Error(), "invalid or unsupported Perl syntax") {
			msg += " Grep uses RE2 syntax, which has no look-around ((?=…), (?!…), (?<=…)) and no backreferences."
		} else {
			msg += " Escape special characters with \\ (e.g. \\( or \\{) to match them literally."
		}
		return nil, &Error{Code: CodeBadPattern, Message: msg, Err: err}
	}
	if !multiline && patternHasNewline(pattern) {
		return nil, Errorf(CodeBadPattern,
			"the pattern contains a literal newline (\\n), which can never match within one line. Set multiline to true to match across lines.")
	}
	flags := "m"
	if fold {
		flags += "i"
	}
	if multiline {
		flags += "s"
	}
	return regexp.Compile("(?" + flags + ")" + pattern)
}

// patternHasNewline reports whether the pattern has a literal newline.
func patternHasNewline(pattern string) bool {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return false
	}
	var walk func(*syntax.Regexp) bool
	walk = func(re *syntax.Regexp) bool {
		if re.Op == syntax.OpLiteral {
			for _, r := range re.Rune {
				if r == '\n' {
					return true
				}
			}
		}
		for _, sub := range re.Sub {
			if walk(sub) {
				return true
			}
		}
		return false
	}
	return walk(re)
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

// grepRun is one call's search.
type grepRun struct {
	env       *Env
	req       grepRequest
	workspace string
	sc        *grepscan.Scanner
	out       *grepOutput
}

// filesByAge is files_with_matches: the candidates are listed first and
// searched newest first, so the search stops once the page is full.
func (g *grepRun) filesByAge(ctx context.Context, tree *searchTree) error {
	var files []searchFile
	err := tree.walk(ctx, walkOptions{}, func(f searchFile) error {
		if g.req.filter.ok(f.rel) {
			files = append(files, f)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sortSearchFiles(files)
	for _, f := range files {
		if g.out.more {
			break
		}
		if _, err := g.file(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

// inOrder is content and count modes: files in path order, searched as
// the walk finds them, until the page is full.
func (g *grepRun) inOrder(ctx context.Context, tree *searchTree) error {
	return tree.walk(ctx, walkOptions{}, func(f searchFile) error {
		if !g.req.filter.ok(f.rel) {
			return nil
		}
		if _, err := g.file(ctx, f); err != nil {
			return err
		}
		if g.out.more {
			return fs.SkipAll
		}
		return nil
	})
}

// file searches one file and records what it found. Files that cannot be
// opened (gone, refused) are skipped.
func (g *grepRun) file(ctx context.Context, f searchFile) (grepscan.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return grepscan.Outcome{}, err
	}
	h, err := g.env.FS.Open(f.path)
	if err != nil {
		return grepscan.Outcome{}, nil //nolint:nilerr // an unreadable file is skipped, as ripgrep does
	}
	defer h.Close()
	var emit func(grepscan.Line) error
	switch g.req.mode {
	case grepContent:
		emit = func(l grepscan.Line) error {
			if g.out.line(f.display, l) {
				return grepscan.ErrStop
			}
			return nil
		}
	case grepFiles:
		emit = func(grepscan.Line) error { return grepscan.ErrStop }
	default:
		emit = func(grepscan.Line) error { return nil }
	}
	outcome, err := g.sc.Scan(ctx, h, emit)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return outcome, err
		}
		return outcome, nil // a read error mid-file: skip the file
	}
	if outcome.TooLarge {
		g.out.tooLarge++
	}
	if outcome.Matches > 0 {
		switch g.req.mode {
		case grepFiles:
			g.out.entry(f.display)
		case grepCount:
			g.out.files++
			g.out.total += outcome.Matches
			g.out.entry(fmt.Sprintf("%s:%d", f.display, outcome.Matches))
		}
	}
	return outcome, nil
}

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

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// grepFilter is the glob and type filters.
type grepFilter struct {
	include, exclude []string
	types            []grepFileType
}

// grepFileType is a named set of files: by extension or by exact name.
type grepFileType struct {
	exts  []string
	names []string
}

// grepTypes is the table of `type` values (docs/tools.md lists it).
var grepTypes = map[string]grepFileType{
	"c":          {exts: []string{".c", ".h"}},
	"cpp":        {exts: []string{".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++", ".h", ".inl"}},
	"cs":         {exts: []string{".cs"}},
	"css":        {exts: []string{".css", ".scss", ".sass", ".less"}},
	"dart":       {exts: []string{".dart"}},
	"docker":     {exts: []string{".dockerfile"}, names: []string{"Dockerfile", "Containerfile"}},
	"elixir":     {exts: []string{".ex", ".exs"}},
	"erlang":     {exts: []string{".erl", ".hrl"}},
	"go":         {exts: []string{".go"}},
	"haskell":    {exts: []string{".hs", ".lhs"}},
	"html":       {exts: []string{".htm", ".html", ".xhtml"}},
	"java":       {exts: []string{".java"}},
	"js":         {exts: []string{".js", ".jsx", ".mjs", ".cjs"}},
	"json":       {exts: []string{".json", ".jsonc", ".json5"}},
	"kotlin":     {exts: []string{".kt", ".kts"}},
	"lua":        {exts: []string{".lua"}},
	"make":       {exts: []string{".mk", ".mak"}, names: []string{"Makefile", "makefile", "GNUmakefile"}},
	"md":         {exts: []string{".md", ".markdown", ".mdx"}},
	"markdown":   {exts: []string{".md", ".markdown", ".mdx"}},
	"perl":       {exts: []string{".pl", ".pm", ".t"}},
	"php":        {exts: []string{".php"}},
	"proto":      {exts: []string{".proto"}},
	"py":         {exts: []string{".py", ".pyi"}},
	"python":     {exts: []string{".py", ".pyi"}},
	"r":          {exts: []string{".r", ".R", ".Rmd"}},
	"rb":         {exts: []string{".rb", ".gemspec", ".rake"}, names: []string{"Gemfile", "Rakefile"}},
	"ruby":       {exts: []string{".rb", ".gemspec", ".rake"}, names: []string{"Gemfile", "Rakefile"}},
	"rust":       {exts: []string{".rs"}},
	"scala":      {exts: []string{".scala", ".sc"}},
	"sh":         {exts: []string{".sh", ".bash", ".zsh", ".fish"}},
	"sql":        {exts: []string{".sql"}},
	"svelte":     {exts: []string{".svelte"}},
	"swift":      {exts: []string{".swift"}},
	"terraform":  {exts: []string{".tf", ".tfvars"}},
	"toml":       {exts: []string{".toml"}},
	"ts":         {exts: []string{".ts", ".tsx", ".mts", ".cts"}},
	"typescript": {exts: []string{".ts", ".tsx", ".mts", ".cts"}},
	"txt":        {exts: []string{".txt"}},
	"vue":        {exts: []string{".vue"}},
	"xml":        {exts: []string{".xml", ".xsd", ".xsl", ".svg"}},
	"yaml":       {exts: []string{".yaml", ".yml"}},
	"zig":        {exts: []string{".zig"}},
}

func newGrepFilter(globs, types string) (grepFilter, error) {
	var f grepFilter
	for _, g := range strings.Fields(globs) {
		neg := strings.HasPrefix(g, "!")
		g = strings.TrimPrefix(strings.TrimPrefix(g, "!"), "./")
		if g == "" || !doublestar.ValidatePattern(g) {
			return f, Errorf(CodeBadPattern,
				"invalid glob %q in field \"glob\": check that every [ and { is closed. Examples: \"*.go\", \"*.{ts,tsx}\", \"src/**/*.py\", \"!*_test.go\".", g)
		}
		if neg {
			f.exclude = append(f.exclude, g)
		} else {
			f.include = append(f.include, g)
		}
	}
	for _, name := range strings.FieldsFunc(types, func(r rune) bool { return r == ',' || r == ' ' }) {
		t, ok := grepTypes[strings.ToLower(name)]
		if !ok {
			known := make([]string, 0, len(grepTypes))
			for k := range grepTypes {
				known = append(known, k)
			}
			sort.Strings(known)
			return f, Errorf(CodeInvalidInput, "invalid input: unknown file type %q in field \"type\"; known types: %s. Or use glob instead.", name, strings.Join(known, ", "))
		}
		f.types = append(f.types, t)
	}
	return f, nil
}

// ok reports whether the file at rel (relative to the searched
// directory) passes the filters.
func (f grepFilter) ok(rel string) bool {
	name := path.Base(rel)
	if len(f.types) > 0 {
		hit := false
		for _, t := range f.types {
			if t.has(name) {
				hit = true
				break
			}
		}
		if !hit {
			return false
		}
	}
	for _, g := range f.exclude {
		if matchesGlob(g, rel, name) {
			return false
		}
	}
	if len(f.include) == 0 {
		return true
	}
	for _, g := range f.include {
		if matchesGlob(g, rel, name) {
			return true
		}
	}
	return false
}

func (t grepFileType) has(name string) bool {
	for _, n := range t.names {
		if name == n {
			return true
		}
	}
	for _, e := range t.exts {
		if strings.HasSuffix(name, e) && len(name) > len(e) {
			return true
		}
	}
	return false
}

// matchesGlob matches a glob filter: against the name when it has no "/",
// else against the relative path.
func matchesGlob(g, rel, name string) bool {
	target := name
	if strings.Contains(g, "/") {
		target = rel
	}
	ok, _ := doublestar.Match(g, target)
	return ok
}
