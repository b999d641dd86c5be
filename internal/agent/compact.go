package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ferry-dev/ferry/internal/llm"
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

// Compact summarises the older history with the model, honouring
// req.Instruction, keeps the latest turns verbatim, and shrinks the history
// to about req.TargetTokenRatio (DefaultCompactRatio when unset) of its
// size. Read's dedup state is reset (the earlier reads are gone from the
// context). Sizes are counted with the local tokenizer over the messages.
func (a *Agent) Compact(ctx context.Context, req *protocol.SessionCompact) (*protocol.CompactionDone, error) {
	if !a.begin() {
		return nil, ErrBusy
	}
	defer a.end()
	var instruction string
	ratio := DefaultCompactRatio
	if req != nil {
		instruction = req.Instruction
		if req.TargetTokenRatio != nil {
			ratio = *req.TargetTokenRatio
		}
	}
	return a.compact(ctx, instruction, ratio)
}

func (a *Agent) compact(ctx context.Context, instruction string, ratio float64) (*protocol.CompactionDone, error) {
	ratio = min(max(ratio, 0), 1)
	history := a.History()
	sizes := make([]int, len(history))
	before := 0
	for i, m := range history {
		sizes[i] = countMessage(ctx, m)
		before += sizes[i]
	}
	if len(history) == 0 {
		return &protocol.CompactionDone{}, nil
	}
	target := int(float64(before) * ratio)
	split := keptFrom(history, sizes, target/2)
	older, kept := history[:split], history[split:]
	keptSize := 0
	for _, n := range sizes[split:] {
		keptSize += n
	}
	budget := max(target-keptSize, 64)
	summary, err := a.summarise(ctx, older, instruction, budget)
	if err != nil {
		return nil, err
	}
	// The summary stands for the older messages, so it carries their
	// artifacts (the files stay the user's, tool call or not).
	sm := userText(summaryPrefix + summary)
	for _, m := range older {
		sm.Artifacts = append(sm.Artifacts, m.Artifacts...)
	}
	next := appendMessage(nil, sm)
	for _, m := range kept {
		next = appendMessage(next, m)
	}
	after := 0
	for _, m := range next {
		after += countMessage(ctx, m)
	}
	if a.onCompact != nil {
		a.onCompact(older)
	}
	a.mu.Lock()
	a.history = next
	a.marks = nil // the turns' starts are summarised away
	a.mu.Unlock()
	a.env.State.ResetDedup()
	a.checkpoint()
	return &protocol.CompactionDone{TokensBefore: int64(before), TokensAfter: int64(after)}, nil
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
		"Answer with the summary only; do not call tools.", max(budget*3/4, 40))
	if strings.TrimSpace(instruction) != "" {
		ask += "\n\nThe user's instruction for this summary (it takes precedence): " + instruction
	}
	msgs := append([]llm.Message(nil), older...)
	msgs = appendMessage(msgs, userText(ask))
	req := llm.Request{
		System:    "You summarise a coding agent's conversation so the agent can continue from the summary.",
		Messages:  msgs,
		Tools:     a.specs, // the APIs want the tools defined when the history holds tool calls
		MaxTokens: max(budget*2, 512),
	}
	req.Model, _ = a.Model() // the session's model, without thinking
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
