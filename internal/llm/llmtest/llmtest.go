// Package llmtest is the suite every llm.Provider passes: one set of tests
// run against each implementation through the fake server (internal/llm/fake)
// speaking that provider's real wire format, so the provider's HTTP client is
// exercised end to end on loopback.
//
// It checks the guarantees documented on package llm: text deltas in order
// and equal to the assembled message, tool calls delivered once and whole
// (also when their arguments arrive in pieces, several per reply, or
// interleaved), what the model is sent (system prompt, tools, tool results
// paired with their calls, images), usage and stop reasons, prompt
// cancellation, and failures mapped to *llm.Error kinds after the client's
// retries (which the fake counts). No test asserts a duration: waits are
// bounded by contexts, and a hang fails at that bound.
package llmtest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// NewProvider returns the provider under test, talking to baseURL.
type NewProvider func(t *testing.T, baseURL string) llm.Provider

// bound is the longest any one call may take; a hang fails there.
const bound = 20 * time.Second

// Run runs the suite. format is the wire format the provider speaks.
func Run(t *testing.T, newProvider NewProvider, format fake.Format) {
	t.Helper()
	s := &suite{newProvider: newProvider, format: format}
	tests := []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"text streams in order", s.textStreams},
		{"tool call with arguments in pieces", s.toolCallPieces},
		{"several tool calls in one reply", s.severalToolCalls},
		{"thinking streams as thinking deltas", s.thinking},
		{"request carries system prompt, tools and bound", s.requestShape},
		{"tool results are sent back paired with their calls", s.toolResultsSentBack},
		{"usage is reported", s.usage},
		{"stop reasons map to neutral ones", s.stopReasons},
		{"cancel mid-stream returns ctx error", s.cancelMidStream},
		{"cancel before the first delta returns ctx error", s.cancelBeforeDelta},
		{"callback error stops the stream", s.callbackError},
		{"429 is retried then rate_limited with Retry-After", s.rateLimited},
		{"a Retry-After too long is not waited for", s.longRetryAfter},
		{"500 is retried then server", s.serverError},
		{"a retried 500 can recover", s.serverRecovers},
		{"overloaded", s.overloaded},
		{"401 is auth, not retried, key not shown", s.auth},
		{"400 is bad_request", s.badRequest},
		{"stream cut mid-event is a stream error", s.streamCut},
		{"malformed event is a stream error", s.streamBadJSON},
		{"in-stream error event is retryable", s.streamErrorEvent},
		{"stream ending without finishing is a stream error", s.streamTruncated},
		{"garbage streams never panic", s.garbage},
		{"unreachable server is a network error", s.unreachable},
		{"count tokens", s.countTokens},
		{"models are listed, every page", s.listModels},
		{"a failed model list is an error", s.listModelsFails},
		{"the request's model and effort reach the wire", s.modelAndEffort},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t)
		})
	}
}

type suite struct {
	newProvider NewProvider
	format      fake.Format
}

// setup starts a fake server and a provider talking to it.
func (s *suite) setup(t *testing.T) (*fake.Server, llm.Provider) {
	t.Helper()
	srv := fake.New(t)
	return srv, s.newProvider(t, srv.BaseURL(s.format))
}

// ctx is a context bounded for one test.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	return c
}

// userText is a one-message conversation.
func userText(text string) llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockText, Text: text}}}}}
}

// recorder collects a stream's events.
type recorder struct{ events []llm.Event }

func (r *recorder) on(ev llm.Event) error {
	r.events = append(r.events, ev)
	return nil
}

// texts are the deltas of type typ, in order.
func (r *recorder) texts(typ string) []string {
	var out []string
	for _, ev := range r.events {
		if ev.Type == typ {
			out = append(out, ev.Text)
		}
	}
	return out
}

// calls are the tool_use events' blocks, in order.
func (r *recorder) calls() []llm.Block {
	var out []llm.Block
	for _, ev := range r.events {
		if ev.Type == llm.EventToolUse {
			if ev.Block == nil {
				return append(out, llm.Block{Type: "missing block"})
			}
			out = append(out, *ev.Block)
		}
	}
	return out
}

// stream runs one call and fails the test on error.
func stream(t *testing.T, p llm.Provider, req llm.Request) (*llm.Response, *recorder) {
	t.Helper()
	rec := &recorder{}
	resp, err := p.Stream(ctx(t), req, rec.on)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if resp == nil {
		t.Fatal("Stream returned no response and no error")
	}
	return resp, rec
}

// streamErr runs one call that must fail with an *llm.Error.
func streamErr(t *testing.T, p llm.Provider, req llm.Request) *llm.Error {
	t.Helper()
	resp, err := p.Stream(ctx(t), req, (&recorder{}).on)
	if err == nil {
		t.Fatalf("Stream succeeded (%+v), want an error", resp)
	}
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("Stream error %v (%T) is not an *llm.Error", err, err)
	}
	if e.Message == "" {
		t.Errorf("error %v has no message to show", e)
	}
	return e
}

// jsonEqual compares two JSON texts by value.
func jsonEqual(t *testing.T, got json.RawMessage, want any) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("input %q is not JSON: %v", got, err)
	}
	wb, _ := json.Marshal(want)
	_ = json.Unmarshal(wb, &w)
	if !reflect.DeepEqual(g, w) {
		t.Errorf("input = %s, want %s", got, wb)
	}
}

func (s *suite) textStreams(t *testing.T) {
	srv, p := s.setup(t)
	pieces := []string{"Hel", "lo, ", "wörld", " 🎉"}
	srv.Script(fake.Reply{Text: pieces})
	resp, rec := stream(t, p, userText("hi"))
	if got := rec.texts(llm.EventTextDelta); !reflect.DeepEqual(got, pieces) {
		t.Errorf("deltas = %q, want %q", got, pieces)
	}
	if len(rec.calls()) != 0 {
		t.Errorf("tool calls = %v, want none", rec.calls())
	}
	want := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockText, Text: strings.Join(pieces, "")}}}
	if !reflect.DeepEqual(resp.Message, want) {
		t.Errorf("message = %+v, want %+v", resp.Message, want)
	}
	if resp.StopReason != llm.StopEndTurn {
		t.Errorf("stop = %q, want end_turn", resp.StopReason)
	}
	reqs := srv.ModelRequests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d model requests, want 1", len(reqs))
	}
	if !reqs[0].Stream() || reqs[0].Model() != p.Model() {
		t.Errorf("request stream=%v model=%q, want a stream of %q", reqs[0].Stream(), reqs[0].Model(), p.Model())
	}
	msgs := reqs[0].Messages()
	if s.format == fake.OpenAI {
		if len(msgs) != 1 || msgs[0]["role"] != "user" || msgs[0]["content"] != "hi" {
			t.Errorf("messages = %v, want one user message \"hi\"", msgs)
		}
	} else if len(msgs) != 1 || msgs[0]["role"] != "user" || textOf(msgs[0]["content"]) != "hi" {
		t.Errorf("messages = %v, want one user message \"hi\"", msgs)
	}
}

// textOf joins the text blocks of Anthropic content.
func textOf(content any) string {
	if s, ok := content.(string); ok {
		return s
	}
	var out []string
	list, _ := content.([]any)
	for _, b := range list {
		bm, _ := b.(map[string]any)
		if bm["type"] == "text" {
			s, _ := bm["text"].(string)
			out = append(out, s)
		}
	}
	return strings.Join(out, "")
}

func (s *suite) toolCallPieces(t *testing.T) {
	srv, p := s.setup(t)
	input := map[string]any{"file_path": "/src/naïve \"quoted\".go", "limit": 10, "opts": map[string]any{"deep": []any{1, "two", nil, true}}}
	srv.Script(fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Read", Input: input, Pieces: 7}}})
	resp, rec := stream(t, p, userText("read it"))
	calls := rec.calls()
	if len(calls) != 1 {
		t.Fatalf("tool calls = %d, want 1", len(calls))
	}
	c := calls[0]
	if c.Type != llm.BlockToolUse || c.ToolName != "Read" || c.ToolUseID == "" {
		t.Errorf("call = %+v, want a tool_use of Read with an id", c)
	}
	jsonEqual(t, c.Input, input)
	if resp.StopReason != llm.StopToolUse {
		t.Errorf("stop = %q, want tool_use", resp.StopReason)
	}
	if len(resp.Message.Content) != 1 || !reflect.DeepEqual(resp.Message.Content[0], c) {
		t.Errorf("message = %+v, want exactly the streamed call", resp.Message.Content)
	}
}

func (s *suite) severalToolCalls(t *testing.T) {
	srv, p := s.setup(t)
	inputs := []map[string]any{
		{"pattern": "**/*.go"},
		{"file_path": "a.txt", "offset": 3},
		{},
	}
	srv.Script(fake.Reply{
		Text: []string{"Let me ", "look."},
		ToolCalls: []fake.ToolCall{
			{Name: "Glob", Input: inputs[0], Pieces: 4},
			{Name: "Read", Input: inputs[1], Pieces: 5},
			{Name: "Status", Input: inputs[2]},
		},
		Interleave: true,
	})
	resp, rec := stream(t, p, userText("go"))
	calls := rec.calls()
	if len(calls) != 3 {
		t.Fatalf("tool calls = %d, want 3", len(calls))
	}
	ids := map[string]bool{}
	for i, name := range []string{"Glob", "Read", "Status"} {
		if calls[i].ToolName != name {
			t.Errorf("call %d = %s, want %s", i, calls[i].ToolName, name)
		}
		jsonEqual(t, calls[i].Input, inputs[i])
		ids[calls[i].ToolUseID] = true
	}
	if len(ids) != 3 || ids[""] {
		t.Errorf("call ids %v are not 3 distinct ids", ids)
	}
	// Text deltas come before any call.
	sawCall := false
	for _, ev := range rec.events {
		if ev.Type == llm.EventToolUse {
			sawCall = true
		} else if ev.Type == llm.EventTextDelta && sawCall {
			t.Errorf("text delta %q after a tool call", ev.Text)
		}
	}
	want := append([]llm.Block{{Type: llm.BlockText, Text: "Let me look."}}, calls...)
	if !reflect.DeepEqual(resp.Message.Content, want) {
		t.Errorf("message = %+v, want %+v", resp.Message.Content, want)
	}
}

func (s *suite) thinking(t *testing.T) {
	srv, p := s.setup(t)
	srv.Script(fake.Reply{Thinking: []string{"Let me ", "think."}, Text: []string{"Answer."}})
	resp, rec := stream(t, p, userText("why"))
	if got := rec.texts(llm.EventThinkingDelta); !reflect.DeepEqual(got, []string{"Let me ", "think."}) {
		t.Errorf("thinking deltas = %q", got)
	}
	want := []llm.Block{{Type: llm.BlockThinking, Text: "Let me think."}, {Type: llm.BlockText, Text: "Answer."}}
	if s.format == fake.Anthropic {
		want[0].Signature = fake.ThinkingSignature // kept to send the block back
	}
	if !reflect.DeepEqual(resp.Message.Content, want) {
		t.Errorf("message = %+v, want %+v", resp.Message.Content, want)
	}
	if s.format != fake.Anthropic {
		return
	}
	srv.Script(fake.Reply{Text: []string{"ok"}}, fake.Reply{Text: []string{"ok"}})
	next := userText("why")
	next.Messages = append(next.Messages, resp.Message, llm.Message{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockText, Text: "go on"}}})
	next.Effort = llm.EffortLow
	stream(t, p, next)
	asst, _ := srv.ModelRequests()[1].Messages()[1]["content"].([]any)
	first, _ := asst[0].(map[string]any)
	if first["type"] != "thinking" || first["signature"] != fake.ThinkingSignature || first["thinking"] != "Let me think." {
		t.Errorf("with thinking on, a signed thinking block goes back whole: got %v", first)
	}
	next.Effort = ""
	stream(t, p, next)
	asst, _ = srv.ModelRequests()[2].Messages()[1]["content"].([]any)
	for _, b := range asst {
		if bm, _ := b.(map[string]any); bm["type"] == "thinking" {
			t.Errorf("with thinking not asked for, a thinking block went back: %v", bm)
		}
	}
}

func (s *suite) requestShape(t *testing.T) {
	srv, p := s.setup(t)
	srv.Script(fake.Reply{Text: []string{"ok"}})
	schema := json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string","description":"where"}},"required":["file_path"],"additionalProperties":false}`)
	req := userText("hello")
	req.System = "You are ferry's agent."
	req.MaxTokens = 1234
	req.Tools = []llm.ToolSpec{
		{Name: "Read", Description: "Reads a file.", InputSchema: schema},
		{Name: "Glob", Description: "Finds files.", InputSchema: json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"}}}`)},
	}
	stream(t, p, req)
	reqs := srv.ModelRequests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d model requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.System() != req.System {
		t.Errorf("system = %q, want %q", r.System(), req.System)
	}
	if got := r.ToolNames(); !reflect.DeepEqual(got, []string{"Read", "Glob"}) {
		t.Errorf("tools = %v, want [Read Glob]", got)
	}
	tools, _ := r.Body["tools"].([]any)
	first, _ := tools[0].(map[string]any)
	var gotSchema, desc any
	if s.format == fake.OpenAI {
		fn, _ := first["function"].(map[string]any)
		gotSchema, desc = fn["parameters"], fn["description"]
		if n, _ := r.Body["max_tokens"].(float64); n != 1234 {
			t.Errorf("max_tokens = %v, want 1234 (a compatible server)", r.Body["max_tokens"])
		}
		so, _ := r.Body["stream_options"].(map[string]any)
		if so["include_usage"] != true {
			t.Errorf("stream_options = %v, want include_usage", r.Body["stream_options"])
		}
	} else {
		gotSchema, desc = first["input_schema"], first["description"]
		if n, _ := r.Body["max_tokens"].(float64); n != 1234 {
			t.Errorf("max_tokens = %v, want 1234", r.Body["max_tokens"])
		}
	}
	if desc != "Reads a file." {
		t.Errorf("tool description = %v", desc)
	}
	gb, _ := json.Marshal(gotSchema)
	jsonEqual(t, gb, schema)
}

func (s *suite) toolResultsSentBack(t *testing.T) {
	srv, p := s.setup(t)
	srv.Script(fake.Reply{Text: []string{"Done."}})
	const png = "iVBORw0KGgo="
	req := llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockText, Text: "fix it"}}},
		{Role: llm.RoleAssistant, Content: []llm.Block{
			{Type: llm.BlockThinking, Text: "hmm"},
			{Type: llm.BlockText, Text: "Reading."},
			{Type: llm.BlockToolUse, ToolUseID: "tu_1", ToolName: "Read", Input: json.RawMessage(`{"file_path":"a.go"}`)},
			{Type: llm.BlockToolUse, ToolUseID: "tu_2", ToolName: "Bash", Input: json.RawMessage(`{"command":"false"}`)},
			{Type: llm.BlockToolUse, ToolUseID: "tu_3", ToolName: "Read", Input: json.RawMessage(`{"file_path":"shot.png"}`)},
		}},
		{Role: llm.RoleUser, Content: []llm.Block{
			{Type: llm.BlockToolResult, ToolUseID: "tu_1", Content: []llm.Block{{Type: llm.BlockText, Text: "package a"}}},
			{Type: llm.BlockToolResult, ToolUseID: "tu_2", IsError: true, Content: []llm.Block{{Type: llm.BlockText, Text: "exit 1"}}},
			{Type: llm.BlockToolResult, ToolUseID: "tu_3", Content: []llm.Block{{Type: llm.BlockImage, MediaType: "image/png", Data: png}}},
			{Type: llm.BlockText, Text: "and hurry"},
		}},
	}}
	stream(t, p, req)
	reqs := srv.ModelRequests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d model requests, want 1", len(reqs))
	}
	msgs := reqs[0].Messages()
	if s.format == fake.OpenAI {
		s.checkOpenAIToolResults(t, msgs, png)
	} else {
		s.checkAnthropicToolResults(t, msgs, png)
	}
}

func (s *suite) checkAnthropicToolResults(t *testing.T, msgs []map[string]any, png string) {
	if len(msgs) != 3 {
		t.Fatalf("messages = %d, want 3: %v", len(msgs), msgs)
	}
	asst, _ := msgs[1]["content"].([]any)
	var uses []map[string]any
	for _, b := range asst {
		bm, _ := b.(map[string]any)
		if bm["type"] == "thinking" {
			t.Errorf("a thinking block without its signature was sent back: %v", bm)
		}
		if bm["type"] == "tool_use" {
			uses = append(uses, bm)
		}
	}
	if len(uses) != 3 || uses[0]["id"] != "tu_1" || uses[0]["name"] != "Read" {
		t.Fatalf("tool_use blocks = %v", uses)
	}
	if in, _ := uses[0]["input"].(map[string]any); in["file_path"] != "a.go" {
		t.Errorf("tool_use input = %v", uses[0]["input"])
	}
	user, _ := msgs[2]["content"].([]any)
	if len(user) != 4 {
		t.Fatalf("user blocks = %v, want 3 results and a text", user)
	}
	r1, _ := user[0].(map[string]any)
	r2, _ := user[1].(map[string]any)
	r3, _ := user[2].(map[string]any)
	if r1["type"] != "tool_result" || r1["tool_use_id"] != "tu_1" || textOf(r1["content"]) != "package a" || r1["is_error"] == true {
		t.Errorf("result 1 = %v", r1)
	}
	if r2["tool_use_id"] != "tu_2" || r2["is_error"] != true || textOf(r2["content"]) != "exit 1" {
		t.Errorf("result 2 = %v, want is_error", r2)
	}
	content, _ := r3["content"].([]any)
	img, _ := content[0].(map[string]any)
	src, _ := img["source"].(map[string]any)
	if r3["tool_use_id"] != "tu_3" || img["type"] != "image" || src["type"] != "base64" || src["media_type"] != "image/png" || src["data"] != png {
		t.Errorf("result 3 = %v, want a base64 image", r3)
	}
	if last, _ := user[3].(map[string]any); last["text"] != "and hurry" {
		t.Errorf("last block = %v", last)
	}
}

func (s *suite) checkOpenAIToolResults(t *testing.T, msgs []map[string]any, png string) {
	roles := make([]string, len(msgs))
	for i, m := range msgs {
		roles[i], _ = m["role"].(string)
	}
	if want := []string{"user", "assistant", "tool", "tool", "tool", "user"}; !reflect.DeepEqual(roles, want) {
		t.Fatalf("roles = %v, want %v", roles, want)
	}
	if msgs[1]["content"] != "Reading." {
		t.Errorf("assistant content = %v (thinking must not be sent)", msgs[1]["content"])
	}
	calls, _ := msgs[1]["tool_calls"].([]any)
	if len(calls) != 3 {
		t.Fatalf("tool_calls = %v", calls)
	}
	c1, _ := calls[0].(map[string]any)
	fn, _ := c1["function"].(map[string]any)
	if c1["id"] != "tu_1" || c1["type"] != "function" || fn["name"] != "Read" {
		t.Errorf("tool call = %v", c1)
	}
	args, _ := fn["arguments"].(string)
	jsonEqual(t, json.RawMessage(args), map[string]any{"file_path": "a.go"})
	for i, want := range []struct{ id, content string }{
		{"tu_1", "package a"},
		{"tu_2", "Error: exit 1"},
		{"tu_3", "[image attached below]"},
	} {
		m := msgs[2+i]
		if m["tool_call_id"] != want.id || textOf(m["content"]) != want.content {
			t.Errorf("tool message %d = %v, want %s %q", i, m, want.id, want.content)
		}
	}
	parts, _ := msgs[5]["content"].([]any)
	if len(parts) != 2 {
		t.Fatalf("user parts = %v, want the text and the image", msgs[5]["content"])
	}
	text, _ := parts[0].(map[string]any)
	img, _ := parts[1].(map[string]any)
	iu, _ := img["image_url"].(map[string]any)
	if text["text"] != "and hurry" || img["type"] != "image_url" || iu["url"] != "data:image/png;base64,"+png {
		t.Errorf("user parts = %v", parts)
	}
}

func (s *suite) usage(t *testing.T) {
	srv, p := s.setup(t)
	u := llm.Usage{InputTokens: 1200, OutputTokens: 345, CacheReadTokens: 800, CacheCreationTokens: 64}
	if s.format == fake.OpenAI {
		u.CacheCreationTokens = 0 // chat-completions reports none
	}
	srv.Script(fake.Reply{Text: []string{"x"}, Usage: u})
	resp, _ := stream(t, p, userText("count"))
	if resp.Usage != u {
		t.Errorf("usage = %+v, want %+v", resp.Usage, u)
	}
}

func (s *suite) stopReasons(t *testing.T) {
	cases := []struct {
		wire, want string
	}{
		{llm.StopEndTurn, llm.StopEndTurn},
		{llm.StopMaxTokens, llm.StopMaxTokens},
		{llm.StopRefusal, llm.StopRefusal},
	}
	if s.format == fake.OpenAI {
		cases = append(cases, struct{ wire, want string }{"stop", llm.StopEndTurn})
	} else {
		cases = append(cases,
			struct{ wire, want string }{"stop_sequence", llm.StopEndTurn},
			struct{ wire, want string }{"model_context_window_exceeded", llm.StopMaxTokens})
	}
	for _, c := range cases {
		srv, p := s.setup(t)
		srv.Script(fake.Reply{Text: []string{"x"}, StopReason: c.wire})
		resp, _ := stream(t, p, userText("go"))
		if resp.StopReason != c.want {
			t.Errorf("wire stop %q → %q, want %q", c.wire, resp.StopReason, c.want)
		}
	}
}

// cancelTest streams a reply that never finishes and cancels from inside
// the callback once trigger sees the first event (or, with no trigger,
// once the server has the request).
func (s *suite) cancelTest(t *testing.T, reply fake.Reply, onEvent bool) {
	srv, p := s.setup(t)
	got := make(chan struct{})
	var once sync.Once
	srv.Route(func(fake.Request) (fake.Reply, bool) {
		once.Do(func() { close(got) })
		return reply, true
	})
	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	if !onEvent {
		go func() {
			<-got
			cancel()
		}()
	}
	done := make(chan error, 1)
	go func() {
		_, err := p.Stream(c, userText("long"), func(ev llm.Event) error {
			if onEvent {
				cancel()
			}
			return nil
		})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Stream after cancel = %v, want it to wrap context.Canceled", err)
		}
	case <-time.After(bound):
		t.Fatal("Stream did not return after its context was cancelled")
	}
}

func (s *suite) cancelMidStream(t *testing.T) {
	s.cancelTest(t, fake.Reply{Text: []string{"first piece"}, Hold: true}, true)
}

func (s *suite) cancelBeforeDelta(t *testing.T) {
	s.cancelTest(t, fake.Reply{Text: []string{"never"}, Delay: time.Hour}, false)
}

func (s *suite) callbackError(t *testing.T) {
	srv, p := s.setup(t)
	srv.Script(fake.Reply{Text: []string{"a", "b", "c"}})
	stop := errors.New("stop here")
	n := 0
	_, err := p.Stream(ctx(t), userText("x"), func(llm.Event) error {
		n++
		return stop
	})
	if !errors.Is(err, stop) {
		t.Errorf("Stream = %v, want it to wrap the callback's error", err)
	}
	if n != 1 {
		t.Errorf("callback ran %d times after failing, want 1", n)
	}
}

// wantKind checks an error's kind, status and retryability.
func wantKind(t *testing.T, e *llm.Error, kind string, status int) {
	t.Helper()
	if e.Kind != kind {
		t.Errorf("kind = %q (%v), want %q", e.Kind, e, kind)
	}
	if status != 0 && e.Status != status {
		t.Errorf("status = %d, want %d", e.Status, status)
	}
}

// wantRequests checks how many model requests the server got.
func wantRequests(t *testing.T, srv *fake.Server, n int) {
	t.Helper()
	if got := len(srv.ModelRequests()); got != n {
		t.Errorf("server got %d model requests, want %d", got, n)
	}
}

func (s *suite) rateLimited(t *testing.T) {
	srv, p := s.setup(t)
	srv.Script(fake.Times(3, fake.Reply{Fail: &fake.Failure{Status: http.StatusTooManyRequests, RetryAfter: "1", Message: "Number of requests has exceeded your rate limit"}})...)
	e := streamErr(t, p, userText("x"))
	wantKind(t, e, llm.KindRateLimited, http.StatusTooManyRequests)
	if e.RetryAfter != time.Second {
		t.Errorf("RetryAfter = %v, want 1s", e.RetryAfter)
	}
	if !e.Retryable() {
		t.Error("rate_limited is not retryable")
	}
	if !strings.Contains(e.Message, "rate limit") {
		t.Errorf("message %q does not say what the provider said", e.Message)
	}
	wantRequests(t, srv, 3) // the first try and two retries
}

func (s *suite) longRetryAfter(t *testing.T) {
	srv, p := s.setup(t)
	srv.Script(fake.Reply{Fail: &fake.Failure{Status: http.StatusTooManyRequests, RetryAfter: "3600"}})
	e := streamErr(t, p, userText("x"))
	wantKind(t, e, llm.KindRateLimited, http.StatusTooManyRequests)
	if e.RetryAfter != time.Hour {
		t.Errorf("RetryAfter = %v, want 1h", e.RetryAfter)
	}
	wantRequests(t, srv, 1)
}

// quick makes the SDK's backoff short: retry-after-ms is a real header
// (OpenAI sends it) that both SDKs prefer to their own backoff.
var quick = map[string]string{"retry-after-ms": "5"}

func (s *suite) serverError(t *testing.T) {
	srv, p := s.setup(t)
	srv.Script(fake.Times(3, fake.Reply{Fail: &fake.Failure{Status: http.StatusInternalServerError, Header: quick}})...)
	e := streamErr(t, p, userText("x"))
	wantKind(t, e, llm.KindServer, http.StatusInternalServerError)
	if !e.Retryable() {
		t.Error("server is not retryable")
	}
	wantRequests(t, srv, 3)
}

func (s *suite) serverRecovers(t *testing.T) {
	srv, p := s.setup(t)
	srv.Script(
		fake.Reply{Fail: &fake.Failure{Status: http.StatusBadGateway, Header: quick}},
		fake.Reply{Text: []string{"fine"}},
	)
	resp, _ := stream(t, p, userText("x"))
	if len(resp.Message.Content) != 1 || resp.Message.Content[0].Text != "fine" {
		t.Errorf("message = %+v", resp.Message)
	}
	wantRequests(t, srv, 2)
}

func (s *suite) overloaded(t *testing.T) {
	srv, p := s.setup(t)
	status := 529
	if s.format == fake.OpenAI {
		status = http.StatusServiceUnavailable
	}
	srv.Script(fake.Times(3, fake.Reply{Fail: &fake.Failure{Status: status, Header: quick}})...)
	e := streamErr(t, p, userText("x"))
	wantKind(t, e, llm.KindOverloaded, status)
	wantRequests(t, srv, 3)
}

func (s *suite) auth(t *testing.T) {
	srv, p := s.setup(t)
	// The message quotes the key the request carried, as some providers
	// do; the error must not show it.
	keys := make(chan string, 8)
	srv.Route(func(r fake.Request) (fake.Reply, bool) {
		key := r.Header.Get("x-api-key")
		if key == "" {
			key = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
		keys <- key
		return fake.Reply{Fail: &fake.Failure{Status: http.StatusUnauthorized, Message: "Incorrect API key provided: " + key}}, true
	})
	e := streamErr(t, p, userText("x"))
	key := <-keys
	wantKind(t, e, llm.KindAuth, http.StatusUnauthorized)
	if e.Retryable() {
		t.Error("auth is retryable")
	}
	if key != "" && strings.Contains(e.Message, key) {
		t.Errorf("message %q shows the API key", e.Message)
	}
	wantRequests(t, srv, 1)
}

func (s *suite) badRequest(t *testing.T) {
	srv, p := s.setup(t)
	srv.Script(fake.Reply{Fail: &fake.Failure{Status: http.StatusBadRequest, Message: "prompt is too long: 210000 tokens > 200000 maximum"}})
	e := streamErr(t, p, userText("x"))
	wantKind(t, e, llm.KindBadRequest, http.StatusBadRequest)
	if !strings.Contains(e.Message, "prompt is too long") {
		t.Errorf("message %q does not say what the provider said", e.Message)
	}
	wantRequests(t, srv, 1)
}

func (s *suite) streamCut(t *testing.T) {
	srv, p := s.setup(t)
	srv.Script(fake.Reply{Text: []string{"partial"}, ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "x"}}}, Break: fake.BreakCut})
	e := streamErr(t, p, userText("x"))
	wantKind(t, e, llm.KindStream, 0)
	if !e.Retryable() {
		t.Error("stream is not retryable")
	}
	wantRequests(t, srv, 1)
}

func (s *suite) streamBadJSON(t *testing.T) {
	srv, p := s.setup(t)
	srv.Script(fake.Reply{Text: []string{"partial"}, Break: fake.BreakBadJSON})
	e := streamErr(t, p, userText("x"))
	wantKind(t, e, llm.KindStream, 0)
}

func (s *suite) streamErrorEvent(t *testing.T) {
	srv, p := s.setup(t)
	srv.Script(fake.Reply{Text: []string{"partial"}, Break: fake.BreakError})
	e := streamErr(t, p, userText("x"))
	if !e.Retryable() {
		t.Errorf("in-stream error %v is not retryable", e)
	}
	if s.format == fake.Anthropic {
		wantKind(t, e, llm.KindOverloaded, 0)
	}
}

func (s *suite) streamTruncated(t *testing.T) {
	srv, p := s.setup(t)
	var raw string
	if s.format == fake.OpenAI {
		raw = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"half\"},\"finish_reason\":null}]}\n\n"
	} else {
		raw = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"half\"}}\n\n"
	}
	srv.Script(fake.Reply{Raw: raw})
	e := streamErr(t, p, userText("x"))
	wantKind(t, e, llm.KindStream, 0)
}

// Garbage is a set of hostile stream bodies; each must end in a response or
// an error, never a panic or a hang. Exported for the providers' fuzz seeds.
var Garbage = []string{
	"\x00\xff\xfe garbage",
	"data: [DONE]\n\n",
	"data: {}\n\n",
	"data: null\n\n",
	"data: []\n\n",
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":99,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\"}}\n\n",
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":-1,\"content_block\":{\"type\":\"tool_use\"}}\n\n",
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"[1,2\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
	"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":-5,\"function\":{\"arguments\":\"{\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
	"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"not json\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
	"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"n\",\"arguments\":\"null\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
	"data: {\"choices\":\"nope\"}\n\n",
	"event: error\ndata: not json\n\n",
	"data: {\"error\":{\"message\":\"boom\"}}\n\n",
	": comment only\n\n",
}

func (s *suite) garbage(t *testing.T) {
	for _, raw := range Garbage {
		srv, p := s.setup(t)
		srv.Script(fake.Reply{Raw: raw})
		resp, err := p.Stream(ctx(t), userText("x"), (&recorder{}).on)
		if err == nil {
			if resp == nil {
				t.Errorf("body %q: no response and no error", raw)
			}
			continue
		}
		var e *llm.Error
		if !errors.As(err, &e) {
			t.Errorf("body %q: error %v is not an *llm.Error", raw, err)
		}
	}
}

func (s *suite) unreachable(t *testing.T) {
	srv := fake.New(t)
	base := srv.BaseURL(s.format)
	srv.Close()
	p := s.newProvider(t, base)
	e := streamErr(t, p, userText("x"))
	wantKind(t, e, llm.KindNetwork, 0)
}

func (s *suite) countTokens(t *testing.T) {
	srv, p := s.setup(t)
	req := userText("How many tokens is this?")
	req.System = "Count me too."
	req.Tools = []llm.ToolSpec{{Name: "Read", Description: "Reads.", InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)}}
	n, err := p.CountTokens(ctx(t), req)
	if s.format == fake.OpenAI {
		if !errors.Is(err, llm.ErrNoTokenCount) {
			t.Errorf("CountTokens = %d, %v; want ErrNoTokenCount", n, err)
		}
		if len(srv.Requests()) != 0 {
			t.Errorf("CountTokens sent %d requests, want none", len(srv.Requests()))
		}
		return
	}
	if err != nil {
		t.Fatalf("CountTokens: %v", err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || !reqs[0].CountTokens() {
		t.Fatalf("requests = %v, want one count_tokens call", reqs)
	}
	if want := fake.EstimateTokens(reqs[0]); n != want || n == 0 {
		t.Errorf("CountTokens = %d, want the server's count %d", n, want)
	}
	if reqs[0].System() != req.System || !reflect.DeepEqual(reqs[0].ToolNames(), []string{"Read"}) {
		t.Errorf("count request lacks the system prompt or tools: %s", reqs[0].Raw)
	}
	if len(srv.ModelRequests()) != 0 {
		t.Error("CountTokens asked the model for a reply")
	}
}

// Bench measures one streamed call through the provider and the fake on
// loopback: 50 text deltas and a tool call. It shows the SDK's and the
// provider's own cost per call (the model's is zero here).
func Bench(b *testing.B, p func(baseURL string) llm.Provider, format fake.Format) {
	srv := fake.New(b)
	pieces := make([]string, 50)
	for i := range pieces {
		pieces[i] = "word "
	}
	reply := fake.Reply{Text: pieces, ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "a.go"}}}}
	srv.Route(func(fake.Request) (fake.Reply, bool) { return reply, true })
	prov := p(srv.BaseURL(format))
	req := userText("go")
	c := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := prov.Stream(c, req, func(llm.Event) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
