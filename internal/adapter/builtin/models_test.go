package builtin_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/builtin"
	"github.com/ferry-dev/ferry/internal/agent/agenttest"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/llm/provider"
	"github.com/ferry-dev/ferry/protocol"
)

func countLists(srv *fake.Server) int {
	n := 0
	for _, r := range srv.Requests() {
		if r.ListModels() {
			n++
		}
	}
	return n
}

// The model list comes from the provider, is cached, and a refresh asks
// again; the configured model is the default.
func TestModelsListedAndCached(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server) {
		srv.SetModels(fake.Model{ID: "test-model", Name: "Test", Thinking: true}, fake.Model{ID: "o3-mini", Thinking: true}, fake.Model{ID: "small"})
		a := builtin.New(builtin.Config{Getenv: func(string) string { return "" },
			Provider: provider.Config{Provider: string(f), Model: "test-model", BaseURL: srv.BaseURL(f), APIKey: "k"}})
		ms, err := a.Models(testCtx(t), false)
		if err != nil {
			t.Fatal(err)
		}
		if ms.Default != "test-model" || ms.Provider != string(f) || len(ms.Models) != 3 {
			t.Fatalf("models %+v", ms)
		}
		if f == fake.Anthropic && len(ms.Models[0].Efforts) != 4 {
			t.Fatalf("anthropic thinking model efforts %v, want off..high", ms.Models[0].Efforts)
		}
		if f == fake.OpenAI && (len(ms.Models[1].Efforts) != 3 || len(ms.Models[2].Efforts) != 0) {
			t.Fatalf("openai efforts %+v", ms.Models)
		}
		if _, err := a.Models(testCtx(t), false); err != nil || countLists(srv) != 1 {
			t.Fatalf("second list: err %v, %d provider calls, want 1 (cached)", err, countLists(srv))
		}
		if _, err := a.Models(testCtx(t), true); err != nil || countLists(srv) != 2 {
			t.Fatalf("refresh: err %v, %d provider calls, want 2", err, countLists(srv))
		}
	})
}

// A failed list is a coded error the UI shows, not an empty list.
func TestModelsListFailureIsShown(t *testing.T) {
	t.Parallel()
	srv := fake.New(t)
	srv.FailModels(&fake.Failure{Status: http.StatusUnauthorized, Message: "invalid x-api-key"})
	a := builtin.New(builtin.Config{Getenv: func(string) string { return "" },
		Provider: provider.Config{Provider: "anthropic", Model: "m", BaseURL: srv.URL(), APIKey: "k"}})
	_, err := a.Models(testCtx(t), false)
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Code != protocol.AgentCodeProviderAuth || !strings.Contains(pe.Message, "model list") {
		t.Fatalf("err %v, want provider_auth naming the model list", err)
	}
}

// A picked model and effort reach the provider from the next turn; an
// unknown model or an effort the model does not take is refused naming
// the field, and the turn after still runs on the last good pick.
func TestSetModelReachesTheProvider(t *testing.T) {
	t.Parallel()
	srv := fake.New(t)
	srv.SetModels(fake.Model{ID: "test-model"}, fake.Model{ID: "thinker", Thinking: true})
	s, _ := open(t, srv, fake.Anthropic, nil)
	ctx := testCtx(t)
	if err := s.SetModel(ctx, "thinker", protocol.EffortMedium); err != nil {
		t.Fatal(err)
	}
	var pe *protocol.Error
	if err := s.SetModel(ctx, "no-such-model", ""); !errors.As(err, &pe) || pe.Field != "payload.model" || !strings.Contains(pe.Message, `"no-such-model"`) {
		t.Fatalf("unknown model: %v", err)
	}
	if err := s.SetModel(ctx, "test-model", protocol.EffortHigh); !errors.As(err, &pe) || pe.Field != "payload.effort" {
		t.Fatalf("effort of a model without thinking: %v", err)
	}
	srv.Script(fake.Reply{Text: []string{"ok"}})
	if _, err := s.Run(ctx, turn("hi"), newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	r := srv.ModelRequests()[0]
	if r.Model() != "thinker" || r.Thinking()["type"] != "enabled" || r.Thinking()["budget_tokens"] != float64(10000) {
		t.Fatalf("request model %q thinking %v, want thinker with a 10000 budget", r.Model(), r.Thinking())
	}
	if err := s.SetModel(ctx, "", ""); err != nil {
		t.Fatal(err)
	}
	srv.Script(fake.Reply{Text: []string{"ok"}})
	if _, err := s.Run(ctx, turn("again"), newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	if r := srv.ModelRequests()[1]; r.Model() != "test-model" || r.Thinking() != nil {
		t.Fatalf("back to default: model %q thinking %v", r.Model(), r.Thinking())
	}
}

// A denial's note reaches the model in the denied call's tool result.
func TestDenyNoteReachesTheModel(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server) {
		s, _ := open(t, srv, f, nil)
		srv.Script(fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Bash", Input: map[string]any{"command": "mv a.txt b.txt"}}}}, fake.Reply{Text: []string{"ok"}})
		rec := newRecorder()
		ctx := testCtx(t)
		go func() {
			select {
			case ir := <-rec.Asks:
				if err := s.Answer(ir.InteractionID, &protocol.InteractionResponse{InteractionID: ir.InteractionID,
					SelectedValue: protocol.Single(protocol.Deny), Note: "use git mv instead"}); err != nil {
					t.Error(err)
				}
			case <-ctx.Done():
			}
		}()
		if _, err := s.Run(ctx, turn("rename"), rec.emit); err != nil {
			t.Fatal(err)
		}
		r := agenttest.ToolResults(srv.ModelRequests()[1])
		if len(r) != 1 || !strings.Contains(r[0].Text, "use git mv instead") {
			t.Fatalf("the model did not get the note: %+v", r)
		}
	})
}

// With no provider the capability says the agent cannot start and what to
// do, for the command the user ran; Open says the same.
func TestUnavailableNamesTheCommand(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"ferry up", "ferry connect"} {
		a := builtin.New(builtin.Config{Getenv: func(string) string { return "" }, HostCommand: cmd})
		c := a.Capability()
		if !strings.Contains(c.Unavailable, "ANTHROPIC_API_KEY") || !strings.HasSuffix(c.Unavailable, "restart "+cmd) {
			t.Fatalf("%s: unavailable %q", cmd, c.Unavailable)
		}
		_, err := a.Open(context.Background(), adapter.SessionConfig{SessionID: "s", Workspace: protocol.Workspace{ID: "w", Name: "w", Path: t.TempDir()}})
		var pe *protocol.Error
		if !errors.As(err, &pe) || !strings.Contains(pe.Message, "restart "+cmd) {
			t.Fatalf("%s: open: %v", cmd, err)
		}
	}
	ok := builtin.New(builtin.Config{Getenv: func(k string) string {
		if k == "ANTHROPIC_API_KEY" {
			return "k"
		}
		return ""
	}})
	if c := ok.Capability(); c.Unavailable != "" || !c.DenyNote || !c.Models {
		t.Fatalf("configured: %+v", c)
	}
}
