package protocol

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Names people see: session titles, attached and uploaded file names,
// push device labels, machine, workspace and adapter names. One person (or
// client) sets them and others read them, so a name must show exactly what
// it holds: no character that draws nothing, or that moves, hides or
// reorders the text around it (a right-to-left override turns
// "invoice<U+202E>fdp.exe" into what reads as "invoiceexe.pdf"; a
// zero-width space makes two names look the same). CheckName is the one
// rule every such name passes, wherever it enters.
//
// Refusing all of category Cf also refuses the zero-width joiner and
// non-joiner inside emoji sequences and Persian or Indic words: a name
// keeps its letters and emoji, which read the same without them.

// HiddenRune reports whether r may not appear in a name people see: a
// control character (Cc), a format character (Cf, which holds every
// bidirectional control, zero-width spaces and joiners, the byte-order
// mark and the tag characters), a line or paragraph separator (Zl, Zp), or
// another default-ignorable code point (Hangul fillers, the combining
// grapheme joiner, …), which renders as nothing.
func HiddenRune(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Bidi_Control, unicode.Zl, unicode.Zp,
		unicode.Other_Default_Ignorable_Code_Point)
}

// CheckName returns a coded error (invalid_value, naming field) when name
// is not UTF-8 or holds a hidden character (HiddenRune), and nil otherwise.
// Lengths and other rules of the field are the caller's.
func CheckName(field, name string) *Error {
	if !utf8.ValidString(name) {
		return errorf(CodeInvalidValue, field, "is not UTF-8")
	}
	for _, r := range name {
		if HiddenRune(r) {
			return errorf(CodeInvalidValue, field, "has an invisible, control or bidirectional formatting character (U+%04X): a name must show everything it holds", r)
		}
	}
	return nil
}

// VisibleName is name with invalid UTF-8 and every hidden character
// replaced by U+FFFD, which shows that something was there: for names a
// client derives rather than a person types (a workspace's folder name), so
// that they pass CheckName without losing their place.
func VisibleName(name string) string {
	if utf8.ValidString(name) && !strings.ContainsFunc(name, HiddenRune) {
		return name
	}
	return strings.Map(func(r rune) rune {
		if HiddenRune(r) {
			return utf8.RuneError
		}
		return r
	}, strings.ToValidUTF8(name, string(utf8.RuneError)))
}
