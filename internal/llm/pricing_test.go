package llm_test

import (
	"math"
	"testing"

	"github.com/ferry-dev/ferry/internal/llm"
)

func TestCost(t *testing.T) {
	u := llm.Usage{InputTokens: 1_000_000, OutputTokens: 100_000, CacheReadTokens: 2_000_000, CacheCreationTokens: 400_000}
	cases := []struct {
		model string
		usd   float64
		known bool
	}{
		// 1M×3 + 0.1M×15 + 2M×0.30 + 0.4M×3.75
		{"claude-sonnet-4-5", 3 + 1.5 + 0.6 + 1.5, true},
		{"claude-sonnet-4-5-20250929", 3 + 1.5 + 0.6 + 1.5, true},
		{"anthropic/claude-sonnet-4-5", 3 + 1.5 + 0.6 + 1.5, true},
		{"claude-opus-4-1-20250805", 15 + 7.5 + 3 + 7.5, true},
		{"claude-opus-4-20250514", 15 + 7.5 + 3 + 7.5, true},
		{"claude-opus-4-5", 5 + 2.5 + 1 + 2.5, true},
		{"claude-3-5-haiku-latest", 0.8 + 0.4 + 0.16 + 0.4, true},
		{"claude-haiku-4-5-20251001", 1 + 0.5 + 0.2 + 0.5, true},
		{"gpt-4o-2024-08-06", 2.5 + 1 + 2.5 + 1, true},
		{"gpt-4o-mini", 0.15 + 0.06 + 0.15 + 0.06, true},
		{"GPT-4.1", 2 + 0.8 + 1 + 0.8, true},
		{"gpt-4.1-mini-2025-04-14", 0.4 + 0.16 + 0.2 + 0.16, true},
		{"gpt-5", 1.25 + 1 + 0.25 + 0.5, true},
		{"o4-mini", 1.1 + 0.44 + 0.55 + 0.44, true},
		// A newer version is not the old one's price.
		{"gpt-5.5", 0, false},
		{"claude-opus-4-8", 5 + 2.5 + 1 + 2.5, true},
		{"claude-opus-4-9", 0, false},
		{"claude-opus-4-9-20270101", 0, false},
		{"claude-sonnet-5-5", 0, false},
		{"gpt-4o-realtime-preview", 0, false},
		{"o3-pro", 0, false},
		{"llama3.1:8b", 0, false},
		{"qwen2.5-coder", 0, false},
		{"", 0, false},
	}
	for _, c := range cases {
		usd, known := llm.Cost(c.model, u)
		if known != c.known || math.Abs(usd-c.usd) > 1e-9 {
			t.Errorf("Cost(%q) = %v, %v; want %v, %v", c.model, usd, known, c.usd, c.known)
		}
	}
}

func TestCostOfNothingIsZero(t *testing.T) {
	usd, known := llm.Cost("gpt-4.1", llm.Usage{})
	if usd != 0 || !known {
		t.Errorf("Cost of no usage = %v, %v; want 0, true", usd, known)
	}
}

func BenchmarkCost(b *testing.B) {
	u := llm.Usage{InputTokens: 1234, OutputTokens: 567, CacheReadTokens: 8900}
	for b.Loop() {
		llm.Cost("claude-sonnet-4-5-20250929", u)
	}
}
