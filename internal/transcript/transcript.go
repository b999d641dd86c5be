// Package transcript keeps the conversation of ferry's own agent on disk, so
// that a session continues with its context after ferry restarts (a
// `kill -9` included).
//
// A Transcript is what the agent needs to go on: its llm.Message history
// (text, tool calls and results, compaction summaries, the artifacts on
// messages), whether a turn was running when it was saved, and the tools'
// read state as an opaque document (internal/tools re-validates it against
// the files when it is loaded).
//
// What it guarantees:
//
//   - Save is durable when it returns: the SQLite implementation runs in WAL
//     mode with synchronous=FULL, so a process killed right after a Save
//     (or a power loss) finds that Save on the next Load.
//   - Save writes only what changed since the session's last Save or Load
//     (one row per message), in one transaction: a transcript on disk is
//     always one that was saved whole, never a mix of two.
//   - Bounded: a session's saved messages stay under Options.MaxBytes. A
//     history over it is saved from the most recent whole turns that fit,
//     after a note saying that earlier context was not kept (the agent's
//     own compaction normally keeps it far below).
//   - Bad data never crashes a session: a row that does not decode, or one
//     over the size bound, makes Load fail with an error wrapping
//     ErrCorrupt that names the session and the row; the caller starts the
//     session fresh, and its next Save replaces the damaged transcript.
//   - Load of a session never saved returns ErrNotFound.
package transcript

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/ferry-dev/ferry/internal/llm"
)

// Transcript is one session's saved conversation.
type Transcript struct {
	// Messages is the conversation, oldest first.
	Messages []llm.Message
	// TurnOpen is set while a turn runs: a transcript loaded with it set
	// was cut by a restart in the middle of a turn.
	TurnOpen bool
	// ReadState is the tools' read-before-write record (opaque here).
	ReadState json.RawMessage
	// Marks are where each turn began in Messages (opaque here); a Save
	// that has to drop old turns to fit drops them too, since they would
	// point at the wrong messages.
	Marks json.RawMessage
}

// Store keeps transcripts by session id. Implementations are safe for
// concurrent use; calls for one session are expected one at a time.
type Store interface {
	// Load returns the session's transcript; ErrNotFound when it has none,
	// an error wrapping ErrCorrupt when what is stored cannot be used.
	Load(ctx context.Context, sessionID string) (Transcript, error)
	// Save replaces the session's transcript, durably.
	Save(ctx context.Context, sessionID string, t Transcript) error
	// Delete forgets the session's transcript (no error when it has none).
	Delete(ctx context.Context, sessionID string) error
	// Close releases the store.
	Close() error
}

// ErrNotFound is returned by Load for a session with no transcript.
var ErrNotFound = errors.New("transcript: no saved transcript for this session")

// ErrCorrupt is wrapped by Load's error when the stored transcript cannot
// be decoded or breaks the store's bounds.
var ErrCorrupt = errors.New("transcript: the saved transcript is damaged")

// droppedNote starts a transcript that was cut to fit the size bound.
const droppedNote = "[Earlier conversation of this session was not kept across the restart: it was over ferry's size limit for a saved transcript. Ask the user if you need it.]"
