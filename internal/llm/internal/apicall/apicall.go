// Package apicall sends one provider request: JSON body, headers, retries
// of 408/409/429/5xx and connection errors with backoff or the server's
// Retry-After (apierr.RetryAfter), bounded by the retry policy, and maps a
// final failure to an *llm.Error (apierr.KindForStatus, apierr.SafeMessage,
// RetryAfter set), as the vendor SDKs and apierr did before it.
//
// Guarantees:
//
//   - At most MaxRetries retries. A retry waits the server's
//     retry-after-ms or Retry-After; without one, the SDKs' backoff:
//     0.5 s doubling per retry, at most 8 s (and MaxRetryWait), less up to
//     a quarter of jitter. A response asking for longer than MaxRetryWait
//     is not retried: its error carries the wait in RetryAfter.
//   - "x-should-retry: true/false" overrides the status, as in the SDKs.
//   - A cancelled context ends the call at once, also during a wait, with
//     ctx's error wrapped ("llm openai: context canceled").
//   - Requests never leave the URL's origin: a redirect to another scheme,
//     host or port is refused (not followed, not retried), so keys in
//     headers reach only the server they were configured for.
//   - Error bodies are read up to 1 MiB; the message shown is the one
//     ErrorMessage extracts, with APIKey redacted.
package apicall

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/internal/apierr"
	"github.com/ferry-dev/ferry/internal/llm/internal/sse"
)

// Request is one call.
type Request struct {
	Provider     string      // "openai" or "anthropic": prefixes errors ("llm openai: ...")
	Method       string      // http.MethodPost or http.MethodGet
	URL          string      //
	Header       http.Header // auth and version headers; Content-Type is set for a body
	Body         []byte      // JSON; nil for GET
	APIKey       string      // redacted from any message shown
	MaxRetries   int         // as returned by apierr.RetryPolicy
	MaxRetryWait time.Duration
	// ErrorMessage extracts the server's human message from an error body
	// ("" if none). Nil shows the kind's default message.
	ErrorMessage func(body []byte) string
}

// Backoff bounds, the SDKs' own.
const (
	initialBackoff = 500 * time.Millisecond
	maxBackoff     = 8 * time.Second
)

// maxErrorBody bounds what is read of an error response.
const maxErrorBody = 1 << 20

// errOtherOrigin refuses a redirect off the request's origin.
var errOtherOrigin = errors.New("apicall: redirect to another origin refused")

// Do returns a 2xx response (the caller closes its body) or an error:
// *llm.Error for an HTTP failure, apierr.Transport's error for a transport
// failure, ctx's error when cancelled.
func Do(ctx context.Context, c *http.Client, r Request) (*http.Response, error) {
	if c == nil {
		c = http.DefaultClient
	}
	target, err := url.Parse(r.URL)
	if err != nil || target.Scheme == "" || target.Host == "" {
		// Not echoed: a URL may carry a key in its userinfo or query.
		return nil, &llm.Error{
			Kind:    llm.KindBadRequest,
			Message: "the provider's base URL is not a valid http(s) URL",
			Err:     fmt.Errorf("llm %s: invalid request URL", r.Provider),
		}
	}
	client := sameOrigin(c, target)
	for attempt := 0; ; attempt++ {
		res, err := send(ctx, client, r)
		if ctx.Err() != nil {
			if res != nil {
				_ = res.Body.Close()
			}
			return nil, apierr.Transport(ctx, r.Provider, ctx.Err(), false)
		}
		last := attempt >= r.MaxRetries
		if err != nil {
			if last || errors.Is(err, errOtherOrigin) {
				return nil, apierr.Transport(ctx, r.Provider, err, false)
			}
			if err := sleep(ctx, r.Provider, backoff(attempt, r.MaxRetryWait)); err != nil {
				return nil, err
			}
			continue
		}
		if res.StatusCode >= 200 && res.StatusCode < 300 {
			return res, nil
		}
		wait := apierr.RetryAfter(res.Header)
		if last || !retryable(res) || wait > r.MaxRetryWait {
			return nil, httpError(r, res, wait)
		}
		discard(res)
		if wait <= 0 {
			wait = backoff(attempt, r.MaxRetryWait)
		}
		if err := sleep(ctx, r.Provider, wait); err != nil {
			return nil, err
		}
	}
}

// send makes one attempt.
func send(ctx context.Context, c *http.Client, r Request) (*http.Response, error) {
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, r.URL, body)
	if err != nil {
		return nil, err
	}
	for k, vs := range r.Header {
		req.Header[k] = append([]string(nil), vs...)
	}
	if r.Body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return c.Do(req)
}

// retryable reports whether a failed response is worth another attempt.
func retryable(res *http.Response) bool {
	switch res.Header.Get("x-should-retry") {
	case "true":
		return true
	case "false":
		return false
	}
	s := res.StatusCode
	return s == http.StatusRequestTimeout || s == http.StatusConflict || s == http.StatusTooManyRequests || s >= 500
}

// backoff is the wait before retry attempt+1 when the server named none:
// 0.5 s doubling, capped, less up to a quarter of jitter.
func backoff(attempt int, maxWait time.Duration) time.Duration {
	d := maxBackoff
	if attempt < 5 { // 0.5 s << 4 is already 8 s
		d = min(initialBackoff<<attempt, maxBackoff)
	}
	if maxWait > 0 {
		d = min(d, maxWait)
	}
	if j := int64(d / 4); j > 0 {
		d -= time.Duration(rand.Int64N(j)) //nolint:gosec // jitter, not a secret
	}
	return d
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, provider string, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("llm %s: %w", provider, ctx.Err())
	case <-t.C:
		return nil
	}
}

// discard reads a little of a body not used, so the connection is reused,
// and closes it.
func discard(res *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	_ = res.Body.Close()
}

// httpError maps a failed response to an *llm.Error and closes its body.
func httpError(r Request, res *http.Response, wait time.Duration) error {
	body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	_ = res.Body.Close()
	kind := apierr.KindForStatus(res.StatusCode)
	msg := ""
	if r.ErrorMessage != nil {
		msg = r.ErrorMessage(body)
	}
	return &llm.Error{
		Kind:       kind,
		Status:     res.StatusCode,
		RetryAfter: wait,
		Message:    apierr.SafeMessage(msg, r.APIKey, apierr.DefaultMessage(kind)),
		Err:        fmt.Errorf("llm %s: %s %s: HTTP %s", r.Provider, r.Method, logURL(res.Request), res.Status),
	}
}

// logURL is a request's URL without userinfo, query or fragment, where a
// key may be.
func logURL(req *http.Request) string {
	if req == nil || req.URL == nil {
		return ""
	}
	u := *req.URL
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

// sameOrigin is c refusing redirects off target's origin (and following
// c's own redirect policy otherwise).
func sameOrigin(c *http.Client, target *url.URL) *http.Client {
	cc := *c
	next := c.CheckRedirect
	cc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !strings.EqualFold(req.URL.Scheme, target.Scheme) || !strings.EqualFold(req.URL.Hostname(), target.Hostname()) ||
			port(req.URL) != port(target) {
			return errOtherOrigin
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 { // net/http's default policy
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &cc
}

// port is u's port, the scheme's default when none is written.
func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}

// Endpoint resolves path against base as the vendor SDKs did: base's path
// is a directory ("/v1" is "/v1/"), its query is dropped. "" if base does
// not parse (Do then fails as a bad request).
func Endpoint(base, path string) string {
	u, err := url.Parse(base)
	if err != nil {
		return ""
	}
	if u.Path != "" && !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
		u.RawPath = ""
	}
	return u.ResolveReference(&url.URL{Path: path}).String()
}

// Decode unmarshals data into v, forgiving a field of the wrong type (it
// is skipped, as the SDKs skipped it) but not malformed JSON or a value of
// the wrong type as a whole.
func Decode(data []byte, v any) error {
	err := json.Unmarshal(data, v)
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return nil
	}
	return err
}

// Events feeds the server-sent events of a streamed answer to handle until
// the body ends or handle says done. A broken body is apierr.Transport's
// error (started tells whether the stream had already delivered output);
// when ctx is cancelled, ctx's error is returned whatever the body did.
func Events(ctx context.Context, provider string, body io.Reader, maxEvent int, started func() bool, handle func(sse.Event) (done bool, err error)) error {
	events := sse.NewReader(body, maxEvent)
	for {
		ev, err := events.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return apierr.Transport(ctx, provider, err, started())
		}
		done, err := handle(ev)
		if err != nil {
			return err
		}
		if done {
			break
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("llm %s: %w", provider, ctx.Err())
	}
	return nil
}
