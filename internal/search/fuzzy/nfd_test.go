package fuzzy

import (
	"fmt"
	"slices"
	"testing"
)

// sameUnits compares the fast decomposition a with the iterator's b: the
// same units, each spanning a part of the span b gives it (the iterator
// may return several segments as one; a's are the shortest).
func sameUnits(a, b *units) string {
	if !slices.Equal(a.fold, b.fold) || !slices.Equal(a.orig, b.orig) {
		return fmt.Sprintf("units %q (folded %q), the iterator's %q (%q)", a.orig, a.fold, b.orig, b.fold)
	}
	for k := range a.fold {
		if a.start[k] >= a.end[k] || a.start[k] < b.start[k] || a.end[k] > b.end[k] {
			return fmt.Sprintf("unit %d spans [%d, %d), the iterator's [%d, %d)", k, a.start[k], a.end[k], b.start[k], b.end[k])
		}
	}
	return ""
}

// TestDecompositionTables checks the fast decomposition, which reads the
// tables, against the normalisation iterator for every rune the tables
// cover, alone, after a letter and before combining marks in either order.
func TestDecompositionTables(t *testing.T) {
	t.Parallel()
	check := func(s string) {
		t.Helper()
		var a, b units
		a.spans, b.spans = true, true
		if !a.simple(s) {
			return // reordering: decompose falls back to full
		}
		b.full(s)
		if err := sameUnits(&a, &b); err != "" {
			t.Fatalf("the fast decomposition of %+q: %s", s, err)
		}
	}
	runes := func(yield func(rune) bool) {
		for r := rune(0x80); r < nfdTableSize; r++ {
			if !yield(r) {
				return
			}
		}
		for _, rg := range nfdPlain {
			for r := rg[0]; r < rg[1]; r += 7 {
				if !yield(r) {
					return
				}
			}
		}
	}
	checked := 0
	for r := range runes {
		check(string(r))
		check("a/" + string(r) + "b")
		check(string(r) + "\u0301\u0323")
		check(string(r) + "\u0323\u0301")
		checked++
	}
	if checked < nfdTableSize {
		t.Fatalf("only %d runes checked", checked)
	}
}
