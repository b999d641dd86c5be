package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/transcript"
)

// saveTimeout bounds one step's save: a stuck disk must not hang a turn
// for ever (the step is then only in memory, and the log says so).
const saveTimeout = 30 * time.Second

// keeper is the agent's Config.OnStep for a session whose client keeps
// transcripts: each step is saved before the next one starts. A failed
// save is logged; the turn goes on (the conversation is intact in memory).
func keeper(cfg adapter.SessionConfig, log *slog.Logger) func(agent.Snapshot) {
	st := cfg.Transcripts
	if st == nil {
		return nil
	}
	return func(s agent.Snapshot) {
		ctx, cancel := context.WithTimeout(context.Background(), saveTimeout)
		defer cancel()
		err := st.Save(ctx, cfg.SessionID, transcript.Transcript{Messages: s.Messages, TurnOpen: s.TurnOpen, ReadState: s.ReadState, Marks: marshalMarks(s.Marks)})
		if err != nil {
			log.Error("conversation step not saved; a restart now would lose it", "session", cfg.SessionID, "err", err)
		}
	}
}

// restore continues the session's saved conversation, if it has one. A
// transcript that cannot be used is logged and the session starts fresh
// (its next step replaces it): a damaged file never stops a session.
func restore(ctx context.Context, ag *agent.Agent, cfg adapter.SessionConfig, log *slog.Logger) {
	st := cfg.Transcripts
	if st == nil {
		return
	}
	t, err := st.Load(ctx, cfg.SessionID)
	switch {
	case errors.Is(err, transcript.ErrNotFound):
		return
	case err != nil:
		log.Error("the saved conversation cannot be used; the session starts fresh", "session", cfg.SessionID, "err", err)
		return
	}
	var marks []agent.TurnMark
	if len(t.Marks) > 0 {
		if err := json.Unmarshal(t.Marks, &marks); err != nil {
			log.Warn("the saved turn starts were not restored; earlier turns cannot be rewound", "session", cfg.SessionID, "err", err)
			marks = nil
		}
	}
	reads, err := ag.Restore(agent.Snapshot{Messages: t.Messages, TurnOpen: t.TurnOpen, ReadState: t.ReadState, Marks: marks})
	if err != nil {
		log.Warn("the saved read state was not restored; files must be read again", "session", cfg.SessionID, "err", err)
	}
	log.Info("conversation restored", "session", cfg.SessionID, "messages", len(t.Messages), "cut_turn", t.TurnOpen, "reads", reads)
	if t.TurnOpen {
		// Keep the repaired history, so the cut turn is closed on disk too.
		rs, _ := ag.ReadStateDoc()
		if err := st.Save(ctx, cfg.SessionID, transcript.Transcript{Messages: ag.History(), ReadState: rs, Marks: marshalMarks(ag.Marks())}); err != nil {
			log.Error("repaired conversation not saved", "session", cfg.SessionID, "err", err)
		}
	}
}

// marshalMarks encodes the turn marks for the store (nil: none).
func marshalMarks(marks []agent.TurnMark) json.RawMessage {
	if len(marks) == 0 {
		return nil
	}
	b, err := json.Marshal(marks)
	if err != nil {
		return nil
	}
	return b
}
