// Package openai is the llm.Provider for any OpenAI-compatible
// chat-completions endpoint — OpenAI itself, Ollama, vLLM, LM Studio — in
// plain net/http and encoding/json: ferry uses two endpoints (POST
// /chat/completions streamed, GET /models), and the official SDK cost every
// ferry process ~7 ms of package init and ~13 MB of binary (issue 37).
// Requests, retries and errors go through internal/llm/internal/apicall
// (the SDK's retry policy), the stream through internal/llm/internal/sse.
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
//   - Failed requests are retried as the SDK did (apicall: 408/409/429/5xx
//     and connection errors, Retry-After or backoff, MaxRetries and
//     MaxRetryWait); requests never follow a redirect off the base URL's
//     origin. A stream line or event over 32 MiB (the SDK's bound) is a
//     stream error.
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
// reads GET /v1/models (one list: the API does not page it, and at most
// 1000 models are kept); the API says nothing of reasoning, so
// the efforts are offered for OpenAI's reasoning families by id (o1, o3,
// o4, gpt-5) and for no other model. PDF documents become "file"
// parts, text documents text.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/internal/apicall"
	"github.com/ferry-dev/ferry/internal/llm/internal/apierr"
	"github.com/ferry-dev/ferry/internal/llm/internal/sse"
	"github.com/ferry-dev/ferry/internal/version"
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
	// MaxRetries bounds the retries of a failed request: 0 is
	// DefaultMaxRetries, a negative value disables retries.
	MaxRetries int
	// MaxRetryWait is the longest Retry-After waited for before a retry;
	// 0 is DefaultMaxRetryWait.
	MaxRetryWait time.Duration
	// HTTPClient replaces http.DefaultClient.
	HTTPClient *http.Client
}

// Provider calls a chat-completions endpoint. It is safe for concurrent use.
type Provider struct {
	http      *http.Client // nil: http.DefaultClient
	chatURL   string       // "" when the base URL did not parse
	modelsURL string
	header    http.Header // read-only after New
	model     string
	apiKey    string
	retries   int
	wait      time.Duration
	// legacyMaxTokens: send the bound as max_tokens, which every compatible
	// server knows, rather than OpenAI's max_completion_tokens, which its
	// reasoning models require.
	legacyMaxTokens bool
}

var (
	_ llm.Provider    = (*Provider)(nil)
	_ llm.ModelLister = (*Provider)(nil)
)

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
	h := http.Header{
		"Accept":     {"application/json"},
		"User-Agent": {"ferry/" + version.String()},
	}
	// Only the key of Options is sent, never OPENAI_API_KEY from the
	// environment: it must not reach a server it was not meant for.
	if o.APIKey != "" {
		h.Set("Authorization", "Bearer "+o.APIKey)
	}
	return &Provider{
		http:            o.HTTPClient,
		chatURL:         apicall.Endpoint(base, "chat/completions"),
		modelsURL:       apicall.Endpoint(base, "models"),
		header:          h,
		model:           model,
		apiKey:          o.APIKey,
		retries:         retries,
		wait:            wait,
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

// call sends one request through apicall.
func (p *Provider) call(ctx context.Context, method, url string, body []byte) (*http.Response, error) {
	return apicall.Do(ctx, p.http, apicall.Request{
		Provider:     "openai",
		Method:       method,
		URL:          url,
		Header:       p.header,
		Body:         body,
		APIKey:       p.apiKey,
		MaxRetries:   p.retries,
		MaxRetryWait: p.wait,
		ErrorMessage: errorMessage,
	})
}

// errorMessage is the message of an OpenAI error body,
// {"error":{"message":…}}.
func errorMessage(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = apicall.Decode(body, &e)
	return e.Error.Message
}

// maxModels bounds a model list.
const maxModels = 1000

// maxModelsBody bounds the model list's body (1000 models take ~100 KB).
const maxModelsBody = 16 << 20

// ListModels lists the endpoint's models.
func (p *Provider) ListModels(ctx context.Context) ([]llm.ModelInfo, error) {
	res, err := p.call(ctx, http.MethodGet, p.modelsURL, nil)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxModelsBody))
	if err != nil {
		return nil, apierr.Transport(ctx, "openai", err, false)
	}
	var page struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := apicall.Decode(raw, &page); err != nil {
		return nil, apierr.Transport(ctx, "openai", fmt.Errorf("model list: %w", err), true)
	}
	var out []llm.ModelInfo
	for _, m := range page.Data {
		info := llm.ModelInfo{ID: m.ID}
		if reasoningModel(m.ID) {
			info.Efforts = []string{llm.EffortLow, llm.EffortMedium, llm.EffortHigh}
		}
		out = append(out, info)
		if len(out) >= maxModels {
			break // a bound on what a misbehaving server can make us hold
		}
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

// maxEvent bounds one line or event of the stream: the SDK's bound
// (bufio.MaxScanTokenSize<<9).
const maxEvent = 32 << 20

// done is the data of the stream's last event.
var done = []byte("[DONE]")

// Stream runs req as a streamed chat completion.
func (p *Provider) Stream(ctx context.Context, req llm.Request, on func(llm.Event) error) (*llm.Response, error) {
	if on == nil {
		on = func(llm.Event) error { return nil }
	}
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(params)
	if err != nil {
		return nil, badRequest("encoding the request: %v", err)
	}
	res, err := p.call(ctx, http.MethodPost, p.chatURL, body)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()

	a := assembler{on: on, apiKey: p.apiKey, calls: map[int64]*call{}}
	err = apicall.Events(ctx, "openai", res.Body, maxEvent, func() bool { return a.started }, func(ev sse.Event) (bool, error) {
		if bytes.HasPrefix(ev.Data, done) {
			return true, nil
		}
		var c chunk
		if err := apicall.Decode(ev.Data, &c); err != nil {
			return false, apierr.Transport(ctx, "openai", fmt.Errorf("stream chunk: %w", err), true)
		}
		return false, a.add(&c)
	})
	if err != nil {
		return nil, err
	}
	if a.finish == "" {
		return nil, apierr.Truncated("openai")
	}
	return a.finishUp()
}

// chunk is one event of the stream (the fields ferry reads).
type chunk struct {
	Choices []struct {
		Index        int64  `json:"index"`
		Delta        delta  `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails struct {
			CachedTokens     int64 `json:"cached_tokens"`
			CacheWriteTokens int64 `json:"cache_write_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	// Error is set (even to null) when the server reports a failure
	// inside the stream.
	Error json.RawMessage `json:"error"`
}

// delta is one choice's increment.
type delta struct {
	Content string `json:"content"`
	Refusal string `json:"refusal"`
	// Reasoning servers (vLLM, DeepSeek, Ollama) add their own field.
	ReasoningContent string          `json:"reasoning_content"`
	Reasoning        string          `json:"reasoning"`
	ToolCalls        []toolCallDelta `json:"tool_calls"`
}

// toolCallDelta is a piece of a tool call.
type toolCallDelta struct {
	Index    int64  `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// call is one tool call being assembled.
type call struct {
	id, name string
	args     strings.Builder
}

// assembler turns chunks into llm events and the final message.
type assembler struct {
	on      func(llm.Event) error
	apiKey  string
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
func (a *assembler) add(c *chunk) error {
	a.started = true
	if c.Error != nil {
		// Retryable, as the SDK made it: the server failed mid-answer.
		return &llm.Error{
			Kind:    llm.KindStream,
			Message: apierr.DefaultMessage(llm.KindStream),
			Err:     fmt.Errorf("llm openai: error in the stream: %s", apierr.SafeMessage(string(c.Error), a.apiKey, "")),
		}
	}
	if u := c.Usage; u != nil && (u.PromptTokens > 0 || u.CompletionTokens > 0) {
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
		d := &choice.Delta
		for _, s := range []string{d.ReasoningContent, d.Reasoning} {
			if s != "" {
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
