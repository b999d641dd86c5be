package fuzzy

import (
	"context"
	"slices"
	"testing"

	"github.com/ferry-dev/ferry/protocol"
)

// ranked returns the matching paths best first, as TopK ranks them.
func ranked(t *testing.T, query string, paths ...string) []string {
	t.Helper()
	l, err := NewList(paths)
	if err != nil {
		t.Fatal(err)
	}
	out, err := TopK(context.Background(), Compile(query), l, Options{K: len(paths)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range out.Hits {
		got = append(got, l.Path(h.Index))
	}
	return got
}

func wantOrder(t *testing.T, query string, want []string, extra ...string) {
	t.Helper()
	paths := append(slices.Clone(want), extra...)
	// Reverse the input so the order cannot come from the input order.
	slices.Reverse(paths)
	got := ranked(t, query, paths...)
	if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Errorf("%q ranks %q, want %q first", query, got, want)
	}
}

func TestExactAndPrefixFileNameBeatContaining(t *testing.T) {
	t.Parallel()
	wantOrder(t, "router", []string{"web/router.ts", "router/middleware/auth.ts"})
	// exact stem > prefix > contained at a word start > contained mid-word
	wantOrder(t, "router", []string{"x/router.ts", "x/router_utils.ts", "x/app_router.ts", "x/myrouter.ts"})
	// An exact name beats a shorter path that only starts with the query.
	wantOrder(t, "main", []string{"cmd/tool/internal/main.go", "mainx.go"})
}

func TestFileNameBeatsDirectory(t *testing.T) {
	t.Parallel()
	wantOrder(t, "auth", []string{"lib/auth.ts", "auth/index.ts"})
	// The same fuzzy match, once in the name and once in a directory.
	wantOrder(t, "bar", []string{"foo/x/bar_q.go", "foo/bar_q/x.go"})
	wantOrder(t, "conf", []string{"a/b/c/conf.rs", "conf/a.rs"})
}

func TestTermsMatchInAnyOrder(t *testing.T) {
	t.Parallel()
	for _, q := range []string{"test store", "store test", "  store   test "} {
		got := ranked(t, q, "store/store_test.go", "store/index.go", "test/unit.go", "a/b.go")
		if !slices.Equal(got, []string{"store/store_test.go"}) {
			t.Errorf("%q matched %q, want only store/store_test.go", q, got)
		}
	}
}

func TestSlashAnchorsAtSegmentStart(t *testing.T) {
	t.Parallel()
	paths := []string{"mm/page_alloc.c", "mm/xpage.c", "mmx/page.c", "arch/mm/pgtable/page.h", "mm_page.c"}
	got := ranked(t, "mm/page", paths...)
	slices.Sort(got)
	if want := []string{"arch/mm/pgtable/page.h", "mm/page_alloc.c", "mmx/page.c"}; !slices.Equal(got, want) {
		t.Errorf("mm/page matched %q, want %q", got, want)
	}
	got = ranked(t, "/src", "src/a.go", "lib/src/b.go", "xsrc/c.go", "lib/mysrc.go")
	slices.Sort(got)
	if want := []string{"lib/src/b.go", "src/a.go"}; !slices.Equal(got, want) {
		t.Errorf("/src matched %q, want %q", got, want)
	}
	// A trailing slash asks for a directory.
	if got := ranked(t, "docs/", "docs/a.md", "docs.md"); !slices.Equal(got, []string{"docs/a.md"}) {
		t.Errorf("docs/ matched %q", got)
	}
}

func TestCaseOnlyAddsABonus(t *testing.T) {
	t.Parallel()
	if got := ranked(t, "READ", "docs/readme.md", "src/x.go"); !slices.Equal(got, []string{"docs/readme.md"}) {
		t.Errorf("READ matched %q", got)
	}
	if got := ranked(t, "readme", "README.md"); !slices.Equal(got, []string{"README.md"}) {
		t.Errorf("readme matched %q", got)
	}
	// Same length, same positions: upper case typed decides; lower case
	// typed expresses no preference, so the lexical tie-break does.
	wantOrder(t, "README", []string{"b/README.md", "a/readme.md"})
	wantOrder(t, "readme", []string{"a/README.md", "b/readme.md"})
	wantOrder(t, "readme", []string{"a/readme.md", "b/README.md"})
	// An exact file name in another case still beats a longer path.
	wantOrder(t, "kconfig", []string{"Kconfig", "include/linux/kconfig.h"})
	// Unicode case folding: Greek final sigma, Kelvin sign, German eszett
	// (simple folding: ß matches ß and ẞ, not "ss").
	if got := ranked(t, "ΣΊΣΥΦΟΣ", "myth/σίσυφος.txt"); len(got) != 1 {
		t.Errorf("ΣΊΣΥΦΟΣ matched %q", got)
	}
	if got := ranked(t, "kelvin", "units/\u212aelvin.go"); len(got) != 1 {
		t.Errorf("kelvin matched %q", got)
	}
	if got := ranked(t, "STRAẞE", "de/straße.txt"); len(got) != 1 {
		t.Errorf("STRAẞE matched %q", got)
	}
}

func TestNFCAndNFDMatchEachOther(t *testing.T) {
	t.Parallel()
	const nfc, nfd = "caf\u00e9", "cafe\u0301"
	for _, c := range []struct {
		query, path string
		want        []protocol.MatchRange
	}{
		// The decomposed é is two code units; both are highlighted.
		{nfc, "menu/" + nfd + ".txt", []protocol.MatchRange{{Start: 5, End: 10}}},
		{nfd, "menu/" + nfc + ".txt", []protocol.MatchRange{{Start: 5, End: 9}}},
		{nfc, "menu/" + nfc + ".txt", []protocol.MatchRange{{Start: 5, End: 9}}},
		// Without the accent the e alone still matches a decomposed é
		// (the accent is just one more character) but not a composed one
		// by folding; decomposition makes it match too, highlighting é.
		{"cafe", "menu/" + nfc + ".txt", []protocol.MatchRange{{Start: 5, End: 9}}},
	} {
		res, ok := Compile(c.query).Match(c.path, nil)
		if !ok {
			t.Errorf("%+q does not match %+q", c.query, c.path)
			continue
		}
		if !slices.Equal(res.Ranges, c.want) {
			t.Errorf("%+q on %+q: ranges %v, want %v", c.query, c.path, res.Ranges, c.want)
		}
	}
	if _, ok := Compile(nfc).Match("menu/cafe.txt", nil); ok {
		t.Errorf("an accented query matched an unaccented path")
	}
}

func TestRangesAreUTF16IntoTheOriginal(t *testing.T) {
	t.Parallel()
	// 📁 is outside the BMP: two UTF-16 units, four UTF-8 bytes.
	res, ok := Compile("readme").Match("📁/docs/readme.md", nil)
	if !ok {
		t.Fatal("no match")
	}
	if want := []protocol.MatchRange{{Start: 8, End: 14}}; !slices.Equal(res.Ranges, want) {
		t.Errorf("ranges %v, want %v", res.Ranges, want)
	}
	// Touching characters from two terms merge into one range.
	res, ok = Compile("ab cd").Match("abcd.txt", nil)
	if !ok {
		t.Fatal("no match")
	}
	if want := []protocol.MatchRange{{Start: 0, End: 4}}; !slices.Equal(res.Ranges, want) {
		t.Errorf("ranges %v, want %v", res.Ranges, want)
	}
}

func TestScoreIsNormalisedAndTiesAreDeterministic(t *testing.T) {
	t.Parallel()
	res, ok := Compile("router").Match("web/router.ts", nil)
	if !ok || res.Score != 1 {
		t.Errorf("exact file name scores %v (ok %v), want 1", res.Score, ok)
	}
	res, ok = Compile("rtr").Match("lib/x/some/long/path/router.ts", nil)
	if !ok || res.Score <= 0 || res.Score >= 1 {
		t.Errorf("fuzzy match scores %v, want in (0, 1)", res.Score)
	}
	// Equal scores: shorter path first, then lexical order.
	got := ranked(t, "util", "b/util.go", "a/util.go", "ab/util.go")
	if want := []string{"a/util.go", "b/util.go", "ab/util.go"}; !slices.Equal(got, want) {
		t.Errorf("ties ranked %q, want %q", got, want)
	}
}

func TestQueryParsing(t *testing.T) {
	t.Parallel()
	if !Compile("   ").Empty() || !Compile("/").Empty() {
		t.Error("blank and lone-slash queries should be empty")
	}
	p := Compile("a//b")
	if len(p.terms) != 1 || string(p.terms[0].fold) != "a/b" {
		t.Errorf("a//b compiled to %q", p.terms[0].fold)
	}
	for _, c := range []struct {
		prev, next string
		want       bool
	}{
		{"rou", "rout", true},
		{"rou", "rout x", true},
		{"a b", "b a", true},
		{"a b", "ab", false}, // "b" is no prefix of "ab"
		{"rout", "rou", false},
		{"src", "/src", false},
		{"caf", "café", true},
		{"", "x", true},
	} {
		if got := Compile(c.next).Refines(Compile(c.prev)); got != c.want {
			t.Errorf("%q refines %q = %v, want %v", c.next, c.prev, got, c.want)
		}
	}
}
