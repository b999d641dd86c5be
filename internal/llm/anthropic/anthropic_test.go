package anthropic_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/anthropic"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/llm/llmtest"
)

// testKey is long enough that finding it in a message is no coincidence.
const testKey = "sk-ant-test-0123456789abcdef"

func newProvider(t *testing.T, baseURL string) llm.Provider {
	return anthropic.New(anthropic.Options{APIKey: testKey, BaseURL: baseURL, Model: "claude-test-model"})
}

func TestSuite(t *testing.T) {
	llmtest.Run(t, newProvider, fake.Anthropic)
}

// redirect is a transport that sends every request to the fake server and
// remembers the host it was meant for.
type redirect struct {
	to    *url.URL
	mu    sync.Mutex
	hosts []string
}

func (r *redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.hosts = append(r.hosts, req.URL.Host)
	r.mu.Unlock()
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = r.to.Scheme, r.to.Host
	return http.DefaultTransport.RoundTrip(req)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func user(blocks ...llm.Block) llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: blocks}}}
}

func text(s string) llm.Block { return llm.Block{Type: llm.BlockText, Text: s} }

func nop(llm.Event) error { return nil }

func TestDefaultsAndNoEnvironment(t *testing.T) {
	// The SDK reads these by default; the provider must not.
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	srv := fake.New(t)
	to, _ := url.Parse(srv.URL())
	rt := &redirect{to: to}
	p := anthropic.New(anthropic.Options{APIKey: testKey, HTTPClient: &http.Client{Transport: rt}})
	if p.Model() != anthropic.DefaultModel || p.Name() != "anthropic" {
		t.Errorf("model %q name %q", p.Model(), p.Name())
	}
	srv.Script(fake.Reply{Text: []string{"ok"}})
	if _, err := p.Stream(ctx(t), user(text("hi")), nop); err != nil {
		t.Fatal(err)
	}
	if len(rt.hosts) != 1 || rt.hosts[0] != "api.anthropic.com" {
		t.Errorf("hosts = %v, want api.anthropic.com", rt.hosts)
	}
	r := srv.ModelRequests()[0]
	if r.Header.Get("Authorization") != "Bearer "+testKey && r.Header.Get("x-api-key") != testKey {
		t.Errorf("key headers = %q / %q", r.Header.Get("Authorization"), r.Header.Get("x-api-key"))
	}
	if n, _ := r.Body["max_tokens"].(float64); n != 16384 {
		t.Errorf("default max_tokens = %v, want 16384", r.Body["max_tokens"])
	}

	// No key given: none is sent, whatever the environment holds.
	srv2 := fake.New(t)
	p = anthropic.New(anthropic.Options{BaseURL: srv2.URL()})
	_, err := p.Stream(ctx(t), user(text("hi")), nop)
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.KindAuth {
		t.Errorf("Stream without a key = %v, want an auth error from the server", err)
	}
}

func TestOldModelsGetSmallerDefaultBound(t *testing.T) {
	for model, want := range map[string]float64{"claude-3-haiku-20240307": 4096, "claude-3-5-sonnet-latest": 8192, "claude-3-7-sonnet-latest": 16384} {
		srv := fake.New(t)
		srv.Script(fake.Reply{Text: []string{"ok"}})
		p := anthropic.New(anthropic.Options{APIKey: testKey, BaseURL: srv.URL(), Model: model})
		if _, err := p.Stream(ctx(t), user(text("hi")), nop); err != nil {
			t.Fatal(err)
		}
		if n, _ := srv.ModelRequests()[0].Body["max_tokens"].(float64); n != want {
			t.Errorf("%s: max_tokens = %v, want %v", model, n, want)
		}
	}
}

func TestCacheBreakpoints(t *testing.T) {
	srv := fake.New(t)
	srv.Script(fake.Reply{Text: []string{"ok"}})
	p := newProvider(t, srv.URL())
	req := llm.Request{
		System: "sys",
		Tools: []llm.ToolSpec{
			{Name: "A", InputSchema: json.RawMessage(`{"type":"object"}`)},
			{Name: "B", InputSchema: json.RawMessage(`{"type":"object"}`)},
		},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Block{text("one")}},
			{Role: llm.RoleAssistant, Content: []llm.Block{text("two")}},
			{Role: llm.RoleUser, Content: []llm.Block{text("three"), text("four")}},
		},
	}
	if _, err := p.Stream(ctx(t), req, nop); err != nil {
		t.Fatal(err)
	}
	var body struct {
		System []struct {
			CacheControl *struct{ Type string } `json:"cache_control"`
		}
		Tools []struct {
			CacheControl *struct{ Type string } `json:"cache_control"`
		}
		Messages []struct {
			Content []struct {
				Text         string
				CacheControl *struct{ Type string } `json:"cache_control"`
			}
		}
	}
	if err := json.Unmarshal(srv.ModelRequests()[0].Raw, &body); err != nil {
		t.Fatal(err)
	}
	var marked []string
	if body.System[0].CacheControl != nil {
		marked = append(marked, "system")
	}
	for i, tl := range body.Tools {
		if tl.CacheControl != nil {
			marked = append(marked, fmt.Sprintf("tool %d", i))
		}
	}
	for _, m := range body.Messages {
		for _, b := range m.Content {
			if b.CacheControl != nil {
				marked = append(marked, b.Text)
			}
		}
	}
	if want := []string{"system", "tool 1", "four"}; !reflect.DeepEqual(marked, want) {
		t.Errorf("cache breakpoints on %v, want %v", marked, want)
	}
}

func TestDocumentsAndImages(t *testing.T) {
	srv := fake.New(t)
	srv.Script(fake.Reply{Text: []string{"ok"}})
	p := newProvider(t, srv.URL())
	req := user(
		llm.Block{Type: llm.BlockDocument, MediaType: "application/pdf", Data: "JVBERi0="},
		llm.Block{Type: llm.BlockDocument, MediaType: "text/plain", Data: base64.StdEncoding.EncodeToString([]byte("plain words"))},
		llm.Block{Type: llm.BlockImage, MediaType: "image/jpeg", Data: "/9j/"},
		text("describe"),
	)
	if _, err := p.Stream(ctx(t), req, nop); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []struct {
			Content []struct {
				Type   string
				Source map[string]any
			}
		}
	}
	_ = json.Unmarshal(srv.ModelRequests()[0].Raw, &body)
	c := body.Messages[0].Content
	if c[0].Type != "document" || c[0].Source["type"] != "base64" || c[0].Source["media_type"] != "application/pdf" || c[0].Source["data"] != "JVBERi0=" {
		t.Errorf("pdf = %+v", c[0])
	}
	if c[1].Type != "document" || c[1].Source["type"] != "text" || c[1].Source["data"] != "plain words" {
		t.Errorf("text document = %+v", c[1])
	}
	if c[2].Type != "image" || c[2].Source["media_type"] != "image/jpeg" {
		t.Errorf("image = %+v", c[2])
	}
}

func TestUnsendableRequestsFailBeforeSending(t *testing.T) {
	for name, req := range map[string]llm.Request{
		"unsupported document": user(llm.Block{Type: llm.BlockDocument, MediaType: "application/zip", Data: "UEs="}),
		"unknown block":        user(llm.Block{Type: "video"}),
		"unknown role":         {Messages: []llm.Message{{Role: "system", Content: []llm.Block{text("x")}}}},
		"tool input not an object": {Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Block{text("x")}},
			{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockToolUse, ToolUseID: "t", ToolName: "n", Input: json.RawMessage(`[1]`)}}},
		}},
		"schema not an object": {Tools: []llm.ToolSpec{{Name: "n", InputSchema: json.RawMessage(`"x"`)}}, Messages: user(text("x")).Messages},
	} {
		srv := fake.New(t)
		p := newProvider(t, srv.URL())
		_, err := p.Stream(ctx(t), req, nop)
		var e *llm.Error
		if !errors.As(err, &e) || e.Kind != llm.KindBadRequest {
			t.Errorf("%s: %v, want bad_request", name, err)
		}
		if len(srv.Requests()) != 0 {
			t.Errorf("%s: sent anyway", name)
		}
	}
}

func TestRetryOptions(t *testing.T) {
	srv := fake.New(t)
	srv.Script(fake.Reply{Fail: &fake.Failure{Status: 429, RetryAfter: "1"}})
	p := anthropic.New(anthropic.Options{APIKey: testKey, BaseURL: srv.URL(), MaxRetryWait: time.Millisecond})
	_, err := p.Stream(ctx(t), user(text("x")), nop)
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.KindRateLimited || e.RetryAfter != time.Second {
		t.Errorf("= %v, want rate_limited with 1s", err)
	}
	if n := len(srv.ModelRequests()); n != 1 {
		t.Errorf("%d requests, want 1: a wait over MaxRetryWait is not waited", n)
	}

	srv = fake.New(t)
	srv.Script(fake.Reply{Fail: &fake.Failure{Status: 500}})
	p = anthropic.New(anthropic.Options{APIKey: testKey, BaseURL: srv.URL(), MaxRetries: -1})
	if _, err := p.Stream(ctx(t), user(text("x")), nop); err == nil {
		t.Error("500 succeeded")
	}
	if n := len(srv.ModelRequests()); n != 1 {
		t.Errorf("%d requests with retries off, want 1", n)
	}
}

func BenchmarkStream(b *testing.B) {
	llmtest.Bench(b, func(base string) llm.Provider {
		return anthropic.New(anthropic.Options{APIKey: testKey, BaseURL: base, Model: "m"})
	}, fake.Anthropic)
}

// TestNoVendorSDK: the provider is plain net/http (issue 37):
// anthropic-sdk-go cost every ferry process ~2 ms of package init and
// ~7 MB of binary.
func TestNoVendorSDK(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not on PATH: install the Go toolchain to run this test")
	}
	out, err := exec.Command(gobin, "list", "-deps", "github.com/ferry-dev/ferry/internal/llm/anthropic").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "anthropic-sdk-go") || strings.Contains(dep, "tidwall/") {
			t.Errorf("the provider links %s", dep)
		}
	}
}

// TestErrorTypeDecidesKind: the body's error type names the kind where it
// says more than the status (a proxy's 500 that is an overload), and an
// error event inside a 200 stream has nothing else.
func TestErrorTypeDecidesKind(t *testing.T) {
	srv := fake.New(t)
	p := anthropic.New(anthropic.Options{APIKey: testKey, BaseURL: srv.URL(), MaxRetries: -1})
	srv.Script(fake.Reply{Fail: &fake.Failure{Status: 500, Type: "overloaded_error"}})
	_, err := p.Stream(ctx(t), user(text("x")), nop)
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.KindOverloaded || e.Status != 500 || e.Message != "Internal Server Error" {
		t.Errorf("500 overloaded_error = %#v, want overloaded with status 500", err)
	}
	srv.Script(fake.Reply{Raw: "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow down, " + testKey + "\"}}\n\n"})
	_, err = p.Stream(ctx(t), user(text("x")), nop)
	if !errors.As(err, &e) || e.Kind != llm.KindRateLimited || e.Status != 0 || e.Message != "slow down, [redacted]" {
		t.Errorf("error event = %#v, want rate_limited, no status, key redacted", err)
	}
}

// TestBaseURLWithPath: a proxy's base URL keeps its path, with or without
// a trailing slash, and loses its query, as with the SDK.
func TestBaseURLWithPath(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.RequestURI())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"input_tokens":3,"data":[],"has_more":false}`))
	}))
	t.Cleanup(srv.Close)
	for _, base := range []string{srv.URL + "/proxy", srv.URL + "/proxy/", srv.URL + "/proxy?x=1"} {
		p := anthropic.New(anthropic.Options{APIKey: testKey, BaseURL: base})
		if n, err := p.CountTokens(ctx(t), user(text("x"))); err != nil || n != 3 {
			t.Errorf("%s: CountTokens = %d, %v", base, n, err)
		}
		if _, err := p.ListModels(ctx(t)); err != nil {
			t.Errorf("%s: ListModels: %v", base, err)
		}
	}
	want := []string{"/proxy/v1/messages/count_tokens", "/proxy/v1/models?limit=100"}
	for i, got := range paths {
		if got != want[i%2] {
			t.Errorf("request %d to %s, want %s", i, got, want[i%2])
		}
	}
	if len(paths) != 6 {
		t.Errorf("%d requests, want 6", len(paths))
	}
}
