package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/protocol"
	"github.com/ferry-dev/ferry/protocol/fileref"
)

// memProvider is a scripted in-memory llm.Provider for the loop's unit
// tests: each Stream call takes the next step. The end-to-end tests use the
// real providers against the fake HTTP server instead.
type memProvider struct {
	mu    sync.Mutex
	steps []step
	reqs  []llm.Request
	// started receives a value when a blocking step starts streaming.
	started chan struct{}
}

// step is one scripted model answer.
type step struct {
	text  []string // text deltas
	tools []llm.Block
	stop  string
	err   error
	// block makes the call stream its text, then wait for ctx.
	block bool
	usage llm.Usage
}

var _ llm.Provider = (*memProvider)(nil)

func newMem(steps ...step) *memProvider {
	return &memProvider{steps: steps, started: make(chan struct{}, 16)}
}

func (p *memProvider) Name() string  { return "mem" }
func (p *memProvider) Model() string { return "mem-1" }

func (p *memProvider) CountTokens(context.Context, llm.Request) (int, error) {
	return 0, llm.ErrNoTokenCount
}

func (p *memProvider) Stream(ctx context.Context, req llm.Request, on func(llm.Event) error) (*llm.Response, error) {
	p.mu.Lock()
	p.reqs = append(p.reqs, cloneReq(req))
	if len(p.steps) == 0 {
		p.mu.Unlock()
		return nil, &llm.Error{Kind: llm.KindBadRequest, Message: "the script has no more steps"}
	}
	s := p.steps[0]
	p.steps = p.steps[1:]
	p.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	msg := llm.Message{Role: llm.RoleAssistant}
	var text string
	for _, d := range s.text {
		if err := on(llm.Event{Type: llm.EventTextDelta, Text: d}); err != nil {
			return nil, fmt.Errorf("mem: %w", err)
		}
		text += d
	}
	if text != "" {
		msg.Content = append(msg.Content, llm.Block{Type: llm.BlockText, Text: text})
	}
	if s.block {
		p.started <- struct{}{}
		<-ctx.Done()
		return nil, fmt.Errorf("mem: %w", ctx.Err())
	}
	for i := range s.tools {
		b := s.tools[i]
		if err := on(llm.Event{Type: llm.EventToolUse, Block: &b}); err != nil {
			return nil, fmt.Errorf("mem: %w", err)
		}
		msg.Content = append(msg.Content, b)
	}
	stop := s.stop
	if stop == "" {
		stop = llm.StopEndTurn
		if len(s.tools) > 0 {
			stop = llm.StopToolUse
		}
	}
	u := s.usage
	if u == (llm.Usage{}) {
		u = llm.Usage{InputTokens: 10, OutputTokens: 5}
	}
	return &llm.Response{Message: msg, StopReason: stop, Usage: u}, nil
}

func (p *memProvider) requests() []llm.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]llm.Request(nil), p.reqs...)
}

func cloneReq(r llm.Request) llm.Request {
	b, _ := json.Marshal(r.Messages)
	var msgs []llm.Message
	_ = json.Unmarshal(b, &msgs)
	r.Messages = msgs
	return r
}

func toolCall(id, name string, input any) llm.Block {
	b, err := json.Marshal(input)
	if err != nil {
		panic(err)
	}
	return llm.Block{Type: llm.BlockToolUse, ToolUseID: id, ToolName: name, Input: b}
}

// event is one emitted agent.* event.
type event struct {
	typ     string
	payload any
}

// recorder is an agent.Emit that keeps the events, and hands each
// interaction request to asks.
type recorder struct {
	mu     sync.Mutex
	events []event
	asks   chan *protocol.InteractionRequest
}

func newRecorder() *recorder { return &recorder{asks: make(chan *protocol.InteractionRequest, 16)} }

func (r *recorder) emit(_ context.Context, typ string, payload any) error {
	r.mu.Lock()
	r.events = append(r.events, event{typ, payload})
	r.mu.Unlock()
	if ir, ok := payload.(*protocol.InteractionRequest); ok {
		r.asks <- ir
	}
	return nil
}

var _ agent.Emit = (*recorder)(nil).emit

func (r *recorder) all() []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event(nil), r.events...)
}

func (r *recorder) of(typ string) []any {
	var out []any
	for _, e := range r.all() {
		if e.typ == typ {
			out = append(out, e.payload)
		}
	}
	return out
}

func (r *recorder) finished() []*protocol.ToolFinished {
	var out []*protocol.ToolFinished
	for _, p := range r.of(protocol.TypeToolFinished) {
		out = append(out, p.(*protocol.ToolFinished))
	}
	return out
}

// textTurn is a text prompt turn.
func textTurn(text string) agent.Turn {
	return turnOf(protocol.InputText, text, nil)
}

func turnOf(inputType, text string, o *protocol.ConfigOverrides) agent.Turn {
	req := &protocol.PromptRequest{PromptText: fileref.Escape(text), InputType: inputType, ConfigOverrides: o}
	return agent.Turn{ID: protocol.NewID(), Request: req, Prompt: fileref.Parse(req.PromptText, nil)}
}

// lastToolResults returns the tool_result blocks of the last user message
// of req.
func lastToolResults(req llm.Request) []llm.Block {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != llm.RoleUser {
			continue
		}
		var out []llm.Block
		for _, b := range m.Content {
			if b.Type == llm.BlockToolResult {
				out = append(out, b)
			}
		}
		return out
	}
	return nil
}

func resultText(b llm.Block) string {
	var s string
	for _, c := range b.Content {
		s += c.Text
	}
	return s
}
