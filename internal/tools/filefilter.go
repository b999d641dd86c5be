// Grep's file filters: glob and type.

package tools

import (
	"path"
	"sort"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

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
