// Package tokencount counts tokens the way Read's token gate needs them.
//
// It is a seam: Counter is what the gate calls (it is the same interface as
// tools.TokenCounter), BPE is the offline default, and issue 6 adds a counter
// backed by the session's provider. Every implementation passes the shared
// suite in tokencounttest.
//
// Guarantees:
//
//   - BPE needs no network and no files at run time: its vocabulary
//     (cl100k_base) is compiled into the binary.
//   - Estimate is a cheap size-based guess (BytesPerToken bytes a token).
//     It is not a bound; what is a bound is that a byte-level BPE token
//     covers at least one byte, so a text of n bytes has at most n tokens.
//     Read's gate uses exactly that to skip counting small outputs.
package tokencount

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/tiktoken-go/tokenizer/codec"
)

// Counter counts the tokens of a text as a model would. It is
// tools.TokenCounter, repeated here so this package stays a leaf.
type Counter interface {
	CountTokens(ctx context.Context, text string) (int, error)
}

// BytesPerToken is the ratio Estimate uses: about four bytes a token for
// English prose and source code under the common BPE vocabularies.
const BytesPerToken = 4

// Estimate guesses the token count of n bytes of text (rounded up).
func Estimate(n int) int {
	if n <= 0 {
		return 0
	}
	return (n + BytesPerToken - 1) / BytesPerToken
}

// chunkBytes is how much text BPE counts between two checks of the context,
// so a cancelled call stops within a few milliseconds.
const chunkBytes = 64 << 10

// BPE counts tokens offline with the cl100k_base vocabulary.
//
// Why cl100k_base: the providers ferry talks to do not publish their own
// tokenizers, so the local count is a stand-in. Claude's tokenizers produce
// at least as many tokens as cl100k_base on code and prose, and o200k_base
// fewer still, so cl100k_base is the closer and the more conservative of
// the two; its vocabulary is also half the size to load.
//
// The vocabulary is built on first use (a map of 100k entries, a few MB of
// heap, kept for the life of the process). A BPE is safe for concurrent use.
type BPE struct {
	once  sync.Once
	codec *codec.Codec
}

var _ Counter = (*BPE)(nil)

// NewBPE returns a BPE counter; the vocabulary loads on the first count.
func NewBPE() *BPE { return &BPE{} }

var (
	defaultBPE     *BPE
	defaultBPEOnce sync.Once
)

// Default returns the process-wide BPE counter, so the vocabulary is built
// once however many sessions count.
func Default() *BPE {
	defaultBPEOnce.Do(func() { defaultBPE = NewBPE() })
	return defaultBPE
}

// CountTokens counts the tokens of text. Long texts are counted in chunks
// cut after a line break, checking ctx between chunks. A cut may keep two
// pieces apart that a one-shot count would merge, so a long text's count
// can differ from the one-shot count by about a token per 64 KiB.
func (b *BPE) CountTokens(ctx context.Context, text string) (int, error) {
	b.once.Do(func() { b.codec = codec.NewCl100kBase() })
	total := 0
	for len(text) > 0 {
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("count tokens: %w", err)
		}
		chunk := text
		if len(chunk) > chunkBytes {
			chunk = text[:chunkBytes]
			if i := strings.LastIndexByte(chunk, '\n'); i > 0 {
				chunk = chunk[:i+1]
			} else {
				// One long line: cut at a rune boundary so no character
				// is split between two chunks.
				for i := len(chunk); i > 0; i-- {
					if text[i]&0xC0 != 0x80 {
						chunk = text[:i]
						break
					}
				}
			}
		}
		n, err := b.codec.Count(chunk)
		if err != nil {
			return 0, fmt.Errorf("count tokens: %w", err)
		}
		total += n
		text = text[len(chunk):]
	}
	return total, nil
}
