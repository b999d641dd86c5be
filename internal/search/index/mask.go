package index

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Character masks let a search skip most paths with one AND: a path can
// only match a query when every bit of QueryMask(query) is set in
// CharMask(path).
//
// Bit layout (shared with the matcher, which must not redefine it):
//
//	bits  0–25  ASCII letters a–z (upper and lower case share a bit)
//	bits 26–35  ASCII digits 0–9
//	bit  63     some character outside ASCII
//
// Other ASCII characters (punctuation, "/", space) have no bit: a
// matcher may treat them loosely. Masks are computed on the canonical
// decomposition (NFD) of the text, so canonically equivalent spellings
// (NFC "é" and NFD "e"+U+0301) have the same mask, and a non-ASCII
// character also sets the bits of the ASCII letters in its simple
// case-folding orbit (U+017F "ſ" sets "s"; U+212A KELVIN SIGN
// decomposes to "K"). The guarantee, checked by FuzzMaskNecessary: when
// every space-separated term of q is a subsequence of path after NFD,
// comparing characters by Unicode simple case folding, then
// QueryMask(q) &^ CharMask(path) == 0. A matcher whose equivalence is
// narrower than that (exact case, or NFC-only) stays covered.
const (
	// NonASCIIBit is set in a mask when the text holds a character
	// outside ASCII.
	NonASCIIBit uint64 = 1 << 63
	digitShift         = 26
)

// asciiBits maps an ASCII byte to its mask bit (0 for no bit).
var asciiBits = func() (t [utf8.RuneSelf]uint64) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = 1 << (c - 'a')
		t[c-'a'+'A'] = 1 << (c - 'a')
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = 1 << (digitShift + c - '0')
	}
	return t
}()

// CharMask is the set of characters in path, as defined above. It costs
// one table lookup per byte for ASCII text.
func CharMask(path string) uint64 {
	var m uint64
	for i := 0; i < len(path); i++ {
		c := path[i]
		if c >= utf8.RuneSelf {
			// An ASCII prefix is its own NFD and never combines with
			// what follows, so only the rest needs normalising.
			return m | slowMask(path[i:], false)
		}
		m |= asciiBits[c]
	}
	return m
}

// QueryMask is the set of bits a path must have in its CharMask to
// match the query q (all its space-separated terms). It is CharMask of
// q, except that a non-ASCII character whose case-folding orbit holds an
// ASCII letter asks only for that letter's bit.
func QueryMask(q string) uint64 {
	var m uint64
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c >= utf8.RuneSelf {
			return m | slowMask(q[i:], true)
		}
		m |= asciiBits[c]
	}
	return m
}

func slowMask(s string, query bool) uint64 {
	var m uint64
	for _, r := range norm.NFD.String(s) {
		if r < utf8.RuneSelf {
			m |= asciiBits[r]
			continue
		}
		fold := orbitBits(r)
		switch {
		case !query:
			m |= NonASCIIBit | fold
		case fold != 0:
			m |= fold
		default:
			m |= NonASCIIBit
		}
	}
	return m
}

// orbitBits is the bits of the ASCII characters that fold to the same
// character as r.
func orbitBits(r rune) uint64 {
	var m uint64
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < utf8.RuneSelf {
			m |= asciiBits[f]
		}
	}
	return m
}
