package sqlbody

import (
	"strings"
	"testing"
)

// TestSearchedTypesIndexed: every type a search reads is in the partial
// index's term, which a search without it would scan every event for.
func TestSearchedTypesIndexed(t *testing.T) {
	for _, st := range searchedTypes {
		if !strings.Contains(searchedIndexed, "'"+st.typ+"'") {
			t.Errorf("searchedIndexed %s lacks %s", searchedIndexed, st.typ)
		}
	}
	if n := strings.Count(searchedIndexed, "'") / 2; n != len(searchedTypes) {
		t.Errorf("searchedIndexed names %d types, searchedTypes %d", n, len(searchedTypes))
	}
}
