package runecut

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPrefix(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 3, "hel"},
		{"hello", 0, ""},
		{"hello", -1, ""},
		{"café", 4, "caf"}, // é is two bytes: 4 would split it
		{"café", 5, "café"},
		{"日本", 4, "日"},
		{"📁x", 3, ""},
	} {
		if got := Prefix(c.s, c.n); got != c.want {
			t.Errorf("Prefix(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
	if got := Ellipsis("café au lait", 4); got != "caf…" {
		t.Errorf("Ellipsis = %q", got)
	}
	if got := Ellipsis("café", 5); got != "café" {
		t.Errorf("Ellipsis of a short string = %q", got)
	}
}

func FuzzPrefix(f *testing.F) {
	f.Add("café", 4)
	f.Add("📁/docs", 2)
	f.Fuzz(func(t *testing.T, s string, n int) {
		got := Prefix(s, n)
		if !strings.HasPrefix(s, got) || len(got) > max(n, 0) && len(got) != len(s) {
			t.Fatalf("Prefix(%q, %d) = %q: not a prefix within budget", s, n, got)
		}
		if len(got) > n && n >= 0 && len(s) > n {
			t.Fatalf("Prefix(%q, %d) = %q: over budget", s, n, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Prefix(%q, %d) = %q: split a rune", s, n, got)
		}
		// Only a rune that did not fit was dropped.
		if len(got) < min(n, len(s)) && len(s) > len(got) && len(got)+utf8.UTFMax <= n && utf8.ValidString(s) {
			t.Fatalf("Prefix(%q, %d) = %q: dropped more than one rune", s, n, got)
		}
	})
}
