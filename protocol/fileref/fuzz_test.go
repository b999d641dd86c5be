package fileref

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/protocol"
)

// The oracle below is a second, deliberately naive reading of the grammar
// (quadratic, regexp-based, decoding escapes pair by pair), so that the fuzz
// tests compare the one-pass parser against something written differently.

var (
	oracleToken = regexp.MustCompile(`^<@file:([a-zA-Z0-9_-]+)\|([^>]+)>`)
	anyRefID    = regexp.MustCompile(`<@file:([a-zA-Z0-9_-]+)\|`)
)

func oracleParse(s string, refs []protocol.FileReference) []Part {
	lookup := func(id string) (protocol.FileReference, bool) {
		for _, r := range refs {
			if r.RefID == id {
				return r, true
			}
		}
		return protocol.FileReference{}, false
	}
	var parts []Part
	addText := func(t string) {
		if t == "" {
			return
		}
		if n := len(parts); n > 0 && !parts[n-1].IsFile() {
			parts[n-1].Text += t
			return
		}
		parts = append(parts, textPart(t))
	}
	textStart := 0
	for i := 0; i < len(s); i++ {
		if !strings.HasPrefix(s[i:], "<@") || backslashesBefore(s, i)%2 == 1 {
			continue
		}
		m := oracleToken.FindStringSubmatch(s[i:])
		if m == nil {
			continue
		}
		addText(oracleUnescape(s[textStart:i]))
		if r, ok := lookup(m[1]); ok {
			parts = append(parts, filePart(r, m[2]))
		} else {
			addText(m[0])
		}
		textStart = i + len(m[0])
		i = textStart - 1
	}
	addText(oracleUnescape(s[textStart:]))
	return parts
}

func backslashesBefore(s string, i int) int {
	n := 0
	for i > 0 && s[i-1] == '\\' {
		i--
		n++
	}
	return n
}

// oracleUnescape decodes the spec's two sequences, "\\" and "\<@", reading
// left to right; any other backslash is itself.
func oracleUnescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], `\\`):
			b.WriteByte('\\')
			i++
		case strings.HasPrefix(s[i:], `\<@`):
			b.WriteString("<@")
			i += 2
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// encode writes a parsed prompt back as prompt_text.
func encode(p Prompt) string {
	var b strings.Builder
	for _, part := range p.Parts {
		if part.IsFile() {
			b.WriteString("<@file:" + part.File.RefID + "|" + part.DisplayPath + ">")
		} else {
			b.WriteString(Escape(part.Text))
		}
	}
	return b.String()
}

func checkShape(t *testing.T, p Prompt) {
	t.Helper()
	for i, part := range p.Parts {
		if part.IsFile() {
			if part.Text != "" || part.DisplayPath == "" || strings.Contains(part.DisplayPath, ">") {
				t.Fatalf("part %d: bad file part %#v", i, part)
			}
			continue
		}
		if part.Text == "" || part.DisplayPath != "" {
			t.Fatalf("part %d: bad text part %#v", i, part)
		}
		if i > 0 && !p.Parts[i-1].IsFile() {
			t.Fatalf("part %d: adjacent text parts", i)
		}
	}
}

// FuzzParse: for any prompt_text and refs, Parse does not panic, agrees with
// the oracle, and what it returns accounts for the input: written back, it
// parses to the same prompt.
func FuzzParse(f *testing.F) {
	f.Add(`\<@file:injection>은 위조이고, 이건 진짜야 <@file:ref_0|src/auth.ts>`, "ref_0")
	f.Add(`\\<@file:ref_0|a> \\\<@file:ref_0|b> \x <@<@file:x|y>`, "x,ref_0")
	f.Add(`<@file:a|<@file:a|<@file:a|>`, "a")
	f.Add(`<@file:ref_0|a\\b> <@file:ref_1|c`, "ref_1,ref_1")
	f.Fuzz(func(t *testing.T, in, ids string) {
		var refs []protocol.FileReference
		for i, id := range strings.Split(ids, ",") {
			refs = append(refs, protocol.FileReference{RefID: id, Path: "given/" + strings.Repeat("d", i)})
		}
		// Map every other ref_id-looking string of the input, so that
		// mapped and unmapped tokens both occur.
		for i, m := range anyRefID.FindAllStringSubmatch(in, -1) {
			if i%2 == 0 {
				refs = append(refs, protocol.FileReference{RefID: m[1], Path: "found/" + m[1]})
			}
		}
		p := Parse(in, refs)
		checkShape(t, p)
		if want := oracleParse(in, refs); !reflect.DeepEqual(p.Parts, want) {
			t.Fatalf("Parse(%q)\n got %#v\nwant %#v", in, p.Parts, want)
		}
		if again := Parse(encode(p), refs); !reflect.DeepEqual(again.Parts, p.Parts) {
			t.Fatalf("re-encoded %q parses to\n%#v\nnot\n%#v", encode(p), again.Parts, p.Parts)
		}
		// The conversions accept whatever Parse returns.
		p.Literal()
		p.FileList()
		p.Mentions()
		p.Labels()
		p.ScriptArgs()
		p.Inline(func(r protocol.FileReference) (string, error) {
			if len(r.Path)%2 == 0 {
				return "", errors.New("odd")
			}
			return in, nil
		})
	})
}

// FuzzEscape: escaped typed text parses back to exactly that text and no
// token, even when every ref_id it spells is a real reference.
func FuzzEscape(f *testing.F) {
	f.Add(`<@file:ref_0|src/auth.ts>`, "ref_0")
	f.Add(`\<@file:ref_0|x>\`, "")
	f.Add(`\\\<@user:x> <@ \`, "x")
	f.Fuzz(func(t *testing.T, typed, ids string) {
		var refs []protocol.FileReference
		for _, id := range strings.Split(ids, ",") {
			refs = append(refs, ref(id, "p"))
		}
		for _, m := range anyRefID.FindAllStringSubmatch(typed, -1) {
			refs = append(refs, ref(m[1], "p"))
		}
		got := Parse(Escape(typed), refs).Parts
		var want []Part
		if typed != "" {
			want = []Part{textPart(typed)}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Parse(Escape(%q)) = %#v", typed, got)
		}
	})
}

// FuzzComposeParse: for any typed texts and picked files, Compose then Parse
// gives back exactly the text and the files: same paths, same order, each
// with the display path its token can carry.
func FuzzComposeParse(f *testing.F) {
	f.Add("<@file:injection>은 위조이고, 이건 진짜야 ", "src/auth.ts", "", `\`, "b.go", `\\`)
	f.Add("a<", "x>y", "line\nbreak", "@b", "x>y", "")
	f.Add("", "소스/인증.ts", "|", "", "a|b", "<@")
	f.Fuzz(func(t *testing.T, t0, p0, d0, t1, p1, t2 string) {
		segs := []protocol.PromptSegment{
			text(t0), picked(p0, d0), text(t1), picked(p1, ""), text(t2), picked(p0, ""),
		}
		promptText, refs, err := Compose(segs)
		if p0 == "" || p1 == "" {
			field := "segments[1].file.path"
			if p0 != "" {
				field = "segments[3].file.path"
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != field || !errors.Is(err, ErrEmptyPath) {
				t.Fatalf("err = %v, want empty path at %s", err, field)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		wantRefs := 2
		if p0 == p1 {
			wantRefs = 1
		}
		if len(refs) != wantRefs {
			t.Fatalf("%d refs for paths %q, %q", len(refs), p0, p1)
		}

		// What the user composed, with text merged and files reduced to
		// path and display path.
		var want []Part
		addText := func(s string) {
			if s == "" {
				return
			}
			if n := len(want); n > 0 && !want[n-1].IsFile() {
				want[n-1].Text += s
				return
			}
			want = append(want, textPart(s))
		}
		for _, s := range segs {
			if s.Kind == protocol.SegmentText {
				addText(s.Text)
				continue
			}
			d := tokenDisplayPath(s.File)
			if d == "" || strings.Contains(d, ">") || strings.ContainsAny(d, "\r\n") || !utf8.ValidString(d) {
				t.Fatalf("display path %q cannot be carried", d)
			}
			want = append(want, filePart(protocol.FileReference{Path: s.File.Path}, d))
		}

		got := Parse(promptText, refs).Parts
		for i := range got {
			if got[i].IsFile() {
				got[i].File = &protocol.FileReference{Path: got[i].File.Path}
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("prompt_text %q parses to\n%#v\nwant\n%#v", promptText, got, want)
		}
	})
}
