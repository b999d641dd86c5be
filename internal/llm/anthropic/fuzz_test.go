package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/anthropic"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/llm/llmtest"
)

// FuzzStream feeds arbitrary response streams through the provider's SSE
// reading and assembly: each must end in a consistent response or an
// *llm.Error, never a panic or a hang. Seeds: testdata/fuzz/FuzzStream
// (whole streams the fake sends) and llmtest.Garbage.
func FuzzStream(f *testing.F) {
	for _, g := range llmtest.Garbage {
		f.Add(g)
	}
	srv := fake.New(f)
	var mu sync.Mutex
	var body string
	srv.Route(func(fake.Request) (fake.Reply, bool) { return fake.Reply{Raw: body}, true })
	p := anthropic.New(anthropic.Options{APIKey: testKey, BaseURL: srv.URL(), MaxRetries: -1})

	f.Fuzz(func(t *testing.T, raw string) {
		mu.Lock()
		defer mu.Unlock()
		body = raw
		if body == "" {
			body = "\n" // Raw "" would mean "no raw body"
		}
		checkStream(t, p)
	})
}

// checkStream runs one call and checks what came back.
func checkStream(t *testing.T, p llm.Provider) {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var deltas strings.Builder
	var calls []llm.Block
	resp, err := p.Stream(c, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockText, Text: "x"}}}}},
		func(ev llm.Event) error {
			switch ev.Type {
			case llm.EventTextDelta:
				deltas.WriteString(ev.Text)
			case llm.EventToolUse:
				calls = append(calls, *ev.Block)
			}
			return nil
		})
	if err != nil {
		var e *llm.Error
		if !errors.As(err, &e) || e.Message == "" {
			t.Fatalf("error %v (%T) is not an *llm.Error with a message", err, err)
		}
		return
	}
	var text strings.Builder
	var got []llm.Block
	for _, b := range resp.Message.Content {
		switch b.Type {
		case llm.BlockText:
			text.WriteString(b.Text)
		case llm.BlockToolUse:
			var obj map[string]any
			if json.Unmarshal(b.Input, &obj) != nil || obj == nil {
				t.Fatalf("tool input %q is not a JSON object", b.Input)
			}
			got = append(got, b)
		}
	}
	if text.String() != deltas.String() {
		t.Fatalf("message text %q != deltas %q", text.String(), deltas.String())
	}
	if len(got) != len(calls) {
		t.Fatalf("message has %d calls, %d streamed", len(got), len(calls))
	}
}
