// Package llm is the seam between ferry's agent runtime and model
// providers: one Provider interface, a provider-neutral conversation model
// (messages of text, tool-use, tool-result, image and document blocks) and a
// streaming call that reports text deltas and complete tool calls.
//
// Guarantees every implementation gives (checked by llmtest.Run against a
// fake server speaking the provider's real wire format):
//
//   - Stream delivers text deltas in order, then each tool call once, whole
//     (its input a JSON object), then returns the assembled assistant
//     message, its stop reason and usage. It returns ctx's error (wrapped)
//     promptly when ctx is cancelled mid-stream.
//   - Failures are *Error values with a stable Kind (rate_limited with the
//     server's Retry-After, overloaded, server, auth, bad_request, stream
//     for a malformed stream), never a panic; their Message is safe to show.
//   - CountTokens returns ErrNoTokenCount when the provider has no
//     token-count API.
//
// Implementations: internal/llm/anthropic (Messages API) and
// internal/llm/openai (any OpenAI-compatible chat-completions endpoint),
// both on net/http (internal/llm/internal/apicall, sse), no vendor SDK.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Roles of a message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Block types.
const (
	BlockText       = "text"
	BlockThinking   = "thinking"
	BlockToolUse    = "tool_use"
	BlockToolResult = "tool_result"
	BlockImage      = "image"
	BlockDocument   = "document"
)

// Stop reasons, provider-neutral.
const (
	StopEndTurn   = "end_turn"
	StopToolUse   = "tool_use"
	StopMaxTokens = "max_tokens"
	StopRefusal   = "refusal"
)

// Block is one piece of a message.
type Block struct {
	Type string `json:"type"`
	// Text of a text or thinking block.
	Text string `json:"text,omitempty"`
	// ToolUseID names a tool_use block, and the call a tool_result answers.
	ToolUseID string `json:"tool_use_id,omitempty"`
	// ToolName and Input of a tool_use block (Input is a JSON object).
	ToolName string          `json:"tool_name,omitempty"`
	Input    json.RawMessage `json:"input,omitempty"`
	// Content of a tool_result block: text and image blocks.
	Content []Block `json:"content,omitempty"`
	// IsError marks a failed tool_result.
	IsError bool `json:"is_error,omitempty"`
	// MediaType and Data (base64) of an image or document block.
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	// Signature of a thinking block (Anthropic), which the API needs to
	// take the block back while thinking is on; "" for none.
	Signature string `json:"signature,omitempty"`
}

// Message is one turn of the conversation.
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
	// Artifacts are the files handed to the user while this message's tool
	// calls ran (on assistant messages), or those of the messages a
	// compaction summarised (on the summary). They persist with the
	// transcript and are never sent to the model.
	Artifacts []Artifact `json:"artifacts,omitempty"`
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string
	Description string
	// InputSchema is the JSON Schema of the tool's input object.
	InputSchema json.RawMessage
}

// Request is one model call.
type Request struct {
	// System is the system prompt.
	System   string
	Messages []Message
	Tools    []ToolSpec
	// MaxTokens bounds the answer; 0 uses the provider's default for the model.
	MaxTokens int
	// Model overrides the provider's configured model for this call; ""
	// calls the configured one (Provider.Model).
	Model string
	// Effort is the thinking effort (EffortOff, EffortLow, EffortMedium,
	// EffortHigh) mapped to the provider's own parameter; "" requests nothing.
	// The caller offers only the efforts the model's ModelInfo lists.
	Effort string
}

// Thinking efforts of Request.Effort (the same words as the wire's
// protocol.Effort*): off turns thinking off, low to high ask for more.
const (
	EffortOff    = "off"
	EffortLow    = "low"
	EffortMedium = "medium"
	EffortHigh   = "high"
)

// ModelInfo is one model a provider offers.
type ModelInfo struct {
	ID string
	// Name is the provider's display name, "" when it has none.
	Name string
	// Efforts are the thinking efforts the model takes, in increasing
	// order (empty: none).
	Efforts []string
}

// ModelLister is a Provider that lists its models (GET /v1/models on both
// wire formats, every page).
type ModelLister interface {
	ListModels(ctx context.Context) ([]ModelInfo, error)
}

// Usage is what one call consumed.
type Usage struct {
	InputTokens         int64
	OutputTokens        int64
	CacheReadTokens     int64
	CacheCreationTokens int64
}

// Add sums usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{u.InputTokens + o.InputTokens, u.OutputTokens + o.OutputTokens,
		u.CacheReadTokens + o.CacheReadTokens, u.CacheCreationTokens + o.CacheCreationTokens}
}

// Event kinds of a stream.
const (
	EventTextDelta     = "text_delta"
	EventThinkingDelta = "thinking_delta"
	EventToolUse       = "tool_use"
)

// Event is one streamed piece: a text or thinking delta, or one complete
// tool call (Block of type tool_use).
type Event struct {
	Type  string
	Text  string
	Block *Block
}

// Response is a finished call.
type Response struct {
	// Message is the assistant message, assembled (text, thinking and
	// tool_use blocks in order).
	Message    Message
	StopReason string
	Usage      Usage
}

// Provider is one configured model endpoint.
type Provider interface {
	// Name is "anthropic" or "openai".
	Name() string
	// Model is the model this provider calls.
	Model() string
	// Stream runs req, calling on for every event as it arrives (on's
	// error stops the stream and is returned, wrapped).
	Stream(ctx context.Context, req Request, on func(Event) error) (*Response, error)
	// CountTokens counts req's input tokens with the provider's API, or
	// returns ErrNoTokenCount.
	CountTokens(ctx context.Context, req Request) (int, error)
}

// ErrNoTokenCount is returned by CountTokens when the provider has no
// token-count API.
var ErrNoTokenCount = errors.New("llm: the provider has no token-count API")

// ErrNotConfigured is returned when no provider is configured.
var ErrNotConfigured = errors.New("llm: no model provider configured")

// Error kinds.
const (
	KindRateLimited = "rate_limited"
	KindOverloaded  = "overloaded"
	KindServer      = "server"
	KindAuth        = "auth"
	KindBadRequest  = "bad_request"
	KindStream      = "stream"
	KindNetwork     = "network"
)

// Error is a provider failure.
type Error struct {
	Kind string
	// Status is the HTTP status, 0 when none.
	Status int
	// RetryAfter is the server's Retry-After, 0 when none.
	RetryAfter time.Duration
	// Message is safe to show to the user (no keys, no request bodies).
	Message string
	// Err is the underlying error, for the log.
	Err error
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("llm: %s (HTTP %d): %s", e.Kind, e.Status, e.Message)
	}
	return fmt.Sprintf("llm: %s: %s", e.Kind, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether trying again later may work.
func (e *Error) Retryable() bool {
	switch e.Kind {
	case KindRateLimited, KindOverloaded, KindServer, KindNetwork, KindStream:
		return true
	}
	return false
}
