package agent

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/tools"
)

// Snapshot is what the agent needs to go on with a conversation after a
// restart: the history, whether a turn was running, and the tools' read
// state (tools.ReadState.Export).
type Snapshot struct {
	Messages  []llm.Message
	TurnOpen  bool
	ReadState json.RawMessage
	// Marks are where each turn began in Messages (for a rewind).
	Marks []TurnMark
}

// Texts of what Restore adds to a history a restart cut.
const (
	// RestartedToolResult answers a tool call that never got its result.
	RestartedToolResult = "ferry restarted before this tool call finished; it may or may not have taken effect. Check before relying on it."
	// RestartedNote ends a turn that a restart cut.
	RestartedNote = "[ferry restarted during this turn: it ended here]"
)

// checkpoint hands the conversation to Config.OnStep, when set. It runs
// on the goroutine that changed the history, after the change, while the
// agent is busy (so calls never overlap).
func (a *Agent) checkpoint() {
	if a.onStep == nil {
		return
	}
	a.mu.Lock()
	s := Snapshot{Messages: slices.Clone(a.history), TurnOpen: a.turnOpen, Marks: slices.Clone(a.marks)}
	a.mu.Unlock()
	rs, err := a.env.State.Export()
	if err != nil {
		a.log.Warn("read state not saved", "err", err)
	}
	s.ReadState = rs
	a.onStep(s)
}

// ReadStateDoc is the tools' read state as Snapshot.ReadState holds it.
func (a *Agent) ReadStateDoc() (json.RawMessage, error) {
	doc, err := a.env.State.Export()
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return doc, nil
}

// setTurnOpen sets the turn-open flag and returns the history's length.
func (a *Agent) setTurnOpen(open bool) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.turnOpen = open
	return len(a.history)
}

// markStopped rewrites what a cancel wrote into the history from message
// from on, when the cancel came from ferry stopping (ErrStopping, Config.StopCause)
// rather than from the user: the model must not believe the user stopped
// it. Cut text and cancelled calls then say that ferry restarted.
func (a *Agent) markStopped(from int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := from; i < len(a.history); i++ {
		m := a.history[i]
		m.Content = slices.Clone(m.Content)
		for j, b := range m.Content {
			switch {
			case b.Type == llm.BlockToolResult && len(b.Content) == 1 && b.Content[0].Text == cancelledText:
				b.Content = []llm.Block{{Type: llm.BlockText, Text: RestartedToolResult}}
			case b.Type == llm.BlockText && m.Role == llm.RoleAssistant && strings.HasSuffix(b.Text, cancelledNote):
				b.Text = strings.TrimSuffix(b.Text, cancelledNote) + RestartedNote
			}
			m.Content[j] = b
		}
		a.history[i] = m
	}
}

// Restore replaces the conversation with s (an agent that was just made,
// before its first prompt). The history is made one the providers accept:
// every tool call is answered (RestartedToolResult, as an error, for
// those a restart cut), tool results that answer no call are dropped, and
// roles alternate; a turn that was open ends with RestartedNote. The read
// state is re-validated against the files (tools.ReadState.Import): only
// reads of unchanged files are kept. It returns how many were kept.
func (a *Agent) Restore(s Snapshot) (reads int, err error) {
	if !a.begin() {
		return 0, ErrBusy
	}
	defer a.end()
	h := repairHistory(s.Messages, s.TurnOpen)
	if len(s.ReadState) > 0 {
		if reads, err = a.env.State.Import(a.fs, s.ReadState); err != nil {
			err = fmt.Errorf("agent: restore read state: %w", err)
		}
	}
	a.mu.Lock()
	a.history = h
	a.marks = keepMarks(s.Marks, s.Messages, h)
	a.mu.Unlock()
	a.env.Todos.Set(lastTodos(h))
	return reads, err
}

// lastTodos is the todo list the history's last successful TodoWrite saved
// (nil when none): the list survives a restart without a field of its own
// in the snapshot.
func lastTodos(h []llm.Message) []tools.Todo {
	ok := map[string]bool{} // tool_use_id → its result was not an error
	for _, m := range h {
		for _, b := range m.Content {
			if b.Type == llm.BlockToolResult {
				ok[b.ToolUseID] = !b.IsError
			}
		}
	}
	for i := len(h) - 1; i >= 0; i-- {
		for j := len(h[i].Content) - 1; j >= 0; j-- {
			b := h[i].Content[j]
			if b.Type != llm.BlockToolUse || b.ToolName != "TodoWrite" || !ok[b.ToolUseID] {
				continue
			}
			if todos, err := tools.ParseTodos(b.Input); err == nil {
				return todos
			}
		}
	}
	return nil
}

// repairHistory returns h made valid for a provider (see Restore).
func repairHistory(h []llm.Message, cut bool) []llm.Message {
	var out []llm.Message
	for _, m := range h {
		if m.Role != llm.RoleUser && m.Role != llm.RoleAssistant {
			continue
		}
		out = appendMessage(out, m)
	}
	if len(out) > 0 && out[0].Role == llm.RoleAssistant {
		out = slices.Insert(out, 0, userText("(continued)"))
	}
	var fixed []llm.Message
	for i := 0; i < len(out); i++ {
		m := out[i]
		if m.Role == llm.RoleUser {
			// Results must answer a call of the assistant message before.
			var calls []llm.Block
			if n := len(fixed); n > 0 {
				calls = toolUses(fixed[n-1])
			}
			m.Content = slices.DeleteFunc(slices.Clone(m.Content), func(b llm.Block) bool {
				return b.Type == llm.BlockToolResult && !slices.ContainsFunc(calls, func(u llm.Block) bool { return u.ToolUseID == b.ToolUseID })
			})
			fixed = appendMessage(fixed, m)
			continue
		}
		fixed = appendMessage(fixed, m)
		uses := toolUses(m)
		if len(uses) == 0 {
			continue
		}
		var next llm.Message
		if i+1 < len(out) && out[i+1].Role == llm.RoleUser {
			next = out[i+1]
			i++
		}
		next.Role = llm.RoleUser
		next.Content = slices.DeleteFunc(slices.Clone(next.Content), func(b llm.Block) bool {
			return b.Type == llm.BlockToolResult && !slices.ContainsFunc(uses, func(u llm.Block) bool { return u.ToolUseID == b.ToolUseID })
		})
		for _, u := range uses {
			answered := slices.ContainsFunc(next.Content, func(b llm.Block) bool {
				return b.Type == llm.BlockToolResult && b.ToolUseID == u.ToolUseID
			})
			if !answered {
				next.Content = append(next.Content, errorResult(u.ToolUseID, RestartedToolResult))
			}
		}
		next.Content = toolResultsFirst(next.Content)
		fixed = append(fixed, next)
	}
	if cut && len(fixed) > 0 && fixed[len(fixed)-1].Role == llm.RoleUser {
		fixed = append(fixed, llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockText, Text: RestartedNote}}})
	}
	return fixed
}
