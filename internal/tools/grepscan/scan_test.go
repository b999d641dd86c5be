package grepscan

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// grNaive is the obvious line-by-line grep the streaming scanner must
// agree with: every line matched alone, context as the union of the
// windows around matches.
func grNaive(content []byte, re *regexp.Regexp, before, after int) []Line {
	if len(content) == 0 {
		return nil
	}
	lines := bytes.Split(content, []byte{'\n'})
	if content[len(content)-1] == '\n' {
		lines = lines[:len(lines)-1]
	}
	show := make([]int, len(lines)) // 0 no, 1 context, 2 match
	for i, l := range lines {
		if !re.Match(l) {
			continue
		}
		show[i] = 2
		for j := max(0, i-before); j <= min(len(lines)-1, i+after); j++ {
			if show[j] == 0 {
				show[j] = 1
			}
		}
	}
	var out []Line
	for i, l := range lines {
		switch show[i] {
		case 2:
			at := re.FindIndex(l)[0]
			out = append(out, Line{No: int64(i + 1), Text: DisplayLine(l, at), Match: true})
		case 1:
			out = append(out, Line{No: int64(i + 1), Text: DisplayLine(l, -1)})
		}
	}
	return out
}

func grScan(t *testing.T, sc *Scanner, content []byte) []Line {
	t.Helper()
	var got []Line
	_, err := sc.Scan(context.Background(), bytes.NewReader(content), func(l Line) error {
		got = append(got, l)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestGrepScanMatchesNaive runs the streaming scanner with tiny buffers
// (so that lines straddle buffer ends and many lines take the long-line
// path) on random content, against the naive grep.
func TestGrepScanMatchesNaive(t *testing.T) {
	t.Parallel()
	words := []string{"foo", "bar", "baz", "x", "", " ", "fo", "o\r", "Foo", "ab"}
	patterns := []string{"foo", "^foo", "o$", "ba[rz]", "\\bx\\b", "", "a|b", "o\\s*$", "^$", "(?i)FOO", "z.*f"}
	for seed := range 400 {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		var b bytes.Buffer
		for range rng.IntN(40) {
			for range rng.IntN(6) {
				b.WriteString(words[rng.IntN(len(words))])
			}
			if rng.IntN(15) == 0 {
				// A long line, past the tiny buffer and the display cap.
				b.WriteString(strings.Repeat("y", 400+rng.IntN(900)))
				b.WriteString(words[rng.IntN(len(words))])
			}
			b.WriteByte('\n')
		}
		if rng.IntN(2) == 0 && b.Len() > 0 {
			b.Truncate(b.Len() - 1) // no final newline
		}
		pat := patterns[rng.IntN(len(patterns))]
		re := regexp.MustCompile("(?m)" + pat)
		before, after := rng.IntN(3), rng.IntN(3)
		sc := &Scanner{Re: re, Before: before, After: after, WantLines: true, BufSize: 16 + rng.IntN(64)}
		got := grScan(t, sc, b.Bytes())
		want := grNaive(b.Bytes(), re, before, after)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("seed %d, pattern %q, -B %d -A %d, buffer %d, content %q:\n got %v\nwant %v",
				seed, pat, before, after, sc.BufSize, b.String(), got, want)
		}
	}
}

func TestGrepScanCountsAndStops(t *testing.T) {
	t.Parallel()
	content := []byte("a\nb\na\na\n")
	sc := &Scanner{Re: regexp.MustCompile("(?m)a")}
	out, err := sc.Scan(context.Background(), bytes.NewReader(content), func(Line) error { return nil })
	if err != nil || out.Matches != 3 {
		t.Fatalf("count: %+v %v", out, err)
	}
	calls := 0
	out, err = sc.Scan(context.Background(), bytes.NewReader(content), func(Line) error {
		calls++
		return ErrStop
	})
	if err != nil || calls != 1 || out.Matches != 1 {
		t.Fatalf("stop: %+v %v, %d calls", out, err, calls)
	}
}

func TestGrepScanCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sc := &Scanner{Re: regexp.MustCompile("(?m)a")}
	_, err := sc.Scan(ctx, bytes.NewReader(bytes.Repeat([]byte("a\n"), 1000)), func(Line) error { return nil })
	if err == nil {
		t.Fatal("a cancelled scan succeeded")
	}
}

func TestGrepDisplayLine(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 1000) + "NEEDLE" + strings.Repeat("b", 1000)
	got := DisplayLine([]byte(long), 1000)
	if !strings.Contains(got, "NEEDLE") || !strings.HasPrefix(got, "[… 875 bytes] ") || !strings.HasSuffix(got, " [… 631 more bytes]") {
		t.Errorf("excerpt: %q", got)
	}
	if got := DisplayLine([]byte("short\r"), 0); got != "short" {
		t.Errorf("CR kept: %q", got)
	}
	if got := DisplayLine([]byte("bad\xffutf8"), 0); got != "bad\uFFFDutf8" {
		t.Errorf("invalid UTF-8: %q", got)
	}
	// Runes, not bytes: 500 three-byte runes fit.
	wide := strings.Repeat("日", 500)
	if got := DisplayLine([]byte(wide), 0); got != wide {
		t.Errorf("500 runes were cut")
	}
}

func TestGrepScanMultilineCap(t *testing.T) {
	t.Parallel()
	sc := &Scanner{Re: regexp.MustCompile("(?ms)a.b"), Multiline: true, MaxWhole: 10}
	out, err := sc.Scan(context.Background(), bytes.NewReader([]byte("a\nb\n")), func(Line) error { return nil })
	if err != nil || out.TooLarge || out.Matches != 1 {
		t.Fatalf("small file: %+v %v", out, err)
	}
	out, err = sc.Scan(context.Background(), bytes.NewReader([]byte("a\nb\n0123456789")), func(Line) error { return nil })
	if err != nil || !out.TooLarge || out.Matches != 0 {
		t.Fatalf("large file: %+v %v", out, err)
	}
}
