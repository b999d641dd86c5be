package openai_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/llm/openai"
)

var update = flag.Bool("update", false, "rewrite testdata/wire/*.json")

// wireRequest uses every part of the conversation mapping: system prompt,
// tools with and without a schema, text, images, both kinds of document,
// tool results (failed, empty, with images and a PDF), an assistant turn
// with thinking, text and two tool calls, the bound and the effort.
func wireRequest() llm.Request {
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG fake"))
	return llm.Request{
		System:    "You are terse.",
		MaxTokens: 512,
		Effort:    llm.EffortMedium,
		Tools: []llm.ToolSpec{
			{Name: "Read", Description: "Reads a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]}`)},
			{Name: "Now"},
		},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Block{
				{Type: llm.BlockText, Text: "Look at these."},
				{Type: llm.BlockImage, MediaType: "image/png", Data: png},
				{Type: llm.BlockDocument, MediaType: "application/pdf", Data: "JVBERi0="},
				{Type: llm.BlockDocument, MediaType: "text/plain", Data: base64.StdEncoding.EncodeToString([]byte("plain notes"))},
			}},
			{Role: llm.RoleAssistant, Content: []llm.Block{
				{Type: llm.BlockThinking, Text: "hmm"},
				{Type: llm.BlockText, Text: "Reading."},
				{Type: llm.BlockText, Text: ""},
				{Type: llm.BlockText, Text: "Both."},
				{Type: llm.BlockToolUse, ToolUseID: "call_1", ToolName: "Read", Input: json.RawMessage(`{"file_path":"a.go"}`)},
				{Type: llm.BlockToolUse, ToolUseID: "call_2", ToolName: "Now"},
			}},
			{Role: llm.RoleUser, Content: []llm.Block{
				{Type: llm.BlockToolResult, ToolUseID: "call_1", Content: []llm.Block{
					{Type: llm.BlockText, Text: "package a"},
					{Type: llm.BlockImage, MediaType: "image/jpeg", Data: png},
					{Type: llm.BlockDocument, MediaType: "application/pdf", Data: "JVBERi0="},
				}},
				{Type: llm.BlockToolResult, ToolUseID: "call_2", IsError: true},
				{Type: llm.BlockText, Text: "And now?"},
			}},
			{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockThinking, Text: "only thinking"}}},
			{Role: llm.RoleUser, Content: []llm.Block{
				{Type: llm.BlockText, Text: "one"},
				{Type: llm.BlockText, Text: "two"},
			}},
			{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockToolUse, ToolUseID: "call_3", ToolName: "Now", Input: json.RawMessage(` {} `)}}},
			{Role: llm.RoleUser, Content: []llm.Block{
				{Type: llm.BlockToolResult, ToolUseID: "call_3", Content: []llm.Block{{Type: llm.BlockText, Text: "only a result"}}},
			}},
		},
	}
}

// TestWireFormat pins the request body sent for wireRequest, to OpenAI
// (max_completion_tokens) and to a compatible server (max_tokens), to the
// JSON the official SDK sent (recorded in testdata/wire before the SDK was
// dropped). Objects compare by value, not key order.
func TestWireFormat(t *testing.T) {
	for name, base := range map[string]string{"openai": "https://api.openai.com/v1", "compatible": ""} {
		srv := fake.New(t)
		srv.Script(fake.Reply{Text: []string{"ok"}})
		o := openai.Options{APIKey: testKey, Model: "gpt-test-model", BaseURL: srv.BaseURL(fake.OpenAI)}
		if base != "" {
			o.BaseURL = base
			o.HTTPClient = redirectClient(srv)
		}
		if _, err := openai.New(o).Stream(ctx(t), wireRequest(), nop); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := srv.ModelRequests()[0].Raw
		path := filepath.Join("testdata", "wire", name+".json")
		if *update {
			var buf bytes.Buffer
			if err := json.Indent(&buf, got, "", "  "); err != nil {
				t.Fatal(err)
			}
			buf.WriteByte('\n')
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: body is not JSON: %v", name, err)
		}
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			var buf bytes.Buffer
			_ = json.Indent(&buf, got, "", "  ")
			t.Errorf("%s: body differs from %s:\n%s", name, path, buf.String())
		}
	}
}

// redirectClient sends every request to srv, whatever host it names.
func redirectClient(srv *fake.Server) *http.Client {
	to, _ := url.Parse(srv.URL())
	return &http.Client{Transport: &redirect{to: to}}
}
