package apicall_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/internal/apicall"
)

const key = "sk-apicall-0123456789abcdef"

// server answers each request with the next of its replies (the last one
// over and over) and records what it got.
type server struct {
	*httptest.Server
	mu      sync.Mutex
	replies []func(w http.ResponseWriter)
	got     []*http.Request
	bodies  []string
	at      []time.Time
	seen    chan struct{} // a value per request
}

func newServer(t *testing.T, replies ...func(w http.ResponseWriter)) *server {
	s := &server{replies: replies, seen: make(chan struct{}, 100)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		n := len(s.got)
		s.got = append(s.got, r)
		s.bodies = append(s.bodies, string(b))
		s.at = append(s.at, time.Now())
		reply := s.replies[min(n, len(s.replies)-1)]
		s.mu.Unlock()
		s.seen <- struct{}{}
		reply(w)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

// fail answers status with an OpenAI-style error body and headers.
func fail(status int, msg string, header ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg}})
	}
}

func ok(w http.ResponseWriter) { _, _ = io.WriteString(w, "fine") }

// errorMessage reads {"error":{"message":...}}.
func errorMessage(body []byte) string {
	var v struct {
		Error struct{ Message string }
	}
	_ = json.Unmarshal(body, &v)
	return v.Error.Message
}

func request(url string) apicall.Request {
	return apicall.Request{
		Provider:     "openai",
		Method:       http.MethodPost,
		URL:          url + "/v1/chat/completions",
		Header:       http.Header{"Authorization": {"Bearer " + key}},
		Body:         []byte(`{"model":"m"}`),
		APIKey:       key,
		MaxRetries:   2,
		MaxRetryWait: 30 * time.Second,
		ErrorMessage: errorMessage,
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

// do runs r and returns the body of a success.
func do(c context.Context, r apicall.Request) (string, error) {
	res, err := apicall.Do(c, nil, r)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b), nil
}

func llmErr(t *testing.T, err error) *llm.Error {
	t.Helper()
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *llm.Error", err, err)
	}
	return e
}

func TestSuccessSendsHeadersAndBody(t *testing.T) {
	s := newServer(t, ok)
	body, err := do(ctx(t), request(s.URL))
	if err != nil || body != "fine" {
		t.Fatalf("Do = %q, %v", body, err)
	}
	r := s.got[0]
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		t.Errorf("request %s %s", r.Method, r.URL.Path)
	}
	if r.Header.Get("Authorization") != "Bearer "+key || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", r.Header)
	}
	if s.bodies[0] != `{"model":"m"}` {
		t.Errorf("body %q", s.bodies[0])
	}
}

func TestGetHasNoBodyOrContentType(t *testing.T) {
	s := newServer(t, ok)
	r := request(s.URL)
	r.Method, r.Body = http.MethodGet, nil
	if _, err := do(ctx(t), r); err != nil {
		t.Fatal(err)
	}
	if ct := s.got[0].Header.Get("Content-Type"); ct != "" || s.bodies[0] != "" {
		t.Errorf("GET sent Content-Type %q body %q", ct, s.bodies[0])
	}
}

func TestRetryAfterMsIsWaitedThenSucceeds(t *testing.T) {
	s := newServer(t,
		fail(429, "slow down", "retry-after-ms", "30"),
		fail(503, "busy", "Retry-After", "0.05"),
		ok)
	body, err := do(ctx(t), request(s.URL))
	if err != nil || body != "fine" {
		t.Fatalf("Do = %q, %v", body, err)
	}
	if s.count() != 3 {
		t.Fatalf("%d requests, want 3", s.count())
	}
	for i, want := range []time.Duration{30 * time.Millisecond, 50 * time.Millisecond} {
		if gap := s.at[i+1].Sub(s.at[i]); gap < want {
			t.Errorf("retry %d came after %v, before the server's %v", i+1, gap, want)
		}
	}
	for i, b := range s.bodies {
		if b != `{"model":"m"}` {
			t.Errorf("attempt %d sent body %q", i, b)
		}
	}
}

func TestRetryCap(t *testing.T) {
	s := newServer(t, fail(500, "oops", "retry-after-ms", "1"))
	_, err := do(ctx(t), request(s.URL))
	e := llmErr(t, err)
	if e.Kind != llm.KindServer || e.Status != 500 || e.Message != "oops" {
		t.Errorf("error %+v", e)
	}
	if s.count() != 3 {
		t.Errorf("%d requests, want the first and 2 retries", s.count())
	}

	s = newServer(t, fail(500, "oops", "retry-after-ms", "1"))
	r := request(s.URL)
	r.MaxRetries = 0
	_, _ = do(ctx(t), r)
	if s.count() != 1 {
		t.Errorf("MaxRetries 0: %d requests, want 1", s.count())
	}
}

func TestBackoffWithoutRetryAfter(t *testing.T) {
	// The SDKs' first backoff: 0.5 s less up to a quarter.
	s := newServer(t, fail(502, "bad gateway"), ok)
	r := request(s.URL)
	r.MaxRetries = 1
	if _, err := do(ctx(t), r); err != nil {
		t.Fatal(err)
	}
	if gap := s.at[1].Sub(s.at[0]); gap < 375*time.Millisecond {
		t.Errorf("retried after %v, want the 0.375–0.5 s backoff", gap)
	}
}

func TestRetryAfterOverMaxIsNotWaited(t *testing.T) {
	s := newServer(t, fail(429, "rate limit", "Retry-After", "3600"))
	_, err := do(ctx(t), request(s.URL))
	e := llmErr(t, err)
	if e.Kind != llm.KindRateLimited || e.RetryAfter != time.Hour || e.Status != 429 {
		t.Errorf("error %+v, want rate_limited with RetryAfter 1h", e)
	}
	if s.count() != 1 {
		t.Errorf("%d requests, want 1", s.count())
	}
}

func TestFinalErrorCarriesRetryAfter(t *testing.T) {
	s := newServer(t, fail(429, "rate limit", "retry-after-ms", "20"))
	_, err := do(ctx(t), request(s.URL))
	if e := llmErr(t, err); e.RetryAfter != 20*time.Millisecond {
		t.Errorf("RetryAfter = %v, want 20ms", e.RetryAfter)
	}
}

func TestWhatIsNotRetried(t *testing.T) {
	for name, reply := range map[string]func(http.ResponseWriter){
		"400":                    fail(400, "bad"),
		"401":                    fail(401, "who"),
		"404":                    fail(404, "where"),
		"500 x-should-retry off": fail(500, "no", "x-should-retry", "false"),
	} {
		s := newServer(t, reply)
		_, err := do(ctx(t), request(s.URL))
		llmErr(t, err)
		if s.count() != 1 {
			t.Errorf("%s: %d requests, want 1", name, s.count())
		}
	}
	s := newServer(t, fail(400, "again", "x-should-retry", "true", "retry-after-ms", "1"))
	_, _ = do(ctx(t), request(s.URL))
	if s.count() != 3 {
		t.Errorf("400 with x-should-retry true: %d requests, want 3", s.count())
	}
}

func TestKindsAndDefaultMessage(t *testing.T) {
	for status, kind := range map[int]string{401: llm.KindAuth, 403: llm.KindAuth, 400: llm.KindBadRequest, 503: llm.KindOverloaded, 529: llm.KindOverloaded} {
		s := newServer(t, func(w http.ResponseWriter) {
			w.Header().Set("x-should-retry", "false")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, "<html>proxy error</html>")
		})
		_, err := do(ctx(t), request(s.URL))
		e := llmErr(t, err)
		if e.Kind != kind || e.Status != status || e.Message == "" || strings.Contains(e.Message, "html") {
			t.Errorf("%d: %+v, want kind %s with the default message", status, e, kind)
		}
	}
}

func TestMessageRedaction(t *testing.T) {
	s := newServer(t, fail(401, "Incorrect API key provided: "+key+"\x1b[31m. See\nhttps://x."))
	_, err := do(ctx(t), request(s.URL))
	e := llmErr(t, err)
	if strings.Contains(e.Message, key) || !strings.Contains(e.Message, "[redacted]") || strings.ContainsAny(e.Message, "\x1b\n") {
		t.Errorf("message %q", e.Message)
	}
	if strings.Contains(e.Error(), key) || strings.Contains(e.Err.Error(), key) {
		t.Errorf("error text shows the key: %v / %v", e, e.Err)
	}
	if !strings.HasPrefix(e.Err.Error(), "llm openai: POST ") {
		t.Errorf("Err = %v, want it to name the provider and request", e.Err)
	}
}

func TestCancelDuringWait(t *testing.T) {
	s := newServer(t, fail(429, "later", "Retry-After", "20"))
	c, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := do(c, request(s.URL))
		done <- err
	}()
	<-s.seen
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "llm openai: ") {
			t.Errorf("Do = %v, want the wrapped context.Canceled", err)
		}
		var e *llm.Error
		if errors.As(err, &e) {
			t.Errorf("cancel is an *llm.Error: %v", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Do kept waiting after the cancel")
	}
	if s.count() != 1 {
		t.Errorf("%d requests, want 1", s.count())
	}
}

func TestCancelledBeforeSending(t *testing.T) {
	s := newServer(t, ok)
	c, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := do(c, request(s.URL))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Do = %v, want context.Canceled", err)
	}
}

func TestConnectionErrorsAreRetried(t *testing.T) {
	// The first connection is dropped without an answer.
	var s *server
	s = newServer(t, func(w http.ResponseWriter) {
		if s.count() == 1 {
			panic(http.ErrAbortHandler)
		}
		ok(w)
	})
	body, err := do(ctx(t), request(s.URL))
	if err != nil || body != "fine" || s.count() != 2 {
		t.Errorf("Do = %q, %v after %d requests, want success on the retry", body, err, s.count())
	}
}

func TestUnreachableIsNetwork(t *testing.T) {
	s := newServer(t, ok)
	url := s.URL
	s.Close()
	r := request(url)
	r.MaxRetries = -1
	_, err := do(ctx(t), r)
	if e := llmErr(t, err); e.Kind != llm.KindNetwork || !strings.Contains(e.Message, "127.0.0.1") {
		t.Errorf("error %+v, want network naming the server", e)
	}
}

func TestRedirects(t *testing.T) {
	other := newServer(t, ok)
	s := newServer(t, func(w http.ResponseWriter) {
		w.Header().Set("Location", other.URL+"/steal")
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	_, err := do(ctx(t), request(s.URL))
	if e := llmErr(t, err); e.Kind != llm.KindNetwork || !strings.Contains(e.Err.Error(), "another origin") {
		t.Errorf("error %+v, want the redirect refused", e)
	}
	if other.count() != 0 || s.count() != 1 {
		t.Errorf("other origin got %d requests, origin %d; want 0 and 1 (not retried)", other.count(), s.count())
	}

	// Within the origin a redirect is followed, with the body and key.
	var same *server
	same = newServer(t, func(w http.ResponseWriter) {
		if same.count() == 1 {
			w.Header().Set("Location", "/v1/elsewhere")
			w.WriteHeader(http.StatusTemporaryRedirect)
			return
		}
		ok(w)
	})
	if body, err := do(ctx(t), request(same.URL)); err != nil || body != "fine" {
		t.Fatalf("same-origin redirect: %q, %v", body, err)
	}
	if same.got[1].URL.Path != "/v1/elsewhere" || same.bodies[1] != `{"model":"m"}` || same.got[1].Header.Get("Authorization") == "" {
		t.Errorf("redirected request %s %q %v", same.got[1].URL.Path, same.bodies[1], same.got[1].Header)
	}
}

func TestInvalidURL(t *testing.T) {
	for _, u := range []string{"::not a url", "no-scheme/v1", "http://user:" + key + "@[::1"} {
		r := request("")
		r.URL = u
		_, err := do(ctx(t), r)
		e := llmErr(t, err)
		if e.Kind != llm.KindBadRequest || strings.Contains(e.Error(), key) {
			t.Errorf("%q: %v", u, e)
		}
	}
}
