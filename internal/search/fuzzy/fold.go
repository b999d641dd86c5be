package fuzzy

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Character classes drive the position bonuses. A path starts as if after a
// separator, so the first segment's first letter counts as a boundary.
const (
	clsSep     uint8 = iota // '/'
	clsNonWord              // '.', '_', '-', ' ', other punctuation
	clsLower                // lower-case letter
	clsUpper                // upper-case letter
	clsLetter               // letter without case, combining mark
	clsDigit                // digit
	numClasses
)

// Mask bits. A path's mask has one bit per folded ASCII letter, digit and
// common path punctuation it contains, so a query character the path lacks
// rejects it with one AND; the two top bits steer the scanner instead.
const (
	bitSlash    = 36
	bitDot      = 37
	bitUnder    = 38
	bitDash     = 39
	bitSpace    = 40
	bitPunct    = 41 // any other ASCII byte
	bitUpper    = 62 // the path has an ASCII upper-case letter
	bitNonASCII = 63 // the path has a byte >= 0x80: units come from NFD folding
)

var (
	// lowerASCII folds ASCII upper case; other bytes map to themselves.
	lowerASCII [256]byte
	// classASCII is the class of each ASCII byte (0x80.. never looked up).
	classASCII [128]uint8
	// maskASCII is the mask bit of each folded ASCII byte.
	maskASCII [128]uint64
)

func init() {
	for i := range 256 {
		b := byte(i)
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		lowerASCII[i] = b
	}
	for i := range 128 {
		b := byte(i)
		switch {
		case b == '/':
			classASCII[i] = clsSep
			maskASCII[i] = 1 << bitSlash
		case 'a' <= b && b <= 'z':
			classASCII[i] = clsLower
			maskASCII[i] = 1 << (b - 'a')
		case 'A' <= b && b <= 'Z':
			classASCII[i] = clsUpper
			maskASCII[i] = 1 << (b - 'A')
		case '0' <= b && b <= '9':
			classASCII[i] = clsDigit
			maskASCII[i] = 1 << (26 + b - '0')
		default:
			classASCII[i] = clsNonWord
			switch b {
			case '.':
				maskASCII[i] = 1 << bitDot
			case '_':
				maskASCII[i] = 1 << bitUnder
			case '-':
				maskASCII[i] = 1 << bitDash
			case ' ':
				maskASCII[i] = 1 << bitSpace
			default:
				maskASCII[i] = 1 << bitPunct
			}
		}
	}
}

// foldRune maps r to the representative of its simple case-folding orbit:
// the lower-case ASCII letter when the orbit has one (so the Kelvin sign
// matches k), otherwise the smallest rune of the orbit (so σ, ς and Σ are one).
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		return rune(lowerASCII[r])
	}
	best := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < utf8.RuneSelf {
			return rune(lowerASCII[f])
		}
		if f < best {
			best = f
		}
	}
	return best
}

// classOf classifies a rune of the original (NFD) text.
func classOf(r rune) uint8 {
	if r < utf8.RuneSelf {
		return classASCII[r]
	}
	switch {
	case unicode.IsLower(r):
		return clsLower
	case unicode.IsUpper(r):
		return clsUpper
	case unicode.IsLetter(r), unicode.Is(unicode.Mn, r), unicode.Is(unicode.Mc, r):
		// Combining marks continue the letter they decorate.
		return clsLetter
	case unicode.IsDigit(r):
		return clsDigit
	}
	return clsNonWord
}

// MaskOf returns the prefilter mask of path that TopK's Source must report
// for it: which folded ASCII characters it contains, and two flags. It is
// computed by the same folding the matcher uses, so a decomposed é sets the
// bit of e.
func MaskOf(path string) uint64 {
	var m uint64
	i := 0
	for ; i < len(path); i++ {
		b := path[i]
		if b >= utf8.RuneSelf {
			break
		}
		m |= maskASCII[b]
		if 'A' <= b && b <= 'Z' {
			m |= 1 << bitUpper
		}
	}
	if i == len(path) {
		return m
	}
	m |= 1 << bitNonASCII
	var it norm.Iter
	it.InitString(norm.NFD, path)
	for !it.Done() {
		seg := it.Next()
		for len(seg) > 0 {
			r, w := utf8.DecodeRune(seg)
			seg = seg[w:]
			if r < utf8.RuneSelf && 'A' <= r && r <= 'Z' {
				m |= 1 << bitUpper
			}
			if f := foldRune(r); f < utf8.RuneSelf {
				m |= maskASCII[f]
			}
		}
	}
	return m
}

// units is a path (or query) decomposed for matching: folded NFD units, the
// unfolded units (for the case bonus), and for each unit the UTF-16 span of
// the original text it came from (a whole NFD segment: highlighting a
// decomposed accent lights up its letter).
type units struct {
	fold  []rune
	orig  []rune
	start []int32
	end   []int32
}

func (u *units) reset() {
	u.fold = u.fold[:0]
	u.orig = u.orig[:0]
	u.start = u.start[:0]
	u.end = u.end[:0]
}

// decompose fills u with the units of s. Invalid UTF-8 decodes to U+FFFD,
// one UTF-16 unit per bad byte, as a browser would show it.
func (u *units) decompose(s string) {
	u.reset()
	var it norm.Iter
	it.InitString(norm.NFD, s)
	u16 := int32(0)
	for !it.Done() {
		from := it.Pos()
		seg := it.Next()
		to := it.Pos()
		segStart := u16
		for _, r := range s[from:to] {
			u16 += int32(utf16Len(r))
		}
		for len(seg) > 0 {
			r, w := utf8.DecodeRune(seg)
			seg = seg[w:]
			u.orig = append(u.orig, r)
			u.fold = append(u.fold, foldRune(r))
			u.start = append(u.start, segStart)
			u.end = append(u.end, u16)
		}
	}
}

func utf16Len(r rune) int {
	if r >= 0x10000 && r <= utf8.MaxRune {
		return 2
	}
	return 1
}

// Utf16Len returns the length of s in UTF-16 code units, the unit of
// match ranges.
func Utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16Len(r)
	}
	return n
}
