package fuzzy

import (
	"sync"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The canonical decompositions of the runes below nfdTableSize (Latin,
// Greek, Cyrillic, the other alphabets and the kana), and of the ranges in
// nfdPlain that have none, come from tables built on first use rather
// than from the normalisation package's tries, rune by rune: decomposing
// every non-ASCII path again for each keystroke is most of what a search
// of such paths costs.
const nfdTableSize = 0x3400

// nfdUnit is one unit of a decomposition: the rune, folded, and its
// canonical combining class.
type nfdUnit struct {
	r, fold rune
	ccc     uint8
}

var (
	nfdOnce  sync.Once
	nfdIndex []uint32  // rune → its first unit in nfdUnits; rune+1's first ends it
	nfdUnits []nfdUnit // the decompositions of all runes below nfdTableSize
	// nfdPlain are rune ranges whose runes have no decomposition, combining
	// class 0 and no case (checked when the tables are built).
	nfdPlain   = [][2]rune{{0x3400, 0xa000}, {0x1f000, 0x1fb00}}
	nfdPlainOK []bool
)

func buildNFD() {
	nfdIndex = make([]uint32, nfdTableSize+1)
	var buf [utf8.UTFMax]byte
	for r := rune(0); r < nfdTableSize; r++ {
		nfdIndex[r] = uint32(len(nfdUnits)) //nolint:gosec // a few tens of thousands
		n := utf8.EncodeRune(buf[:], r)
		p := norm.NFD.Properties(buf[:n])
		d := p.Decomposition()
		if d == nil {
			nfdUnits = append(nfdUnits, nfdUnit{r: r, fold: foldRune(r), ccc: p.CCC()})
			continue
		}
		for len(d) > 0 {
			ccc := norm.NFD.Properties(d).CCC()
			dr, w := utf8.DecodeRune(d)
			d = d[w:]
			nfdUnits = append(nfdUnits, nfdUnit{r: dr, fold: foldRune(dr), ccc: ccc})
		}
	}
	nfdIndex[nfdTableSize] = uint32(len(nfdUnits)) //nolint:gosec // as above
	nfdPlainOK = make([]bool, len(nfdPlain))
	for i, rg := range nfdPlain {
		ok := true
		for r := rg[0]; r < rg[1] && ok; r++ {
			n := utf8.EncodeRune(buf[:], r)
			p := norm.NFD.Properties(buf[:n])
			ok = p.Decomposition() == nil && p.CCC() == 0 && foldRune(r) == r
		}
		nfdPlainOK[i] = ok
	}
}

// nfdOf returns the canonical decomposition of r from the tables, or
// false when they do not cover r.
func nfdOf(r rune, one *[1]nfdUnit) ([]nfdUnit, bool) {
	nfdOnce.Do(buildNFD)
	if r >= 0 && r < nfdTableSize {
		return nfdUnits[nfdIndex[r]:nfdIndex[r+1]], true
	}
	for i, rg := range nfdPlain {
		if r >= rg[0] && r < rg[1] && nfdPlainOK[i] {
			one[0] = nfdUnit{r: r, fold: r}
			return one[:], true
		}
	}
	return nil, false
}
