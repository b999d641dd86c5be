// Package openai is the llm.Provider for any OpenAI-compatible
// chat-completions endpoint — OpenAI itself, Ollama, vLLM, LM Studio — on
// the official Go SDK (github.com/openai/openai-go/v3).
//
// Guarantees (beyond llm.Provider's, checked by llmtest against the fake
// server):
//
//   - Key and base URL come from Options (internal/llm/provider reads the
//     environment); a local server needs no key.
//   - Streams ask for usage (stream_options.include_usage); tool-call
//     deltas are accumulated per index (servers may interleave calls) and
//     each call is delivered once, whole, when the stream finishes.
//   - finish_reason maps to the neutral stop reasons: stop → end_turn,
//     tool_calls → tool_use, length → max_tokens, content_filter → refusal.
//     A stream that ends without a finish_reason is a stream error.
//   - Usage: InputTokens is prompt_tokens less the cached ones, which are
//     CacheReadTokens, as with Anthropic, so costs add up the same way.
//   - CountTokens returns llm.ErrNoTokenCount: chat-completions has no
//     token-count endpoint.
//
// The neutral conversation maps to chat messages like this: a user
// message's tool_result blocks become "tool" messages (in order, first, as
// the API wants them right after the assistant's tool_calls); a failed
// result's text starts with "Error: " (the API has no is_error); images in
// tool results cannot ride in a tool message, so the tool message says
// "[image attached below]" and the images follow in a user message as
// image_url data URLs, together with the user message's own text and
// images. Thinking blocks are not sent back.
//
// Request.Model overrides the configured model for one call and
// Request.Effort is sent as reasoning_effort (low, medium, high). ListModels
// reads GET /v1/models, every page; the API says nothing of reasoning, so
// the efforts are offered for OpenAI's reasoning families by id (o1, o3,
// o4, gpt-5) and for no other model. PDF documents become "file"
// parts, text documents text.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/internal/apierr"
)

// DefaultModel is the model used when Options.Model is empty and the base
// URL is OpenAI's own.
const DefaultModel = "gpt-4.1"

// DefaultBaseURL is OpenAI's API.
const DefaultBaseURL = "https://api.openai.com/v1"

// DefaultMaxRetries is how often a failed request is retried by default.
const DefaultMaxRetries = apierr.DefaultMaxRetries

// DefaultMaxRetryWait is the longest Retry-After waited for by default.
const DefaultMaxRetryWait = apierr.DefaultMaxRetryWait

// Options configure a Provider.
type Options struct {
	// APIKey is sent as a bearer token; empty sends none (local servers).
	APIKey string
	// BaseURL is the endpoint's /v1 URL; empty is DefaultBaseURL.
	BaseURL string
	// Model is the model called; empty is DefaultModel.
	Model string
	// MaxRetries bounds the SDK's retries of a failed request: 0 is
	// DefaultMaxRetries, a negative value disables retries.
	MaxRetries int
	// MaxRetryWait is the longest Retry-After the SDK waits for before a
	// retry; 0 is DefaultMaxRetryWait.
	MaxRetryWait time.Duration
	// HTTPClient replaces the SDK's default client.
	HTTPClient *http.Client
}

// Provider calls a chat-completions endpoint. It is safe for concurrent use.
type Provider struct {
	client sdk.Client
	model  string
	apiKey string
	// legacyMaxTokens: send the bound as max_tokens, which every compatible
	// server knows, rather than OpenAI's max_completion_tokens, which its
	// reasoning models require.
	legacyMaxTokens bool
}

var (
	_ llm.Provider    = (*Provider)(nil)
	_ llm.ModelLister = (*Provider)(nil)
)

// maxModels bounds a model list.
const maxModels = 1000

// ListModels lists the endpoint's models, every page.
func (p *Provider) ListModels(ctx context.Context) ([]llm.ModelInfo, error) {
	var out []llm.ModelInfo
	pager := p.client.Models.ListAutoPaging(ctx)
	for pager.Next() {
		m := pager.Current()
		info := llm.ModelInfo{ID: m.ID}
		if reasoningModel(m.ID) {
			info.Efforts = []string{llm.EffortLow, llm.EffortMedium, llm.EffortHigh}
		}
		out = append(out, info)
		if len(out) >= maxModels {
			break // a bound on what a misbehaving server can make us hold
		}
	}
	if err := pager.Err(); err != nil {
		return nil, p.mapError(ctx, err, false)
	}
	return out, nil
}

// reasoningModel reports whether id is of a family that takes
// reasoning_effort.
func reasoningModel(id string) bool {
	for _, f := range []string{"o1", "o3", "o4", "gpt-5"} {
		if id == f || strings.HasPrefix(id, f+"-") || strings.HasPrefix(id, f+".") {
			return true
		}
	}
	return false
}

// New returns a Provider for o.
func New(o Options) *Provider {
	model := o.Model
	if model == "" {
		model = DefaultModel
	}
	base := o.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	retries, wait := apierr.RetryPolicy(o.MaxRetries, o.MaxRetryWait)
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		// Set explicitly, even empty, so OPENAI_API_KEY in the environment
		// never reaches a server it was not meant for.
		option.WithAPIKey(o.APIKey),
		option.WithMaxRetries(retries),
		option.WithMaxRetryDelay(wait),
	}
	if o.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(o.HTTPClient))
	}
	return &Provider{
		client:          sdk.NewClient(opts...),
		model:           model,
		apiKey:          o.APIKey,
		legacyMaxTokens: !IsOpenAI(base),
	}
}

// IsOpenAI reports whether base is OpenAI's own API (not a compatible
// server).
func IsOpenAI(base string) bool {
	u, err := url.Parse(base)
	return err == nil && strings.EqualFold(u.Hostname(), "api.openai.com")
}

// Name is "openai".
func (p *Provider) Name() string { return "openai" }

// Model is the model this provider calls.
func (p *Provider) Model() string { return p.model }

// CountTokens returns llm.ErrNoTokenCount.
func (p *Provider) CountTokens(ctx context.Context, req llm.Request) (int, error) {
	return 0, llm.ErrNoTokenCount
}

// Stream runs req as a streamed chat completion.
func (p *Provider) Stream(ctx context.Context, req llm.Request, on func(llm.Event) error) (*llm.Response, error) {
	if on == nil {
		on = func(llm.Event) error { return nil }
	}
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	stream := p.client.Chat.Completions.NewStreaming(ctx, params)
	defer stream.Close()

	a := assembler{on: on, calls: map[int64]*call{}}
	for stream.Next() {
		if err := a.add(stream.Current()); err != nil {
			return nil, err
		}
	}
	if err := stream.Err(); err != nil {
		return nil, p.mapError(ctx, err, a.started)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("llm openai: %w", ctx.Err())
	}
	if a.finish == "" {
		return nil, apierr.Truncated("openai")
	}
	return a.finishUp()
}

// mapError turns an SDK error into an *llm.Error (or ctx's error).
func (p *Provider) mapError(ctx context.Context, err error, started bool) error {
	var apiErr *sdk.Error
	if !errors.As(err, &apiErr) {
		return apierr.Transport(ctx, "openai", err, started)
	}
	kind := apierr.KindForStatus(apiErr.StatusCode)
	e := &llm.Error{
		Kind:    kind,
		Status:  apiErr.StatusCode,
		Message: apierr.SafeMessage(apiErr.Message, p.apiKey, apierr.DefaultMessage(kind)),
		Err:     fmt.Errorf("llm openai: %w", err),
	}
	if apiErr.Response != nil {
		e.RetryAfter = apierr.RetryAfter(apiErr.Response.Header)
	}
	return e
}

// call is one tool call being assembled.
type call struct {
	id, name string
	args     strings.Builder
}

// assembler turns chunks into llm events and the final message.
type assembler struct {
	on      func(llm.Event) error
	started bool

	thinking strings.Builder
	text     strings.Builder
	calls    map[int64]*call
	finish   string
	usage    llm.Usage
}

// maxCalls bounds the tool calls of one reply, against a runaway stream.
const maxCalls = 1024

// add handles one chunk.
func (a *assembler) add(c sdk.ChatCompletionChunk) error {
	a.started = true
	if u := c.Usage; u.PromptTokens > 0 || u.CompletionTokens > 0 {
		cached := u.PromptTokensDetails.CachedTokens
		written := u.PromptTokensDetails.CacheWriteTokens
		a.usage = llm.Usage{
			InputTokens:         max(0, u.PromptTokens-cached-written),
			OutputTokens:        u.CompletionTokens,
			CacheReadTokens:     cached,
			CacheCreationTokens: written,
		}
	}
	for _, choice := range c.Choices {
		if choice.Index != 0 {
			continue // ferry asks for one choice
		}
		d := choice.Delta
		// Reasoning servers (vLLM, DeepSeek, Ollama) add their own field.
		for _, key := range []string{"reasoning_content", "reasoning"} {
			if s := extraString(d.JSON.ExtraFields[key].Raw()); s != "" {
				a.thinking.WriteString(s)
				if err := a.emit(llm.Event{Type: llm.EventThinkingDelta, Text: s}); err != nil {
					return err
				}
			}
		}
		for _, s := range []string{d.Content, d.Refusal} {
			if s != "" {
				a.text.WriteString(s)
				if err := a.emit(llm.Event{Type: llm.EventTextDelta, Text: s}); err != nil {
					return err
				}
			}
		}
		for _, tc := range d.ToolCalls {
			cl := a.calls[tc.Index]
			if cl == nil {
				if tc.Index < 0 || len(a.calls) >= maxCalls {
					return malformed(fmt.Errorf("tool call index %d", tc.Index))
				}
				cl = &call{}
				a.calls[tc.Index] = cl
			}
			if tc.ID != "" {
				cl.id = tc.ID
			}
			if tc.Function.Name != "" {
				cl.name = tc.Function.Name
			}
			cl.args.WriteString(tc.Function.Arguments)
		}
		if choice.FinishReason != "" {
			a.finish = choice.FinishReason
		}
	}
	return nil
}

// extraString decodes a raw JSON string field ("" for null or absent).
func extraString(raw string) string {
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	var s string
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return ""
	}
	return s
}

// emit calls on, wrapping its error.
func (a *assembler) emit(ev llm.Event) error {
	if err := a.on(ev); err != nil {
		return fmt.Errorf("llm openai: %w", err)
	}
	return nil
}

// finishUp delivers the tool calls and assembles the response.
func (a *assembler) finishUp() (*llm.Response, error) {
	msg := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{}}
	if a.thinking.Len() > 0 {
		msg.Content = append(msg.Content, llm.Block{Type: llm.BlockThinking, Text: a.thinking.String()})
	}
	if a.text.Len() > 0 {
		msg.Content = append(msg.Content, llm.Block{Type: llm.BlockText, Text: a.text.String()})
	}
	indexes := make([]int64, 0, len(a.calls))
	for i := range a.calls {
		indexes = append(indexes, i)
	}
	sort.Slice(indexes, func(i, j int) bool { return indexes[i] < indexes[j] })
	for n, i := range indexes {
		cl := a.calls[i]
		if cl.name == "" {
			return nil, malformed(fmt.Errorf("tool call %d has no name", i))
		}
		input, err := objectInput(cl.args.String())
		if err != nil {
			return nil, malformed(fmt.Errorf("tool call %d (%s): %w", i, cl.name, err))
		}
		id := cl.id
		if id == "" {
			// Some local servers leave the id out; the conversation still
			// needs one to pair the result with the call.
			id = fmt.Sprintf("call_%d", n)
		}
		b := llm.Block{Type: llm.BlockToolUse, ToolUseID: id, ToolName: cl.name, Input: input}
		msg.Content = append(msg.Content, b)
		ev := b
		if err := a.emit(llm.Event{Type: llm.EventToolUse, Block: &ev}); err != nil {
			return nil, err
		}
	}
	return &llm.Response{Message: msg, StopReason: stopReason(a.finish, len(indexes) > 0), Usage: a.usage}, nil
}

// stopReason maps a finish_reason to the neutral stop reason.
func stopReason(finish string, hasTool bool) string {
	switch finish {
	case "tool_calls", "function_call":
		return llm.StopToolUse
	case "length":
		return llm.StopMaxTokens
	case "content_filter":
		return llm.StopRefusal
	}
	if hasTool {
		return llm.StopToolUse // some local servers say "stop" after tool calls
	}
	return llm.StopEndTurn
}

// malformed is the error of a stream that broke the format's rules.
func malformed(err error) error {
	return &llm.Error{Kind: llm.KindStream, Message: "the response stream was malformed", Err: fmt.Errorf("llm openai: %w", err)}
}
