package tools

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/internal/tokencount"
)

// TestCapText: text within the gate is kept whole; larger text is cut to
// the token limit, at a line break when one is near, never inside a rune.
func TestCapText(t *testing.T) {
	ctx := context.Background()
	if got, cut, err := CapText(ctx, nil, "short\n"); err != nil || cut || got != "short\n" {
		t.Fatalf("short: %q %v %v", got, cut, err)
	}
	env := &Env{Limits: Limits{MaxReadTokens: 500}}
	for _, text := range []string{
		strings.Repeat("line of words here\n", 2000),
		strings.Repeat("é漢字🙂", 5000),
		strings.Repeat("x", 10<<20), // over the collection cap
	} {
		got, cut, err := CapText(ctx, env, text)
		if err != nil || !cut || !strings.HasPrefix(text, got) || !utf8.ValidString(got) {
			t.Fatalf("%.20q: cut %v, err %v, %d bytes, valid %v", text, cut, err, len(got), utf8.ValidString(got))
		}
		n, _ := tokencount.Default().CountTokens(ctx, got)
		if n > 500 || n < 200 {
			t.Errorf("%.20q: cut to %d tokens, want near 500", text, n)
		}
		if strings.Contains(text, "\n") && !strings.HasSuffix(got, "\n") {
			t.Errorf("%.20q: not cut at a line break: %.30q", text, got[len(got)-30:])
		}
	}
}

// TestImageBlocks: image bytes give Read's two blocks; other bytes a
// CodeEncoding error.
func TestImageBlocks(t *testing.T) {
	if _, err := ImageBlocks(context.Background(), nil, "x", []byte("not an image")); CodeOf(err) != CodeEncoding {
		t.Fatalf("not an image: %v", err)
	}
}
