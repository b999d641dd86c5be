package protocol_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/protocol"
)

// hiddenTables are the characters a name people see may not hold: control
// characters (Cc), format characters (Cf: bidirectional controls, zero-width
// spaces and joiners, the byte-order mark, tags, …), the line and
// paragraph separators, and the other default-ignorable code points (Hangul
// fillers and the like, which show as nothing).
var hiddenTables = []*unicode.RangeTable{unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Bidi_Control, unicode.Other_Default_Ignorable_Code_Point}

// runesOf lists every character of the tables, once each.
func runesOf(tables ...*unicode.RangeTable) []rune {
	seen := map[rune]bool{}
	var out []rune
	add := func(r rune) {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	for _, t := range tables {
		for _, r16 := range t.R16 {
			for r := rune(r16.Lo); r <= rune(r16.Hi); r += rune(r16.Stride) {
				add(r)
			}
		}
		for _, r32 := range t.R32 {
			for r := rune(r32.Lo); r <= rune(r32.Hi); r += rune(r32.Stride) {
				add(r)
			}
		}
	}
	return out
}

// nameFields are the messages that carry a name people see, each with a
// way to put a name into the golden message and the field that must be
// named when the name is refused.
var nameFields = []struct {
	msgType string
	field   string
	set     func(p map[string]any, name string)
}{
	{protocol.TypeSessionRename, "payload.title", func(p map[string]any, s string) { p["title"] = s }},
	{protocol.TypeSessionStart, "payload.title", func(p map[string]any, s string) { p["title"] = s }},
	{protocol.TypePromptRequest, "payload.context_files[0].file_name", func(p map[string]any, s string) { at(p, "context_files", 0)["file_name"] = s }},
	{protocol.TypeUIPrompt, "payload.context_files[0].file_name", func(p map[string]any, s string) {
		p["context_files"] = []any{map[string]any{"file_url": "data:,x", "file_name": s}}
	}},
	{protocol.TypeCapabilities, "payload.machine.name", func(p map[string]any, s string) { at(p, "machine")["name"] = s }},
	{protocol.TypeCapabilities, "payload.workspaces[0].name", func(p map[string]any, s string) { at(p, "workspaces", 0)["name"] = s }},
	{protocol.TypeCapabilities, "payload.adapters[0].name", func(p map[string]any, s string) { at(p, "adapters", 0)["name"] = s }},
	{protocol.TypeAgentCapabilities, "payload.adapter.name", func(p map[string]any, s string) { at(p, "adapter")["name"] = s }},
}

// TestNamesRefuseHiddenCharacters: every name a person or a client gives
// for others to see (session titles, attached file names, machine,
// workspace and adapter names, in session.capabilities and in a session's
// agent.capabilities) refuses every invisible, bidirectional or control
// character, wherever it sits in the name, with invalid_value naming the
// field; the same name without it is accepted.
func TestNamesRefuseHiddenCharacters(t *testing.T) {
	// All of Cc, Cf, Zl and Zp, and a sample of the other
	// default-ignorables (TestCheckName goes through all of them).
	runes := append(runesOf(unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp), '\u034f', '\u115f', '\u3164', '\uffa0', '\U000E01F0')
	if len(runes) < 200 {
		t.Fatalf("only %d hidden characters listed", len(runes))
	}
	refused := 0
	for _, f := range nameFields {
		if _, err := protocol.Decode(mutate(t, f.msgType, func(_, p map[string]any) { f.set(p, "plain name.txt") })); err != nil {
			t.Fatalf("%s %s: a plain name is refused: %v", f.msgType, f.field, err)
		}
		for _, r := range runes {
			name := fmt.Sprintf("invoice%cfdp.exe", r)
			_, err := protocol.Decode(mutate(t, f.msgType, func(_, p map[string]any) { f.set(p, name) }))
			var pe *protocol.Error
			if !errors.As(err, &pe) || pe.Code != protocol.CodeInvalidValue || pe.Field != f.field {
				t.Errorf("%s %s with U+%04X: got %v, want invalid_value on %s", f.msgType, f.field, r, err, f.field)
				continue
			}
			refused++
		}
	}
	t.Logf("%d names refused (%d characters × %d fields)", refused, len(runes), len(nameFields))
}

// TestCheckName: the rule itself, on what must pass and what must not.
func TestCheckName(t *testing.T) {
	for _, ok := range []string{"", "ana-laptop", "Fix the Über login", "日本語のタイトル", "emoji 🚀 ok", "tab-free name", "a\u00a0b", "שלום", "مرحبا"} {
		if e := protocol.CheckName("x", ok); e != nil {
			t.Errorf("CheckName(%q) = %v", ok, e)
		}
	}
	for _, bad := range []string{"\xff", "a\tb", "a\u200db", "a\u202eb", "\U000E0041", "\u2028"} {
		e := protocol.CheckName("payload.x", bad)
		if e == nil || e.Code != protocol.CodeInvalidValue || e.Field != "payload.x" {
			t.Errorf("CheckName(%q) = %v, want invalid_value on payload.x", bad, e)
		}
	}
}

// TestCheckNameEveryHiddenCharacter: the rule refuses each character of
// the tables, alone and inside a name, and VisibleName replaces it.
func TestCheckNameEveryHiddenCharacter(t *testing.T) {
	runes := runesOf(hiddenTables...)
	for _, r := range runes {
		name := "a" + string(r) + "b"
		if e := protocol.CheckName("n", name); e == nil {
			t.Errorf("CheckName accepts U+%04X", r)
		}
		if v := protocol.VisibleName(name); v != "a\uFFFDb" {
			t.Errorf("VisibleName(U+%04X) = %q", r, v)
		}
	}
	t.Logf("%d characters refused", len(runes))
}

// FuzzName: CheckName accepts a string exactly when it is UTF-8 and no
// character of it is hidden; VisibleName's result always passes, and is
// the string itself when that passes; CleanTitle never accepts what
// CheckName refuses.
func FuzzName(f *testing.F) {
	for _, s := range []string{"", "ana-laptop", "a\u202eb", "\xff\xfe", "a\u200d👩", "\u3164", "x\U000E0041y", "  Fix it  "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hidden := !utf8.ValidString(s) || strings.ContainsFunc(s, protocol.HiddenRune)
		if e := protocol.CheckName("n", s); (e == nil) == hidden {
			t.Fatalf("CheckName(%q) = %v; hidden %v", s, e, hidden)
		}
		v := protocol.VisibleName(s)
		if e := protocol.CheckName("n", v); e != nil {
			t.Fatalf("VisibleName(%q) = %q fails: %v", s, v, e)
		}
		if !hidden && v != s {
			t.Fatalf("VisibleName(%q) = %q changed a good name", s, v)
		}
		if title, e := protocol.CleanTitle(s); e == nil && protocol.CheckName("n", title) != nil {
			t.Fatalf("CleanTitle(%q) accepts %q", s, title)
		}
	})
}
