package textenc

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func utf16le(s string) []byte { return encodeUTF16(s, false) }
func utf16be(s string) []byte { return encodeUTF16(s, true) }

func TestDetect(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		want Encoding
		view string
	}{
		{"empty", nil, UTF8, ""},
		{"ascii", []byte("a\nb"), UTF8, "a\nb"},
		{"utf8", []byte("héllo ✓\n"), UTF8, "héllo ✓\n"},
		{"utf8 bom", []byte("\xEF\xBB\xBFhi\n"), UTF8BOM, "hi\n"},
		{"bom only", []byte("\xEF\xBB\xBF"), UTF8BOM, ""},
		{"utf16le", utf16le("hé😀\r\nx"), UTF16LE, "hé😀\nx"},
		{"utf16be", utf16be("hé😀\nx"), UTF16BE, "hé😀\nx"},
		{"cp1252", []byte("caf\xe9\r\n"), Legacy, "caf\xe9\n"},
		{"shift-jis", []byte("\x93\xfa\x96\x7b\x8c\xea\n"), Legacy, "\x93\xfa\x96\x7b\x8c\xea\n"},
		{"utf32 is legacy", []byte("\xFF\xFE\x00\x00a\x00\x00\x00"), Legacy, "\xFF\xFE\x00\x00a\x00\x00\x00"},
		{"bom then invalid", []byte("\xEF\xBB\xBF\xff"), Legacy, "\xEF\xBB\xBF\xff"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Decode(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if got.Encoding != c.want || got.View != c.view {
				t.Fatalf("Decode = %v %q, want %v %q", got.Encoding, got.View, c.want, c.view)
			}
			// No edit: the bytes come back exactly.
			out, err := got.Apply(nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, c.in) && (len(out) != 0 || len(c.in) != 0) {
				t.Fatalf("round trip = %q, want %q", out, c.in)
			}
		})
	}
}

func TestDecodeInvalidUTF16(t *testing.T) {
	for name, in := range map[string][]byte{
		"odd length":     []byte("\xFF\xFEa\x00b"),
		"lone high":      []byte("\xFF\xFE\x3D\xD8a\x00"),
		"lone low":       []byte("\xFF\xFE\x00\xDCa\x00"),
		"high at end":    []byte("\xFF\xFEa\x00\x3D\xD8"),
		"be lone high":   []byte("\xFE\xFF\xD8\x3D\x00a"),
		"be bad partner": []byte("\xFE\xFF\xD8\x3D\xD8\x3D"),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Decode(in); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Decode = %v, want ErrInvalid", err)
			}
		})
	}
}

// apply decodes in, replaces the first occurrence of old (in the view) with
// repl, and returns the new bytes.
func apply(t *testing.T, in []byte, old, repl string) []byte {
	t.Helper()
	txt, err := Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(txt.View, old)
	if i < 0 {
		t.Fatalf("%q not in view %q", old, txt.View)
	}
	out, err := txt.Apply([]Edit{{Start: i, End: i + len(old), Text: repl}})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestApplyKeepsLineEndings(t *testing.T) {
	cases := []struct {
		name, in, old, repl, want string
	}{
		{"lf", "a\nb\nc\n", "b", "x\ny", "a\nx\ny\nc\n"},
		{"crlf", "a\r\nb\r\nc\r\n", "b", "x\ny", "a\r\nx\r\ny\r\nc\r\n"},
		{"crlf span over break", "a\r\nb\r\nc\r\n", "a\nb", "z", "z\r\nc\r\n"},
		{"crlf whole line", "a\r\nb\r\nc\r\n", "b\n", "x\ny\n", "a\r\nx\r\ny\r\nc\r\n"},
		{"cr only", "a\rb\rc", "b", "x\ny", "a\rx\ry\rc"},
		// Mixed: new breaks take the ending of the line the span is on.
		{"mixed on crlf line", "a\nb\r\nc\n", "b", "x\ny", "a\nx\r\ny\r\nc\n"},
		{"mixed on lf line", "a\r\nb\nc\r\n", "b", "x\ny", "a\r\nx\ny\nc\r\n"},
		// A last line without a newline uses the break before it.
		{"no final newline crlf", "a\r\nb", "b", "x\ny", "a\r\nx\r\ny"},
		{"no final newline kept", "a\nb", "a", "z", "z\nb"},
		{"no breaks at all", "abc", "b", "x\ny", "ax\nyc"},
		{"delete everything", "a\r\n", "a\n", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := string(apply(t, []byte(c.in), c.old, c.repl)); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestApplyKeepsEncoding(t *testing.T) {
	t.Run("bom", func(t *testing.T) {
		got := apply(t, []byte("\xEF\xBB\xBFa\r\nb\r\n"), "b", "é")
		if want := "\xEF\xBB\xBFa\r\né\r\n"; string(got) != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
	t.Run("utf16le", func(t *testing.T) {
		got := apply(t, utf16le("one\r\ntwo 😀\r\nthree"), "two 😀", "zwei\n✓")
		if want := utf16le("one\r\nzwei\r\n✓\r\nthree"); !bytes.Equal(got, want) {
			t.Fatalf("got % x, want % x", got, want)
		}
	})
	t.Run("utf16be", func(t *testing.T) {
		got := apply(t, utf16be("x\ny\n"), "y", "ÿ")
		if want := utf16be("x\nÿ\n"); !bytes.Equal(got, want) {
			t.Fatalf("got % x, want % x", got, want)
		}
	})
	t.Run("cp1252 bytes untouched", func(t *testing.T) {
		in := []byte("caf\xe9 = 1\r\nna\xefve = 2\r\n")
		got := apply(t, in, "= 2", "= 3")
		if want := []byte("caf\xe9 = 1\r\nna\xefve = 3\r\n"); !bytes.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}

func TestApplyMany(t *testing.T) {
	in := "x1\r\nx2\nx3\r\n"
	txt, err := Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var edits []Edit
	for i := range len(txt.View) {
		if txt.View[i] == 'x' {
			edits = append(edits, Edit{Start: i, End: i + 1, Text: "y\n"})
		}
	}
	out, err := txt.Apply(edits)
	if err != nil {
		t.Fatal(err)
	}
	if want := "y\r\n1\r\ny\n2\ny\r\n3\r\n"; string(out) != want {
		t.Fatalf("got %q, want %q", out, want)
	}
	if _, err := txt.Apply([]Edit{{Start: 2, End: 3}, {Start: 1, End: 2}}); err == nil {
		t.Fatal("overlapping edits accepted")
	}
	if _, err := txt.Apply([]Edit{{Start: 0, End: len(txt.View) + 1}}); err == nil {
		t.Fatal("edit past the end accepted")
	}
}

func TestEndings(t *testing.T) {
	txt, err := Decode([]byte("a\r\nb\nc\rd\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	lf, crlf, cr := txt.Endings()
	if lf != 1 || crlf != 2 || cr != 1 {
		t.Fatalf("Endings = %d %d %d", lf, crlf, cr)
	}
}

func TestEncode(t *testing.T) {
	for _, c := range []struct {
		enc  Encoding
		in   string
		want []byte
	}{
		{UTF8, "a\n", []byte("a\n")},
		{UTF8BOM, "a\n", []byte("\xEF\xBB\xBFa\n")},
		{UTF8BOM, "\uFEFFa\n", []byte("\xEF\xBB\xBFa\n")},
		{UTF16LE, "a😀", []byte("\xFF\xFEa\x00\x3D\xD8\x00\xDE")},
		{UTF16BE, "\uFEFFa", []byte("\xFE\xFF\x00a")},
	} {
		got, err := Encode(c.enc, c.in)
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("Encode(%v, %q) = % x, %v; want % x", c.enc, c.in, got, err, c.want)
		}
	}
	if _, err := Encode(Legacy, "a"); err == nil {
		t.Error("Encode(Legacy) succeeded")
	}
}

func TestToLF(t *testing.T) {
	if got := ToLF("a\r\nb\rc\n\r\n"); got != "a\nb\nc\n\n" {
		t.Fatalf("ToLF = %q", got)
	}
	s := "no carriage return"
	if got := ToLF(s); got != s {
		t.Fatalf("ToLF = %q", got)
	}
}

func TestSplitsChar(t *testing.T) {
	// 表 in Shift-JIS is 0x95 0x5C: its second byte is a backslash.
	sjis := []byte("x = \"\x95\x5Cn\"\r\ny = 1\r\n")
	txt, err := Decode(sjis)
	if err != nil {
		t.Fatal(err)
	}
	bs := strings.Index(txt.View, "\\n")
	if k, ok := txt.SplitsChar([]int{bs}); !ok || k != bs {
		t.Fatalf("backslash inside 表 not flagged: %d %v", k, ok)
	}
	y := strings.Index(txt.View, "y = 1")
	if _, ok := txt.SplitsChar([]int{0, y}); ok {
		t.Fatal("ASCII at a boundary flagged")
	}
	// cp1252 "résumé" ends its line on a lone lead byte: not valid
	// double-byte text, so "sum" after é is a safe boundary.
	cp := []byte("r\xe9sum\xe9\nnext\n")
	txt, err = Decode(cp)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := txt.SplitsChar([]int{strings.Index(txt.View, "sum")}); ok {
		t.Fatal("cp1252 résumé flagged")
	}
	// Unicode text never splits.
	txt, _ = Decode([]byte("表\\n"))
	if _, ok := txt.SplitsChar([]int{3}); ok {
		t.Fatal("UTF-8 flagged")
	}
}
