package llm

import (
	"strings"
)

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	Input, Output, CacheRead, CacheWrite float64
}

// prices are list prices of common models, per million tokens. A model
// name matches an entry when it is the entry itself or the entry followed
// by a dated or "-latest" suffix (see Cost); the longest entry wins.
// Anthropic's cache writes are the 5-minute ones (1.25× input); OpenAI
// has no separate cache-write price (cache writes cost input).
var prices = map[string]Price{
	// Anthropic (the newest rows as Claude Code 2.1.197 prices them).
	"claude-mythos-5":   {10, 50, 1, 12.50},
	"claude-fable-5":    {10, 50, 1, 12.50},
	"claude-sonnet-5":   {3, 15, 0.30, 3.75},
	"claude-opus-4-8":   {5, 25, 0.50, 6.25},
	"claude-opus-4-7":   {5, 25, 0.50, 6.25},
	"claude-opus-4-6":   {5, 25, 0.50, 6.25},
	"claude-opus-4-5":   {5, 25, 0.50, 6.25},
	"claude-opus-4-1":   {15, 75, 1.50, 18.75},
	"claude-opus-4":     {15, 75, 1.50, 18.75},
	"claude-sonnet-4-6": {3, 15, 0.30, 3.75},
	"claude-sonnet-4-5": {3, 15, 0.30, 3.75},
	"claude-sonnet-4":   {3, 15, 0.30, 3.75},
	"claude-3-7-sonnet": {3, 15, 0.30, 3.75},
	"claude-3-5-sonnet": {3, 15, 0.30, 3.75},
	"claude-haiku-4-5":  {1, 5, 0.10, 1.25},
	"claude-3-5-haiku":  {0.80, 4, 0.08, 1},
	"claude-3-haiku":    {0.25, 1.25, 0.03, 0.30},
	"claude-3-opus":     {15, 75, 1.50, 18.75},
	// OpenAI.
	"gpt-5":        {1.25, 10, 0.125, 1.25},
	"gpt-5.1":      {1.25, 10, 0.125, 1.25},
	"gpt-5-mini":   {0.25, 2, 0.025, 0.25},
	"gpt-5-nano":   {0.05, 0.40, 0.005, 0.05},
	"gpt-4.1":      {2, 8, 0.50, 2},
	"gpt-4.1-mini": {0.40, 1.60, 0.10, 0.40},
	"gpt-4.1-nano": {0.10, 0.40, 0.025, 0.10},
	"gpt-4o":       {2.50, 10, 1.25, 2.50},
	"gpt-4o-mini":  {0.15, 0.60, 0.075, 0.15},
	"o3":           {2, 8, 0.50, 2},
	"o3-mini":      {1.10, 4.40, 0.55, 1.10},
	"o4-mini":      {1.10, 4.40, 0.275, 1.10},
	"o1":           {15, 60, 7.50, 15},
}

// PriceOf returns the price of model, and whether it is known.
//
// Matching: a "provider/" prefix (as routers write it) is dropped, then the
// longest table entry that is the name itself or the name less a date or
// "-latest" suffix wins ("claude-sonnet-4-5-20250929",
// "gpt-4o-2024-08-06", "claude-3-5-sonnet-latest"). A plain prefix match
// would price "gpt-5.5" as "gpt-5" or "claude-opus-4-9" as "claude-opus-4";
// an unlisted model is reported unknown instead of priced wrong.
func PriceOf(model string) (Price, bool) {
	name := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	best, found := "", false
	for entry := range prices {
		if len(entry) <= len(best) || !strings.HasPrefix(name, entry) {
			continue
		}
		if rest := name[len(entry):]; rest == "" || versionSuffix(rest) {
			best, found = entry, true
		}
	}
	if !found {
		return Price{}, false
	}
	return prices[best], true
}

// versionSuffix reports whether rest (what follows a table entry in a
// model name) only dates the model: "-20250929", "-2024-08-06", "-latest".
func versionSuffix(rest string) bool {
	return rest == "-latest" || shaped(rest, "-########") || shaped(rest, "-####-##-##")
}

// shaped reports whether s has pattern's shape, '#' standing for a digit.
func shaped(s, pattern string) bool {
	if len(s) != len(pattern) {
		return false
	}
	for i := range len(s) {
		if pattern[i] == '#' {
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		} else if s[i] != pattern[i] {
			return false
		}
	}
	return true
}

// Cost is what u costs on model in US dollars, and whether the model's
// price is known (an unknown model costs 0, known false).
func Cost(model string, u Usage) (usd float64, known bool) {
	p, ok := PriceOf(model)
	if !ok {
		return 0, false
	}
	const perToken = 1e-6
	return (float64(u.InputTokens)*p.Input +
		float64(u.OutputTokens)*p.Output +
		float64(u.CacheReadTokens)*p.CacheRead +
		float64(u.CacheCreationTokens)*p.CacheWrite) * perToken, true
}
