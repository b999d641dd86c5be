package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/ferry-dev/ferry/internal/artifact"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/protocol"
)

// Stop reasons of Result (those of agent.text.done).
const (
	StopEndTurn   = protocol.StopEndTurn
	StopMaxTurns  = protocol.StopMaxTurns
	StopError     = protocol.StopError
	StopRefusal   = protocol.StopRefusal
	StopCancelled = protocol.StopCancelled
)

// Result is how one prompt ended.
type Result struct {
	// Text is all the text the turn streamed (what agent.text.done carries).
	Text string
	// Final is the text of the last model answer: the prompt's result.
	Final string
	// StopReason is end_turn, max_turns, error, refusal or cancelled.
	StopReason string
	// Structured is the json_schema answer, validated.
	Structured json.RawMessage
	// Usage is what this prompt's model calls consumed.
	Usage llm.Usage
	// CostUSD is their cost when HasCost.
	CostUSD float64
	HasCost bool
	// NumTurns counts this prompt's model calls.
	NumTurns int
	// Artifacts are the files this prompt's tool calls handed to the user,
	// in the order they were registered, on every exit path: a failed or
	// cancelled prompt's files are on disk too, and the user may want the
	// partial result (Config.Artifacts; empty when off).
	Artifacts []artifact.File
}

// turnRun is the state of one running prompt.
type turnRun struct {
	a        *Agent
	id       string
	emit     Emit
	rules    permission.Rules // the session's rules plus this prompt's overrides
	maxTurns int
	schema   *outputSchema
	col      *artifact.Collector // this prompt's artifacts
	// tools and specs are what the model may call in this prompt: the
	// agent's own, plus the tools of the editor's MCP servers (editor.go).
	tools  map[string]tools.Tool
	specs  []llm.ToolSpec
	model  string // the model and effort the turn started with
	effort string
	instr  string // the project instructions the turn started with

	// parent is the prompt whose Task call runs this sub-agent (task.go).
	parent *turnRun

	text    strings.Builder // everything streamed
	acct    sync.Mutex      // usage and cost: sub-agents add to them side by side
	usage   llm.Usage
	cost    float64
	hasCost bool
	calls   int
}

// Run runs one prompt (see the package doc). It returns a *Error for a
// coded failure (an agent.error event was emitted for it), and ctx's error
// when cancelled; Result says how far the turn got either way.
func (a *Agent) Run(ctx context.Context, turn Turn, emit Emit) (Result, error) {
	return a.runWith(ctx, turn, emit, artifact.NewCollector())
}

// runWith is Run with the prompt's collector: every tool call of the
// prompt sees it in its context (a collector a caller's context carried is
// replaced: each run keeps its own), and the result takes its artifacts on
// every path out.
func (a *Agent) runWith(ctx context.Context, turn Turn, emit Emit, col *artifact.Collector) (Result, error) {
	if !a.begin() {
		return Result{StopReason: StopError, Artifacts: col.Artifacts()}, ErrBusy
	}
	defer a.end()
	from := a.setTurnOpen(true)
	defer func() {
		if a.stopping(ctx) {
			a.markStopped(from)
		}
		a.setTurnOpen(false)
		a.checkpoint()
	}()
	ctx = artifact.WithCollector(ctx, col)
	t := &turnRun{a: a, id: turn.ID, emit: serialEmit(emit), maxTurns: a.maxTurns, col: col, tools: a.tools, specs: a.specs}
	t.model, t.effort = a.Model()
	res, err := t.run(ctx, turn)
	res.Text = t.text.String()
	res.Usage, res.CostUSD, res.HasCost, res.NumTurns = t.usage, t.cost, t.hasCost, t.calls
	res.Artifacts = col.Artifacts()
	if err != nil && ctx.Err() != nil {
		res.StopReason = StopCancelled
		return res, fmt.Errorf("agent: turn cancelled: %w", ctx.Err())
	}
	if err != nil {
		res.StopReason = StopError
		var ae *Error
		if !errors.As(err, &ae) {
			ae = &Error{Code: CodeInternal, Message: "the agent failed; the log has the details", Err: err}
			err = ae
		}
		if ae.Code == CodeInternal {
			a.log.Error("agent turn failed", "turn", t.id, "err", err)
		}
		t.emitError(ctx, ae)
	}
	return res, err
}

func (t *turnRun) run(ctx context.Context, turn Turn) (Result, error) {
	req := turn.Request
	if req == nil {
		req = &protocol.PromptRequest{PromptText: turn.Prompt.Literal()}
	}
	inputType := req.InputType
	if inputType == "" {
		inputType = protocol.InputText
	}
	// The instructions and commands as they are now: a changed AGENTS.md
	// is in this turn's system prompt.
	t.a.Refresh()
	// Kept for the whole turn: a refresh beside it (the adapter's watch)
	// changes the next turn's prompt, not this one's between two calls.
	t.instr = t.a.instructionText()
	text, files := turn.Prompt.FileList()
	if inputType == protocol.InputSlashCommand {
		if c, args, ok := t.a.custom(text); ok {
			// A custom command is a prompt: its file's text, with the
			// arguments, runs as if the user had typed it.
			expanded, err := c.expand(args)
			if err != nil {
				return Result{}, err
			}
			inputType, text = protocol.InputText, expanded
		}
	}
	if inputType == protocol.InputSlashCommand {
		// ferry's commands run here, without model turns, tools or files:
		// a setting they cannot use is refused, never dropped.
		if s := req.SettingOutside(); s != "" || len(turn.Attachments) > 0 {
			if s == "" {
				s = protocol.SettingContextFiles
			}
			return Result{}, &Error{Code: protocol.CodeUnsupported, Message: protocol.SettingField(s) +
				": ferry's slash commands (" + slashNames + ") take no model turns, tools or attached files; send the command without it, or the request as a text prompt"}
		}
		return t.slash(ctx, turn.Prompt.Literal())
	}
	if err := t.applyOverrides(req.ConfigOverrides); err != nil {
		return Result{}, err
	}
	if err := t.offerMCP(ctx); err != nil {
		return Result{}, err
	}
	attached, err := attachmentBlocks(ctx, turn.Attachments, t.a.env.Limits.MaxImageDimension)
	if err != nil {
		return Result{}, err
	}
	t.a.markTurn(turn.ID)
	content := append([]llm.Block{{Type: llm.BlockText, Text: t.userText(inputType, text, files)}}, attached...)
	t.a.push(llm.Message{Role: llm.RoleUser, Content: content})
	return t.loop(ctx)
}

// applyOverrides sets up the prompt's config_overrides: its max_turns,
// its allowed and denied rules (this prompt only), its json_schema.
func (t *turnRun) applyOverrides(o *protocol.ConfigOverrides) error {
	t.rules = t.a.Rules()
	if o == nil {
		return nil
	}
	if o.MaxTurns != nil && *o.MaxTurns > 0 {
		t.maxTurns = *o.MaxTurns
	}
	for i, s := range o.DeniedTools {
		r, err := permission.Parse(s)
		if err != nil {
			return &Error{Code: CodeBadRequest, Message: fmt.Sprintf("config_overrides.denied_tools[%d]: %s", i, safeRuleError(err)), Err: err}
		}
		t.rules.Deny = append(t.rules.Deny, r)
	}
	for i, s := range o.AllowedTools {
		r, err := permission.Parse(s)
		if err != nil {
			return &Error{Code: CodeBadRequest, Message: fmt.Sprintf("config_overrides.allowed_tools[%d]: %s", i, safeRuleError(err)), Err: err}
		}
		t.rules.Allow = append(t.rules.Allow, r)
	}
	if len(o.JSONSchema) > 0 {
		s, err := compileSchema(o.JSONSchema)
		if err != nil {
			return err
		}
		t.schema = s
	}
	return nil
}

// safeRuleError is a rule's parse error as the user may see it: the
// permission package's *Error names the rule and what is wrong with it.
func safeRuleError(err error) string {
	var pe *permission.Error
	if errors.As(err, &pe) {
		return pe.Error()
	}
	return "not a valid permission rule"
}

// loop runs model calls and tool calls until the turn ends.
func (t *turnRun) loop(ctx context.Context) (Result, error) {
	retried := false
	for {
		resp, err := t.call(ctx)
		if err != nil {
			return Result{}, err
		}
		msg := resp.Message
		msg.Role = llm.RoleAssistant
		msg.Artifacts = nil // the model does not hand out files; tools do
		if len(msg.Content) == 0 {
			// Both APIs refuse an empty assistant message; keep the
			// history valid with a visible placeholder.
			msg.Content = []llm.Block{{Type: llm.BlockText, Text: "(no answer)"}}
		}
		at := t.a.pushAt(msg)
		uses := toolUses(msg)
		if len(uses) == 0 {
			final := messageText(msg)
			if resp.StopReason == llm.StopRefusal {
				return Result{Final: final, StopReason: StopRefusal}, nil
			}
			if t.schema == nil {
				return Result{Final: final, StopReason: StopEndTurn}, nil
			}
			doc, verr := t.schema.check(final)
			if verr == nil {
				return Result{Final: final, StopReason: StopEndTurn, Structured: doc}, nil
			}
			if retried {
				return Result{Final: final}, &Error{Code: CodeStructuredOutput,
					Message: "the final answer does not match the json_schema after one retry: " + verr.Error(), Err: verr}
			}
			retried = true
			t.a.push(userText(fmt.Sprintf("Your answer is not valid against the required JSON Schema: %s\n\nReply again with only the corrected JSON value: no other text, no code fence.", verr)))
			continue
		}
		if t.calls >= t.maxTurns {
			// The calls are not run: their results say why, so the history
			// stays valid and a continuation can pick up from here.
			t.a.push(toolResults(uses, fmt.Sprintf("Not run: this prompt reached its limit of %d turns. The user may ask you to continue.", t.maxTurns)))
			return Result{Final: messageText(msg), StopReason: StopMaxTurns}, nil
		}
		// The files this call's tools register belong to its assistant
		// message: what the collector got from the mark on (spec §6).
		mark := t.col.Len()
		results, err := t.runTools(ctx, uses)
		// Attached before the results are pushed: the push keeps the step
		// (Config.OnStep) with its artifacts.
		t.a.attach(at, artifact.ToMessages(t.col.SliceFrom(mark)))
		t.a.push(llm.Message{Role: llm.RoleUser, Content: results})
		if err != nil {
			return Result{}, err
		}
		// A server that crashed during these calls is news now, not at
		// the next turn.
		t.reportMCP(ctx, nil)
	}
}

// call makes one model call, streaming its deltas, and reports usage.
func (t *turnRun) call(ctx context.Context) (*llm.Response, error) {
	req := llm.Request{System: t.a.systemPrompt(t.a.Mode(), t.instr), Messages: t.a.History(), Tools: t.specs, MaxTokens: t.a.maxTok,
		Model: t.model, Effort: t.effort}
	var partial strings.Builder
	resp, err := t.a.provider.Stream(ctx, req, func(ev llm.Event) error {
		switch ev.Type {
		case llm.EventTextDelta:
			if ev.Text == "" {
				return nil
			}
			t.text.WriteString(ev.Text)
			partial.WriteString(ev.Text)
			return t.emit(ctx, protocol.TypeTextDelta, &protocol.TextDelta{TurnID: t.id, Delta: ev.Text, Channel: "text"})
		case llm.EventThinkingDelta:
			if ev.Text == "" {
				return nil
			}
			return t.emit(ctx, protocol.TypeTextDelta, &protocol.TextDelta{TurnID: t.id, Delta: ev.Text, Channel: "thinking"})
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			t.keepPartial(partial.String())
			return nil, fmt.Errorf("agent: model call: %w", ctx.Err())
		}
		var le *llm.Error
		if errors.As(err, &le) {
			return nil, ProviderError(err)
		}
		return nil, fmt.Errorf("agent: model call: %w", err)
	}
	t.calls++
	if err := t.account(ctx, resp.Usage); err != nil {
		return nil, err
	}
	return resp, nil
}

// account adds one model call's usage to the session's and the prompt's
// and reports the prompt's total (agent.usage); a sub-agent's calls count
// in the prompt that called Task. The lock is held over the event, so
// totals reach the UI in the order they grew.
func (t *turnRun) account(ctx context.Context, use llm.Usage) error {
	if t.parent != nil {
		return t.parent.account(ctx, use)
	}
	t.acct.Lock()
	defer t.acct.Unlock()
	c, ok := t.a.addUsage(t.model, use)
	t.usage = t.usage.Add(use)
	if ok {
		t.cost += c
		t.hasCost = true
	}
	u := &protocol.Usage{TurnID: t.id, Model: t.model, InputTokens: t.usage.InputTokens, OutputTokens: t.usage.OutputTokens,
		CacheReadTokens: t.usage.CacheReadTokens, CacheCreationTokens: t.usage.CacheCreationTokens}
	if t.hasCost {
		u.CostUSD = t.cost
	}
	if err := t.emit(ctx, protocol.TypeUsage, u); err != nil {
		return fmt.Errorf("agent: emit usage: %w", err)
	}
	return nil
}

// serialEmit makes emit safe for the prompt's concurrent callers (the
// sub-agents of Task calls run side by side): one event at a time.
func serialEmit(emit Emit) Emit {
	var mu sync.Mutex
	return func(ctx context.Context, typ string, payload any) error {
		mu.Lock()
		defer mu.Unlock()
		return emit(ctx, typ, payload)
	}
}

// askModel is tools.Env.AskModel for the prompt's tool calls: one call to
// the prompt's model without tools or history (WebFetch's question about
// a page), its usage counted in the session and the prompt like a turn's.
func (t *turnRun) askModel(ctx context.Context, system, prompt string, maxTokens int) (string, error) {
	// No effort asked: the answer needs no extended thinking.
	req := llm.Request{System: system, MaxTokens: maxTokens, Model: t.model,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockText, Text: prompt}}}}}
	resp, err := t.a.provider.Stream(ctx, req, func(llm.Event) error { return nil })
	if err != nil {
		return "", fmt.Errorf("agent: model call of a tool: %w", err)
	}
	if err := t.account(ctx, resp.Usage); err != nil {
		return "", err
	}
	return messageText(resp.Message), nil
}

// cancelledNote ends the text of a model answer a cancel cut.
const cancelledNote = "[cancelled by the user]"

// keepPartial records the text a cancelled stream had already shown, so
// the history matches what the user saw.
func (t *turnRun) keepPartial(partial string) {
	text := cancelledNote
	if partial != "" {
		text = partial + "\n\n" + text
	}
	t.a.push(llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockText, Text: text}}})
}

// emitError sends a coded agent.error; a failure to send is only logged
// (the turn ends anyway).
func (t *turnRun) emitError(ctx context.Context, e *Error) {
	ev := &protocol.AgentError{TurnID: t.id, Code: e.Code, Message: e.Message, Retryable: e.Retryable}
	if err := t.emit(context.WithoutCancel(ctx), protocol.TypeAgentError, ev); err != nil {
		t.a.log.Warn("agent.error not sent", "turn", t.id, "err", err)
	}
}

func toolUses(m llm.Message) []llm.Block {
	var uses []llm.Block
	for _, b := range m.Content {
		if b.Type == llm.BlockToolUse {
			uses = append(uses, b)
		}
	}
	return uses
}

func messageText(m llm.Message) string {
	var b strings.Builder
	for _, bl := range m.Content {
		if bl.Type == llm.BlockText {
			b.WriteString(bl.Text)
		}
	}
	return b.String()
}

func userText(s string) llm.Message {
	return llm.Message{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockText, Text: s}}}
}

// toolResults answers every call in uses with the same error text.
func toolResults(uses []llm.Block, text string) llm.Message {
	m := llm.Message{Role: llm.RoleUser}
	for _, u := range uses {
		m.Content = append(m.Content, errorResult(u.ToolUseID, text))
	}
	return m
}

func errorResult(id, text string) llm.Block {
	return llm.Block{Type: llm.BlockToolResult, ToolUseID: id, IsError: true, Content: []llm.Block{{Type: llm.BlockText, Text: text}}}
}
