package fake_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// FuzzServe posts arbitrary bodies to both APIs: the server must answer
// every one (a 200 stream or the provider's error), never drop the
// connection or fail the test. Seeds: testdata/fuzz/FuzzServe.
func FuzzServe(f *testing.F) {
	f.Add(`{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, false)
	f.Add(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, true)
	f.Add(`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"x"}]}`, true)
	f.Add(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":null}]}]}`, false)
	f.Add(`[]`, false)
	f.Add(`{"model":7,"messages":{"x":1},"tools":[1,"a",null]}`, true)
	srv := fake.New(f)
	srv.Route(func(fake.Request) (fake.Reply, bool) {
		return fake.Reply{Text: []string{"ok"}, ToolCalls: []fake.ToolCall{{Name: "n", Input: map[string]any{"a": 1}}}}, true
	})
	f.Fuzz(func(t *testing.T, body string, openAI bool) {
		path := "/v1/messages"
		if openAI {
			path = "/v1/chat/completions"
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+path, bytes.NewReader([]byte(body)))
		req.Header.Set("anthropic-version", "2023-06-01")
		req.Header.Set("x-api-key", "k")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		defer res.Body.Close()
		if _, err := io.ReadAll(res.Body); err != nil {
			t.Fatalf("answer broken: %v", err)
		}
		switch res.StatusCode {
		case http.StatusOK, http.StatusBadRequest:
		default:
			t.Fatalf("status %d", res.StatusCode)
		}
	})
}
