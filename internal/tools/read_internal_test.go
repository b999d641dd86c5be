package tools

import (
	"context"
	"strings"
	"testing"
)

func TestReadParsePages(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"3", "3"},
		{"1-5", "1-5"},
		{" 1 - 5 ", "1-5"},
		{"1,3-4", "1,3-4"},
		{"3-4,1", "1,3-4"},
		{"1-3,2-6", "1-6"},
		{"1,2,3", "1-3"},
		{"7,7", "7"},
		{"010", "10"},
	} {
		got, err := parsePages(c.in)
		if err != nil {
			t.Errorf("parsePages(%q): %v", c.in, err)
			continue
		}
		if s := formatPages(got); s != c.want {
			t.Errorf("parsePages(%q) = %s, want %s", c.in, s, c.want)
		}
	}
	for _, in := range []string{"", " ", "0", "-1", "5-3", "1-", "-", "a", "1.5", "1,,2", "1-2-3", "+1", "99999999999999999999"} {
		_, err := parsePages(in)
		if CodeOf(err) != CodeBadPages {
			t.Errorf("parsePages(%q) = %v, want code %d", in, err, CodeBadPages)
		}
	}
	if n := pageTotal([]pageRange{{1, 3}, {7, 7}}); n != 4 {
		t.Errorf("pageTotal = %d", n)
	}
}

func TestReadEditDistance(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"main.go", "main.go", 0},
		{"mian.go", "main.go", 1}, // a transposition
		{"mai.go", "main.go", 1},
		{"maim.go", "main.go", 1},
		{"xyz", "main.go", 4}, // over the limit of 3
		{"日本.txt", "日木.txt", 1},
	} {
		if got := textDistance(c.a, c.b, 3); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestReadClassify(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		head, name string
		kind       fileKind
		format     string
	}{
		{"%PDF-1.7\n", "x.txt", kindPDF, ""},
		{"\x89PNG\r\n\x1a\n....", "x.pdf", kindImage, "png"},
		{"\xFF\xD8\xFF\xE0", "x", kindImage, "jpeg"},
		{"GIF89a", "x", kindImage, "gif"},
		{"GIF87a", "x", kindImage, "gif"},
		{"RIFF\x00\x00\x00\x00WEBPVP8 ", "x", kindImage, "webp"},
		{"RIFF\x00\x00\x00\x00WAVEfmt ", "x", kindBinary, ""}, // RIFF, but not WebP (has NULs)
		{"{\"cells\": []}", "a.IPYNB", kindNotebook, ""},
		{"\xFF\xFEa\x00", "x", kindText, ""}, // UTF-16 has NULs but is text
		{"plain\n", "x.png", kindText, ""},
		{"a\x00b", "x.txt", kindBinary, ""},
		{"", "x", kindText, ""},
	} {
		k, f := classifyFile([]byte(c.head), c.name)
		if k != c.kind || f != c.format {
			t.Errorf("classify(%q, %q) = %v %q, want %v %q", c.head, c.name, k, f, c.kind, c.format)
		}
	}
}

func TestReadCapRunes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s    string
		n    int
		kept string
		cut  int
	}{
		{"hello", 10, "hello", 0},
		{"hello", 5, "hello", 0},
		{"hello", 2, "he", 3},
		{"日本語", 1, "日", 2},
		{"", 0, "", 0},
	} {
		kept, cut := capRunes(c.s, c.n)
		if kept != c.kept || cut != c.cut {
			t.Errorf("capRunes(%q, %d) = %q, %d", c.s, c.n, kept, cut)
		}
	}
}

// scanLines directly: a window past a long line and a rune split across
// the read buffer.
func TestReadScanLinesBufferBoundaries(t *testing.T) {
	t.Parallel()
	// A 3-byte rune straddles the 64 KiB buffer boundary of the long line.
	long := strings.Repeat("a", lineBufferBytes-1) + "€" + "tail"
	src := strings.NewReader(long + "\nnext\n")
	s, err := scanLines(context.Background(), src, int64(src.Len()), encUTF8, lineWindow{start: 1, count: 10, maxRunes: lineBufferBytes, capBytes: 1 << 30, hash: true})
	if err != nil {
		t.Fatal(err)
	}
	want := "     1\t" + strings.Repeat("a", lineBufferBytes-1) + "€ … [line cut here: 4 more characters not shown]\n     2\tnext\n"
	if string(s.out) != want || !s.eof || !s.hashed || s.firstInvalid != 0 {
		t.Fatalf("eof %v hashed %v invalid %d, out tail %q", s.eof, s.hashed, s.firstInvalid, s.out[len(s.out)-80:])
	}
}
