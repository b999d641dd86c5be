package fuzzy

import (
	"context"
	"testing"
)

// FuzzMatch checks, for any path and query, that matching does not panic,
// that the prefilter and the cheap feasibility test agree with the full
// match, that ranges are valid UTF-16 spans of the original path that
// cover every term's characters in order, and that TopK's pruned scoring
// agrees with Match.
func FuzzMatch(f *testing.F) {
	f.Add("web/router.ts", "router")
	f.Add("menu/cafe\u0301.txt", "caf\u00e9")
	f.Add("menu/caf\u00e9.txt", "cafe\u0301")
	f.Add("📁/docs/READ ME.md", "read me")
	f.Add("mm/page_alloc.c", "/mm/page")
	f.Add("a\xffb/c", "ab")
	f.Add("units/\u212aelvin", "K")
	f.Fuzz(func(t *testing.T, path, query string) {
		var a, b units
		a.spans, b.spans = true, true
		a.reset()
		if a.simple(path) {
			b.full(path)
			if err := sameUnits(&a, &b); err != "" {
				t.Fatalf("the fast decomposition of %+q: %s", path, err)
			}
		}
		p := Compile(query)
		var s Slab
		res, ok := p.Match(path, &s)
		mask := MaskOf(path)
		if ok && mask&p.mask != p.mask {
			t.Fatalf("mask %x rejects a match needing %x", mask, p.mask)
		}
		if mask&p.mask == p.mask && p.feasible(path, mask, &s) != ok {
			t.Fatalf("feasible = %v, Match = %v", !ok, ok)
		}
		if !ok {
			return
		}
		if res.Score < 0 || res.Score > 1 {
			t.Fatalf("score %v out of [0, 1]", res.Score)
		}
		n := Utf16Len(path)
		prev := -1
		for _, r := range res.Ranges {
			if r.Start >= r.End || r.Start <= prev || r.End > n {
				t.Fatalf("bad ranges %v for a path of %d units", res.Ranges, n)
			}
			prev = r.End
		}
		// The folded units under the ranges hold each term in order.
		var u units
		u.decompose(path)
		var lit []rune
		for i, c := range u.fold {
			for _, r := range res.Ranges {
				if int(u.start[i]) >= r.Start && int(u.end[i]) <= r.End {
					lit = append(lit, c)
					break
				}
			}
		}
		for _, term := range p.terms {
			k := 0
			for _, c := range lit {
				if k < len(term.fold) && c == term.fold[k] {
					k++
				}
			}
			if k != len(term.fold) {
				t.Fatalf("ranges %v cover %q, which lacks term %q", res.Ranges, string(lit), string(term.fold))
			}
		}
		l, err := NewList([]string{path, path + "x"})
		if err != nil {
			t.Fatal(err)
		}
		out, err := TopK(context.Background(), p, l, Options{K: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Hits) != 1 || out.Hits[0].Index == 0 && out.Hits[0].Raw != res.Raw {
			t.Fatalf("TopK %+v disagrees with Match %+v", out.Hits, res)
		}
	})
}
