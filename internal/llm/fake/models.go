package fake

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// Model is one model of the catalogue GET /v1/models lists.
type Model struct {
	ID string
	// Name is Anthropic's display_name ("" is the id).
	Name string
	// Thinking: Anthropic's capabilities say it accepts thinking type
	// enabled (OpenAI's format has no such field).
	Thinking bool
}

// DefaultModels is the catalogue a new server lists.
var DefaultModels = []Model{
	{ID: "claude-sonnet-4-5", Name: "Claude Sonnet 4.5", Thinking: true},
	{ID: "claude-3-5-haiku-20241022", Name: "Claude Haiku 3.5"},
}

// SetModels replaces the catalogue GET /v1/models lists.
func (s *Server) SetModels(ms ...Model) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = append([]Model(nil), ms...)
	s.modelsSet = true
}

// FailModels makes GET /v1/models answer f (nil: list again).
func (s *Server) FailModels(f *Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.modelsFail = f
}

// ListModels reports whether this was a GET /v1/models.
func (r Request) ListModels() bool { return r.Path == "/v1/models" }

// Thinking is an Anthropic request's "thinking" object (nil when absent).
func (r Request) Thinking() map[string]any { m, _ := r.Body["thinking"].(map[string]any); return m }

// ReasoningEffort is an OpenAI request's reasoning_effort ("" when absent).
func (r Request) ReasoningEffort() string { s, _ := r.Body["reasoning_effort"].(string); return s }

// listModels answers GET /v1/models in the format the request's headers
// name: Anthropic's (anthropic-version set) pages by limit (default 20)
// and after_id / before_id with has_more, first_id and last_id; OpenAI's is
// one "list" object.
func (s *Server) listModels(w http.ResponseWriter, r *http.Request, req Request) {
	s.mu.Lock()
	models, fail := s.models, s.modelsFail
	if !s.modelsSet {
		models = DefaultModels
	}
	s.mu.Unlock()
	if fail != nil {
		writeError(w, req.Format, fail)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	created := time.Date(2025, 9, 29, 0, 0, 0, 0, time.UTC)
	if req.Format == OpenAI {
		data := make([]any, len(models))
		for i, m := range models {
			data[i] = map[string]any{"id": m.ID, "object": "model", "created": created.Unix(), "owned_by": "fake"}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
		return
	}
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, req.Format, &Failure{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: "limit: must be between 1 and 1000"})
			return
		}
		limit = n
	}
	start := 0
	if after := q.Get("after_id"); after != "" {
		start = len(models)
		for i, m := range models {
			if m.ID == after {
				start = i + 1
			}
		}
	}
	end := min(start+limit, len(models))
	page := models[start:end]
	data := make([]any, len(page))
	for i, m := range page {
		name := m.Name
		if name == "" {
			name = m.ID
		}
		sup := func(b bool) map[string]any { return map[string]any{"supported": b} }
		data[i] = map[string]any{
			"type": "model", "id": m.ID, "display_name": name, "created_at": created.Format(time.RFC3339),
			"capabilities": map[string]any{
				"thinking": map[string]any{"supported": m.Thinking, "types": map[string]any{
					"enabled": sup(m.Thinking), "disabled": sup(true), "adaptive": sup(false), "between_tools": sup(false)}},
			},
		}
	}
	body := map[string]any{"data": data, "has_more": end < len(models), "first_id": nil, "last_id": nil}
	if len(page) > 0 {
		body["first_id"], body["last_id"] = page[0].ID, page[len(page)-1].ID
	}
	_ = json.NewEncoder(w).Encode(body)
}
