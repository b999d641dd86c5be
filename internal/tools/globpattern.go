// Glob patterns: splitting a pattern from its directory, and pruning
// directories no match can lie under.

package tools

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

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
