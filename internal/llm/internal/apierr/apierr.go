// Package apierr holds what the provider implementations share to turn an
// HTTP failure into an *llm.Error: the kind of a status, the server's
// Retry-After, a message safe to show, and the retry policy
// (internal/llm/internal/apicall applies it).
package apierr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/ferry-dev/ferry/internal/llm"
)

// KindForStatus is the llm error kind of an HTTP status.
func KindForStatus(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return llm.KindRateLimited
	case status == 529 || status == http.StatusServiceUnavailable:
		// 529 is Anthropic's "overloaded"; OpenAI-compatible servers say 503.
		return llm.KindOverloaded
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return llm.KindAuth
	case status >= 500, status == http.StatusRequestTimeout, status == http.StatusConflict:
		return llm.KindServer
	}
	return llm.KindBadRequest
}

// maxWaitSeconds bounds a Retry-After taken seriously (11 days).
const maxWaitSeconds = 1e6

// RetryAfter is the wait a response asks for: retry-after-ms, else
// Retry-After in seconds (fractions allowed, as the SDKs allow them) or as
// an HTTP date; 0 when there is none.
func RetryAfter(h http.Header) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		// Written so NaN fails it: a negative, absurd or NaN wait is none.
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms <= maxWaitSeconds*1000 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s <= maxWaitSeconds {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// maxMessage bounds the provider text an *llm.Error carries.
const maxMessage = 300

// SafeMessage makes a provider's error message fit to show: the API key
// blanked out wherever it appears, control characters dropped, at most
// maxMessage bytes (on a rune boundary). Empty becomes fallback.
func SafeMessage(msg, apiKey, fallback string) string {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '\n' || r == '\t' {
				return ' '
			}
			if unicode.IsControl(r) {
				return -1
			}
			return r
		}, s)
	}
	// Control characters go first: dropping them after the redaction could
	// join a key split by one (found by FuzzSafeMessage).
	msg = clean(msg)
	if apiKey != "" {
		msg = redact(msg, apiKey)
		if k := clean(apiKey); k != "" && k != apiKey {
			msg = redact(msg, k)
		}
	}
	msg = strings.TrimSpace(msg)
	if len(msg) > maxMessage {
		cut := maxMessage
		for cut > 0 && !isRuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	if msg == "" {
		return fallback
	}
	return msg
}

// redact replaces every occurrence of key in msg, widened to whole runes
// so that valid text stays valid even when key cuts a character.
func redact(msg, key string) string {
	var b strings.Builder
	for {
		i := strings.Index(msg, key)
		if i < 0 {
			b.WriteString(msg)
			return b.String()
		}
		start, end := i, i+len(key)
		for start > 0 && !isRuneStart(msg[start]) {
			start--
		}
		for end < len(msg) && !isRuneStart(msg[end]) {
			end++
		}
		b.WriteString(msg[:start])
		b.WriteString("[redacted]")
		msg = msg[end:]
	}
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// DefaultMessage is the message of an error kind when the provider gave
// none.
func DefaultMessage(kind string) string {
	switch kind {
	case llm.KindRateLimited:
		return "the provider is rate-limiting requests"
	case llm.KindOverloaded:
		return "the provider is overloaded"
	case llm.KindServer:
		return "the provider had an internal error"
	case llm.KindAuth:
		return "the provider refused the API key"
	case llm.KindBadRequest:
		return "the provider rejected the request"
	case llm.KindStream:
		return "the response stream broke off or was malformed"
	case llm.KindNetwork:
		return "could not reach the provider"
	}
	return "the provider call failed"
}

// Transport classifies an error that is not an API error: ctx's own error
// (returned wrapped, not as an *llm.Error), a failure to reach the server
// (network, only before the stream started), or a stream that broke or did
// not parse (stream).
func Transport(ctx context.Context, provider string, err error, started bool) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("llm %s: %w", provider, ctxErr)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("llm %s: %w", provider, err)
	}
	var urlErr *url.Error
	var opErr *net.OpError
	if !started && (errors.As(err, &urlErr) || errors.As(err, &opErr)) {
		return &llm.Error{Kind: llm.KindNetwork, Message: unreachable(urlErr, opErr, err), Err: err}
	}
	return &llm.Error{Kind: llm.KindStream, Message: DefaultMessage(llm.KindStream), Err: err}
}

// unreachable says which URL could not be reached and why: "could not
// reach the provider at https://host/v1/messages: dial tcp …: connection
// refused". The URL loses its userinfo, query and fragment, where a key
// may be; the cause is the innermost error (a url.Error's own text would
// repeat the whole URL).
func unreachable(urlErr *url.Error, opErr *net.OpError, err error) string {
	msg := DefaultMessage(llm.KindNetwork)
	cause := err
	if urlErr != nil {
		if u, perr := url.Parse(urlErr.URL); perr == nil {
			u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
			msg += " at " + u.String()
		}
		cause = urlErr.Err
	}
	if opErr != nil {
		cause = opErr
	}
	return SafeMessage(msg+": "+cause.Error(), "", DefaultMessage(llm.KindNetwork))
}

// Truncated is the error of a stream that ended without its final event.
func Truncated(provider string) error {
	return &llm.Error{
		Kind:    llm.KindStream,
		Message: "the response stream ended before the model finished",
		Err:     fmt.Errorf("llm %s: stream ended early: %w", provider, io.ErrUnexpectedEOF),
	}
}

// Retry defaults shared by the providers.
const (
	DefaultMaxRetries   = 2
	DefaultMaxRetryWait = 30 * time.Second
)

// RetryPolicy resolves a provider's retry options: 0 retries means the
// default, a negative count none; a wait of 0 or less means the default.
func RetryPolicy(maxRetries int, maxWait time.Duration) (int, time.Duration) {
	switch {
	case maxRetries == 0:
		maxRetries = DefaultMaxRetries
	case maxRetries < 0:
		maxRetries = 0
	}
	if maxWait <= 0 {
		maxWait = DefaultMaxRetryWait
	}
	return maxRetries, maxWait
}
