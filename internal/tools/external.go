package tools

import (
	"bytes"
	"context"
	"encoding/base64"
	"strings"

	"github.com/ferry-dev/ferry/internal/runecut"
)

// Output that comes from elsewhere (an MCP server's tool) passes the same
// gates as Read's: text the token gate, images the image preparation. Unlike
// Read, text over the gate is cut rather than refused: the model cannot ask
// a foreign tool for a smaller range the way it can ask Read, and a refusal
// would lose output the tool may have produced by acting.

// CapText returns text cut to fit env's Limits.MaxReadTokens (counted as
// Read counts: free under the size bound, else Env.Tokens or the local
// BPE), and whether it was cut. A cut ends at a line break when one is near
// the end, and never inside a UTF-8 sequence. env may be nil (defaults).
func CapText(ctx context.Context, env *Env, text string) (string, bool, error) {
	var counter TokenCounter
	l := DefaultLimits()
	if env != nil {
		counter, l = env.Tokens, withDefaults(env.Limits)
	}
	limit := l.MaxReadTokens
	if len(text) <= limit {
		return text, false, nil
	}
	work, cut := text, false
	if c := collectCapBytes(l); len(work) > c {
		work, cut = cutNear(work, c), true
	}
	for range 4 {
		n, err := countTokens(ctx, counter, work)
		if err != nil {
			return "", false, err
		}
		if n <= limit {
			return work, cut, nil
		}
		next := int(float64(len(work)) * fitMargin * float64(limit) / float64(n))
		work, cut = cutNear(work, min(next, len(work)-1)), true
	}
	// limit bytes are at most limit tokens for any byte-level BPE.
	return cutNear(text, limit), true, nil
}

// cutNear cuts s to at most n bytes, at the last line break in the final
// tenth when there is one.
func cutNear(s string, n int) string {
	s = runecut.Prefix(s, n)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 && i >= len(s)-len(s)/10 {
		return s[:i+1]
	}
	return s
}

// ImageBlocks prepares an image's bytes as Read prepares an image file
// (decoded, shrunk to Limits.MaxImageDimension, re-encoded under the API's
// size cap) and returns Read's two blocks: a text naming it, and the image.
// name is what the text calls it. Data that is no PNG, JPEG, GIF or WebP
// image, or that cannot be prepared, gives an *Error.
func ImageBlocks(ctx context.Context, env *Env, name string, data []byte) ([]Block, error) {
	l := DefaultLimits()
	if env != nil {
		l = withDefaults(env.Limits)
	}
	format := imageFormat(data)
	if format == "" {
		return nil, Errorf(CodeEncoding, "%s is not a PNG, JPEG, GIF or WebP image.", name)
	}
	p, err := prepareImage(ctx, name, bytes.NewReader(data), int64(len(data)), format, l.MaxImageDimension)
	if err != nil {
		return nil, err
	}
	return []Block{
		{Type: "text", Text: describeImage(p, name, format)},
		{Type: "image", MediaType: p.MediaType, Data: base64.StdEncoding.EncodeToString(p.Data)},
	}, nil
}
