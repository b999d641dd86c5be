package openai_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/llm/llmtest"
	"github.com/ferry-dev/ferry/internal/llm/openai"
)

// testKey is long enough that finding it in a message is no coincidence.
const testKey = "sk-test-0123456789abcdef"

func newProvider(t *testing.T, baseURL string) llm.Provider {
	return openai.New(openai.Options{APIKey: testKey, BaseURL: baseURL, Model: "gpt-test-model"})
}

func TestSuite(t *testing.T) {
	llmtest.Run(t, newProvider, fake.OpenAI)
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

func TestOpenAIDefaults(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	srv := fake.New(t)
	to, _ := url.Parse(srv.URL())
	rt := &redirect{to: to}
	p := openai.New(openai.Options{APIKey: testKey, HTTPClient: &http.Client{Transport: rt}})
	if p.Model() != openai.DefaultModel || p.Name() != "openai" {
		t.Errorf("model %q name %q", p.Model(), p.Name())
	}
	srv.Script(fake.Reply{Text: []string{"ok"}})
	req := user(text("hi"))
	req.MaxTokens = 99
	if _, err := p.Stream(ctx(t), req, nop); err != nil {
		t.Fatal(err)
	}
	if len(rt.hosts) != 1 || rt.hosts[0] != "api.openai.com" {
		t.Errorf("hosts = %v, want api.openai.com", rt.hosts)
	}
	r := srv.ModelRequests()[0]
	if r.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer "+testKey {
		t.Errorf("path %q auth %q", r.Path, r.Header.Get("Authorization"))
	}
	// OpenAI's reasoning models take only max_completion_tokens.
	if n, _ := r.Body["max_completion_tokens"].(float64); n != 99 || r.Body["max_tokens"] != nil {
		t.Errorf("bound sent as %v / %v, want max_completion_tokens 99", r.Body["max_completion_tokens"], r.Body["max_tokens"])
	}
}

func TestLocalServerGetsNoKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	srv := fake.New(t)
	srv.Script(fake.Reply{Text: []string{"ok"}})
	p := openai.New(openai.Options{BaseURL: srv.BaseURL(fake.OpenAI), Model: "llama3.1"})
	if _, err := p.Stream(ctx(t), user(text("hi")), nop); err != nil {
		t.Fatal(err)
	}
	if a := srv.ModelRequests()[0].Header.Get("Authorization"); a != "" {
		t.Errorf("Authorization = %q, want none", a)
	}
}

// stream runs a raw body through the provider.
func streamRaw(t *testing.T, raw string) (*llm.Response, []llm.Event, error) {
	srv := fake.New(t)
	srv.Script(fake.Reply{Raw: raw})
	var events []llm.Event
	resp, err := newProvider(t, srv.BaseURL(fake.OpenAI)).Stream(ctx(t), user(text("x")), func(ev llm.Event) error {
		events = append(events, ev)
		return nil
	})
	return resp, events, err
}

// chunk is one SSE chunk with a delta and a finish reason.
func chunk(delta string, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + "}]}\n\n"
}

func TestCompatibleServerQuirks(t *testing.T) {
	// Ollama: "reasoning" deltas, a tool call without an id, and "stop"
	// as the finish reason after it.
	raw := chunk(`{"role":"assistant","reasoning":"thinking..."}`, "") +
		chunk(`{"tool_calls":[{"index":0,"function":{"name":"Read","arguments":"{\"file_path\":\"a\"}"}}]}`, "") +
		chunk(`{}`, "stop") + "data: [DONE]\n\n"
	resp, events, err := streamRaw(t, raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 || events[0].Type != llm.EventThinkingDelta || events[0].Text != "thinking..." || events[1].Type != llm.EventToolUse {
		t.Fatalf("events = %+v", events)
	}
	if id := events[1].Block.ToolUseID; id != "call_0" {
		t.Errorf("generated id = %q, want call_0", id)
	}
	if resp.StopReason != llm.StopToolUse {
		t.Errorf("stop = %q, want tool_use", resp.StopReason)
	}
}

func TestRefusalIsText(t *testing.T) {
	raw := chunk(`{"refusal":"I can't help with that."}`, "content_filter") + "data: [DONE]\n\n"
	resp, _, err := streamRaw(t, raw)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != llm.StopRefusal || resp.Message.Content[0].Text != "I can't help with that." {
		t.Errorf("response = %+v", resp)
	}
}

func TestDocuments(t *testing.T) {
	srv := fake.New(t)
	srv.Script(fake.Reply{Text: []string{"ok"}})
	p := newProvider(t, srv.BaseURL(fake.OpenAI))
	req := user(
		llm.Block{Type: llm.BlockDocument, MediaType: "application/pdf", Data: "JVBERi0="},
		llm.Block{Type: llm.BlockDocument, MediaType: "text/markdown", Data: base64.StdEncoding.EncodeToString([]byte("# notes"))},
		text("summarise"),
	)
	if _, err := p.Stream(ctx(t), req, nop); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []struct {
			Content []map[string]any
		}
	}
	_ = json.Unmarshal(srv.ModelRequests()[0].Raw, &body)
	c := body.Messages[0].Content
	file, _ := c[0]["file"].(map[string]any)
	if c[0]["type"] != "file" || file["file_data"] != "data:application/pdf;base64,JVBERi0=" {
		t.Errorf("pdf part = %v", c[0])
	}
	if c[1]["type"] != "text" || c[1]["text"] != "# notes" || c[2]["text"] != "summarise" {
		t.Errorf("text parts = %v", c[1:])
	}
}

func TestUnsendableRequestsFailBeforeSending(t *testing.T) {
	for name, req := range map[string]llm.Request{
		"unsupported document":   user(llm.Block{Type: llm.BlockDocument, MediaType: "application/zip", Data: "UEs="}),
		"tool_use from the user": user(llm.Block{Type: llm.BlockToolUse, ToolUseID: "t", ToolName: "n"}),
		"unknown role":           {Messages: []llm.Message{{Role: "system", Content: []llm.Block{text("x")}}}},
		"tool input not an object": {Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Block{text("x")}},
			{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockToolUse, ToolUseID: "t", ToolName: "n", Input: json.RawMessage(`"s"`)}}},
		}},
		"schema not an object": {Tools: []llm.ToolSpec{{Name: "n", InputSchema: json.RawMessage(`[1]`)}}, Messages: user(text("x")).Messages},
	} {
		srv := fake.New(t)
		_, err := newProvider(t, srv.BaseURL(fake.OpenAI)).Stream(ctx(t), req, nop)
		var e *llm.Error
		if !errors.As(err, &e) || e.Kind != llm.KindBadRequest {
			t.Errorf("%s: %v, want bad_request", name, err)
		}
		if len(srv.Requests()) != 0 {
			t.Errorf("%s: sent anyway", name)
		}
	}
}

func BenchmarkStream(b *testing.B) {
	llmtest.Bench(b, func(base string) llm.Provider {
		return openai.New(openai.Options{APIKey: testKey, BaseURL: base, Model: "m"})
	}, fake.OpenAI)
}

// TestNoVendorSDK: the provider is plain net/http (issue 37): openai-go's
// package init cost every ferry process ~7 ms and its code ~13 MB.
func TestNoVendorSDK(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not on PATH: install the Go toolchain to run this test")
	}
	out, err := exec.Command(gobin, "list", "-deps", "github.com/ferry-dev/ferry/internal/llm/openai").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "openai-go") || strings.Contains(dep, "tidwall/") {
			t.Errorf("the provider links %s", dep)
		}
	}
}

func TestBaseURLForms(t *testing.T) {
	srv := fake.New(t)
	for _, base := range []string{srv.BaseURL(fake.OpenAI), srv.BaseURL(fake.OpenAI) + "/", srv.BaseURL(fake.OpenAI) + "?api-version=1"} {
		srv.Script(fake.Reply{Text: []string{"ok"}})
		p := openai.New(openai.Options{BaseURL: base, Model: "m"})
		if _, err := p.Stream(ctx(t), user(text("hi")), nop); err != nil {
			t.Errorf("base %q: %v", base, err)
		}
		if _, err := p.ListModels(ctx(t)); err != nil {
			t.Errorf("base %q: ListModels: %v", base, err)
		}
	}
	for _, r := range srv.Requests() {
		if r.Path != "/v1/chat/completions" && r.Path != "/v1/models" {
			t.Errorf("request to %s", r.Path)
		}
		if ua := r.Header.Get("User-Agent"); !strings.HasPrefix(ua, "ferry/") {
			t.Errorf("User-Agent %q, want ferry/…", ua)
		}
	}
	e := new(llm.Error)
	_, err := openai.New(openai.Options{BaseURL: "://nope", Model: "m"}).Stream(ctx(t), user(text("hi")), nop)
	if !errors.As(err, &e) || e.Kind != llm.KindBadRequest {
		t.Errorf("a base URL that does not parse: %v, want bad_request", err)
	}
}
