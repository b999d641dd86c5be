package tokencount_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tiktoken-go/tokenizer/codec"

	"github.com/ferry-dev/ferry/internal/tokencount"
	"github.com/ferry-dev/ferry/internal/tokencount/tokencounttest"
)

func TestBPE(t *testing.T) {
	tokencounttest.Run(t, func(*testing.T) tokencount.Counter { return tokencount.NewBPE() })
}

func TestDefaultIsShared(t *testing.T) {
	a, b := tokencount.Default(), tokencount.Default()
	if a != b {
		t.Fatal("Default returned two counters")
	}
}

func TestEstimate(t *testing.T) {
	for _, c := range []struct{ n, want int }{{-1, 0}, {0, 0}, {1, 1}, {4, 1}, {5, 2}, {100000, 25000}} {
		if got := tokencount.Estimate(c.n); got != c.want {
			t.Errorf("Estimate(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

// Known cl100k_base counts, so a change of vocabulary is noticed.
func TestBPEKnownCounts(t *testing.T) {
	b := tokencount.NewBPE()
	for _, c := range []struct {
		text string
		want int
	}{
		{"hello world", 2},
		{"tiktoken is great!", 6},
	} {
		n, err := b.CountTokens(context.Background(), c.text)
		if err != nil || n != c.want {
			t.Errorf("CountTokens(%q) = %d, %v; want %d", c.text, n, err, c.want)
		}
	}
}

// Chunked counting of a long text stays within a token per chunk of the
// one-shot count.
func TestBPEChunkedCountIsClose(t *testing.T) {
	text := strings.Repeat("for (int i = 0; i < n; i++) { sum += a[i]; }\n", 6000) // ~280 KB
	oneShot, err := codec.NewCl100kBase().Count(text)
	if err != nil {
		t.Fatal(err)
	}
	n, err := tokencount.NewBPE().CountTokens(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	if d := n - oneShot; d < -5 || d > 5 {
		t.Fatalf("chunked %d, one-shot %d", n, oneShot)
	}
	// A single line longer than a chunk is cut at a rune boundary.
	long := strings.Repeat("é", 100000)
	one, _ := codec.NewCl100kBase().Count(long)
	got, err := tokencount.NewBPE().CountTokens(context.Background(), long)
	if err != nil {
		t.Fatal(err)
	}
	if d := got - one; d < -5 || d > 5 {
		t.Fatalf("long line: chunked %d, one-shot %d", got, one)
	}
}
