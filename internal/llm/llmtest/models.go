package llmtest

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// listModels: every page of GET /v1/models is read, in order, with the
// efforts the format can tell.
func (s *suite) listModels(t *testing.T) {
	srv, p := s.setup(t)
	lister, ok := p.(llm.ModelLister)
	if !ok {
		t.Fatalf("%T lists no models", p)
	}
	var cat []fake.Model
	for i := range 250 { // more than one page of the provider's size
		cat = append(cat, fake.Model{ID: fmt.Sprintf("o3-m%03d", i), Name: fmt.Sprintf("Model %d", i), Thinking: i%2 == 0})
	}
	cat = append(cat, fake.Model{ID: "plain-model"})
	srv.SetModels(cat...)
	got, err := lister.ListModels(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(cat) {
		t.Fatalf("listed %d models, want %d", len(got), len(cat))
	}
	for i, m := range got {
		if m.ID != cat[i].ID {
			t.Fatalf("model %d = %q, want %q (order kept across pages)", i, m.ID, cat[i].ID)
		}
	}
	if s.format == fake.Anthropic {
		if got[0].Name != "Model 0" || !slices.Contains(got[0].Efforts, llm.EffortHigh) || len(got[1].Efforts) != 0 {
			t.Errorf("anthropic efforts follow capabilities.thinking: got %+v, %+v", got[0], got[1])
		}
		var pages int
		for _, r := range srv.Requests() {
			if r.ListModels() {
				pages++
			}
		}
		if pages < 3 {
			t.Errorf("read %d pages of 251 models, want 3 or more", pages)
		}
	} else if !slices.Equal(got[0].Efforts, []string{llm.EffortLow, llm.EffortMedium, llm.EffortHigh}) || len(got[250].Efforts) != 0 {
		t.Errorf("openai efforts for reasoning families only: got %+v, %+v", got[0], got[250])
	}
}

// listModelsFails: a failed list is an *llm.Error, not an empty list.
func (s *suite) listModelsFails(t *testing.T) {
	srv, p := s.setup(t)
	srv.FailModels(&fake.Failure{Status: http.StatusUnauthorized, Message: "invalid x-api-key"})
	_, err := p.(llm.ModelLister).ListModels(ctx(t))
	var le *llm.Error
	if !errors.As(err, &le) || le.Kind != llm.KindAuth {
		t.Fatalf("a 401 list: got %v, want an auth *llm.Error", err)
	}
}

// modelAndEffort: Request.Model and Effort reach the wire as the format
// spells them.
func (s *suite) modelAndEffort(t *testing.T) {
	srv, p := s.setup(t)
	srv.Script(fake.Reply{Text: []string{"a"}}, fake.Reply{Text: []string{"b"}})
	req := userText("hi")
	req.Model, req.Effort = "picked-model", llm.EffortHigh
	stream(t, p, req)
	req.Effort = ""
	stream(t, p, req)
	reqs := srv.ModelRequests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	for _, r := range reqs {
		if r.Model() != "picked-model" {
			t.Errorf("model = %q, want picked-model", r.Model())
		}
	}
	if s.format == fake.OpenAI {
		if got := reqs[0].ReasoningEffort(); got != "high" {
			t.Errorf("reasoning_effort = %q, want high", got)
		}
		if got := reqs[1].ReasoningEffort(); got != "" {
			t.Errorf("no effort sent reasoning_effort %q", got)
		}
		return
	}
	th := reqs[0].Thinking()
	budget, _ := th["budget_tokens"].(float64)
	maxTok, _ := reqs[0].Body["max_tokens"].(float64)
	if th["type"] != "enabled" || budget < 1024 || maxTok <= budget {
		t.Errorf("thinking = %v with max_tokens %v, want enabled with 1024 <= budget < max_tokens", th, maxTok)
	}
	if reqs[1].Thinking() != nil {
		t.Errorf("no effort sent thinking %v", reqs[1].Thinking())
	}
	req.Effort = llm.EffortOff
	srv.Script(fake.Reply{Text: []string{"c"}})
	stream(t, p, req)
	if th := srv.ModelRequests()[2].Thinking(); th["type"] != "disabled" {
		t.Errorf("effort off: thinking = %v, want disabled", th)
	}
}
