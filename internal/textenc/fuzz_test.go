package textenc

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzRoundTrip: any bytes decode and encode back unchanged (or are refused
// as invalid UTF-16), and an edit keeps every byte before and after its span.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{"", "a\r\nb\nc\rd", "\xEF\xBB\xBFx\r\n", "caf\xe9\r\n", "\xFF\xFEa\x00\r\x00\n\x00", "\xFE\xFF\x00a\x00\r"} {
		f.Add([]byte(s), uint(1), uint(2))
	}
	f.Fuzz(func(t *testing.T, in []byte, a, b uint) {
		txt, err := Decode(in)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Decode: %v", err)
			}
			return
		}
		out, err := txt.Apply(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, in) {
			t.Fatalf("round trip %q -> %q", in, out)
		}
		if txt.Encoding == UTF16LE || txt.Encoding == UTF16BE {
			return
		}
		n := uint(len(txt.View) + 1)
		s, e := int(a%n), int(b%n)
		if s > e {
			s, e = e, s
		}
		out, err = txt.Apply([]Edit{{Start: s, End: e, Text: "Z"}})
		if err != nil {
			t.Fatal(err)
		}
		bom := len(txt.Encoding.BOM())
		rs, re := bom+txt.rawOffset(s), bom+txt.rawOffset(e)
		if !bytes.HasPrefix(out, in[:rs]) || !bytes.HasSuffix(out, in[re:]) || string(out[rs:len(out)-(len(in)-re)]) != "Z" {
			t.Fatalf("edit [%d,%d) of %q gave %q", s, e, in, out)
		}
	})
}
