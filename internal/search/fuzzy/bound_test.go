package fuzzy

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestBoundsAreSound checks the proof obligation of every bound on random
// paths and queries: no term's bound (the cheap one from the file name, or
// termBound's) is below the term's exact DP score, and a bound claimed
// exact equals it.
func TestBoundsAreSound(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 5))
	checked := 0
	for range 20000 {
		path := randomPath(r)
		p := Compile(randomQuery(r, path))
		if r.IntN(2) == 0 {
			path = randomPath(r) // often a path the query was not made from
		}
		checked += checkBounds(t, p, path)
	}
	if checked < 5000 {
		t.Fatalf("only %d matching (path, term) pairs checked", checked)
	}
}

// TestDirectoryCacheIsSound runs the same check with the per-directory
// cache on, over runs of files in one directory scored one after another
// with one Slab, as TopK's workers do.
func TestDirectoryCacheIsSound(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(9, 4))
	checked := 0
	for range 3000 {
		dir := randomPath(r) + "/"
		p := Compile(randomQuery(r, dir+randomPath(r)))
		s := &Slab{dc: dirCache{on: true}}
		for range 1 + r.IntN(6) {
			name := randomPath(r)
			if i := strings.LastIndexByte(name, '/'); i >= 0 {
				name = name[i+1:]
			}
			checked += checkBoundsSlab(t, p, dir+name, s)
		}
	}
	if checked < 2000 {
		t.Fatalf("only %d matching (path, term) pairs checked", checked)
	}
}

// checkBounds checks p's bounds on path against the exact scores and
// returns how many terms it checked (0 when path does not match).
func checkBounds(t *testing.T, p *Pattern, path string) int {
	t.Helper()
	return checkBoundsSlab(t, p, path, new(Slab))
}

func checkBoundsSlab(t *testing.T, p *Pattern, path string, s *Slab) int {
	t.Helper()
	mask := MaskOf(path)
	_, match := p.Match(path, nil)
	if p.Empty() || mask&p.mask != p.mask {
		return 0
	}
	if feasible := p.feasible(path, mask, s); feasible != match {
		t.Fatalf("%q on %q: the feasibility test says %v, Match %v", p.query, path, feasible, match)
	}
	if !match {
		return 0
	}
	if mask&(1<<bitNonASCII) != 0 {
		s.u.decompose(path)
		u := &s.u
		return checkBoundsView(t, p, path, s, view[rune]{fold: u.fold, orig: u.orig, base: baseStart(u.fold)})
	}
	b := asBytes(path)
	return checkBoundsView(t, p, path, s, view[byte]{fold: b, orig: b, base: baseStart(b)})
}

func checkBoundsView[E unit](t *testing.T, p *Pattern, path string, s *Slab, v view[E]) int {
	t.Helper()
	reachBound(p, s, v, neg)
	tight := append([]int32(nil), s.tight...)
	bounds(p, s, v, neg)
	ub, state := append([]int32(nil), s.ub...), append([]uint8(nil), s.state...)
	var exact Slab
	for i, tm := range p.terms {
		score, ok := align(tm, &exact, v.fold, v.orig, v.base, false)
		if !ok {
			t.Fatalf("%q on %q: a feasible path does not align", string(tm.orig), path)
		}
		if tight[i] < score {
			t.Fatalf("%q on %q: the file-name bound %d is below the score %d", string(tm.orig), path, tight[i], score)
		}
		if ub[i] < score || state[i] == termExact && ub[i] != score {
			t.Fatalf("%q on %q: bound %d (exact %v), score %d", string(tm.orig), path, ub[i], state[i] == termExact, score)
		}
	}
	return len(p.terms)
}

// TestQuickScanIsSound checks the quick scan against Match on runs of files
// in one directory, as TopK's workers see them: it must decide the match
// exactly, and a bound it returns (below a threshold or not) must not be
// below the exact score when it claims to reach the threshold, nor above
// the threshold when it claims not to.
func TestQuickScanIsSound(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 11))
	checked := 0
	for range 20000 {
		dir := randomPath(r) + "/"
		if hasNonASCII(dir) {
			continue
		}
		p := Compile(randomQuery(r, dir+randomPath(r)))
		if !p.quick {
			continue
		}
		s := &Slab{dc: dirCache{on: true}}
		for range 1 + r.IntN(6) {
			name := randomPath(r)
			if i := strings.LastIndexByte(name, '/'); i >= 0 {
				name = name[i+1:]
			}
			path := dir + name
			if r.IntN(8) == 0 {
				path = name // no directory
			}
			if hasNonASCII(path) || p.mask&MaskOf(path) != p.mask {
				continue
			}
			thr := int32(neg)
			if r.IntN(2) == 0 {
				thr = int32(r.IntN(300))
			}
			res, want := p.Match(path, nil)
			match, ub := s.quick(p, path, len(name), thr)
			if path == name {
				match, ub = s.quick(p, path, len(path), thr)
			}
			if match != want {
				t.Fatalf("%q on %q: the quick scan says match %v, Match %v", p.query, path, match, want)
			}
			if !match {
				continue
			}
			checked++
			if ub >= thr && ub < res.Raw || ub < thr && res.Raw >= thr {
				t.Fatalf("%q on %q (threshold %d): quick bound %d, score %d", p.query, path, thr, ub, res.Raw)
			}
		}
	}
	if checked < 2000 {
		t.Fatalf("only %d matching paths checked", checked)
	}
}

// TestReachFrom checks the eight-bytes-at-a-time reach against baseReach.
func TestReachFrom(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		path := randomPath(r)
		if hasNonASCII(path) {
			continue
		}
		p := Compile(strings.ToLower(randomQuery(r, path)))
		b := []byte(path)
		base := baseStart(b)
		for _, tm := range p.terms {
			if !tm.plain {
				continue
			}
			if got, want := reachFrom(tm.words, b, base), int(baseReach(b, base, tm.fold)); got != want {
				t.Fatalf("reach of %q in %q: %d, want %d", string(tm.fold), path, got, want)
			}
		}
	}
}
