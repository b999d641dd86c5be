package fake_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	openai "github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// post sends body to the server as a client would, with Anthropic's
// required headers.
func post(t *testing.T, url string, body any) *http.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("x-api-key", "k")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	event string
	data  string
}

// readSSE parses a stream strictly: only "event:" and "data:" lines, each
// event ended by a blank line.
func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data == "" {
				t.Fatalf("empty event %+v", cur)
			}
			out = append(out, cur)
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if cur.data != "" {
				t.Fatalf("two data lines in one event: %q", line)
			}
			cur.data = strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	if cur != (sseEvent{}) {
		t.Fatalf("stream ends inside an event: %+v", cur)
	}
	return out
}

func TestAnthropicStreamFraming(t *testing.T) {
	srv := fake.New(t)
	srv.Script(fake.Reply{
		Thinking:  []string{"hm"},
		Text:      []string{"a", "b"},
		ToolCalls: []fake.ToolCall{{ID: "toolu_1", Name: "Read", Input: map[string]any{"file_path": "x"}, Pieces: 2}},
		Usage:     llm.Usage{InputTokens: 10, OutputTokens: 7},
	})
	res := post(t, srv.URL()+"/v1/messages", map[string]any{
		"model": "m", "max_tokens": 10, "stream": true,
		"messages": []any{map[string]any{"role": "user", "content": "hi"}},
	})
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	events := readSSE(t, res.Body)
	var names []string
	for _, e := range events {
		var data map[string]any
		if err := json.Unmarshal([]byte(e.data), &data); err != nil {
			t.Fatalf("event %s: data is not JSON: %q", e.event, e.data)
		}
		if data["type"] != e.event {
			t.Errorf("event %q carries type %v", e.event, data["type"])
		}
		names = append(names, e.event)
	}
	want := "message_start ping " +
		"content_block_start content_block_delta content_block_delta content_block_stop " + // thinking + signature
		"content_block_start content_block_delta content_block_delta content_block_stop " + // text
		"content_block_start content_block_delta content_block_delta content_block_stop " + // tool_use
		"message_delta message_stop"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("events:\n got %s\nwant %s", got, want)
	}
	var delta struct {
		Delta struct {
			StopReason string `json:"stop_reason"`
		} `json:"delta"`
		Usage struct {
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
	_ = json.Unmarshal([]byte(events[len(events)-2].data), &delta)
	if delta.Delta.StopReason != "tool_use" || delta.Usage.OutputTokens != 7 {
		t.Errorf("message_delta = %s", events[len(events)-2].data)
	}
}

func TestOpenAIStreamFraming(t *testing.T) {
	for _, includeUsage := range []bool{false, true} {
		srv := fake.New(t)
		srv.Script(fake.Reply{Text: []string{"a"}, ToolCalls: []fake.ToolCall{{Name: "f", Input: map[string]any{"k": 1}}}, Usage: llm.Usage{InputTokens: 3, OutputTokens: 4}})
		res := post(t, srv.BaseURL(fake.OpenAI)+"/chat/completions", map[string]any{
			"model": "m", "stream": true, "stream_options": map[string]any{"include_usage": includeUsage},
			"messages": []any{map[string]any{"role": "user", "content": "hi"}},
		})
		defer res.Body.Close()
		events := readSSE(t, res.Body)
		last := events[len(events)-1]
		if last.data != "[DONE]" || last.event != "" {
			t.Fatalf("last event = %+v, want data: [DONE]", last)
		}
		usageChunks, finish := 0, ""
		for _, e := range events[:len(events)-1] {
			if e.event != "" {
				t.Errorf("OpenAI streams have no event lines: %+v", e)
			}
			var c struct {
				Choices []struct {
					FinishReason *string `json:"finish_reason"`
				} `json:"choices"`
				Usage *struct {
					PromptTokens int `json:"prompt_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal([]byte(e.data), &c); err != nil {
				t.Fatalf("chunk is not JSON: %q", e.data)
			}
			if c.Usage != nil {
				usageChunks++
				if len(c.Choices) != 0 || c.Usage.PromptTokens != 3 {
					t.Errorf("usage chunk = %s", e.data)
				}
			}
			for _, ch := range c.Choices {
				if ch.FinishReason != nil {
					finish = *ch.FinishReason
				}
			}
		}
		if want := map[bool]int{false: 0, true: 1}[includeUsage]; usageChunks != want {
			t.Errorf("include_usage=%v: %d usage chunks, want %d", includeUsage, usageChunks, want)
		}
		if finish != "tool_calls" {
			t.Errorf("finish_reason = %q, want tool_calls", finish)
		}
	}
}

// TestNonStreamingThroughSDKs checks the JSON (non-stream) answers decode
// in both SDKs.
func TestNonStreamingThroughSDKs(t *testing.T) {
	srv := fake.New(t)
	reply := fake.Reply{Text: []string{"he", "llo"}, ToolCalls: []fake.ToolCall{{ID: "t1", Name: "Read", Input: map[string]any{"p": "x"}}}, Usage: llm.Usage{InputTokens: 5, OutputTokens: 6}}
	srv.Script(reply, reply)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	ac := anthropic.NewClient(aoption.WithoutEnvironmentDefaults(), aoption.WithAPIKey("k"), aoption.WithBaseURL(srv.URL()))
	msg, err := ac.Messages.New(ctx, anthropic.MessageNewParams{
		Model: "m", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 2 || msg.Content[0].Text != "hello" || msg.Content[1].Name != "Read" || msg.StopReason != "tool_use" || msg.Usage.OutputTokens != 6 {
		t.Errorf("anthropic message = %s", msg.RawJSON())
	}

	oc := openai.NewClient(ooption.WithAPIKey("k"), ooption.WithBaseURL(srv.BaseURL(fake.OpenAI)))
	cc, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if err != nil {
		t.Fatal(err)
	}
	ch := cc.Choices[0]
	if ch.Message.Content != "hello" || len(ch.Message.ToolCalls) != 1 || ch.Message.ToolCalls[0].Function.Arguments != `{"p":"x"}` || ch.FinishReason != "tool_calls" || cc.Usage.CompletionTokens != 6 {
		t.Errorf("openai completion = %s", cc.RawJSON())
	}
}

// TestRejectsWhatTheAPIRejects: malformed conversations get the provider's
// 400, so a conversion bug cannot pass unnoticed.
func TestRejectsWhatTheAPIRejects(t *testing.T) {
	user := func(content any) map[string]any { return map[string]any{"role": "user", "content": content} }
	asst := func(content any) map[string]any { return map[string]any{"role": "assistant", "content": content} }
	use := []any{map[string]any{"type": "tool_use", "id": "t1", "name": "Read", "input": map[string]any{}}}
	result := func(id string) []any {
		return []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": "ok"}}
	}
	cases := []struct {
		name   string
		path   string
		body   map[string]any
		status int
	}{
		{"anthropic: no max_tokens", "/v1/messages", map[string]any{"model": "m", "messages": []any{user("hi")}}, 400},
		{"anthropic: no model", "/v1/messages", map[string]any{"max_tokens": 1, "messages": []any{user("hi")}}, 400},
		{"anthropic: no messages", "/v1/messages", map[string]any{"model": "m", "max_tokens": 1, "messages": []any{}}, 400},
		{"anthropic: empty text block", "/v1/messages", map[string]any{"model": "m", "max_tokens": 1, "messages": []any{user([]any{map[string]any{"type": "text", "text": ""}})}}, 400},
		{"anthropic: unanswered tool_use", "/v1/messages", map[string]any{"model": "m", "max_tokens": 1, "messages": []any{user("hi"), asst(use), user("go on")}}, 400},
		{"anthropic: result without call", "/v1/messages", map[string]any{"model": "m", "max_tokens": 1, "messages": []any{user("hi"), asst("ok"), user(result("t9"))}}, 400},
		{"anthropic: answered", "/v1/messages", map[string]any{"model": "m", "max_tokens": 1, "messages": []any{user("hi"), asst(use), user(result("t1"))}}, 200},
		{"anthropic: bad tool schema", "/v1/messages", map[string]any{"model": "m", "max_tokens": 1, "messages": []any{user("hi")}, "tools": []any{map[string]any{"name": "x", "input_schema": map[string]any{"type": "array"}}}}, 400},
		{"openai: tool message without call", "/v1/chat/completions", map[string]any{"model": "m", "messages": []any{user("hi"), map[string]any{"role": "tool", "tool_call_id": "c1", "content": "x"}}}, 400},
		{"openai: unanswered call", "/v1/chat/completions", map[string]any{"model": "m", "messages": []any{user("hi"),
			map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "f", "arguments": "{}"}}}},
			user("again")}}, 400},
		{"openai: answered", "/v1/chat/completions", map[string]any{"model": "m", "messages": []any{user("hi"),
			map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "f", "arguments": "{}"}}}},
			map[string]any{"role": "tool", "tool_call_id": "c1", "content": "x"}}}, 200},
		{"openai: arguments not JSON", "/v1/chat/completions", map[string]any{"model": "m", "messages": []any{user("hi"),
			map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "f", "arguments": "{"}}}},
			map[string]any{"role": "tool", "tool_call_id": "c1", "content": "x"}}}, 400},
		{"unknown path", "/v1/complete", map[string]any{"model": "m"}, 404},
	}
	for _, c := range cases {
		srv := fake.New(t)
		srv.Script(fake.Reply{Text: []string{"ok"}})
		res := post(t, srv.URL()+c.path, c.body)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != c.status {
			t.Errorf("%s: status %d (%s), want %d", c.name, res.StatusCode, body, c.status)
			continue
		}
		if c.status == 400 {
			var e map[string]any
			_ = json.Unmarshal(body, &e)
			if _, ok := e["error"].(map[string]any); !ok {
				t.Errorf("%s: error body %s is not in the provider's format", c.name, body)
			}
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("%s: %d requests recorded, want 1", c.name, n)
		}
	}
}

func TestAnthropicNeedsVersionAndKey(t *testing.T) {
	srv := fake.New(t)
	for _, c := range []struct {
		header map[string]string
		status int
	}{
		{map[string]string{"x-api-key": "k"}, 400},
		{map[string]string{"anthropic-version": "2023-06-01"}, 401},
	} {
		b := []byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`)
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL()+"/v1/messages", bytes.NewReader(b))
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != c.status {
			t.Errorf("headers %v: status %d, want %d", c.header, res.StatusCode, c.status)
		}
	}
}

// tbRecorder is a testing.TB that records Errorf instead of failing.
type tbRecorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *tbRecorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestUnscriptedRequestFailsTheTest(t *testing.T) {
	rec := &tbRecorder{TB: t}
	srv := fake.New(rec)
	res := post(t, srv.URL()+"/v1/messages", map[string]any{"model": "m", "max_tokens": 1, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	defer res.Body.Close()
	if res.StatusCode != http.StatusInternalServerError || res.Header.Get("x-should-retry") != "false" {
		t.Errorf("status %d, x-should-retry %q; want 500, false", res.StatusCode, res.Header.Get("x-should-retry"))
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "no scripted reply") {
		t.Errorf("test errors = %q, want one about the missing reply", rec.errs)
	}
}

func TestRouteAnswersFirst(t *testing.T) {
	srv := fake.New(t)
	srv.Script(fake.Reply{Text: []string{"queued"}})
	srv.Route(func(r fake.Request) (fake.Reply, bool) {
		return fake.Reply{Text: []string{"routed"}}, r.Model() == "side"
	})
	for _, model := range []string{"side", "main"} {
		res := post(t, srv.URL()+"/v1/messages", map[string]any{"model": model, "max_tokens": 1, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
		var msg struct{ Content []struct{ Text string } }
		_ = json.NewDecoder(res.Body).Decode(&msg)
		res.Body.Close()
		want := map[string]string{"side": "routed", "main": "queued"}[model]
		if len(msg.Content) != 1 || msg.Content[0].Text != want {
			t.Errorf("model %s answered %+v, want %q", model, msg, want)
		}
	}
	if srv.Pending() != 0 {
		t.Errorf("pending = %d, want 0", srv.Pending())
	}
	reqs := srv.Requests()
	if reqs[0].Reply != -1 || reqs[1].Reply != 0 {
		t.Errorf("reply indexes = %d, %d; want -1, 0", reqs[0].Reply, reqs[1].Reply)
	}
}

func TestCountTokens(t *testing.T) {
	srv := fake.New(t)
	body := map[string]any{"model": "m", "system": "sys", "messages": []any{map[string]any{"role": "user", "content": "hello world"}}}
	res := post(t, srv.URL()+"/v1/messages/count_tokens", body)
	var got struct {
		InputTokens int `json:"input_tokens"`
	}
	_ = json.NewDecoder(res.Body).Decode(&got)
	res.Body.Close()
	if got.InputTokens != (len("sys")+len("hello world")+3)/4 {
		t.Errorf("input_tokens = %d", got.InputTokens)
	}
	srv.SetTokenCount(func(fake.Request) int { return 4242 })
	res2 := post(t, srv.URL()+"/v1/messages/count_tokens", body)
	_ = json.NewDecoder(res2.Body).Decode(&got)
	res2.Body.Close()
	if got.InputTokens != 4242 {
		t.Errorf("input_tokens = %d, want the set count", got.InputTokens)
	}
	if len(srv.ModelRequests()) != 0 || len(srv.Requests()) != 2 {
		t.Errorf("count calls recorded wrong: %d model, %d all", len(srv.ModelRequests()), len(srv.Requests()))
	}
}

// TestCloseEndsHeldStreams: a held stream does not keep Close (and so the
// test's cleanup) waiting.
func TestCloseEndsHeldStreams(t *testing.T) {
	srv := fake.New(t)
	srv.Script(fake.Reply{Text: []string{"x"}, Hold: true})
	res := post(t, srv.URL()+"/v1/messages", map[string]any{"model": "m", "max_tokens": 1, "stream": true, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	if _, err := br.ReadString('\n'); err != nil { // the stream has started
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() {
		srv.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close is stuck behind a held stream")
	}
	if _, err := io.ReadAll(br); err == nil {
		// A clean end is fine too, as long as no message_stop came.
		t.Log("stream ended without an error")
	}
}

func TestSplitKeepsRunes(t *testing.T) {
	srv := fake.New(t)
	input := map[string]any{"s": "ééééé🎉🎉🎉"}
	srv.Script(fake.Reply{ToolCalls: []fake.ToolCall{{ID: "t", Name: "n", Input: input, Pieces: 13}}})
	res := post(t, srv.URL()+"/v1/messages", map[string]any{"model": "m", "max_tokens": 1, "stream": true, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	defer res.Body.Close()
	var whole strings.Builder
	for _, e := range readSSE(t, res.Body) {
		var d struct {
			Delta struct {
				PartialJSON string `json:"partial_json"`
			} `json:"delta"`
		}
		_ = json.Unmarshal([]byte(e.data), &d)
		if strings.ContainsRune(d.Delta.PartialJSON, '\uFFFD') {
			t.Errorf("piece %q split a rune", d.Delta.PartialJSON)
		}
		whole.WriteString(d.Delta.PartialJSON)
	}
	want, _ := json.Marshal(input)
	if whole.String() != string(want) {
		t.Errorf("pieces join to %q, want %q", whole.String(), want)
	}
}

// TestTitleRequestsApart: a title request (llm.TitleSystem, no tools), in
// either format, is answered with DefaultTitle or a reply scripted with
// Title, never with the script's next reply; the same system prompt with
// tools, or a tool-less request with another system prompt, is a turn.
func TestTitleRequestsApart(t *testing.T) {
	srv := fake.New(t)
	srv.Script(fake.Reply{Text: []string{"turn one"}}, fake.Reply{Title: true, Text: []string{"Scripted title"}},
		fake.Reply{Text: []string{"turn two"}}, fake.Reply{Text: []string{"turn three"}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ac := anthropic.NewClient(aoption.WithoutEnvironmentDefaults(), aoption.WithAPIKey("k"), aoption.WithBaseURL(srv.URL()))
	oc := openai.NewClient(ooption.WithAPIKey("k"), ooption.WithBaseURL(srv.BaseURL(fake.OpenAI)))
	anth := func(system string, tools bool) string {
		t.Helper()
		p := anthropic.MessageNewParams{Model: "m", MaxTokens: 40, System: []anthropic.TextBlockParam{{Text: system}},
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}
		if tools {
			p.Tools = []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "Read", InputSchema: anthropic.ToolInputSchemaParam{Type: "object"}}}}
		}
		msg, err := ac.Messages.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return msg.Content[0].Text
	}
	open := func(system string) string {
		t.Helper()
		cc, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "m",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(system), openai.UserMessage("hi")}})
		if err != nil {
			t.Fatal(err)
		}
		return cc.Choices[0].Message.Content
	}
	got := []string{
		anth(llm.TitleSystem, false),     // the scripted title
		anth("You are an agent.", false), // a turn: turn one
		open(llm.TitleSystem),            // no title scripted left: the default
		anth(llm.TitleSystem, true),      // with tools it is a turn: turn two
		open("You are an agent."),        // turn three
	}
	want := []string{"Scripted title", "turn one", fake.DefaultTitle, "turn two", "turn three"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("answers %q, want %q", got, want)
	}
	if n, m := len(srv.TitleRequests()), len(srv.ModelRequests()); n != 2 || m != 3 || srv.Pending() != 0 {
		t.Fatalf("%d title requests, %d model requests, %d pending; want 2, 3, 0", n, m, srv.Pending())
	}
}

// TestClaudeCodeTitleRequests: Claude Code's title request (its system
// prompt fake.ClaudeCodeTitleSystem among its system blocks, no tools, a
// json_schema output format), streamed as the CLI streams it, is a title
// request: it takes the reply scripted with Title, else DefaultTitle, as
// the JSON object {"title": …} the CLI parses, and a scripted failure
// stays a failure; the script's turn replies are left alone.
func TestClaudeCodeTitleRequests(t *testing.T) {
	srv := fake.New(t)
	srv.Script(fake.Reply{Title: true, Text: []string{"Scripted ", "title"}},
		fake.Reply{Title: true, Fail: &fake.Failure{Status: http.StatusInternalServerError, Header: map[string]string{"x-should-retry": "false"}}},
		fake.Reply{Text: []string{"turn one"}})
	ask := func() (int, string) {
		t.Helper()
		res := post(t, srv.URL()+"/v1/messages", map[string]any{
			"model": "claude-opus-5-5", "max_tokens": 128000, "stream": true, "tools": []any{},
			"system": []any{
				map[string]any{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332.e24; cc_entrypoint=sdk-cli;"},
				map[string]any{"type": "text", "text": "You are a Claude agent, built on Anthropic's Claude Agent SDK."},
				map[string]any{"type": "text", "text": fake.ClaudeCodeTitleSystem + " The title is a name…\n\nReturn JSON with a single \"title\" field."},
			},
			"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "<session>\nfix the login bug\n</session>"}}}},
			"output_config": map[string]any{"format": map[string]any{"type": "json_schema", "schema": map[string]any{
				"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}}, "required": []any{"title"}}}},
		})
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return res.StatusCode, ""
		}
		var text strings.Builder
		for _, ev := range readSSE(t, res.Body) {
			var d struct {
				Delta struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"delta"`
			}
			if ev.event == "content_block_delta" && json.Unmarshal([]byte(ev.data), &d) == nil && d.Delta.Type == "text_delta" {
				text.WriteString(d.Delta.Text)
			}
		}
		return res.StatusCode, text.String()
	}
	want := []struct {
		status int
		text   string
	}{
		{http.StatusOK, `{"title":"Scripted title"}`},
		{http.StatusInternalServerError, ""},
		{http.StatusOK, `{"title":"` + fake.DefaultTitle + `"}`},
	}
	for i, w := range want {
		if status, text := ask(); status != w.status || text != w.text {
			t.Errorf("title request %d: %d %q, want %d %q", i, status, text, w.status, w.text)
		}
	}
	if n, m, p := len(srv.TitleRequests()), len(srv.ModelRequests()), srv.Pending(); n != 3 || m != 0 || p != 1 {
		t.Fatalf("%d title requests, %d model requests, %d pending; want 3, 0, 1 (the turn's reply)", n, m, p)
	}
}

// TestOpencodeTitleRequests: opencode's title request (its system prompt
// opens with fake.OpencodeTitleSystem, no tools), in the OpenAI format of
// an openai-compatible provider and in Anthropic's, is a title request: it
// takes the reply scripted with Title, else DefaultTitle, and leaves the
// script's turn replies alone, so a test can script a turn without
// knowing whether opencode's title request comes first.
func TestOpencodeTitleRequests(t *testing.T) {
	srv := fake.New(t)
	srv.Script(fake.Reply{Text: []string{"turn one"}}, fake.Reply{Title: true, Text: []string{"Scripted title"}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	system := fake.OpencodeTitleSystem + "\n\n<task>\nGenerate a brief title that would help the user find this conversation later.\n</task>\n"
	oc := openai.NewClient(ooption.WithAPIKey("k"), ooption.WithBaseURL(srv.BaseURL(fake.OpenAI)))
	open := func() string {
		t.Helper()
		cc, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "fake-model",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(system),
				openai.UserMessage("Generate a title for this conversation:\n"), openai.UserMessage("change the colour")}})
		if err != nil {
			t.Fatal(err)
		}
		return cc.Choices[0].Message.Content
	}
	ac := anthropic.NewClient(aoption.WithoutEnvironmentDefaults(), aoption.WithAPIKey("k"), aoption.WithBaseURL(srv.URL()))
	anth := func() string {
		t.Helper()
		msg, err := ac.Messages.New(ctx, anthropic.MessageNewParams{Model: "m", MaxTokens: 40, System: []anthropic.TextBlockParam{{Text: system}},
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("change the colour"))}})
		if err != nil {
			t.Fatal(err)
		}
		return msg.Content[0].Text
	}
	got := []string{open(), anth()}
	want := []string{"Scripted title", fake.DefaultTitle}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("answers %q, want %q", got, want)
	}
	if n, m, p := len(srv.TitleRequests()), len(srv.ModelRequests()), srv.Pending(); n != 2 || m != 0 || p != 1 {
		t.Fatalf("%d title requests, %d model requests, %d pending; want 2, 0, 1 (the turn's reply)", n, m, p)
	}
}
