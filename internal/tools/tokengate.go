package tools

import (
	"context"
	"fmt"

	"github.com/ferry-dev/ferry/internal/tokencount"
)

// Read's token gate refuses output over Limits.MaxReadTokens instead of
// truncating it: a refusal costs the agent ~100 bytes of context, a
// truncated read ~25K tokens it may not need. Two stages:
//
//  1. The size. A byte-level BPE token covers at least one byte, so text of
//     at most MaxReadTokens bytes (an estimate of a quarter of the limit at
//     tokencount.BytesPerToken = 4 bytes a token) is under the limit for any
//     tokenizer: it passes without counting.
//  2. An exact count of anything larger: Env.Tokens (the provider's count
//     API) when set, else (or when it fails) the local BPE tokenizer.
//
// Collection itself stops at collectCapFactor times the estimated limit
// (800 KB of output for 25,000 tokens): text that large would need more
// than 32 bytes a token to fit, which only degenerate files reach, so it is
// refused on its size alone and never held in memory or sent to be counted.

// tokencount.Counter is TokenCounter: a counter of either kind serves as
// the other.
var (
	_ TokenCounter       = tokencount.Counter(nil)
	_ tokencount.Counter = TokenCounter(nil)
)

// collectCapFactor: see above.
const collectCapFactor = 8

// collectCapBytes is the output size past which Read stops collecting.
func collectCapBytes(l Limits) int {
	return l.MaxReadTokens * tokencount.BytesPerToken * collectCapFactor
}

// fitMargin is the share of the limit a suggested range aims for, as the
// suggestion extrapolates from the average tokens a byte.
const fitMargin = 0.9

// gate returns the token count of text, and whether it was counted (stage 2)
// rather than bounded by the size (stage 1).
func (rc *readCall) gate(text string) (tokens int, exact bool, err error) {
	if len(text) <= rc.limits.MaxReadTokens {
		return tokencount.Estimate(len(text)), false, nil
	}
	n, err := countTokens(rc.ctx, rc.env.Tokens, text)
	if err != nil {
		return 0, false, err
	}
	return n, true, nil
}

// countTokens counts with counter, falling back to the local BPE when there
// is none or it fails (offline, rate limited), so the gate always works.
func countTokens(ctx context.Context, counter TokenCounter, text string) (int, error) {
	if counter != nil {
		n, err := counter.CountTokens(ctx, text)
		if err == nil {
			return n, nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return 0, cerr
		}
	}
	return tokencount.Default().CountTokens(ctx, text)
}

// tooLargeLines is the MaxFileReadTokenExceededError of a line window: s
// was refused at tokens (exact: counted; else s was capped and tokens is
// estimated from the size).
func (rc *readCall) tooLargeLines(s *lineScan, tokens int, exact bool) error {
	return tooLargeError(rc.name, "lines", rc.req.start, s.ends, tokens, exact, rc.limits.MaxReadTokens,
		"Or use Grep to find the lines you need.")
}

// tooLargeError builds the refusal for content made of units (lines, cells)
// starting at unit start, whose cumulative rendered sizes are ends. It
// suggests the longest range from start that should fit.
func tooLargeError(name, unit string, start int, ends []int, tokens int, exact bool, limit int, alternative string) error {
	total := 0
	if len(ends) > 0 {
		total = ends[len(ends)-1]
	}
	count := fmt.Sprintf("%d tokens", tokens)
	if !exact {
		tokens = tokencount.Estimate(total)
		count = fmt.Sprintf("about %d tokens or more, estimated from the size of the part read", tokens)
	}
	msg := fmt.Sprintf("File content of %s (%s) exceeds the maximum allowed tokens (%d) for one Read; nothing was returned.", name, count, limit)
	fit := 0
	if total > 0 && tokens > 0 {
		budget := fitMargin * float64(limit)
		for fit < len(ends) && float64(ends[fit])*float64(tokens)/float64(total) <= budget {
			fit++
		}
	}
	if fit == 0 {
		msg += fmt.Sprintf(" Even %s %d alone is too large for one Read. %s", singularUnit(unit), start, alternative)
	} else {
		approx := int(float64(ends[fit-1]) * float64(tokens) / float64(total))
		msg += fmt.Sprintf(" Read a range instead: offset=%d limit=%d (%s %d-%d, about %d tokens), then continue with offset=%d. %s",
			start, fit, unit, start, start+fit-1, approx, start+fit, alternative)
	}
	return &Error{Code: CodeTooLarge, Message: msg}
}

func singularUnit(unit string) string {
	if unit == "cells" {
		return "cell"
	}
	return "line"
}
