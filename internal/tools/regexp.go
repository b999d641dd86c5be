// Compiling Grep's pattern into a Go regexp.

package tools

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
)

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
