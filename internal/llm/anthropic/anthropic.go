// Package anthropic is the llm.Provider for Anthropic's Messages API, on the
// official Go SDK (github.com/anthropics/anthropic-sdk-go/v2).
//
// Guarantees (beyond llm.Provider's, checked by llmtest against the fake
// server):
//
//   - Nothing is read from the environment: key and base URL come from
//     Options only (internal/llm/provider reads the environment).
//   - A failed request is retried by the SDK at most MaxRetries times (429,
//     529, 5xx, connection errors), waiting what Retry-After says; a
//     Retry-After longer than MaxRetryWait is not waited for but returned
//     at once as a rate_limited *llm.Error carrying the wait.
//   - Tool inputs are assembled from input_json_delta pieces and delivered
//     once per tool_use block when the block ends, as a JSON object.
//   - The system prompt, the tools and the newest message carry prompt-cache
//     breakpoints, so an agent loop re-reads its history from the cache.
//   - Thinking blocks stream as thinking deltas and appear in the assembled
//     message with their signature; signed ones are sent back in later
//     requests while thinking is on (the API needs them then), never
//     otherwise, and unsigned ones never.
//   - Request.Model overrides the configured model for one call;
//     Request.Effort asks for extended thinking (low, medium, high: a
//     budget_tokens of 1024, 10000, 32000) or turns it off.
//   - ListModels reads every page of GET /v1/models; a model takes the
//     efforts when its capabilities say it accepts thinking type enabled.
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/internal/apierr"
)

// DefaultModel is the model used when Options.Model is empty.
const DefaultModel = "claude-sonnet-4-5"

// DefaultMaxRetries is how often a failed request is retried by default.
const DefaultMaxRetries = apierr.DefaultMaxRetries

// DefaultMaxRetryWait is the longest Retry-After waited for by default.
const DefaultMaxRetryWait = apierr.DefaultMaxRetryWait

// Options configure a Provider.
type Options struct {
	// APIKey is sent as x-api-key.
	APIKey string
	// BaseURL replaces https://api.anthropic.com (a proxy, or a fake server
	// in tests).
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

// Provider calls the Messages API. It is safe for concurrent use.
type Provider struct {
	client sdk.Client
	model  string
	apiKey string
}

var _ llm.Provider = (*Provider)(nil)

// New returns a Provider for o.
func New(o Options) *Provider {
	model := o.Model
	if model == "" {
		model = DefaultModel
	}
	retries, wait := apierr.RetryPolicy(o.MaxRetries, o.MaxRetryWait)
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithMaxRetries(retries),
		// The middleware hands the response on; the SDK closes it.
		option.WithMiddleware(apierr.CapRetryWait(wait)), //nolint:bodyclose
	}
	if o.APIKey != "" {
		opts = append(opts, option.WithAPIKey(o.APIKey))
	}
	if o.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(o.BaseURL))
	}
	if o.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(o.HTTPClient))
	}
	return &Provider{client: sdk.NewClient(opts...), model: model, apiKey: o.APIKey}
}

// Name is "anthropic".
func (p *Provider) Name() string { return "anthropic" }

// Model is the model this provider calls.
func (p *Provider) Model() string { return p.model }

// Stream runs req as a streamed Messages call.
func (p *Provider) Stream(ctx context.Context, req llm.Request, on func(llm.Event) error) (*llm.Response, error) {
	if on == nil {
		on = func(llm.Event) error { return nil }
	}
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	stream := p.client.Messages.NewStreaming(ctx, params)
	defer stream.Close()

	a := assembler{on: on}
	for stream.Next() {
		if err := a.add(stream.Current()); err != nil {
			return nil, err
		}
	}
	if err := stream.Err(); err != nil {
		return nil, p.mapError(ctx, err, a.started)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("llm anthropic: %w", ctx.Err())
	}
	if !a.stopped {
		return nil, apierr.Truncated("anthropic")
	}
	return a.response(), nil
}

// ListModels lists the models of the API key, every page, newest first as
// the API orders them.
func (p *Provider) ListModels(ctx context.Context) ([]llm.ModelInfo, error) {
	var out []llm.ModelInfo
	pager := p.client.Models.ListAutoPaging(ctx, sdk.ModelListParams{Limit: sdk.Int(100)})
	for pager.Next() {
		m := pager.Current()
		info := llm.ModelInfo{ID: m.ID, Name: m.DisplayName}
		if m.Capabilities.Thinking.Types.Enabled.Supported {
			info.Efforts = []string{llm.EffortOff, llm.EffortLow, llm.EffortMedium, llm.EffortHigh}
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

// maxModels bounds a model list.
const maxModels = 1000

var _ llm.ModelLister = (*Provider)(nil)

// CountTokens counts req's input tokens with the count_tokens endpoint.
func (p *Provider) CountTokens(ctx context.Context, req llm.Request) (int, error) {
	params, err := p.params(req)
	if err != nil {
		return 0, err
	}
	count := sdk.MessageCountTokensParams{
		Messages: params.Messages,
		Model:    params.Model,
	}
	if len(params.System) > 0 {
		count.System = sdk.MessageCountTokensParamsSystemUnion{OfTextBlockArray: params.System}
	}
	for _, t := range params.Tools {
		count.Tools = append(count.Tools, sdk.MessageCountTokensToolUnionParam{OfTool: t.OfTool})
	}
	res, err := p.client.Messages.CountTokens(ctx, count)
	if err != nil {
		return 0, p.mapError(ctx, err, false)
	}
	return int(res.InputTokens), nil
}

// mapError turns an SDK error into an *llm.Error (or ctx's error).
func (p *Provider) mapError(ctx context.Context, err error, started bool) error {
	var apiErr *sdk.Error
	if !errors.As(err, &apiErr) {
		return apierr.Transport(ctx, "anthropic", err, started)
	}
	kind := apierr.KindForStatus(apiErr.StatusCode)
	// An error event inside a 200 stream carries its kind only in its type.
	switch apiErr.Type() {
	case "rate_limit_error":
		kind = llm.KindRateLimited
	case "overloaded_error":
		kind = llm.KindOverloaded
	case "api_error", "timeout_error":
		kind = llm.KindServer
	case "authentication_error", "permission_error":
		kind = llm.KindAuth
	case "invalid_request_error", "not_found_error", "request_too_large", "billing_error":
		kind = llm.KindBadRequest
	}
	e := &llm.Error{
		Kind:    kind,
		Message: apierr.SafeMessage(apiErr.Message, p.apiKey, apierr.DefaultMessage(kind)),
		Err:     fmt.Errorf("llm anthropic: %w", err),
	}
	if apiErr.StatusCode != http.StatusOK {
		e.Status = apiErr.StatusCode
	}
	if apiErr.Response != nil {
		e.RetryAfter = apierr.RetryAfter(apiErr.Response.Header)
	}
	return e
}

// assembler turns stream events into llm events and the final message.
type assembler struct {
	on      func(llm.Event) error
	started bool
	stopped bool

	blocks []*llm.Block // by index; nil for kinds ferry does not keep
	json   map[int]*strings.Builder
	stop   string
	usage  llm.Usage
}

// add handles one stream event.
func (a *assembler) add(ev sdk.MessageStreamEventUnion) error {
	a.started = true
	switch ev.Type {
	case "message_start":
		u := ev.Message.Usage
		a.usage = llm.Usage{
			InputTokens:         u.InputTokens,
			OutputTokens:        u.OutputTokens,
			CacheReadTokens:     u.CacheReadInputTokens,
			CacheCreationTokens: u.CacheCreationInputTokens,
		}
	case "content_block_start":
		idx := int(ev.Index)
		if idx < 0 || idx > len(a.blocks) || idx > 4096 {
			return malformed(fmt.Errorf("content block index %d out of order", idx))
		}
		for len(a.blocks) <= idx {
			a.blocks = append(a.blocks, nil)
		}
		cb := ev.ContentBlock
		switch cb.Type {
		case "text":
			a.blocks[idx] = &llm.Block{Type: llm.BlockText, Text: cb.Text}
			if cb.Text != "" {
				return a.emit(llm.Event{Type: llm.EventTextDelta, Text: cb.Text})
			}
		case "thinking":
			a.blocks[idx] = &llm.Block{Type: llm.BlockThinking, Text: cb.Thinking}
		case "tool_use":
			if cb.ID == "" || cb.Name == "" {
				return malformed(errors.New("tool_use block without id or name"))
			}
			a.blocks[idx] = &llm.Block{Type: llm.BlockToolUse, ToolUseID: cb.ID, ToolName: cb.Name}
			if a.json == nil {
				a.json = map[int]*strings.Builder{}
			}
			a.json[idx] = &strings.Builder{}
		}
	case "content_block_delta":
		b := a.block(int(ev.Index))
		if b == nil {
			return nil // a delta of a block kind ferry does not keep
		}
		d := ev.Delta
		switch d.Type {
		case "text_delta":
			if b.Type != llm.BlockText {
				return malformed(errors.New("text delta for a non-text block"))
			}
			b.Text += d.Text
			return a.emit(llm.Event{Type: llm.EventTextDelta, Text: d.Text})
		case "signature_delta":
			if b.Type != llm.BlockThinking {
				return malformed(errors.New("signature delta for a non-thinking block"))
			}
			b.Signature += d.Signature
		case "thinking_delta":
			if b.Type != llm.BlockThinking {
				return malformed(errors.New("thinking delta for a non-thinking block"))
			}
			b.Text += d.Thinking
			return a.emit(llm.Event{Type: llm.EventThinkingDelta, Text: d.Thinking})
		case "input_json_delta":
			sb := a.json[int(ev.Index)]
			if b.Type != llm.BlockToolUse || sb == nil {
				return malformed(errors.New("input_json delta for a non-tool block"))
			}
			sb.WriteString(d.PartialJSON)
		}
	case "content_block_stop":
		b := a.block(int(ev.Index))
		if b == nil || b.Type != llm.BlockToolUse {
			return nil
		}
		input, err := objectInput(a.json[int(ev.Index)].String())
		if err != nil {
			return malformed(err)
		}
		b.Input = input
		delete(a.json, int(ev.Index))
		call := *b
		return a.emit(llm.Event{Type: llm.EventToolUse, Block: &call})
	case "message_delta":
		if ev.Delta.StopReason != "" {
			a.stop = string(ev.Delta.StopReason)
		}
		// The final usage is cumulative; a field left out stays as it was.
		u := ev.Usage
		if u.OutputTokens > 0 {
			a.usage.OutputTokens = u.OutputTokens
		}
		if u.InputTokens > 0 {
			a.usage.InputTokens = u.InputTokens
		}
		if u.CacheReadInputTokens > 0 {
			a.usage.CacheReadTokens = u.CacheReadInputTokens
		}
		if u.CacheCreationInputTokens > 0 {
			a.usage.CacheCreationTokens = u.CacheCreationInputTokens
		}
	case "message_stop":
		if len(a.json) > 0 {
			return malformed(errors.New("message ended inside a tool_use block"))
		}
		a.stopped = true
	}
	return nil
}

// block is the kept block at idx, or nil.
func (a *assembler) block(idx int) *llm.Block {
	if idx < 0 || idx >= len(a.blocks) {
		return nil
	}
	return a.blocks[idx]
}

// emit calls on, wrapping its error.
func (a *assembler) emit(ev llm.Event) error {
	if err := a.on(ev); err != nil {
		return fmt.Errorf("llm anthropic: %w", err)
	}
	return nil
}

// response is the assembled result.
func (a *assembler) response() *llm.Response {
	msg := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{}}
	hasTool := false
	for _, b := range a.blocks {
		if b == nil {
			continue
		}
		if b.Type == llm.BlockToolUse {
			hasTool = true
		}
		msg.Content = append(msg.Content, *b)
	}
	return &llm.Response{Message: msg, StopReason: stopReason(a.stop, hasTool), Usage: a.usage}
}

// stopReason maps Anthropic's stop reason to the neutral one.
func stopReason(s string, hasTool bool) string {
	switch s {
	case "tool_use":
		return llm.StopToolUse
	case "max_tokens", "model_context_window_exceeded":
		return llm.StopMaxTokens
	case "refusal":
		return llm.StopRefusal
	}
	if hasTool && s == "" {
		return llm.StopToolUse
	}
	return llm.StopEndTurn // end_turn, stop_sequence, pause_turn
}

// objectInput parses assembled tool input: empty is {}, anything else must
// be a JSON object.
func objectInput(s string) (json.RawMessage, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}"), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &obj); err != nil {
		return nil, fmt.Errorf("tool input is not a JSON object: %w", err)
	}
	if obj == nil {
		return nil, errors.New("tool input is null, not a JSON object")
	}
	return json.RawMessage(s), nil
}

// malformed is the error of a stream that broke the format's rules.
func malformed(err error) error {
	return &llm.Error{Kind: llm.KindStream, Message: "the response stream was malformed", Err: fmt.Errorf("llm anthropic: %w", err)}
}
