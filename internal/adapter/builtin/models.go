package builtin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/protocol"
)

// ModelsTTL is how long a provider's model list is reused before it is
// asked again (control.models.list with refresh asks at once).
const ModelsTTL = 5 * time.Minute

var (
	_ adapter.ModelLister = (*Adapter)(nil)
	_ adapter.ModelSetter = (*Session)(nil)
)

// modelCache keeps the provider's last model list for ModelsTTL. Failures
// are not kept: the next ask tries again, and the error is shown each time.
type modelCache struct {
	mu   sync.Mutex // held while fetching: one fetch at a time
	list []llm.ModelInfo
	at   time.Time
	now  func() time.Time
}

func (c *modelCache) get(ctx context.Context, p llm.Provider, refresh bool) ([]llm.ModelInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if !refresh && c.list != nil && now.Sub(c.at) < ModelsTTL {
		return c.list, nil
	}
	lister, ok := p.(llm.ModelLister)
	if !ok {
		return nil, &protocol.Error{Code: protocol.CodeUnsupported, Field: "type", Message: "the model provider lists no models"}
	}
	list, err := lister.ListModels(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("builtin: list models: %w", ctx.Err())
		}
		ae := agent.ProviderError(err)
		return nil, &protocol.Error{Code: ae.Code, Message: "the model provider's model list failed: " + ae.Message}
	}
	c.list, c.at = list, now
	return list, nil
}

// Models lists the configured provider's models (adapter.ModelLister).
func (a *Adapter) Models(ctx context.Context, refresh bool) (*protocol.Models, error) {
	p, err := a.Provider()
	if errors.Is(err, llm.ErrNotConfigured) {
		return nil, a.notConfigured()
	}
	if err != nil {
		return nil, err
	}
	list, err := a.models.get(ctx, p, refresh)
	if err != nil {
		return nil, err
	}
	out := &protocol.Models{Provider: p.Name(), Default: p.Model(), Models: make([]protocol.ModelInfo, 0, len(list))}
	for _, m := range list {
		out.Models = append(out.Models, protocol.ModelInfo{ID: m.ID, Name: m.Name, Efforts: slices.Clone(m.Efforts)})
	}
	if !slices.ContainsFunc(out.Models, func(m protocol.ModelInfo) bool { return m.ID == p.Model() }) {
		// The configured model is always offered, even when the key's
		// list leaves it out (an alias, a proxy's own name).
		out.Models = append([]protocol.ModelInfo{{ID: p.Model()}}, out.Models...)
	}
	return out, nil
}

// SetModel picks the model and thinking effort of the session's next
// turns (adapter.ModelSetter), checked against the provider's model list:
// an unknown model or an effort it does not take is refused naming it, and
// nothing changes. "" goes back to the configured model, no effort.
func (s *Session) SetModel(ctx context.Context, model, effort string) error {
	if model == "" && effort == "" {
		s.agent.SetModel("", "")
		return nil
	}
	list, err := s.adapter.Models(ctx, false)
	if err != nil {
		return err
	}
	id := model
	if id == "" {
		id = list.Default
	}
	i := slices.IndexFunc(list.Models, func(m protocol.ModelInfo) bool { return m.ID == id })
	if i < 0 {
		return &protocol.Error{Code: protocol.CodeInvalidValue, Field: "payload.model",
			Message: fmt.Sprintf("%s offers no model %q; pick one session.models lists", list.Provider, model)}
	}
	if effort != "" && !slices.Contains(list.Models[i].Efforts, effort) {
		takes := "no thinking effort"
		if e := list.Models[i].Efforts; len(e) > 0 {
			takes = "efforts " + fmt.Sprint(e)
		}
		return &protocol.Error{Code: protocol.CodeInvalidValue, Field: "payload.effort",
			Message: fmt.Sprintf("model %q takes %s, not %q", id, takes, effort)}
	}
	s.agent.SetModel(model, effort)
	return nil
}
