// Package tokencounttest is the suite every tokencount.Counter must pass:
// BPE here, the provider-backed counter of issue 6 with its fake server.
package tokencounttest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/ferry-dev/ferry/internal/tokencount"
)

// Run checks the properties Read's token gate relies on. newCounter returns
// a fresh counter for each subtest.
func Run(t *testing.T, newCounter func(t *testing.T) tokencount.Counter) {
	t.Helper()
	ctx := context.Background()

	t.Run("empty text has no tokens", func(t *testing.T) {
		n, err := newCounter(t).CountTokens(ctx, "")
		if err != nil || n != 0 {
			t.Fatalf("CountTokens(\"\") = %d, %v; want 0, nil", n, err)
		}
	})

	t.Run("a word is a few tokens", func(t *testing.T) {
		n, err := newCounter(t).CountTokens(ctx, "hello")
		if err != nil {
			t.Fatal(err)
		}
		if n < 1 || n > 3 {
			t.Fatalf("CountTokens(hello) = %d, want 1..3", n)
		}
	})

	// The gate's stage 1 passes any text of at most MaxReadTokens bytes
	// without counting: that is only sound if no counter ever finds more
	// tokens than bytes.
	t.Run("never more tokens than bytes", func(t *testing.T) {
		c := newCounter(t)
		for _, text := range []string{
			"x",
			"func main() {\n\tfmt.Println(\"hi\")\n}\n",
			"日本語のテキストと絵文字 🎉🎉🎉 そして記号 ※※※",
			"\x00\x01\x02 ~!@#$%^&*()_+{}|:\"<>?`-=[]\\;',./",
			strings.Repeat("Zq9", 300),
			"\ufffd\ufffd invalid \xff\xfe bytes",
		} {
			n, err := c.CountTokens(ctx, text)
			if err != nil {
				t.Fatalf("CountTokens(%q): %v", text, err)
			}
			if n < 1 || n > len(text) {
				t.Errorf("CountTokens(%q) = %d, want 1..%d", text, n, len(text))
			}
		}
	})

	t.Run("deterministic and safe for concurrent use", func(t *testing.T) {
		c := newCounter(t)
		text := strings.Repeat("The quick brown fox jumps over the lazy dog.\n", 200)
		want, err := c.CountTokens(ctx, text)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Go(func() {
				n, err := c.CountTokens(ctx, text)
				if err == nil && n != want {
					err = errors.New("count differs between calls")
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("grows with the text", func(t *testing.T) {
		c := newCounter(t)
		line := "total += weights[i] * values[i] // accumulate\n"
		one, err := c.CountTokens(ctx, line)
		if err != nil {
			t.Fatal(err)
		}
		many, err := c.CountTokens(ctx, strings.Repeat(line, 1000))
		if err != nil {
			t.Fatal(err)
		}
		// Merges across repetitions may save a little, never most of it.
		if many < 900*one || many > 1000*one+10 {
			t.Fatalf("1 line = %d tokens, 1000 lines = %d; want about 1000x", one, many)
		}
	})

	t.Run("a cancelled context is an error", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := newCounter(t).CountTokens(cctx, strings.Repeat("word ", 100000))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
}
