package textdiff

import (
	"strings"
	"testing"
)

// FuzzDiff: any two texts give a valid diff that patches old into new.
func FuzzDiff(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nx\nc\n", 3)
	f.Add("", "x", 1)
	f.Add("a\nb", "a\nb\n", 0)
	f.Fuzz(func(t *testing.T, old, new string, ctx int) {
		ctx = ctx & 7
		checkDiff(t, old, new, Diff("f", old, new, ctx))
	})
}

// FuzzSplice: edits derived from the fuzz input (ascending, not
// overlapping) give a valid diff that patches old into the spliced text.
func FuzzSplice(f *testing.F) {
	f.Add("a\nb\nc\n", []byte{0, 1, 2, 3, 4, 5}, "x\n")
	f.Add("abc", []byte{3, 0, 3, 0}, "y")
	f.Fuzz(func(t *testing.T, old string, cuts []byte, repl string) {
		var edits []Edit
		var sb strings.Builder
		at := 0
		for k := 0; k+1 < len(cuts); k += 2 {
			s := at + int(cuts[k])
			e := s + int(cuts[k+1])%4
			if e > len(old) {
				break
			}
			edits = append(edits, Edit{Start: s, End: e, New: repl})
			sb.WriteString(old[at:s])
			sb.WriteString(repl)
			at = e
		}
		sb.WriteString(old[at:])
		checkDiff(t, old, sb.String(), Splice("f", old, edits, 2))
	})
}
