package index

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestFromLinesIsFromPaths: FromLines stores what FromPaths of the same
// lines stores (paths, masks, no times or sizes), across chunk boundaries.
func TestFromLinesIsFromPaths(t *testing.T) {
	t.Parallel()
	var text strings.Builder
	var paths []string
	for i := range 3*chunkTarget + 17 {
		p := strings.Repeat("d/", i%5) + "f" + strings.Repeat("é", i%3) + ".go"
		paths = append(paths, p)
		text.WriteString(p)
		switch i % 4 {
		case 0:
			text.WriteString("\r\n")
		case 1:
			text.WriteString("\n\n")
		default:
			text.WriteString("\n")
		}
	}
	got, err := FromLines([]byte(text.String()), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	want := FromPaths(paths)
	if got.Len() != want.Len() {
		t.Fatalf("Len %d, want %d", got.Len(), want.Len())
	}
	for i := range want.Len() {
		if got.Path(i) != want.Path(i) || got.Mask(i) != want.Mask(i) || got.Size(i) != 0 || !got.ModTime(i).IsZero() {
			t.Fatalf("entry %d: %q %x %d %v, want %q %x", i, got.Path(i), got.Mask(i), got.Size(i), got.ModTime(i), want.Path(i), want.Mask(i))
		}
	}
	if g, w := got.RecentTop(5), want.RecentTop(5); !slices.Equal(g, w) {
		t.Fatalf("RecentTop %v, want %v (index order when no times)", g, w)
	}
	if _, err := FromLines([]byte("a\n"+strings.Repeat("x", 10)+"\n"), 10); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("a 10-byte line with maxLine 10: %v", err)
	}
	if s, err := FromLines(nil, 10); err != nil || s.Len() != 0 {
		t.Fatalf("no input: %v %v", s, err)
	}
}

// FuzzFromLines: for any input FromLines keeps exactly the lines a plain
// split keeps (at most two CRs dropped before each line end, blank lines
// left out), in order, or refuses a line of maxLine bytes or more.
func FuzzFromLines(f *testing.F) {
	for _, s := range []string{"a\nb\n", "a\r\n\r\nb", "\n\n", "x\r\r\r\ny", "é/ü.go\n", "", "only", strings.Repeat("d/", 40) + "f\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		const maxLine = 64
		var want []string
		tooLong := false
		for _, line := range strings.Split(string(in), "\n") {
			if len(line) >= maxLine {
				tooLong = true
			}
			for k := 0; k < 2 && strings.HasSuffix(line, "\r"); k++ {
				line = line[:len(line)-1]
			}
			if line != "" {
				want = append(want, line)
			}
		}
		s, err := FromLines(slices.Clone(in), maxLine)
		if tooLong {
			if !errors.Is(err, ErrLineTooLong) {
				t.Fatalf("a line of %d+ bytes: %v", maxLine, err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if s.Len() != len(want) {
			t.Fatalf("Len %d, want %d (%q)", s.Len(), len(want), want)
		}
		for i, w := range want {
			if s.Path(i) != w {
				t.Fatalf("line %d: %q, want %q", i, s.Path(i), w)
			}
		}
	})
}
