package textdiff

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/protocol"
)

// lines splits a text the way the diff shows it: without terminators.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.ToValidUTF8(strings.TrimSuffix(s, "\n"), "\uFFFD"), "\n")
}

// patch applies d to old's lines and checks the hunks on the way: their
// counts, their line numbers, and that context and deleted lines are
// really old's.
func patch(t *testing.T, old string, d *protocol.FileDiff) []string {
	t.Helper()
	src := lines(old)
	var out []string
	pos := 0
	for i, h := range d.Hunks {
		var o, n int
		for _, l := range h.Lines {
			switch l.Op {
			case "context":
				o++
				n++
			case "delete":
				o++
			case "add":
				n++
			default:
				t.Fatalf("hunk %d: bad op %q", i, l.Op)
			}
		}
		if o != h.OldLines || n != h.NewLines {
			t.Fatalf("hunk %d: header %d,%d but lines give %d,%d", i, h.OldLines, h.NewLines, o, n)
		}
		start := h.OldStart - 1
		if h.OldLines == 0 {
			start = h.OldStart
		}
		if start < pos || start > len(src) {
			t.Fatalf("hunk %d: old start %d out of order (at %d of %d)", i, h.OldStart, pos, len(src))
		}
		out = append(out, src[pos:start]...)
		pos = start
		newStart := h.NewStart - 1
		if h.NewLines == 0 {
			newStart = h.NewStart
		}
		if newStart != len(out) {
			t.Fatalf("hunk %d: new start %d, but %d lines precede it", i, h.NewStart, len(out))
		}
		for _, l := range h.Lines {
			switch l.Op {
			case "context", "delete":
				if pos >= len(src) || src[pos] != l.Text {
					t.Fatalf("hunk %d: %s line %q is not old line %d", i, l.Op, l.Text, pos+1)
				}
				if l.Op == "context" {
					out = append(out, l.Text)
				}
				pos++
			case "add":
				out = append(out, l.Text)
			}
		}
	}
	return append(out, src[pos:]...)
}

func checkDiff(t *testing.T, old, new string, d *protocol.FileDiff) {
	t.Helper()
	if d.Truncated {
		// Truncation is right only when the input exceeds a cap; the
		// patch check cannot apply to a cut diff.
		if !exceedsCaps(old, new) {
			t.Fatal("unexpected truncation")
		}
		return
	}
	got := patch(t, old, d)
	if !slices.Equal(got, lines(new)) {
		t.Fatalf("patched old gives\n%q\nwant\n%q\ndiff %+v", got, lines(new), d.Hunks)
	}
}

func TestDiffShapes(t *testing.T) {
	ten := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"
	cases := []struct {
		name, old, new string
		hunks          []string // "-a,b +c,d" per hunk
	}{
		{"same", ten, ten, nil},
		{"new file", "", "a\nb\n", []string{"-0,0 +1,2"}},
		{"emptied", "a\nb\n", "", []string{"-1,2 +0,0"}},
		{"middle line", ten, strings.Replace(ten, "5\n", "five\n", 1), []string{"-2,7 +2,7"}},
		{"first line", ten, strings.Replace(ten, "1\n", "one\n", 1), []string{"-1,4 +1,4"}},
		{"last line", ten, strings.Replace(ten, "10\n", "ten\n", 1), []string{"-7,4 +7,4"}},
		{"insert at top", ten, "0\n" + ten, []string{"-0,0 +1,1"}[:0:0]},
		{"two far changes", ten, strings.Replace(strings.Replace(ten, "1\n", "one\n", 1), "10\n", "ten\n", 1), []string{"-1,4 +1,4", "-7,4 +7,4"}},
		{"two near changes merge", ten, strings.Replace(strings.Replace(ten, "3\n", "three\n", 1), "8\n", "eight\n", 1), []string{"-1,10 +1,10"}},
		{"final newline added", "a\nb", "a\nb\n", []string{"-1,2 +1,2"}},
		{"no final newline, append", "a\nb", "a\nb\nc", []string{"-1,2 +1,3"}},
		{"crlf-free unicode", "é\n✓\n", "é\n✗\n", []string{"-1,2 +1,2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Diff("f.txt", c.old, c.new, 3)
			checkDiff(t, c.old, c.new, d)
			if c.hunks == nil && c.name != "insert at top" {
				if c.old == c.new && len(d.Hunks) != 0 {
					t.Fatalf("hunks for no change: %+v", d.Hunks)
				}
				return
			}
			if c.name == "insert at top" {
				return
			}
			var got []string
			for _, h := range d.Hunks {
				got = append(got, fmt.Sprintf("-%d,%d +%d,%d", h.OldStart, h.OldLines, h.NewStart, h.NewLines))
			}
			if !slices.Equal(got, c.hunks) {
				t.Fatalf("hunks %v, want %v", got, c.hunks)
			}
		})
	}
}

func TestDiffContextIsBounded(t *testing.T) {
	var sb strings.Builder
	for i := range 100 {
		fmt.Fprintf(&sb, "line %d\n", i)
	}
	old := sb.String()
	new := strings.Replace(old, "line 50\n", "LINE 50\n", 1)
	d := Diff("f", old, new, 3)
	checkDiff(t, old, new, d)
	if len(d.Hunks) != 1 || len(d.Hunks[0].Lines) != 8 || d.Hunks[0].OldStart != 48 {
		t.Fatalf("want one hunk of 3+2+3 lines at 48, got %+v", d.Hunks)
	}
	// A large replaced block with one real change inside: context stays 3.
	d = Splice("f", old, []Edit{{Start: 0, End: len(old), New: new}}, 3)
	checkDiff(t, old, new, d)
	if len(d.Hunks) != 1 || len(d.Hunks[0].Lines) != 8 {
		t.Fatalf("want one hunk of 8 lines, got %+v", d.Hunks)
	}
	// Context 0.
	d = Diff("f", old, new, 0)
	checkDiff(t, old, new, d)
	if len(d.Hunks) != 1 || len(d.Hunks[0].Lines) != 2 {
		t.Fatalf("context 0: %+v", d.Hunks)
	}
}

// TestRandom diffs random texts and random splices and patches them back.
func TestRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	text := func(n int) string {
		var sb strings.Builder
		for range n {
			sb.WriteString([]string{"a", "b", "c", "", "dd"}[r.IntN(5)])
			if r.IntN(8) > 0 {
				sb.WriteByte('\n')
			}
		}
		return sb.String()
	}
	for i := range 3000 {
		old, new := text(r.IntN(30)), text(r.IntN(30))
		ctx := r.IntN(4)
		t.Run(fmt.Sprint("diff", i), func(t *testing.T) { checkDiff(t, old, new, Diff("f", old, new, ctx)) })

		// Random ascending, non-overlapping edits.
		var edits []Edit
		var sb strings.Builder
		at := 0
		for at <= len(old) && r.IntN(3) > 0 {
			s := at + r.IntN(len(old)-at+1)
			e := s + r.IntN(len(old)-s+1)/2
			n := text(r.IntN(3))
			edits = append(edits, Edit{Start: s, End: e, New: n})
			sb.WriteString(old[at:s])
			sb.WriteString(n)
			at = e
			if at == len(old) {
				break
			}
			at++ // keep edits apart by at least a byte
			sb.WriteString(old[at-1 : at])
		}
		if at <= len(old) {
			sb.WriteString(old[min(at, len(old)):])
		}
		spliced := sb.String()
		t.Run(fmt.Sprint("splice", i), func(t *testing.T) { checkDiff(t, old, spliced, Splice("f", old, edits, ctx)) })
	}
}

func TestCaps(t *testing.T) {
	var a, b strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&a, "old %d\n", i)
		fmt.Fprintf(&b, "new %d\n", i)
	}
	o := DefaultOptions()
	o.MaxLines = 100
	d := DiffWith("f", a.String(), b.String(), o)
	if !d.Truncated {
		t.Fatal("not truncated")
	}
	n := 0
	for _, h := range d.Hunks {
		n += len(h.Lines)
	}
	if n > 100 {
		t.Fatalf("%d lines over the cap", n)
	}
	mustDecode(t, d)

	o = DefaultOptions()
	o.MaxLineBytes = 10
	d = DiffWith("f", "x\n", strings.Repeat("é", 20)+"\n", o)
	if !d.Truncated || len(d.Hunks) != 1 || len(d.Hunks[0].Lines[1].Text) > 10+len(" …") {
		t.Fatalf("long line not cut: %+v", d)
	}
	mustDecode(t, d)

	// Many small hunks: the hunk cap.
	var c strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&c, "%d\n\n\n\n\n\n\n\n", i)
	}
	o = DefaultOptions()
	o.MaxHunks = 10
	var edits []Edit
	src := c.String()
	for i := range len(src) {
		if src[i] == '7' {
			edits = append(edits, Edit{Start: i, End: i + 1, New: "seven"})
		}
	}
	d = SpliceWith("f", src, edits, o)
	if !d.Truncated || len(d.Hunks) != 10 {
		t.Fatalf("hunk cap: %d hunks, truncated %v", len(d.Hunks), d.Truncated)
	}
}

func TestInvalidUTF8Shown(t *testing.T) {
	d := Diff("f", "caf\xe9\n", "cafe\n", 3)
	mustDecode(t, d)
	if d.Hunks[0].Lines[0].Text != "caf\uFFFD" {
		t.Fatalf("got %q", d.Hunks[0].Lines[0].Text)
	}
}

// mustDecode sends d in an agent.tool.finished through the protocol's strict
// decoder, which checks every hunk's header against its lines.
func mustDecode(t *testing.T, d *protocol.FileDiff) {
	t.Helper()
	m := protocol.New(protocol.TypeToolFinished, &protocol.ToolFinished{
		TurnID: "t1", ToolUseID: "u1", ToolName: "Edit", Status: protocol.ToolOK, Diff: d,
	})
	m.SessionID = "s1"
	b, err := protocol.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := protocol.Decode(b)
	if err != nil {
		t.Fatalf("protocol.Decode: %v", err)
	}
	back := got.Payload.(*protocol.ToolFinished).Diff
	want, _ := json.Marshal(d)
	have, _ := json.Marshal(back)
	if string(want) != string(have) {
		t.Fatalf("diff changed on the wire:\n%s\n%s", want, have)
	}
}

func TestProtocolRoundTrip(t *testing.T) {
	old := "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"
	new := strings.Replace(old, "hi", "hello", 1) + "\n// end\n"
	d := Diff("main.go", old, new, 3)
	checkDiff(t, old, new, d)
	mustDecode(t, d)
	nf := Diff("new.go", "", new, 3)
	nf.IsNewFile = true
	mustDecode(t, nf)
}

// TestSpliceLargeFileIsLocal: a splice looks at the lines around its span;
// the result is the same as the whole-text diff.
func TestSpliceLargeFile(t *testing.T) {
	var sb strings.Builder
	for i := range 200000 {
		fmt.Fprintf(&sb, "line number %d of a large file\n", i)
	}
	old := sb.String()
	at := strings.Index(old, "line number 123456 ")
	edits := []Edit{{Start: at, End: at + len("line number 123456"), New: "LINE\nNUMBER"}}
	new := old[:at] + "LINE\nNUMBER" + old[at+len("line number 123456"):]
	d := Splice("big", old, edits, 3)
	if len(d.Hunks) != 1 || d.Hunks[0].OldStart != 123454 {
		t.Fatalf("hunks %+v", d.Hunks)
	}
	w := Diff("big", old, new, 3)
	a, _ := json.Marshal(d)
	b, _ := json.Marshal(w)
	if string(a) != string(b) {
		t.Fatalf("splice and diff differ:\n%s\n%s", a, b)
	}
}

// exceedsCaps reports whether a diff of old and new could hit one of the
// default caps: a line over MaxLineBytes, or more lines or bytes in all
// than the hunks may hold.
func exceedsCaps(old, new string) bool {
	o := DefaultOptions()
	for _, text := range []string{old, new} {
		for _, line := range strings.SplitAfter(text, "\n") {
			if len(line) > o.MaxLineBytes {
				return true
			}
		}
	}
	return len(old)+len(new) > o.MaxBytes || strings.Count(old, "\n")+strings.Count(new, "\n") > o.MaxLines
}
