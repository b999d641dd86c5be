package fuzzy

import (
	"slices"
	"strings"
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
	bitSlash = 36
	bitDot   = 37
	bitUnder = 38
	bitDash  = 39
	bitSpace = 40
	bitPunct = 41 // any other ASCII byte
	// Bits 42..53 hold the byte length of an ASCII path's file name (the
	// part after the last '/'), saturated at nameLenMax, so that the scan
	// finds the name without searching for it.
	nameLenShift = 42
	nameLenMax   = 1<<12 - 1
	bitUpper     = 62 // the path has an ASCII upper-case letter
	bitNonASCII  = 63 // the path has a byte >= 0x80: units come from NFD folding
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

// foldTable caches foldRune below foldTableSize (Latin, Greek, Cyrillic and
// the letter-like symbols, Kelvin sign included); above, SimpleFold is
// quick because most runes there have no case.
const foldTableSize = 0x2200

var foldTable = func() *[foldTableSize]rune {
	var t [foldTableSize]rune
	for r := range rune(foldTableSize) {
		t[r] = foldOrbit(r)
	}
	return &t
}()

// foldRune maps r to the representative of its simple case-folding orbit:
// the lower-case ASCII letter when the orbit has one (so the Kelvin sign
// matches k), otherwise the smallest rune of the orbit (so σ, ς and Σ are one).
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		return rune(lowerASCII[r])
	}
	if r >= 0 && r < foldTableSize {
		return foldTable[r]
	}
	return foldOrbit(r)
}

func foldOrbit(r rune) rune {
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
// for it: which folded ASCII characters it contains, two flags and the
// length of an ASCII path's file name. It is
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
		name := len(path) - strings.LastIndexByte(path, '/') - 1
		return m | uint64(min(name, nameLenMax))<<nameLenShift
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
	it    norm.Iter  // kept here: a local one escapes to the heap
	one   [1]nfdUnit // nfdOf's answer for a rune without decomposition
	spans bool       // start and end are filled (decompose, not decomposeUnits)
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
	u.spans = true
	u.reset()
	if !u.simple(s) {
		u.full(s)
	}
}

// decomposeUnits is decompose without the spans (start and end), which
// only ranges need.
func (u *units) decomposeUnits(s string) {
	u.spans = false
	u.reset()
	if !u.simple(s) {
		u.full(s)
	}
}

// full is decompose through a normalisation iterator.
func (u *units) full(s string) {
	u.reset()
	it := &u.it
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
			if u.spans {
				u.start = append(u.start, segStart)
				u.end = append(u.end, u16)
			}
		}
	}
}

// simple fills u like full but without a normalisation iterator, for the
// common text where nothing needs reordering: each rune is replaced by its
// canonical decomposition, looked up in the tables (Hangul syllables by
// their formula), and the units of an NFD segment (a starter and the marks
// after it) all span the whole segment, as full does. It reports false,
// leaving u partly filled, when marks would need reordering or s is not
// valid UTF-8.
func (u *units) simple(s string) bool {
	u16 := int32(0)
	seg, segU16 := 0, int32(0) // first unit and offset of the current segment
	lastCCC := uint8(0)
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			// A run of ASCII: one unit, and one segment, a byte.
			j := i + 1
			for j < len(s) && s[j] < utf8.RuneSelf {
				j++
			}
			u.addASCII(s[i:j], u16)
			u16 += int32(j - i)
			seg, segU16, lastCCC = len(u.fold)-1, u16-1, 0
			i = j
			continue
		}
		at := i
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		w := int32(utf16Len(r))
		if r == utf8.RuneError {
			return false // bad bytes group differently
		}
		if r >= hangulBase && r < hangulBase+hangulCount {
			seg, segU16, lastCCC = len(u.fold), u16, 0
			si := r - hangulBase
			u.add(hangulL+si/hangulN, u16, u16+w)
			u.add(hangulV+si%hangulN/hangulT, u16, u16+w)
			if t := si % hangulT; t != 0 {
				u.add(hangulTBase+t, u16, u16+w)
			}
			u16 += w
			continue
		}
		if units, ok := nfdOf(r, &u.one); ok {
			for k, du := range units {
				if !u.stepFolded(du, k == 0, &seg, &segU16, &lastCCC, u16, w) {
					return false
				}
			}
			// The segment grew: its earlier units span it all.
			for k := seg; k < len(u.end); k++ {
				u.end[k] = u16 + w
			}
			u16 += w
			continue
		}
		p := norm.NFD.PropertiesString(s[at:])
		d := p.Decomposition()
		if d == nil {
			if !u.step(r, p.CCC(), true, &seg, &segU16, &lastCCC, u16, w) {
				return false
			}
		}
		for first := true; len(d) > 0; first = false {
			ccc := norm.NFD.Properties(d).CCC()
			dr, n := utf8.DecodeRune(d)
			d = d[n:]
			if !u.step(dr, ccc, first, &seg, &segU16, &lastCCC, u16, w) {
				return false
			}
		}
		// The segment grew: its earlier units span it all.
		for k := seg; k < len(u.end); k++ {
			u.end[k] = u16 + w
		}
		u16 += w
	}
	return true
}

// step adds one unit of the rune at u16 (w code units long) to the
// current segment, or starts a new one; it reports false when the marks
// would need reordering.
func (u *units) step(r rune, ccc uint8, first bool, seg *int, segU16 *int32, lastCCC *uint8, u16, w int32) bool {
	switch {
	case ccc == 0 && first:
		*seg, *segU16, *lastCCC = len(u.fold), u16, 0
	case ccc == 0 || ccc < *lastCCC:
		return false // a starter inside a decomposition, or reordering
	default:
		*lastCCC = ccc
	}
	u.add(r, *segU16, u16+w)
	return true
}

// stepFolded is step for a unit from the decomposition tables.
func (u *units) stepFolded(du nfdUnit, first bool, seg *int, segU16 *int32, lastCCC *uint8, u16, w int32) bool {
	switch {
	case du.ccc == 0 && first:
		*seg, *segU16, *lastCCC = len(u.fold), u16, 0
	case du.ccc == 0 || du.ccc < *lastCCC:
		return false // a starter inside a decomposition, or reordering
	default:
		*lastCCC = du.ccc
	}
	u.orig = append(u.orig, du.r)
	u.fold = append(u.fold, du.fold)
	if u.spans {
		u.start = append(u.start, *segU16)
		u.end = append(u.end, u16+w)
	}
	return true
}

// Hangul syllable decomposition (Unicode 3.12).
const (
	hangulBase  = 0xAC00
	hangulCount = 11172
	hangulL     = 0x1100
	hangulV     = 0x1161
	hangulTBase = 0x11A7
	hangulT     = 28
	hangulN     = 21 * hangulT
)

func (u *units) add(r rune, start, end int32) {
	u.orig = append(u.orig, r)
	u.fold = append(u.fold, foldRune(r))
	if u.spans {
		u.start = append(u.start, start)
		u.end = append(u.end, end)
	}
}

// addASCII adds the units of run, an ASCII string at UTF-16 offset u16.
func (u *units) addASCII(run string, u16 int32) {
	n, k := len(u.fold), len(run)
	u.orig, u.fold = slices.Grow(u.orig, k)[:n+k], slices.Grow(u.fold, k)[:n+k]
	orig, fold := u.orig[n:], u.fold[n:]
	for x := range k {
		c := run[x] & 0x7f
		orig[x], fold[x] = rune(c), rune(lowerASCII[c])
	}
	if u.spans {
		u.start, u.end = slices.Grow(u.start, k)[:n+k], slices.Grow(u.end, k)[:n+k]
		start, end := u.start[n:], u.end[n:]
		for x := range k {
			start[x], end[x] = u16+int32(x), u16+int32(x)+1
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
