// Package fake is a scripted model-provider server for tests: a loopback
// HTTP server that speaks the real wire formats of the Anthropic Messages API
// (POST /v1/messages, JSON or SSE, and POST /v1/messages/count_tokens) and of
// the OpenAI chat-completions API (POST /v1/chat/completions, JSON or SSE),
// and both formats' model list (GET /v1/models, SetModels), so
// that the real SDKs — and the real Claude Code CLI — can talk to it.
//
// A test queues replies with Script; each model request takes the next one,
// whichever format it uses. A reply streams thinking, text and tool calls in
// pieces, with its stop reason and usage, or fails the way a provider does:
// an HTTP error with the provider's error body and Retry-After, or a stream
// that breaks in the middle. Every request is recorded, decoded, so a test
// can assert what the model was sent (Request.Model, Thinking and
// ReasoningEffort name the model and thinking each call asked for);
// Request.UserBlocks reads the user
// messages' text, image and document blocks alike for both formats (an
// attached file as the real SDK or CLI sent it).
//
// Guarantees:
//
//   - Streams follow the providers' formats exactly: Anthropic's "event:" and
//     "data:" lines (message_start, content_block_start/delta/stop, ping,
//     message_delta, message_stop), OpenAI's "data:" chunks ending in
//     "data: [DONE]", with the usage chunk only when stream_options asks.
//   - Requests the real APIs would reject are rejected the same way (400 with
//     the provider's error body): no model, no messages, an Anthropic request
//     without max_tokens or anthropic-version, a tool result that answers no
//     tool call of the message before it, a tool call left unanswered. A
//     conversion bug in a provider shows up as a failed call, not a pass.
//   - A model request with no reply left fails the test (t.Errorf) and is
//     answered with a 500 that tells the SDK not to retry.
//   - A title request (Request.IsTitle: ferry's agent, opencode or Claude
//     Code asking for a session title, recognised by its system prompt,
//     llm.TitleSystem, OpencodeTitleSystem or ClaudeCodeTitleSystem, and
//     its lack of tools, which no turn has) never takes a reply of the
//     script: it takes the next reply scripted with Title set, else it is
//     answered with DefaultTitle; Claude Code's gets the title as the JSON
//     object {"title": …} it asks for. Tests of whole sessions need not
//     script the extra request; ModelRequests leaves title requests out
//     (TitleRequests has them).
//   - Close (also run by t.Cleanup) ends held and delayed streams at once.
//   - HEAD or GET / answers 200 (Claude Code checks reachability so); any
//     other unknown request is a 404 in the Anthropic error format.
//
// The real Claude Code CLI runs against it (TestClaudeCodeTalksToFake): a
// scripted tool_use makes it run its real Read tool.
package fake

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/internal/llm"
)

// Format is a provider wire format.
type Format string

// The wire formats the server speaks.
const (
	Anthropic Format = "anthropic"
	OpenAI    Format = "openai"
)

// Break is how a streamed reply fails after its pieces.
type Break int

// Ways a stream breaks.
const (
	// NoBreak: the stream ends normally.
	NoBreak Break = iota
	// BreakCut drops the connection in the middle of an event.
	BreakCut
	// BreakBadJSON sends a whole event whose data is not JSON, then ends.
	BreakBadJSON
	// BreakError sends the provider's in-stream error event (Anthropic:
	// "event: error" with an overloaded_error; OpenAI: a chunk with an
	// "error" object), then ends.
	BreakError
)

// ToolCall is one tool call of a reply.
type ToolCall struct {
	// ID is the call's id; empty generates one (toolu_… or call_…).
	ID   string
	Name string
	// Input is the call's input: a json.RawMessage is sent verbatim (it may
	// be deliberately invalid), anything else is marshalled to JSON. nil
	// is {}.
	Input any
	// Pieces is how many pieces the input JSON is streamed in (default 3).
	Pieces int
}

// Failure is an HTTP error response in the provider's format.
type Failure struct {
	// Status is the HTTP status (429, 500, 529, 401, …).
	Status int
	// RetryAfter is the Retry-After header's value, if any ("1", "0.05",
	// or an HTTP date).
	RetryAfter string
	// Header adds response headers (e.g. "x-should-retry").
	Header map[string]string
	// Type is the provider's error type; empty derives it from Status
	// (e.g. rate_limit_error / rate_limit_exceeded).
	Type string
	// Message is the error message; empty uses the status text.
	Message string
}

// Reply is one scripted answer to a model request.
type Reply struct {
	// Thinking pieces, streamed first (Anthropic: a thinking block;
	// OpenAI: "reasoning_content" deltas).
	Thinking []string
	// Text pieces, streamed in order as one text block.
	Text []string
	// ToolCalls, streamed after the text.
	ToolCalls []ToolCall
	// Interleave streams the argument pieces of several tool calls
	// alternately (OpenAI only; Anthropic's blocks never interleave).
	Interleave bool
	// StopReason is a neutral stop reason (llm.StopEndTurn, StopToolUse,
	// StopMaxTokens, StopRefusal), mapped to the format's own value, or a
	// wire value sent verbatim ("stop_sequence", "pause_turn", "length").
	// Empty is tool_use when there are tool calls, else end_turn.
	StopReason string
	// Usage is reported in the format's own fields. For OpenAI,
	// prompt_tokens is InputTokens+CacheReadTokens and cached_tokens is
	// CacheReadTokens (OpenAI counts cached tokens inside the prompt).
	Usage llm.Usage
	// Model is the model the reply names; empty echoes the request's.
	Model string

	// Delay is waited before each streamed piece.
	Delay time.Duration
	// Hold keeps the stream open after the pieces, never finishing it,
	// until the client goes away or the server closes: the shape of a
	// cancel test.
	Hold bool
	// Break makes the stream fail after the pieces.
	Break Break
	// Fail answers with an HTTP error instead of a reply.
	Fail *Failure
	// Raw, when set, is sent verbatim as the body of a 200 response with
	// Content-Type text/event-stream (for fuzzing what a client makes of
	// arbitrary streams).
	Raw string

	// Title scripts the reply for a title request (Request.IsTitle), apart
	// from the other replies: title requests take these in order, and no
	// other request takes one.
	Title bool
}

// DefaultTitle answers a title request that no reply scripted with Title
// answers: a fixed title, so that a test can tell the model's title from
// one the master made from the prompt.
const DefaultTitle = "Fake model title"

// Times returns n copies of r, e.g. for a failure the SDK retries.
func Times(n int, r Reply) []Reply {
	out := make([]Reply, n)
	for i := range out {
		out[i] = r
	}
	return out
}

// Request is one request the server got.
type Request struct {
	// Format is the API the path belongs to ("" for an unknown path).
	Format Format
	Method string
	Path   string
	Header http.Header
	// Raw is the body as received; Body is it decoded (nil if not JSON).
	Raw  []byte
	Body map[string]any
	// Reply is the index of the scripted reply that answered it, -1 for
	// none (a count_tokens call, a routed, title or rejected request).
	Reply int
}

// Stream reports whether the request asked for a stream.
func (r Request) Stream() bool { b, _ := r.Body["stream"].(bool); return b }

// Model is the request's model.
func (r Request) Model() string { s, _ := r.Body["model"].(string); return s }

// IsTitle reports whether the request asks for a session title: ferry's
// agent's (its system prompt holds llm.TitleSystem), opencode's
// (OpencodeTitleSystem) or Claude Code's (IsClaudeCodeTitle), system
// prompts no turn sends, with no tools offered.
func (r Request) IsTitle() bool {
	if r.Format == "" || r.CountTokens() || r.ListModels() || len(r.ToolNames()) > 0 {
		return false
	}
	sys := r.System()
	return strings.Contains(sys, llm.TitleSystem) || strings.Contains(sys, OpencodeTitleSystem) ||
		r.Format == Anthropic && strings.Contains(sys, ClaudeCodeTitleSystem)
}

// IsClaudeCodeTitle reports whether the request is Claude Code asking its
// model for a session title (ClaudeCodeTitleSystem): its answer is the
// JSON object {"title": …} that the request's json_schema output format
// asks for.
func (r Request) IsClaudeCodeTitle() bool {
	return r.IsTitle() && strings.Contains(r.System(), ClaudeCodeTitleSystem)
}

// CountTokens reports whether this was an Anthropic count_tokens call.
func (r Request) CountTokens() bool { return strings.HasSuffix(r.Path, "/count_tokens") }

// Messages are the request's messages, decoded.
func (r Request) Messages() []map[string]any {
	list, _ := r.Body["messages"].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, m := range list {
		if mm, ok := m.(map[string]any); ok {
			out = append(out, mm)
		}
	}
	return out
}

// System is the system prompt: Anthropic's "system" (a string or text
// blocks, joined), or OpenAI's system and developer messages, joined.
func (r Request) System() string {
	if r.Format == OpenAI {
		var parts []string
		for _, m := range r.Messages() {
			if role, _ := m["role"].(string); role == "system" || role == "developer" {
				parts = append(parts, contentText(m["content"]))
			}
		}
		return strings.Join(parts, "\n")
	}
	return contentText(r.Body["system"])
}

// ToolNames are the names of the tools the request offers.
func (r Request) ToolNames() []string {
	list, _ := r.Body["tools"].([]any)
	var names []string
	for _, t := range list {
		tm, _ := t.(map[string]any)
		if fn, ok := tm["function"].(map[string]any); ok {
			tm = fn
		}
		if n, ok := tm["name"].(string); ok {
			names = append(names, n)
		}
	}
	return names
}

// contentText joins the text of a string or a list of text blocks/parts.
func contentText(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, b := range c {
			if bm, ok := b.(map[string]any); ok {
				if s, ok := bm["text"].(string); ok {
					parts = append(parts, s)
				}
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

// Server is the fake provider. Its methods are safe for concurrent use.
type Server struct {
	t    testing.TB
	srv  *httptest.Server
	done chan struct{}
	once sync.Once

	mu      sync.Mutex
	queue   []Reply
	used    int
	titles  []Reply // scripted with Title, for title requests
	reqs    []Request
	route   func(Request) (Reply, bool)
	counter func(Request) int
	ids     int

	models     []Model
	modelsSet  bool
	modelsFail *Failure
}

// New starts a server on loopback; t.Cleanup closes it.
func New(t testing.TB) *Server {
	s := &Server{t: t, done: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// URL is the server's root, e.g. http://127.0.0.1:PORT: the Anthropic base
// URL (ANTHROPIC_BASE_URL).
func (s *Server) URL() string { return s.srv.URL }

// BaseURL is the base URL a client of format f is given: URL() for
// Anthropic, URL()+"/v1" for OpenAI (OPENAI_BASE_URL).
func (s *Server) BaseURL(f Format) string {
	if f == OpenAI {
		return s.srv.URL + "/v1"
	}
	return s.srv.URL
}

// Script queues replies; model requests take them in order (a reply with
// Title set waits for a title request instead).
func (s *Server) Script(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range replies {
		if r.Title {
			s.titles = append(s.titles, r)
		} else {
			s.queue = append(s.queue, r)
		}
	}
}

// Pending is how many scripted replies are still unused, title replies
// included.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue) - s.used + len(s.titles)
}

// Requests returns every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// ModelRequests returns the requests that asked the model for a reply
// (count_tokens calls, model lists, title requests and unknown paths left
// out).
func (s *Server) ModelRequests() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Format != "" && !r.CountTokens() && !r.ListModels() && !r.IsTitle() {
			out = append(out, r)
		}
	}
	return out
}

// TitleRequests returns the title requests (Request.IsTitle) received so
// far, in order.
func (s *Server) TitleRequests() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.IsTitle() {
			out = append(out, r)
		}
	}
	return out
}

// Route installs fn, asked first for every model request: when it returns
// true, its reply answers and the queue is left alone. It lets a test answer
// side requests (a CLI's title or quota calls) without scripting them. fn
// runs on the server's goroutines, possibly concurrently.
func (s *Server) Route(fn func(Request) (Reply, bool)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.route = fn
}

// SetTokenCount replaces how count_tokens answers (default EstimateTokens).
func (s *Server) SetTokenCount(fn func(Request) int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counter = fn
}

// Close stops the server, ending held streams first.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.done)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// EstimateTokens is the default count_tokens answer: a quarter of the bytes
// of the request's text (system, text blocks, tool inputs and results,
// tools), rounded up. It never exceeds the text's byte count.
func EstimateTokens(r Request) int {
	n := 0
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch x := v.(type) {
		case string:
			switch key {
			case "text", "system", "content", "thinking", "data":
				n += len(x)
			}
		case []any:
			for _, e := range x {
				walk(key, e)
			}
		case map[string]any:
			for k, e := range x {
				if k == "input" {
					b, _ := json.Marshal(e)
					n += len(b)
					continue
				}
				walk(k, e)
			}
		}
	}
	walk("system", r.Body["system"])
	walk("messages", r.Body["messages"])
	if tools, ok := r.Body["tools"]; ok {
		b, _ := json.Marshal(tools)
		n += len(b)
	}
	return (n + 3) / 4
}

// maxBody bounds a request body: far above any test's, well below memory.
const maxBody = 64 << 20

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, "fake: reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw, Reply: -1}
	if len(bytes.TrimSpace(raw)) > 0 {
		_ = json.Unmarshal(raw, &req.Body) // a non-JSON body is rejected below
	}
	switch r.URL.Path {
	case "/v1/messages", "/v1/messages/count_tokens":
		req.Format = Anthropic
	case "/v1/chat/completions":
		req.Format = OpenAI
	case "/v1/models":
		req.Format = OpenAI
		if r.Header.Get("anthropic-version") != "" {
			req.Format = Anthropic
		}
		if r.Method == http.MethodGet {
			s.record(req)
			s.listModels(w, r, req)
			return
		}
	}

	if r.URL.Path == "/" && (r.Method == http.MethodHead || r.Method == http.MethodGet) {
		s.record(req) // a client's reachability check (Claude Code sends HEAD /)
		w.WriteHeader(http.StatusOK)
		return
	}
	if req.Format == "" || r.Method != http.MethodPost {
		s.record(req)
		writeError(w, req.Format, &Failure{Status: http.StatusNotFound, Message: "fake: no such endpoint: " + r.Method + " " + r.URL.Path})
		return
	}
	if f := validate(req); f != nil {
		s.record(req)
		writeError(w, req.Format, f)
		return
	}
	if req.CountTokens() {
		s.mu.Lock()
		count := s.counter
		s.mu.Unlock()
		if count == nil {
			count = EstimateTokens
		}
		s.record(req)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]int{"input_tokens": count(req)})
		return
	}

	reply, ok := s.take(&req)
	if !ok {
		s.t.Errorf("fake: %s %s (model %q): no scripted reply left", r.Method, r.URL.Path, req.Model())
		writeError(w, req.Format, &Failure{
			Status:  http.StatusInternalServerError,
			Message: "fake: no scripted reply left",
			Header:  map[string]string{"x-should-retry": "false"},
		})
		return
	}
	s.answer(w, r.Context(), req, reply)
}

// record appends req to the log.
func (s *Server) record(req Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
}

// take picks the reply for req (routed, a title reply for a title
// request, or the next in the queue) and records req.
func (s *Server) take(req *Request) (Reply, bool) {
	s.mu.Lock()
	route := s.route
	s.mu.Unlock()
	if route != nil {
		if reply, ok := route(*req); ok {
			s.record(*req)
			return reply, true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.IsTitle() {
		s.reqs = append(s.reqs, *req)
		reply := Reply{Text: []string{DefaultTitle}}
		if len(s.titles) > 0 {
			reply = s.titles[0]
			s.titles = s.titles[1:]
		}
		if req.IsClaudeCodeTitle() {
			reply = jsonTitle(reply)
		}
		return reply, true
	}
	if s.used >= len(s.queue) {
		s.reqs = append(s.reqs, *req)
		return Reply{}, false
	}
	req.Reply = s.used
	reply := s.queue[s.used]
	s.used++
	s.reqs = append(s.reqs, *req)
	return reply, true
}

// nextID returns a fresh id with prefix.
func (s *Server) nextID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids++
	return fmt.Sprintf("%s%04d", prefix, s.ids)
}

// answer writes reply to w in req's format.
func (s *Server) answer(w http.ResponseWriter, ctx context.Context, req Request, reply Reply) {
	if reply.Fail != nil {
		writeError(w, req.Format, reply.Fail)
		return
	}
	if reply.Raw != "" {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, reply.Raw)
		return
	}
	if reply.Model == "" {
		reply.Model = req.Model()
	}
	calls := make([]ToolCall, len(reply.ToolCalls))
	copy(calls, reply.ToolCalls)
	for i := range calls {
		if calls[i].ID == "" {
			if req.Format == OpenAI {
				calls[i].ID = s.nextID("call_fake")
			} else {
				calls[i].ID = s.nextID("toolu_fake")
			}
		}
	}
	reply.ToolCalls = calls
	st := &streamer{w: w, ctx: ctx, done: s.done, delay: reply.Delay}
	if req.Format == OpenAI {
		s.answerOpenAI(st, req, reply)
	} else {
		s.answerAnthropic(st, req, reply)
	}
}

// streamer writes and flushes a response piece by piece.
type streamer struct {
	w     http.ResponseWriter
	ctx   context.Context
	done  <-chan struct{}
	delay time.Duration
}

// wait sleeps the reply's delay; false when the client or server went away.
func (st *streamer) wait() bool {
	if st.delay <= 0 {
		return st.ctx.Err() == nil
	}
	t := time.NewTimer(st.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-st.ctx.Done():
		return false
	case <-st.done:
		return false
	}
}

// write sends s and flushes it.
func (st *streamer) write(s string) bool {
	if _, err := io.WriteString(st.w, s); err != nil {
		return false
	}
	if f, ok := st.w.(http.Flusher); ok {
		f.Flush()
	}
	return st.ctx.Err() == nil
}

// hold blocks until the client or the server goes away.
func (st *streamer) hold() {
	select {
	case <-st.ctx.Done():
	case <-st.done:
	}
}

// cut sends the first half of event and drops the connection.
func (st *streamer) cut(event string) {
	st.write(event[:len(event)/2])
	panic(http.ErrAbortHandler) // net/http closes the connection without a clean end
}

// inputJSON is a tool call's input as JSON text.
func inputJSON(in any) string {
	switch v := in.(type) {
	case nil:
		return "{}"
	case json.RawMessage:
		return string(v)
	}
	b, err := json.Marshal(in)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// split cuts s into n pieces of about equal size on rune boundaries.
func split(s string, n int) []string {
	if n <= 1 || len(s) <= 1 {
		return []string{s}
	}
	size := (len(s) + n - 1) / n
	var out []string
	for len(s) > 0 {
		end := min(size, len(s))
		for end < len(s) && !utf8.RuneStart(s[end]) {
			end++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

// stopReason resolves reply's stop reason to a neutral or wire value.
func (r Reply) stopReason() string {
	if r.StopReason != "" {
		return r.StopReason
	}
	if len(r.ToolCalls) > 0 {
		return llm.StopToolUse
	}
	return llm.StopEndTurn
}

// pieces is how many pieces a call's input is streamed in.
func (c ToolCall) pieces() int {
	if c.Pieces > 0 {
		return c.Pieces
	}
	return 3
}

// writeError answers with f in format's error body.
func writeError(w http.ResponseWriter, format Format, f *Failure) {
	status := f.Status
	if status == 0 {
		status = http.StatusInternalServerError
	}
	msg := f.Message
	if msg == "" {
		msg = http.StatusText(status)
		if status == 529 {
			msg = "Overloaded"
		}
	}
	for k, v := range f.Header {
		w.Header().Set(k, v)
	}
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	var body any
	if format == OpenAI {
		typ, code := openAIErrorType(status)
		if f.Type != "" {
			typ, code = f.Type, f.Type
		}
		w.Header().Set("x-request-id", "req_fake")
		body = map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}}
	} else {
		typ := anthropicErrorType(status)
		if f.Type != "" {
			typ = f.Type
		}
		w.Header().Set("request-id", "req_fake")
		body = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// anthropicErrorType is the Anthropic error type of an HTTP status.
func anthropicErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 402:
		return "billing_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 504:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

// openAIErrorType is the OpenAI error type and code of an HTTP status.
func openAIErrorType(status int) (typ, code string) {
	switch status {
	case 400:
		return "invalid_request_error", "invalid_request_error"
	case 401:
		return "invalid_request_error", "invalid_api_key"
	case 403:
		return "invalid_request_error", "unsupported_country_region_territory"
	case 404:
		return "invalid_request_error", "model_not_found"
	case 429:
		return "requests", "rate_limit_exceeded"
	case 503:
		return "server_error", "service_unavailable"
	}
	return "server_error", "server_error"
}

// OpencodeTitleSystem opens the system prompt with which opencode
// (1.18.33) asks its small model for a session title, in whatever format
// its provider speaks; it wants the title as plain text.
const OpencodeTitleSystem = "You are a title generator. You output ONLY a thread title."

// ClaudeCodeTitleSystem opens the system prompt with which Claude Code
// (2.1.332) asks its model to name a session: for its
// generate_session_title control request, and for its own titling. It
// asks for JSON with a single "title" field.
const ClaudeCodeTitleSystem = "You are naming a coding session so the user can pick it out of a long list of sessions."

// jsonTitle is a title reply as Claude Code's title request wants it: its
// text as the JSON object {"title": text}. A failure, a raw stream or a
// broken stream stays as it is.
func jsonTitle(r Reply) Reply {
	if r.Fail != nil || r.Raw != "" || r.Break != NoBreak {
		return r
	}
	b, _ := json.Marshal(map[string]string{"title": strings.Join(r.Text, "")})
	r.Text = []string{string(b)}
	return r
}
