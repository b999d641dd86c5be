// Package anthropic is the llm.Provider for Anthropic's Messages API, in
// plain net/http and encoding/json: ferry uses three endpoints (POST
// /v1/messages streamed, POST /v1/messages/count_tokens, GET /v1/models),
// and the official SDK cost every ferry process ~2 ms of package init and
// ~7 MB of binary (issue 37). Requests, retries and errors go through
// internal/llm/internal/apicall (the SDK's retry policy), the stream
// through internal/llm/internal/sse; the request body is the one the SDK
// sent (pinned by TestWireFormat).
//
// Guarantees (beyond llm.Provider's, checked by llmtest against the fake
// server):
//
//   - Nothing is read from the environment: key and base URL come from
//     Options only (internal/llm/provider reads the environment). The key
//     goes as x-api-key, with anthropic-version; requests never follow a
//     redirect off the base URL's origin, so the key reaches only it.
//   - A failed request is retried at most MaxRetries times (408, 409, 429,
//     529, 5xx, connection errors), waiting what Retry-After says or the
//     SDK's backoff; a Retry-After longer than MaxRetryWait is not waited
//     for but returned at once as a rate_limited *llm.Error carrying the
//     wait. An error's kind is its HTTP status's, or what the body's error
//     type says (an error event inside a 200 stream has only its type).
//   - Tool inputs are assembled from input_json_delta pieces and delivered
//     once per tool_use block when the block ends, as a JSON object.
//   - The system prompt, the tools and the newest message carry prompt-cache
//     breakpoints, so an agent loop re-reads its history from the cache.
//   - Thinking blocks stream as thinking deltas and appear in the assembled
//     message with their signature; signed ones are sent back in later
//     requests while thinking is on (the API needs them then), never
//     otherwise, and unsigned ones never. Block kinds ferry does not keep
//     (redacted_thinking, server tools) are read past.
//   - Request.Model overrides the configured model for one call;
//     Request.Effort asks for extended thinking (low, medium, high: a
//     budget_tokens of 1024, 10000, 32000) or turns it off.
//   - ListModels reads every page of GET /v1/models (100 a page, at most
//     1000 models); a model takes the efforts when its capabilities say it
//     accepts thinking type enabled.
//   - A stream line or event over 32 MiB (the SDK's bound) is a stream
//     error.
package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/internal/apicall"
	"github.com/ferry-dev/ferry/internal/llm/internal/apierr"
	"github.com/ferry-dev/ferry/internal/llm/internal/sse"
	"github.com/ferry-dev/ferry/internal/version"
)

// DefaultModel is the model used when Options.Model is empty.
const DefaultModel = "claude-sonnet-4-5"

// DefaultBaseURL is Anthropic's API.
const DefaultBaseURL = "https://api.anthropic.com"

// APIVersion is the anthropic-version header sent, the one the SDK sent.
const APIVersion = "2026-10-21"

// DefaultMaxRetries is how often a failed request is retried by default.
const DefaultMaxRetries = apierr.DefaultMaxRetries

// DefaultMaxRetryWait is the longest Retry-After waited for by default.
const DefaultMaxRetryWait = apierr.DefaultMaxRetryWait

// Options configure a Provider.
type Options struct {
	// APIKey is sent as x-api-key; empty sends none (a proxy that adds it).
	APIKey string
	// BaseURL replaces https://api.anthropic.com (a proxy, or a fake server
	// in tests).
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

// Provider calls the Messages API. It is safe for concurrent use.
type Provider struct {
	http                             *http.Client // nil: http.DefaultClient
	messagesURL, countURL, modelsURL string       // "" when the base URL did not parse
	header                           http.Header  // read-only after New
	model                            string
	apiKey                           string
	retries                          int
	wait                             time.Duration
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
		"Accept":            {"application/json"},
		"User-Agent":        {"ferry/" + version.String()},
		"Anthropic-Version": {APIVersion},
	}
	if o.APIKey != "" {
		h.Set("X-Api-Key", o.APIKey)
	}
	return &Provider{
		http:        o.HTTPClient,
		messagesURL: apicall.Endpoint(base, "v1/messages"),
		countURL:    apicall.Endpoint(base, "v1/messages/count_tokens"),
		modelsURL:   apicall.Endpoint(base, "v1/models"),
		header:      h,
		model:       model,
		apiKey:      o.APIKey,
		retries:     retries,
		wait:        wait,
	}
}

// Name is "anthropic".
func (p *Provider) Name() string { return "anthropic" }

// Model is the model this provider calls.
func (p *Provider) Model() string { return p.model }

// call sends one request through apicall. An *llm.Error for an HTTP
// failure takes the kind of the body's error type where it names one.
func (p *Provider) call(ctx context.Context, method, url string, body []byte) (*http.Response, error) {
	var errType string
	res, err := apicall.Do(ctx, p.http, apicall.Request{
		Provider:     "anthropic",
		Method:       method,
		URL:          url,
		Header:       p.header,
		Body:         body,
		APIKey:       p.apiKey,
		MaxRetries:   p.retries,
		MaxRetryWait: p.wait,
		ErrorMessage: func(body []byte) string {
			e := parseError(body)
			errType = e.Type
			return e.Message
		},
	})
	var e *llm.Error
	if errors.As(err, &e) && e.Status != 0 {
		if kind := kindForType(errType); kind != "" && kind != e.Kind {
			if e.Message == apierr.DefaultMessage(e.Kind) {
				e.Message = apierr.DefaultMessage(kind)
			}
			e.Kind = kind
		}
	}
	return res, err
}

// apiError is the error object of an error body or error event,
// {"type":"error","error":{"type":…,"message":…}}.
type apiError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// parseError reads an error body or event; zero when it is not one.
func parseError(body []byte) apiError {
	var e struct {
		Error apiError `json:"error"`
	}
	_ = apicall.Decode(body, &e)
	return e.Error
}

// kindForType is the llm error kind of an Anthropic error type, "" for a
// type it does not know.
func kindForType(typ string) string {
	switch typ {
	case "rate_limit_error":
		return llm.KindRateLimited
	case "overloaded_error":
		return llm.KindOverloaded
	case "api_error", "timeout_error":
		return llm.KindServer
	case "authentication_error", "permission_error":
		return llm.KindAuth
	case "invalid_request_error", "not_found_error", "request_too_large", "billing_error":
		return llm.KindBadRequest
	}
	return ""
}

// maxEvent bounds one line or event of the stream: the SDK's bound
// (bufio.MaxScanTokenSize<<9).
const maxEvent = 32 << 20

// Stream runs req as a streamed Messages call.
func (p *Provider) Stream(ctx context.Context, req llm.Request, on func(llm.Event) error) (*llm.Response, error) {
	if on == nil {
		on = func(llm.Event) error { return nil }
	}
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	params.Stream = true
	body, err := json.Marshal(params)
	if err != nil {
		return nil, badRequest("encoding the request: %v", err)
	}
	res, err := p.call(ctx, http.MethodPost, p.messagesURL, body)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()

	a := assembler{on: on}
	err = apicall.Events(ctx, "anthropic", res.Body, maxEvent, func() bool { return a.started }, func(ev sse.Event) (bool, error) {
		switch ev.Name {
		case "", "ping":
			return false, nil // the SDK read only named events, and no pings
		case "error":
			return false, p.streamError(res, ev.Data)
		}
		var se streamEvent
		if err := apicall.Decode(ev.Data, &se); err != nil {
			return false, apierr.Transport(ctx, "anthropic", fmt.Errorf("stream event: %w", err), a.started)
		}
		return false, a.add(&se)
	})
	if err != nil {
		return nil, err
	}
	if !a.stopped {
		return nil, apierr.Truncated("anthropic")
	}
	return a.response(), nil
}

// streamError is the error of an error event inside a 200 stream: its
// kind is its type's (an unknown type keeps the status's, as the SDK
// left it).
func (p *Provider) streamError(res *http.Response, data []byte) error {
	e := parseError(data)
	kind := kindForType(e.Type)
	if kind == "" {
		kind = apierr.KindForStatus(res.StatusCode)
	}
	return &llm.Error{
		Kind:       kind,
		Message:    apierr.SafeMessage(e.Message, p.apiKey, apierr.DefaultMessage(kind)),
		RetryAfter: apierr.RetryAfter(res.Header),
		Err:        fmt.Errorf("llm anthropic: error event in the stream: %s", apierr.SafeMessage(string(data), p.apiKey, "(empty)")),
	}
}

// maxModels bounds a model list.
const maxModels = 1000

// maxJSONBody bounds a JSON answer (a page of 100 models takes ~50 KB).
const maxJSONBody = 16 << 20

// modelPage is one page of GET /v1/models (the fields ferry reads).
type modelPage struct {
	Data []struct {
		ID           string `json:"id"`
		DisplayName  string `json:"display_name"`
		Capabilities struct {
			Thinking struct {
				Types struct {
					Enabled struct {
						Supported bool `json:"supported"`
					} `json:"enabled"`
				} `json:"types"`
			} `json:"thinking"`
		} `json:"capabilities"`
	} `json:"data"`
	HasMore *bool  `json:"has_more"`
	LastID  string `json:"last_id"`
}

// ListModels lists the models of the API key, every page, newest first as
// the API orders them. Pages follow as the SDK followed them: after_id of
// the page's last_id, until a page is empty, has_more is false or last_id
// is missing.
func (p *Provider) ListModels(ctx context.Context) ([]llm.ModelInfo, error) {
	var out []llm.ModelInfo
	after := ""
	for {
		q := url.Values{"limit": {"100"}}
		if after != "" {
			q.Set("after_id", after)
		}
		u := p.modelsURL
		if u != "" {
			u += "?" + q.Encode()
		}
		page, err := p.modelPage(ctx, u)
		if err != nil {
			return nil, err
		}
		for _, m := range page.Data {
			info := llm.ModelInfo{ID: m.ID, Name: m.DisplayName}
			if m.Capabilities.Thinking.Types.Enabled.Supported {
				info.Efforts = []string{llm.EffortOff, llm.EffortLow, llm.EffortMedium, llm.EffortHigh}
			}
			out = append(out, info)
			if len(out) >= maxModels {
				return out, nil // a bound on what a misbehaving server can make us hold
			}
		}
		if len(page.Data) == 0 || (page.HasMore != nil && !*page.HasMore) || page.LastID == "" {
			return out, nil
		}
		after = page.LastID
	}
}

// modelPage reads one page of the model list.
func (p *Provider) modelPage(ctx context.Context, u string) (*modelPage, error) {
	res, err := p.call(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxJSONBody))
	if err != nil {
		return nil, apierr.Transport(ctx, "anthropic", err, false)
	}
	var page modelPage
	if err := apicall.Decode(raw, &page); err != nil {
		return nil, apierr.Transport(ctx, "anthropic", fmt.Errorf("model list: %w", err), true)
	}
	return &page, nil
}

// CountTokens counts req's input tokens with the count_tokens endpoint.
// The body is the request's model, system, tools and messages (thinking
// blocks as Stream would send them), without max_tokens or thinking.
func (p *Provider) CountTokens(ctx context.Context, req llm.Request) (int, error) {
	params, err := p.params(req)
	if err != nil {
		return 0, err
	}
	params.MaxTokens, params.Thinking = 0, nil
	body, err := json.Marshal(params)
	if err != nil {
		return 0, badRequest("encoding the request: %v", err)
	}
	res, err := p.call(ctx, http.MethodPost, p.countURL, body)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxJSONBody))
	if err != nil {
		return 0, apierr.Transport(ctx, "anthropic", err, false)
	}
	var count struct {
		InputTokens int64 `json:"input_tokens"`
	}
	if err := apicall.Decode(bytes.TrimSpace(raw), &count); err != nil {
		return 0, apierr.Transport(ctx, "anthropic", fmt.Errorf("token count: %w", err), true)
	}
	return int(count.InputTokens), nil
}

// streamEvent is one event of the stream (the fields ferry reads).
type streamEvent struct {
	Type  string `json:"type"`
	Index int64  `json:"index"`
	// Message is message_start's.
	Message struct {
		Usage usage `json:"usage"`
	} `json:"message"`
	// ContentBlock is content_block_start's.
	ContentBlock struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Thinking string `json:"thinking"`
		ID       string `json:"id"`
		Name     string `json:"name"`
	} `json:"content_block"`
	// Delta is content_block_delta's or message_delta's.
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	// Usage is message_delta's.
	Usage usage `json:"usage"`
}

// usage is the token counts of message_start and message_delta.
type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
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
func (a *assembler) add(ev *streamEvent) error {
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
			a.stop = ev.Delta.StopReason
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
