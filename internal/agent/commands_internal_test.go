package agent

import "testing"

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
