package download

import (
	"strings"
	"testing"
)

// TestToken: a fresh token is well formed and unique; nothing else of a
// similar shape is.
func TestToken(t *testing.T) {
	t.Parallel()
	a, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewToken()
	if !WellFormedToken(a) || !WellFormedToken(b) || a == b {
		t.Fatalf("tokens %q %q", a, b)
	}
	for _, s := range []string{"", tokenPrefix, a[:len(a)-1], a + "A", "ferry_ui_" + a[len(tokenPrefix):],
		tokenPrefix + strings.Repeat("+", tokenChars), strings.ToUpper(a[:len(tokenPrefix)]) + a[len(tokenPrefix):]} {
		if WellFormedToken(s) {
			t.Errorf("%q is taken for a download token", s)
		}
	}
}
