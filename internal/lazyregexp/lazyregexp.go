// Package lazyregexp is a regular expression compiled on its first use
// instead of at package initialisation.
//
// Every ferry process runs every linked package's initialisation, whatever
// the command: a package-level regexp.MustCompile is paid by `ferry
// version`, by every `ferry mcp` an editor spawns and by every hook. A
// pattern with a counted repetition ({0,251}) compiles to a large program
// and costs tenths of a millisecond each (issue 37). New defers that cost
// to the first match, keeps MustCompile's panic on a bad pattern (at that
// first use, and at once under `go test`, so a typo still fails the
// package's tests), and is safe for concurrent use like *regexp.Regexp.
package lazyregexp

import (
	"os"
	"regexp"
	"strings"
	"sync"
)

// Regexp is a regular expression compiled on first use.
type Regexp struct {
	str  string
	once sync.Once
	rx   *regexp.Regexp
}

// New returns a Regexp for str; it panics when first used if str does not
// compile (at once under go test).
func New(str string) *Regexp {
	r := &Regexp{str: str}
	if inTest {
		r.re()
	}
	return r
}

// inTest is set in a test binary, where a bad pattern should fail the
// package's tests rather than wait for a first use they may not reach.
// Not testing.Testing(), which would link the testing package into every
// ferry binary.
var inTest = len(os.Args) > 0 && strings.HasSuffix(os.Args[0], ".test")

func (r *Regexp) re() *regexp.Regexp {
	r.once.Do(func() { r.rx = regexp.MustCompile(r.str) })
	return r.rx
}

// String is the source text of the expression.
func (r *Regexp) String() string { return r.str }

// MatchString reports whether s contains a match.
func (r *Regexp) MatchString(s string) bool { return r.re().MatchString(s) }

// FindStringSubmatch is regexp.Regexp.FindStringSubmatch.
func (r *Regexp) FindStringSubmatch(s string) []string { return r.re().FindStringSubmatch(s) }

// ReplaceAllString is regexp.Regexp.ReplaceAllString.
func (r *Regexp) ReplaceAllString(src, repl string) string {
	return r.re().ReplaceAllString(src, repl)
}

// ReplaceAllStringFunc is regexp.Regexp.ReplaceAllStringFunc.
func (r *Regexp) ReplaceAllStringFunc(src string, repl func(string) string) string {
	return r.re().ReplaceAllStringFunc(src, repl)
}
