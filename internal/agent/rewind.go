package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"

	"github.com/ferry-dev/ferry/internal/llm"
)

// ErrNoTurnMark is returned by RewindTo when the conversation no longer
// holds the start of the turn: it was compacted or cleared since, the turn
// began before this Agent (a restart), or it never ran here.
var ErrNoTurnMark = errors.New("agent: the conversation no longer holds the start of that turn")

// TurnMark is where a turn's prompt went into the history: the message
// count, and the block count of the last message (a prompt after a
// cancelled turn merges into the user message before it). Snapshots carry
// them, so a conversation restored after a restart can still be rewound.
type TurnMark struct {
	ID     string `json:"id"`
	Msgs   int    `json:"msgs"`
	Blocks int    `json:"blocks"`
}

// markTurn records where turn id begins; called before its prompt is pushed.
func (a *Agent) markTurn(id string) {
	if id == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	m := TurnMark{ID: id, Msgs: len(a.history)}
	if m.Msgs > 0 {
		m.Blocks = len(a.history[m.Msgs-1].Content)
	}
	a.marks = append(a.marks, m)
}

// RewindTo takes the conversation back to just before turn id: that turn's
// prompt and everything after it are forgotten, as if they never ran, and
// what was read is forgotten too (the agent reads files again, which an
// undo of its edits may have changed). It fails with ErrBusy while a turn
// runs and with ErrNoTurnMark when the turn's start is no longer known.
//
// A restored conversation keeps the marks its snapshot carried (see
// keepMarks), so a rewind works after a restart too.
func (a *Agent) RewindTo(id string) error {
	if !a.begin() {
		return ErrBusy
	}
	defer a.end()
	a.mu.Lock()
	i := slices.IndexFunc(a.marks, func(m TurnMark) bool { return m.ID == id })
	if i < 0 || a.marks[i].Msgs > len(a.history) {
		a.mu.Unlock()
		return ErrNoTurnMark
	}
	m := a.marks[i]
	h := slices.Clone(a.history[:m.Msgs])
	if m.Msgs > 0 {
		last := h[m.Msgs-1]
		last.Content = slices.Clone(last.Content[:min(m.Blocks, len(last.Content))])
		h[m.Msgs-1] = last
	}
	a.history = h
	a.marks = a.marks[:i]
	a.mu.Unlock()
	a.env.State.Forget()
	a.checkpoint() // a restart must not bring the rewound turns back
	return nil
}

// keepMarks returns the marks of saved that still hold in repaired (the
// history Restore made of saved): a mark is kept when every message up to
// it is unchanged, so it points at the same place.
func keepMarks(marks []TurnMark, saved, repaired []llm.Message) []TurnMark {
	same := 0
	for same < len(saved) && same < len(repaired) {
		a, errA := json.Marshal(saved[same])
		b, errB := json.Marshal(repaired[same])
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			break
		}
		same++
	}
	var kept []TurnMark
	for _, m := range marks {
		if m.ID != "" && m.Msgs >= 0 && m.Msgs <= same && (m.Msgs == 0 || m.Blocks <= len(repaired[m.Msgs-1].Content)) {
			kept = append(kept, m)
		}
	}
	return kept
}

// Marks returns where each turn the conversation still holds began.
func (a *Agent) Marks() []TurnMark {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.marks)
}
