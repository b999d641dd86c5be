package agent

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestExpandCommand: $ARGUMENTS and $1..$9 are replaced in one pass (an
// argument holding "$1" stays as typed), and arguments to a file without
// placeholders are appended rather than lost.
func TestExpandCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ body, args, want string }{
		{"Review $ARGUMENTS.", "a.go b.go", "Review a.go b.go."},
		{"$2 then $1, $9.", "x y", "y then x, ."},
		{"Echo $ARGUMENTS", "costs $1 each", "Echo costs $1 each"},
		{"Summarise the log.\n", "last hour", "Summarise the log.\n\nArguments: last hour"},
		{"Summarise the log.\n", "", "Summarise the log."},
	} {
		if got := expandCommand(tc.body, tc.args); got != tc.want {
			t.Errorf("expandCommand(%q, %q) = %q, want %q", tc.body, tc.args, got, tc.want)
		}
	}
	desc, hint, body := parseCommand("---\r\ndescription: 'Ship it'\r\nargument-hint: [branch]\r\n---\r\nBody\r\n")
	if desc != "Ship it" || hint != "[branch]" || body != "Body\n" {
		t.Fatalf("parseCommand = %q, %q, %q", desc, hint, body)
	}
}

// FuzzCommandFile: a command file and its arguments, whatever they hold,
// never panic the parser, give a description and hint within
// agent.commands' bounds, keep the front matter out of the body, and
// expand in one pass (arguments that look like placeholders stay as
// they are; arguments with no placeholder to go to are appended).
func FuzzCommandFile(f *testing.F) {
	f.Add("---\ndescription: 'Ship it'\nargument-hint: [branch]\n---\nShip $1 now: $ARGUMENTS\n", "main $2 $ARGUMENTS")
	f.Add("# Review\nReview the diff.\n", "carefully")
	f.Add("---\r\ndescription: \"quoted \\u00e9\"\r\n---", "")
	f.Add("---\nno closing line\n$9 $1", "a b c d e f g h i j")
	f.Add("", "$1")
	f.Fuzz(func(t *testing.T, data, args string) {
		desc, hint, body := parseCommand(data)
		if utf8.RuneCountInString(desc) > 201 || len(hint) > 256 {
			t.Fatalf("description %d runes, hint %d bytes", utf8.RuneCountInString(desc), len(hint))
		}
		if utf8.ValidString(data) && (!utf8.ValidString(desc) || !utf8.ValidString(hint)) {
			t.Fatalf("valid input gave invalid UTF-8: %q %q", desc, hint)
		}
		if norm := strings.ReplaceAll(data, "\r\n", "\n"); !strings.HasSuffix(norm, body) {
			t.Fatalf("body %q is not the end of the file", body)
		}
		out := expandCommand(body, args)
		if !placeholder.MatchString(body) && args != "" && !strings.Contains(out, args) {
			t.Fatalf("arguments %q lost: %q", args, out)
		}
		if got := expandCommand("$ARGUMENTS", args); got != strings.TrimRight(args, "\n") {
			t.Fatalf("$ARGUMENTS with %q gave %q: expanded twice", args, got)
		}
	})
}
