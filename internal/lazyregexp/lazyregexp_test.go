package lazyregexp

import (
	"regexp"
	"sync"
	"testing"
)

func TestSameAsRegexp(t *testing.T) {
	const pat = `^([a-z]+)-(\d{1,3})$`
	lazy, eager := New(pat), regexp.MustCompile(pat)
	for _, s := range []string{"abc-12", "abc-1234", "ABC-1", "", "x-0"} {
		if lazy.MatchString(s) != eager.MatchString(s) {
			t.Errorf("MatchString(%q) differs", s)
		}
		if got, want := lazy.FindStringSubmatch(s), eager.FindStringSubmatch(s); len(got) != len(want) || (len(got) > 0 && got[2] != want[2]) {
			t.Errorf("FindStringSubmatch(%q) = %q, want %q", s, got, want)
		}
		if got, want := lazy.ReplaceAllString(s, "$2"), eager.ReplaceAllString(s, "$2"); got != want {
			t.Errorf("ReplaceAllString(%q) = %q, want %q", s, got, want)
		}
	}
	if lazy.String() != pat {
		t.Errorf("String() = %q", lazy.String())
	}
}

// TestConcurrentFirstUse: the first uses race to compile; all see one
// compiled expression (run with -race).
func TestConcurrentFirstUse(t *testing.T) {
	r := &Regexp{str: `b+`} // not compiled yet, as outside a test binary
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r.ReplaceAllStringFunc("abbc", func(string) string { return "-" }) != "a-c" {
				t.Error("wrong replacement")
			}
		}()
	}
	wg.Wait()
}

// TestNotCompiledUntilUsed is the point of the package: outside a test
// binary nothing is compiled by New.
func TestNotCompiledUntilUsed(t *testing.T) {
	old := inTest
	inTest = false
	defer func() { inTest = old }()
	r := New(`(`) // would panic if compiled
	if r.rx != nil {
		t.Fatal("compiled by New")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a bad pattern did not panic at first use")
		}
	}()
	r.MatchString("x")
}

func TestBadPatternPanicsAtOnceInTests(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New of a bad pattern did not panic in a test binary")
		}
	}()
	New(`[`)
}
