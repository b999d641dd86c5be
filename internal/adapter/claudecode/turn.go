package claudecode

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/internal/runecut"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/artifact"
	"github.com/ferry-dev/ferry/protocol"
)

// Bounds of what one turn sends.
const (
	// maxDelta bounds one agent.text.delta: a huge text block (a 64 MiB
	// line) goes out in pieces, each well inside a protocol message.
	maxDelta = 256 << 10
	// maxResultText bounds Result.Text (the text of agent.text.done, for a
	// late viewer); the deltas carry all of it.
	maxResultText = 1 << 20
	// maxEventOutput bounds a tool result's output in agent.tool.finished.
	maxEventOutput = 64 << 10
	// cancelEmit is how long an event may take to go out while the turn is
	// being cancelled.
	cancelEmit = 100 * time.Millisecond
)

// Bits of turn.streamed: which blocks of a message came as deltas.
const (
	streamedText uint8 = 1 << iota
	streamedThinking
)

// turn turns one turn's stream lines into agent.* events. handle, finish,
// crashed and finishOpen run on one goroutine at a time (Run's, then the
// settling one's); send is safe from any.
type turn struct {
	s    *session
	p    *proc
	id   string // "" for a compaction: nothing is emitted
	ctx  context.Context
	emit adapter.Emit
	log  *slog.Logger

	wantStructured bool

	stopped    atomic.Bool // Run returned: emit no more
	cancelling atomic.Bool // the turn is being interrupted

	text       strings.Builder
	cut        bool
	streamed   map[string]uint8
	curMsg     string
	open       map[string]string // tool_use id → tool name, until its result
	openOrder  []string
	model      string
	result     *resultLine
	compact    *compactMetadata
	compactErr string

	parents   map[string]string // tool_use id → the Task call of the subagent that made it
	paths     map[string]string // tool_use id → the file a recorded call names (artifacts on)
	artifacts []artifact.File   // the files handed over, for the result
}

func newTurn(s *session, id string, ctx context.Context, emit adapter.Emit, wantStructured bool) *turn {
	if id == "" {
		emit = nil
	}
	return &turn{s: s, id: id, ctx: ctx, emit: emit, log: s.log.With("turn", id), wantStructured: wantStructured,
		streamed: map[string]uint8{}, open: map[string]string{}, parents: map[string]string{}, paths: map[string]string{}}
}

// send emits one event. While the turn is being cancelled what the CLI
// reports still goes out, briefly; after Run returned nothing does.
func (t *turn) send(typ string, payload any) {
	if t.emit == nil || t.stopped.Load() {
		return
	}
	ctx, cancel := t.sendCtx()
	defer cancel()
	if err := t.emit(ctx, typ, payload); err != nil {
		t.log.Debug("event not sent", "type", typ, "err", err)
	}
}

// sendCtx is the context an event goes out under: the turn's, or briefly
// past its cancel.
func (t *turn) sendCtx() (context.Context, context.CancelFunc) {
	if t.ctx.Err() != nil {
		return context.WithTimeout(context.WithoutCancel(t.ctx), cancelEmit)
	}
	return t.ctx, func() {}
}

// handle takes one line; true when it is the turn's result.
func (t *turn) handle(l *line) bool {
	switch {
	case l.System != nil:
		t.system(l.System)
	case l.Event != nil:
		t.streamEvent(l.Event)
	case l.Chat != nil:
		t.chat(l.Type, l.Chat)
	case l.Request != nil:
		t.control(l.Request)
	case l.Result != nil:
		t.result = l.Result
		t.s.noteClaudeID(l.Result.SessionID)
		return true
	}
	return false
}

func (t *turn) system(l *systemLine) {
	t.s.noteClaudeID(l.SessionID)
	switch l.Subtype {
	case "init":
		if l.Model != "" {
			t.model = l.Model
		}
		if l.SlashCommands != nil && t.s.onCommands != nil {
			cmds := make([]protocol.AgentCommand, len(l.SlashCommands))
			for i, c := range l.SlashCommands {
				cmds[i] = protocol.AgentCommand{Name: c}
			}
			t.s.onCommands(cmds) // the UI accepts and completes them
		}
	case "session_title_changed":
		if l.Title != "" && t.s.onTitle != nil {
			t.s.onTitle(l.Title) // the master keeps a person's title
		}
	case "status":
		if l.CompactResult == "failed" {
			t.compactErr = l.CompactError
			if t.compactErr == "" {
				t.compactErr = "compaction failed"
			}
		}
	case "compact_boundary":
		if l.CompactMetadata != nil {
			t.compact = l.CompactMetadata
			// Claude Code compacted by itself (or for a /compact prompt).
			t.send(protocol.TypeCompactionDone, &protocol.CompactionDone{
				TokensBefore: max(l.CompactMetadata.PreTokens, 0), TokensAfter: max(l.CompactMetadata.PostTokens, 0)})
		}
	}
}

func isSub(parent *string) bool { return parent != nil && *parent != "" }

// streamEvent takes a partial-message event: the text and thinking deltas
// of the main conversation (a subagent's text is its own business).
func (t *turn) streamEvent(e *streamLine) {
	if isSub(e.ParentToolUseID) {
		return
	}
	switch e.Event.Type {
	case "message_start":
		if m := e.Event.Message; m != nil {
			t.curMsg = m.ID
			if m.Model != "" {
				t.model = m.Model
			}
		}
	case "content_block_delta":
		d := e.Event.Delta
		if d == nil {
			return
		}
		switch d.Type {
		case "text_delta":
			t.streamed[t.curMsg] |= streamedText
			t.textDelta(d.Text, "text")
		case "thinking_delta":
			t.streamed[t.curMsg] |= streamedThinking
			t.textDelta(d.Thinking, "thinking")
		}
	}
}

// chat takes a whole message: its tool calls (assistant) and tool results
// (user); text and thinking only when they did not stream as deltas. A
// subagent's calls go out too, naming its Task call (parent_tool_use_id);
// its text does not.
func (t *turn) chat(typ string, c *chatLine) {
	t.s.noteClaudeID(c.SessionID)
	sub := isSub(c.ParentToolUseID)
	parent := ""
	if sub {
		parent = runecut.Ellipsis(*c.ParentToolUseID, 256)
	}
	if typ == typeAssistant {
		if c.isError() {
			// The provider's error text stays in the log; the result line
			// that follows ends the turn with a coded agent.error.
			var text strings.Builder
			for _, b := range c.Message.Content {
				text.WriteString(b.Text)
			}
			t.log.Warn("Claude Code reports an error", "error", runecut.Ellipsis(string(c.Error), 200), "text", runecut.Ellipsis(text.String(), 2000))
			return
		}
		if m := c.Message.Model; m != "" && m != "<synthetic>" && !sub {
			t.model = m
		}
		bits := t.streamed[c.Message.ID]
		for i := range c.Message.Content {
			b := &c.Message.Content[i]
			switch b.Type {
			case "text":
				if !sub && bits&streamedText == 0 {
					t.textDelta(b.Text, "text")
				}
			case "thinking":
				if !sub && bits&streamedThinking == 0 {
					t.textDelta(b.Thinking, "thinking")
				}
			case "tool_use":
				t.toolStarted(b, parent)
			}
		}
		return
	}
	var results []*contentBlock
	for i := range c.Message.Content {
		if c.Message.Content[i].Type == "tool_result" {
			results = append(results, &c.Message.Content[i])
		}
	}
	for _, b := range results {
		var tur *toolUseResult
		if len(results) == 1 {
			tur = c.ToolUseResult // it belongs to the line's one result
		}
		t.toolFinished(b, tur)
	}
}

// textDelta emits text in pieces of at most maxDelta bytes (cut on rune
// boundaries) and keeps the answer's text for the result.
func (t *turn) textDelta(s, channel string) {
	if s == "" || t.id == "" {
		return
	}
	if channel == "text" && !t.cut {
		if t.text.Len()+len(s) > maxResultText {
			t.text.WriteString(runecut.Ellipsis(s, maxResultText-t.text.Len()))
			t.cut = true
		} else {
			t.text.WriteString(s)
		}
	}
	for s != "" {
		n := len(s)
		if n > maxDelta {
			n = maxDelta
			for n > 0 && !utf8.RuneStart(s[n]) {
				n--
			}
			if n == 0 {
				n = maxDelta
			}
		}
		t.send(protocol.TypeTextDelta, &protocol.TextDelta{TurnID: t.id, Delta: s[:n], Channel: channel})
		s = s[n:]
	}
}

func (t *turn) toolStarted(b *contentBlock, parent string) {
	if b.ID == "" || b.Name == "" {
		return
	}
	if _, dup := t.open[b.ID]; !dup {
		t.openOrder = append(t.openOrder, b.ID)
	}
	t.open[b.ID] = b.Name
	if parent != "" {
		t.parents[b.ID] = parent
	}
	t.notePath(b)
	t.send(protocol.TypeToolStarted, &protocol.ToolStarted{TurnID: t.id, ToolUseID: runecut.Ellipsis(b.ID, 256), ToolName: runecut.Ellipsis(b.Name, 256),
		Input: eventInput(b.Input), ParentToolUseID: parent})
}

func (t *turn) toolFinished(b *contentBlock, tur *toolUseResult) {
	if b.ToolUseID == "" {
		return
	}
	name, ok := t.open[b.ToolUseID]
	if ok {
		delete(t.open, b.ToolUseID)
		for i, id := range t.openOrder {
			if id == b.ToolUseID {
				t.openOrder = append(t.openOrder[:i], t.openOrder[i+1:]...)
				break
			}
		}
	} else {
		name = "unknown"
	}
	status := protocol.ToolOK
	switch {
	case t.s.wasDenied(b.ToolUseID):
		status = protocol.ToolDenied
	case b.IsError && t.cancelling.Load():
		status = protocol.ToolCancelled
	case b.IsError:
		status = protocol.ToolError
	}
	fin := &protocol.ToolFinished{TurnID: t.id, ToolUseID: runecut.Ellipsis(b.ToolUseID, 256), ToolName: runecut.Ellipsis(name, 256), Status: status,
		Output: runecut.Ellipsis(string(b.Content.text), maxEventOutput), Images: b.Content.images, ParentToolUseID: t.parents[b.ToolUseID]}
	delete(t.parents, b.ToolUseID)
	if status == protocol.ToolOK && tur != nil {
		fin.Diff = t.s.resultDiff(tur)
	}
	t.s.recordChange(t.ctx, b.ToolUseID, name, status == protocol.ToolOK, tur)
	t.send(protocol.TypeToolFinished, fin)
	t.handOver(b.ToolUseID, status == protocol.ToolOK)
}

// finishOpen ends the tool calls that got no result.
func (t *turn) finishOpen(status, output string) {
	for _, id := range t.openOrder {
		t.send(protocol.TypeToolFinished, &protocol.ToolFinished{TurnID: t.id, ToolUseID: runecut.Ellipsis(id, 256), ToolName: runecut.Ellipsis(t.open[id], 256), Status: status, Output: output,
			ParentToolUseID: t.parents[id]})
	}
	t.openOrder = nil
	clear(t.open)
	clear(t.parents)
}

func (t *turn) control(r *controlRequestLine) {
	switch r.Request.Subtype {
	case subCanUseTool:
		t.canUseTool(r)
	case subHookCallback:
		t.s.answerHook(t.p, r)
	default:
		t.s.reply(t.p, errorResponse(r.RequestID, "ferry does not serve "+runecut.Ellipsis(r.Request.Subtype, 64)))
	}
}

// finish ends the turn on its result line: usage and cost, the stop
// reason, the structured answer, and an agent.error for a failed turn.
func (t *turn) finish() adapter.Result {
	r := t.result
	cost := t.p.addCost(r.TotalCostUSD)
	if t.id != "" {
		t.send(protocol.TypeUsage, &protocol.Usage{TurnID: t.id, Model: runecut.Ellipsis(t.model, 256),
			InputTokens: max(r.Usage.InputTokens, 0), OutputTokens: max(r.Usage.OutputTokens, 0),
			CacheReadTokens: max(r.Usage.CacheReadTokens, 0), CacheCreationTokens: max(r.Usage.CacheCreationTokens, 0),
			CostUSD: cost})
	}
	res := adapter.Result{Text: t.text.String(), Artifacts: t.artifacts}
	switch {
	case r.Subtype == resultMaxTurns:
		res.StopReason = protocol.StopMaxTurns
	case r.Subtype == resultSuccess && !r.IsError:
		res.StopReason = protocol.StopEndTurn
		if r.StopReason == "refusal" {
			res.StopReason = protocol.StopRefusal
		}
	default:
		res.StopReason = protocol.StopError
		t.reportError(r)
	}
	if t.wantStructured {
		res.Structured = structured(r.StructuredOutput)
	}
	t.finishOpen(protocol.ToolError, "the turn ended before the tool finished")
	t.stopped.Store(true)
	return res
}

// structured is the result's structured answer as valid JSON in UTF-8 (nil
// when there is none).
func structured(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" || !json.Valid(raw) {
		return nil
	}
	if utf8.Valid(raw) {
		return raw
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil
	}
	b, err := json.Marshal(v) // replaces what is not UTF-8
	if err != nil {
		return nil
	}
	return b
}

// reportError emits a coded agent.error for a failed result; Claude Code's
// own words stay in the log.
func (t *turn) reportError(r *resultLine) {
	status, _ := strconv.Atoi(strings.TrimSpace(string(r.APIErrorStatus)))
	t.log.Warn("Claude Code ended the turn with an error", "subtype", r.Subtype, "api_status", status,
		"terminal_reason", r.TerminalReason, "result", runecut.Ellipsis(string(r.Result), 2000))
	e := &protocol.AgentError{TurnID: t.id, Code: protocol.AgentCodeAgentError, Message: "Claude Code reported an error; the client's log has the details."}
	switch {
	case status == 429:
		e.Code, e.Message, e.Retryable = protocol.AgentCodeProviderRateLimited, "The model provider is limiting requests; try again later.", true
	case status == 401 || status == 403:
		e.Code, e.Message = protocol.AgentCodeProviderAuth, "The model provider refused Claude Code's credentials."
	case status >= 500:
		e.Code, e.Message, e.Retryable = protocol.AgentCodeProviderUnavailable, "The model provider failed; try again.", true
	case strings.HasPrefix(r.Subtype, "error_max_budget"):
		e.Code, e.Message = protocol.AgentCodeBudgetExceeded, "Claude Code stopped: its spending limit was reached."
	case strings.HasPrefix(r.Subtype, "error_max_structured_output"):
		e.Code, e.Message = protocol.AgentCodeStructuredOutputFailed, "Claude Code could not produce an answer that fits the requested schema."
	}
	t.send(protocol.TypeAgentError, e)
}

// crashed ends a turn whose process exited before its result.
func (t *turn) crashed() adapter.Result {
	t.log.Error("Claude Code exited during a turn", "err", t.p.waitErr, "stderr", t.p.stderrTail())
	t.send(protocol.TypeAgentError, &protocol.AgentError{TurnID: t.id, Code: protocol.AgentCodeAgentCrashed,
		Message: "Claude Code stopped unexpectedly; the client's log has the details. The next prompt starts it again.", Retryable: true})
	t.finishOpen(protocol.ToolError, "Claude Code stopped before the tool finished")
	t.stopped.Store(true)
	return adapter.Result{Text: t.text.String(), StopReason: protocol.StopError, Artifacts: t.artifacts}
}
