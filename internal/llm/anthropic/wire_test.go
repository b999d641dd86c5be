package anthropic_test

import (
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/anthropic"
	"github.com/ferry-dev/ferry/internal/llm/fake"
)

var update = flag.Bool("update", false, "rewrite testdata/wire/*.json")

// wireRequest uses every part of the conversation mapping: system prompt,
// tools with and without a schema (extra schema keywords), text, images,
// both kinds of document, tool results (failed, empty, with text, an image
// and documents), assistant turns with signed and unsigned thinking, empty
// text and tool calls, the bound and the effort.
func wireRequest(effort string) llm.Request {
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG fake"))
	return llm.Request{
		System:    "You are terse.",
		MaxTokens: 512,
		Effort:    effort,
		Tools: []llm.ToolSpec{
			{Name: "Read", Description: "Reads a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"],"additionalProperties":false,"$schema":"x"}`)},
			{Name: "Now"},
		},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Block{
				{Type: llm.BlockText, Text: "Look at these <&>."},
				{Type: llm.BlockImage, MediaType: "image/png", Data: png},
				{Type: llm.BlockDocument, MediaType: "application/pdf", Data: "JVBERi0="},
				{Type: llm.BlockDocument, MediaType: "text/plain", Data: base64.StdEncoding.EncodeToString([]byte("plain notes"))},
			}},
			{Role: llm.RoleAssistant, Content: []llm.Block{
				{Type: llm.BlockThinking, Text: "hmm", Signature: "c2ln"},
				{Type: llm.BlockThinking, Text: "unsigned"},
				{Type: llm.BlockText, Text: "Reading."},
				{Type: llm.BlockText, Text: ""},
				{Type: llm.BlockToolUse, ToolUseID: "toolu_1", ToolName: "Read", Input: json.RawMessage(`{"file_path":"a.go"}`)},
				{Type: llm.BlockToolUse, ToolUseID: "toolu_2", ToolName: "Now"},
			}},
			{Role: llm.RoleUser, Content: []llm.Block{
				{Type: llm.BlockToolResult, ToolUseID: "toolu_1", Content: []llm.Block{
					{Type: llm.BlockText, Text: "package a"},
					{Type: llm.BlockText, Text: ""},
					{Type: llm.BlockImage, MediaType: "image/jpeg", Data: png},
					{Type: llm.BlockDocument, MediaType: "application/pdf", Data: "JVBERi0="},
					{Type: llm.BlockDocument, MediaType: "text/markdown", Data: base64.StdEncoding.EncodeToString([]byte("# notes"))},
				}},
				{Type: llm.BlockToolResult, ToolUseID: "toolu_2", IsError: true},
				{Type: llm.BlockText, Text: "And now?"},
			}},
			{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockThinking, Text: "only thinking", Signature: "c2ln"}}},
			{Role: llm.RoleUser, Content: []llm.Block{
				{Type: llm.BlockText, Text: "one"},
				{Type: llm.BlockText, Text: "two"},
			}},
			{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockToolUse, ToolUseID: "toolu_3", ToolName: "Now", Input: json.RawMessage(` {} `)}}},
			{Role: llm.RoleUser, Content: []llm.Block{
				{Type: llm.BlockToolResult, ToolUseID: "toolu_3", Content: []llm.Block{{Type: llm.BlockImage, MediaType: "image/png", Data: png}}},
			}},
		},
	}
}

// TestWireFormat pins what the provider sends, to the JSON and headers the
// official SDK sent (recorded in testdata/wire before the SDK was
// dropped): the streamed Messages body with thinking on, off and left to
// the model's default, the count_tokens body, and the model list's
// queries. Objects compare by value, not key order.
func TestWireFormat(t *testing.T) {
	srv := fake.New(t)
	srv.SetModels(fake.Model{ID: "m1"}, fake.Model{ID: "m2"}, fake.Model{ID: "m3"})
	p := anthropic.New(anthropic.Options{APIKey: testKey, BaseURL: srv.URL(), Model: "claude-test-model"})
	for _, effort := range []string{llm.EffortMedium, llm.EffortOff, ""} {
		srv.Script(fake.Reply{Text: []string{"ok"}})
		if _, err := p.Stream(ctx(t), wireRequest(effort), nop); err != nil {
			t.Fatalf("effort %q: %v", effort, err)
		}
	}
	if _, err := p.CountTokens(ctx(t), wireRequest(llm.EffortHigh)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ListModels(ctx(t)); err != nil {
		t.Fatal(err)
	}
	var got []wireRecord
	for _, r := range srv.Requests() {
		rec := wireRecord{Method: r.Method, Path: r.Path, Header: pinnedHeaders(r.Header)}
		if len(r.Raw) > 0 {
			rec.Body = json.RawMessage(r.Raw)
		}
		got = append(got, rec)
	}
	// The model list pages by 100: with three models it is one page.
	// The queries are pinned separately with a paging server below.
	checkWire(t, "requests.json", got)
}

// TestWireModelPages pins the model list's paging: limit=100 first, then
// after_id of the page's last model while has_more says so.
func TestWireModelPages(t *testing.T) {
	srv, queries := newPagingServer(t)
	p := anthropic.New(anthropic.Options{APIKey: testKey, BaseURL: srv.URL, Model: "m"})
	ms, err := p.ListModels(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 250 || ms[0].ID != "model-000" || ms[249].ID != "model-249" {
		t.Errorf("%d models, want model-000 to model-249", len(ms))
	}
	checkWire(t, "model_pages.json", queries())
}

// wireRecord is one request as pinned.
type wireRecord struct {
	Method string            `json:"method"`
	Path   string            `json:"path"`
	Header map[string]string `json:"header"`
	Body   json.RawMessage   `json:"body,omitempty"`
}

// pinnedHeaders are the headers the API reads (the SDK's own telemetry
// headers, X-Stainless-* and User-Agent, are not pinned).
func pinnedHeaders(h http.Header) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		k = strings.ToLower(k)
		if strings.HasPrefix(k, "anthropic-") || k == "x-api-key" || k == "content-type" || k == "accept" || k == "authorization" {
			out[k] = strings.Join(v, ",")
		}
	}
	return out
}

// checkWire compares got with testdata/wire/name by value (or rewrites it
// with -update).
func checkWire(t *testing.T, name string, got any) {
	t.Helper()
	raw, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "wire", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(raw, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s differs:\n%s", path, raw)
	}
}

// newPagingServer lists 250 models, Anthropic-style, in pages of at most
// the limit asked; queries returns the queries it was sent.
func newPagingServer(t *testing.T) (srv *httptest.Server, queries func() []string) {
	t.Helper()
	ids := make([]string, 250)
	for i := range ids {
		ids[i] = fmt.Sprintf("model-%03d", i)
	}
	var mu sync.Mutex
	var seen []string
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+"?"+q.Encode())
		mu.Unlock()
		limit := 20
		if l, err := strconv.Atoi(q.Get("limit")); err == nil {
			limit = l
		}
		start := 0
		if a := q.Get("after_id"); a != "" {
			start = sort.SearchStrings(ids, a) + 1
		}
		end := min(start+limit, len(ids))
		data := []map[string]any{}
		for _, id := range ids[start:end] {
			data = append(data, map[string]any{"type": "model", "id": id, "display_name": id})
		}
		body := map[string]any{"data": data, "has_more": end < len(ids), "first_id": ids[start], "last_id": ids[end-1]}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}
