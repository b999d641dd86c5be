package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/runecut"
	"github.com/ferry-dev/ferry/internal/tokencount"
	"github.com/ferry-dev/ferry/protocol"
)

// DefaultCompactRatio is the history size after a compaction over the size
// before, when the request names none.
const DefaultCompactRatio = 0.3

// imageTokens is what an image or document block counts for: providers
// charge by pixels or pages, not by the base64 size.
const imageTokens = 1500

// summaryPrefix starts the message that replaces the summarised history.
const summaryPrefix = "Summary of the earlier conversation (it was compacted to save context; files you read before may have changed, read them again before editing):\n\n"

// CompactTolerance is how far above its target a compaction may land: the
// history after is at most (1 + CompactTolerance) × ratio × its size
// before. Below the target is within it: a summary is never padded.
const CompactTolerance = 0.10

// minSummaryTokens is the smallest summary worth making: a target that
// leaves less room than this for the summary cannot be met.
const minSummaryTokens = 32

// summaryRetries is how many times a summary over its budget is sent back
// to the model to be shortened before the agent cuts it itself.
const summaryRetries = 1

// SummaryCutNote ends a summary the agent had to cut to meet the target.
const SummaryCutNote = "[summary cut to fit the compaction's target size]"

// Compact summarises the older history with the model, honouring
// req.Instruction, keeps the latest turns verbatim, and shrinks the history
// to req.TargetTokenRatio (DefaultCompactRatio when unset) of its size,
// at most CompactTolerance above it. The result is measured (the local
// tokenizer over the messages, as the size before): a summary over its
// budget is sent back to be shortened, then cut. A ratio no summary can
// meet is refused (*protocol.Error, invalid_value on
// payload.target_token_ratio) before any model call, the history
// unchanged; without a ratio the smallest summary that fits is made. The
// ratio reached is reported (AchievedRatio). Read's dedup state is reset
// (the earlier reads are gone from the context).
func (a *Agent) Compact(ctx context.Context, req *protocol.SessionCompact) (*protocol.CompactionDone, error) {
	if !a.begin() {
		return nil, ErrBusy
	}
	defer a.end()
	var instruction string
	ratio, asked := DefaultCompactRatio, false
	if req != nil {
		instruction = req.Instruction
		if req.TargetTokenRatio != nil {
			ratio, asked = *req.TargetTokenRatio, true
		}
	}
	return a.compact(ctx, instruction, ratio, asked)
}

// compaction is one compaction's plan: what is summarised, what is kept,
// and how large the history may be after.
type compaction struct {
	a       *Agent
	history []llm.Message
	split   int // history[split:] is kept verbatim
	limit   int // the most tokens the history may hold after
}

// build is the history after the compaction, with summary standing for
// the older messages (and carrying their artifacts: the files stay the
// user's, tool call or not).
func (c *compaction) build(summary string) []llm.Message {
	sm := userText(summaryPrefix + summary)
	for _, m := range c.history[:c.split] {
		sm.Artifacts = append(sm.Artifacts, m.Artifacts...)
	}
	next := appendMessage(nil, sm)
	for _, m := range c.history[c.split:] {
		next = appendMessage(next, m)
	}
	return next
}

// size counts the history summary would make.
func (c *compaction) size(ctx context.Context, summary string) int {
	n := 0
	for _, m := range c.build(summary) {
		n += countMessage(ctx, m)
	}
	return n
}

func (a *Agent) compact(ctx context.Context, instruction string, ratio float64, asked bool) (*protocol.CompactionDone, error) {
	ratio = min(max(ratio, 0), 1)
	history := a.History()
	if len(history) == 0 {
		return &protocol.CompactionDone{}, nil
	}
	sizes := make([]int, len(history))
	before := 0
	for i, m := range history {
		sizes[i] = countMessage(ctx, m)
		before += sizes[i]
	}
	target := int(float64(before) * ratio)
	c := &compaction{a: a, history: history, split: keptFrom(history, sizes, target/2)}
	// The summary gets what the target leaves after its framing and the
	// kept turns; when that is too little, nothing is kept verbatim.
	base := c.size(ctx, "")
	if target-base < minSummaryTokens && c.split < len(history) {
		c.split = len(history)
		base = c.size(ctx, "")
	}
	if floor := base + minSummaryTokens; target < floor {
		switch {
		case asked:
			least := math.Ceil(float64(floor)/float64(before)*100) / 100
			return nil, &protocol.Error{Code: protocol.CodeInvalidValue, Field: "payload.target_token_ratio",
				Message: fmt.Sprintf("this history (%d tokens) cannot be summarised in fewer than about %d tokens: ask for %.0f %% or more (a ratio of %.2f)", before, floor, least*100, least)}
		case floor >= before:
			// Nothing a summary could make smaller: kept as it is.
			return compactionDone(before, before), nil
		}
		target = floor // no ratio asked: the smallest summary that fits
	}
	c.limit = int(float64(target) * (1 + CompactTolerance))
	summary, after, err := c.summary(ctx, instruction, target-base)
	if err != nil {
		return nil, err
	}
	next := c.build(summary)
	if a.onCompact != nil {
		a.onCompact(history[:c.split])
	}
	a.mu.Lock()
	a.history = next
	a.marks = nil // the turns' starts are summarised away
	a.mu.Unlock()
	a.env.State.ResetDedup()
	a.checkpoint()
	return compactionDone(before, after), nil
}

// compactionDone reports a compaction's sizes and the ratio they make
// (FillRatio, as the client fills it for other adapters).
func compactionDone(before, after int) *protocol.CompactionDone {
	done := &protocol.CompactionDone{TokensBefore: int64(before), TokensAfter: int64(after)}
	done.FillRatio()
	return done
}

// summary has the model summarise the older messages in about budget
// tokens and measures the history it makes: one over c.limit is sent back
// to be shortened (summaryRetries times), then cut to fit. It returns the
// summary and the history's size with it.
func (c *compaction) summary(ctx context.Context, instruction string, budget int) (string, int, error) {
	summary, err := c.a.summarise(ctx, c.history[:c.split], instruction, budget)
	if err != nil {
		return "", 0, err
	}
	after := c.size(ctx, summary)
	for try := 0; after > c.limit && try < summaryRetries; try++ {
		// Ask for the overshoot's share less than the summary's own size.
		own := countText(ctx, summary)
		want := max(own-(after-c.limit)-own/10, minSummaryTokens)
		shorter, err := c.a.shorten(ctx, summary, want)
		if err != nil {
			return "", 0, err
		}
		if n := c.size(ctx, shorter); n < after {
			summary, after = shorter, n
		}
	}
	// Still over: cut the summary to what fits, measured each time (a
	// cut's note and the merge with the kept turns count too).
	for over := after - c.limit; over > 0; over = after - c.limit {
		own := countText(ctx, summary)
		keep := own - over - tokencount.Estimate(len(SummaryCutNote)) - 2
		if keep < minSummaryTokens/2 {
			return "", 0, &Error{Code: CodeInternal, Message: "the summary could not be cut to the target size; the history is unchanged"}
		}
		summary = cutToTokens(ctx, summary, keep) + "\n\n" + SummaryCutNote
		after = c.size(ctx, summary)
	}
	return summary, after, nil
}

// keptFrom returns the index from which the history is kept verbatim: the
// start of the most recent whole turns that fit in budget tokens. A turn
// starts at a user message that holds no tool results (so a tool call and
// its result are never split). The first message is never kept: something
// must be summarised.
func keptFrom(h []llm.Message, sizes []int, budget int) int {
	split, size := len(h), 0
	for i := len(h) - 1; i > 0; i-- {
		size += sizes[i]
		if size > budget {
			break
		}
		if turnStart(h[i]) {
			split = i
		}
	}
	return split
}

func turnStart(m llm.Message) bool {
	if m.Role != llm.RoleUser {
		return false
	}
	for _, b := range m.Content {
		if b.Type == llm.BlockToolResult {
			return false
		}
	}
	return true
}

// summarise asks the model for a summary of older in about budget tokens.
func (a *Agent) summarise(ctx context.Context, older []llm.Message, instruction string, budget int) (string, error) {
	ask := fmt.Sprintf("Summarise the conversation above for yourself, to continue the work from the summary alone. "+
		"Keep: the user's requests and preferences, decisions made and why, files read or changed (paths) and what matters in them, "+
		"commands run and their outcome, open problems and the next steps. Be concise: at most about %d words. "+
		"Answer with the summary only; do not call tools.", wordsFor(budget))
	if strings.TrimSpace(instruction) != "" {
		ask += "\n\nThe user's instruction for this summary (it takes precedence): " + instruction
	}
	msgs := append([]llm.Message(nil), older...)
	msgs = appendMessage(msgs, userText(ask))
	return a.summaryCall(ctx, llm.Request{
		System:    "You summarise a coding agent's conversation so the agent can continue from the summary.",
		Messages:  msgs,
		Tools:     a.specs, // the APIs want the tools defined when the history holds tool calls
		MaxTokens: max(budget*2, 512),
	})
}

// shorten asks the model to shorten a summary it wrote to about budget
// tokens: only the summary is sent, not the history again.
func (a *Agent) shorten(ctx context.Context, summary string, budget int) (string, error) {
	ask := fmt.Sprintf("This summary of a coding agent's conversation is too long. Shorten it to at most about %d words, "+
		"keeping the user's requests, decisions, file paths, open problems and next steps. Answer with the shorter summary only.\n\n<summary>\n%s\n</summary>",
		wordsFor(budget), summary)
	return a.summaryCall(ctx, llm.Request{
		System:    "You shorten summaries without losing what the agent needs to continue.",
		Messages:  []llm.Message{userText(ask)},
		MaxTokens: max(budget*2, 512),
	})
}

// wordsFor is the word count a summary of budget tokens is asked for.
func wordsFor(budget int) int { return max(budget*3/4, 20) }

// summaryCall makes one summary request on the session's model (without
// thinking) and returns the answer's text.
func (a *Agent) summaryCall(ctx context.Context, req llm.Request) (string, error) {
	req.Model, _ = a.Model()
	resp, err := a.provider.Stream(ctx, req, func(llm.Event) error { return nil })
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("agent: compact: %w", ctx.Err())
		}
		return "", ProviderError(err)
	}
	a.addUsage(req.Model, resp.Usage)
	s := strings.TrimSpace(messageText(resp.Message))
	if s == "" {
		return "", &Error{Code: CodeInternal, Message: "the model gave no summary; the history is unchanged"}
	}
	return s, nil
}

// countText counts a text's tokens with the local tokenizer.
func countText(ctx context.Context, s string) int {
	n, err := tokencount.Default().CountTokens(ctx, s)
	if err != nil {
		return tokencount.Estimate(len(s))
	}
	return n
}

// cutToTokens is the longest prefix of s that ends at a space or line
// break and counts at most n tokens (binary search: a prefix never counts
// more than a longer one by more than a token).
func cutToTokens(ctx context.Context, s string, n int) string {
	lo, hi := 0, len(s)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if countText(ctx, runecut.Prefix(s, mid)) <= n {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	cut := runecut.Prefix(s, lo)
	if i := strings.LastIndexAny(cut, " \n"); i > 0 && i < len(cut) {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " \n")
}

// countMessage counts a message's tokens with the local tokenizer.
func countMessage(ctx context.Context, m llm.Message) int {
	var b strings.Builder
	n := 4 // role and framing
	var walk func([]llm.Block)
	walk = func(bs []llm.Block) {
		for _, bl := range bs {
			switch bl.Type {
			case llm.BlockImage, llm.BlockDocument:
				n += imageTokens
			case llm.BlockToolUse:
				b.WriteString(bl.ToolName)
				b.WriteByte(' ')
				b.Write(compactJSON(bl.Input))
				b.WriteByte('\n')
			case llm.BlockToolResult:
				walk(bl.Content)
			default:
				b.WriteString(bl.Text)
				b.WriteByte('\n')
			}
		}
	}
	walk(m.Content)
	c, err := tokencount.Default().CountTokens(ctx, b.String())
	if err != nil {
		c = tokencount.Estimate(b.Len())
	}
	return n + c
}

func compactJSON(raw json.RawMessage) []byte {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}
