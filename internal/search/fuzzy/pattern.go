package fuzzy

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxTermUnits bounds the folded length of one query term; longer terms are
// cut. Nobody types more into a file picker, and it bounds the score range.
const MaxTermUnits = 256

// Pattern is a compiled query. It is immutable and safe for concurrent use.
type Pattern struct {
	query string
	terms []*term
	mask  uint64 // bits every matching path has
	ideal int32  // sum of the terms' ideal raw scores
	// ascii patterns have only ASCII terms; their bound before the name
	// bonuses is ubName: every unit at the top bonus and in the file name.
	ascii  bool
	ubName int32
	// plainMulti: some term is plain and longer than one unit (its
	// feasibility test reads the path).
	plainMulti bool
	// quick patterns run on the quick scan (see quick.go); singles ones
	// have only single terms.
	quick, singles bool
	// firstLift[c] is the most the exact and prefix name bonuses add to
	// ubName for a file name starting with the folded ASCII character c.
	firstLift [128]int32
	// Quick bounds are memoised per directory (see Slab.quick) under a
	// key of the name's first character (memoFirst: 1 + its index among
	// the plain terms' characters, 0 for any other) plus each plain term's
	// reach times its stride; memoSize is the number of keys, 0 when too
	// many to keep.
	memoFirst  [128]uint8
	memoStride []int
	memoSize   int
	// soloPlain quick patterns are one plain term with memo keys (see
	// Slab.quickSolo).
	soloPlain bool
}

// term is one space-separated part of a query.
type term struct {
	fold []rune // folded NFD units, leading '/' removed, runs of '/' collapsed
	orig []rune // the same units unfolded, for the case bonus
	// cased[i]: unit i was typed in another form than its folded one (upper
	// case): only such units earn bonusCase, which adds up to caseMax.
	cased   []bool
	caseMax int32
	// anchored[i]: unit i must start a path segment (it follows a '/' in
	// the term, or is the first unit of a term that began with '/').
	anchored []bool
	// lead is true when the term began with '/'.
	lead bool
	// slash is true when the term has a '/' (after a leading one).
	slash bool
	// ascii terms run on the byte fast paths: fold holds only ASCII.
	ascii bool
	bytes []byte // fold as bytes when ascii
	// plain ASCII terms (no '/', no lead anchor) are tested for a match by
	// subsequenceASCII, with each byte broadcast to a word in words.
	plain bool
	// dirOnly ASCII terms end with '/': only the directories hold them.
	dirOnly bool
	words   []uint64
	// single terms are one character with a mask bit of its own: the
	// path's mask alone decides whether they match.
	single bool
	// rows[c] has bit i set when unit i is the ASCII character c (used for
	// terms of up to 64 units).
	rows *[128]uint64
	// rowsFold[c] is rows[lower(c)]: the same table indexed by the
	// unfolded ASCII byte.
	rowsFold *[128]uint64
	// last is the part after the term's last '/' ("" when it ends with one):
	// it is compared with file names for the exact and prefix bonuses.
	last      []rune
	lastBytes []byte
	mask      uint64
	// ubBase bounds the DP score of any alignment before path-dependent
	// bonuses (basename, exact, prefix), for pruning.
	ubBase int32
	ideal  int32
	// allInName is, for a plain term, what its units gain with all of
	// them in the file name, before position bonuses (see Slab.quick);
	// split and off are its quick bounds for any directories.
	allInName  int32
	split, off []int32
}

// Compile parses a query. Terms are separated by white space and must all
// match, in any order. Matching is case-insensitive and NFC/NFD-insensitive.
// A '/' in a term matches a path separator and anchors the character after
// it at the start of a path segment; a leading '/' anchors the term's first
// character at the start of a segment. An empty or all-space query compiles
// to a pattern that matches every path with score 0.
func Compile(query string) *Pattern {
	p := &Pattern{query: query, ascii: true}
	for _, f := range strings.FieldsFunc(query, unicode.IsSpace) {
		t := compileTerm(f)
		if t == nil {
			continue
		}
		p.terms = append(p.terms, t)
		p.mask |= t.mask
		p.ideal += t.ideal
		p.ascii = p.ascii && t.ascii
		p.plainMulti = p.plainMulti || t.plain && !t.single
		p.ubName += t.ubBase + bonusBase*int32(len(t.fold))
	}
	p.quick = quickTerms(p)
	for _, t := range p.terms {
		if t.ascii {
			p.firstLift[t.bytes[0]] += bonusExact
		}
	}
	p.singles = p.quick && singleTerms(p)
	if p.quick {
		p.memoKeys()
		p.soloPlain = len(p.terms) == 1 && !p.terms[0].dirOnly && p.memoSize > 0
	}
	return p
}

// memoMax bounds a pattern's memo keys (see Pattern.memoSize).
const memoMax = 1 << 13

// memoKeys lays out the memo keys of quick pattern p.
func (p *Pattern) memoKeys() {
	n := 1
	for _, t := range p.terms {
		if t.dirOnly {
			continue
		}
		for _, c := range t.bytes {
			if p.memoFirst[c] == 0 {
				p.memoFirst[c] = uint8(n) //nolint:gosec // at most 64 units a term, bounded below
				n++
				if n > 255 {
					p.memoFirst = [128]uint8{}
					return
				}
			}
		}
	}
	p.memoStride = make([]int, len(p.terms))
	size := n
	for i, t := range p.terms {
		if t.dirOnly {
			continue
		}
		p.memoStride[i] = size
		size *= len(t.bytes) + 1
		if size > memoMax {
			p.memoFirst, p.memoStride = [128]uint8{}, nil
			return
		}
	}
	p.memoSize = size
}

func compileTerm(s string) *term {
	var u units
	u.decompose(s)
	t := &term{}
	prevSlash := false
	for i, r := range u.fold {
		if r == '/' {
			if len(t.fold) == 0 {
				t.lead = true
				continue
			}
			if prevSlash {
				continue
			}
		}
		if len(t.fold) >= MaxTermUnits {
			break
		}
		prevSlash = r == '/'
		t.fold = append(t.fold, r)
		t.orig = append(t.orig, u.orig[i])
	}
	if len(t.fold) == 0 {
		return nil
	}
	t.anchored = make([]bool, len(t.fold))
	t.anchored[0] = t.lead
	for i := 1; i < len(t.fold); i++ {
		t.anchored[i] = t.fold[i-1] == '/'
	}
	t.ascii = true
	for _, r := range t.fold {
		if r >= utf8.RuneSelf {
			t.ascii = false
			t.mask |= 1 << bitNonASCII
		} else {
			t.mask |= maskASCII[r]
		}
	}
	lastSlash := -1
	for i, r := range t.fold {
		if r == '/' {
			lastSlash = i
		}
	}
	t.last = t.fold[lastSlash+1:]
	t.slash = lastSlash >= 0
	if t.ascii {
		t.bytes = make([]byte, len(t.fold))
		for i, r := range t.fold {
			t.bytes[i] = byte(r)
		}
		t.lastBytes = t.bytes[lastSlash+1:]
		t.plain = !t.lead && lastSlash < 0
		t.single = t.plain && len(t.bytes) == 1 && maskASCII[t.bytes[0]]&(1<<bitPunct) == 0
		t.dirOnly = t.bytes[len(t.bytes)-1] == '/'
		for _, c := range t.bytes {
			t.words = append(t.words, uint64(c)*ones)
		}
	}
	t.rows = new([128]uint64)
	for i, r := range t.fold {
		if r < 0x80 && i < 64 {
			t.rows[r] |= 1 << i
		}
	}
	t.rowsFold = new([128]uint64)
	for c := range t.rowsFold {
		t.rowsFold[c] = t.rows[lowerASCII[c]]
	}
	m := int32(len(t.fold))
	t.cased = make([]bool, len(t.fold))
	for i := range t.fold {
		if t.cased[i] = t.orig[i] != t.fold[i]; t.cased[i] {
			t.caseMax += bonusCase
		}
	}
	t.allInName = m*(scoreMatch+bonusBase) + t.caseMax
	t.ubBase = m*scoreMatch + t.caseMax + firstCharMultiplier*bonusMax + (m-1)*bonusMax
	t.ideal = idealScore(t)
	if t.plain && m <= 64 {
		t.split, t.off = make([]int32, m), make([]int32, m+1)
		splitBounds(t, t.split, t.off, anyDirs(t))
	}
	return t
}

// idealScore is the raw score of the term matched against its own text
// taken as a path: the best a real path can reasonably do, used to scale
// scores into [0, 1].
func idealScore(t *term) int32 {
	text := string(t.orig)
	one := &Pattern{terms: []*term{t}}
	raw, ok := one.raw(text, new(Slab), false)
	if !ok || raw <= 0 {
		return 1
	}
	return raw
}

// Query returns the text the pattern was compiled from.
func (p *Pattern) Query() string { return p.query }

// Empty reports whether the pattern has no terms (it matches everything).
func (p *Pattern) Empty() bool { return len(p.terms) == 0 }

// Refines reports whether every path that p matches is also matched by
// prev, so that a search for p may scan only prev's matches (Options.Within)
// and find exactly what a full scan would. This holds when each of prev's
// terms is a prefix of one of p's terms with the same leading anchor: the
// usual case of typing one more character or starting one more term.
func (p *Pattern) Refines(prev *Pattern) bool {
	if prev == nil {
		return false
	}
	for _, old := range prev.terms {
		found := false
		for _, t := range p.terms {
			if t.lead == old.lead && len(t.fold) >= len(old.fold) && runesEqual(t.fold[:len(old.fold)], old.fold) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func runesEqual(a, b []rune) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// rowsOf returns the set of units of t (as bits) equal to the folded
// character c; t has at most 64 units.
func (t *term) rowsOf(c rune) uint64 {
	if c < 0x80 {
		return t.rows[c]
	}
	var set uint64
	for i, r := range t.fold {
		if r == c && i < 64 {
			set |= 1 << i
		}
	}
	return set
}
