package agent

import (
	"errors"
	"slices"
)

// ErrNoTurnMark is returned by RewindTo when the conversation no longer
// holds the start of the turn: it was compacted or cleared since, the turn
// began before this Agent (a restart), or it never ran here.
var ErrNoTurnMark = errors.New("agent: the conversation no longer holds the start of that turn")

// turnMark is where a turn's prompt went into the history: the message
// count, and the block count of the last message (a prompt after a
// cancelled turn merges into the user message before it).
type turnMark struct {
	id     string
	msgs   int
	blocks int
}

// markTurn records where turn id begins; called before its prompt is pushed.
func (a *Agent) markTurn(id string) {
	if id == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	m := turnMark{id: id, msgs: len(a.history)}
	if m.msgs > 0 {
		m.blocks = len(a.history[m.msgs-1].Content)
	}
	a.marks = append(a.marks, m)
}

// RewindTo takes the conversation back to just before turn id: that turn's
// prompt and everything after it are forgotten, as if they never ran, and
// what was read is forgotten too (the agent reads files again, which an
// undo of its edits may have changed). It fails with ErrBusy while a turn
// runs and with ErrNoTurnMark when the turn's start is no longer known.
func (a *Agent) RewindTo(id string) error {
	if !a.begin() {
		return ErrBusy
	}
	defer a.end()
	a.mu.Lock()
	i := slices.IndexFunc(a.marks, func(m turnMark) bool { return m.id == id })
	if i < 0 || a.marks[i].msgs > len(a.history) {
		a.mu.Unlock()
		return ErrNoTurnMark
	}
	m := a.marks[i]
	h := slices.Clone(a.history[:m.msgs])
	if m.msgs > 0 {
		last := h[m.msgs-1]
		last.Content = slices.Clone(last.Content[:min(m.blocks, len(last.Content))])
		h[m.msgs-1] = last
	}
	a.history = h
	a.marks = a.marks[:i]
	a.mu.Unlock()
	a.env.State.Forget()
	a.checkpoint() // a restart must not bring the rewound turns back
	return nil
}
