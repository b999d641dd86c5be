// Package adapter is the seam between the client and the agents it runs:
// ferry's built-in agent, Claude Code, ACP agents, scripts, each in its own
// sub-package behind the same interface.
//
// The client (not the adapter) sends agent.turn.started and the one
// agent.text.done that ends every turn, so an adapter cannot break that
// rule; an adapter streams everything in between through Emit.
//
// Every adapter honours the prompt settings, input types, compaction ratio
// and mode config its capability declares (AdapterCapability.Settings and
// InputTypes) and refuses the others with code unsupported naming the
// field (CheckPrompt, RefusePrompt, CheckCompact, CheckModeConfig): none is
// silently ignored, on a slash command's path either (CheckSlash). Package
// adaptertest checks this, and the rest of the contract, for each adapter.
package adapter

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/ferry-dev/ferry/internal/artifact"
	"github.com/ferry-dev/ferry/internal/attachment"
	"github.com/ferry-dev/ferry/internal/transcript"
	"github.com/ferry-dev/ferry/protocol"
	"github.com/ferry-dev/ferry/protocol/fileref"
)

// ErrUnknownInteraction is returned by Answer for an interaction the
// session is not waiting on.
var ErrUnknownInteraction = errors.New("adapter: no such open interaction")

// ErrStopping is the cause (context.Cause) of a turn's context when the
// client cancels it because ferry is stopping, not because the user
// cancelled: an adapter may tell its agent so.
var ErrStopping = errors.New("adapter: ferry is stopping during this turn")

// Emit sends one agent.* event of the running turn (the client fills the
// envelope: session_id and message_id). It blocks while the client's outbox
// is full and fails only when ctx is done.
type Emit func(ctx context.Context, msgType string, payload any) error

// Adapter opens sessions of one kind of agent.
type Adapter interface {
	// Capability is what the adapter declares in session.capabilities.
	Capability() protocol.AdapterCapability
	// Open starts a session in workspace dir (an absolute path).
	Open(ctx context.Context, cfg SessionConfig) (Session, error)
}

// SessionConfig is what a session starts with.
type SessionConfig struct {
	SessionID string
	Workspace protocol.Workspace
	Mode      string
	// History records every file change the session's agent makes, for
	// undo and rewind (the client's per-session filehistory.Journal); nil
	// records none.
	History History
	// Transcripts is where an adapter that can may keep the session's
	// conversation, so that it goes on after a restart (the client's
	// transcripts.db; nil: not kept).
	Transcripts transcript.Store
	// Artifacts turns on handing over the files the agent writes: each is
	// sent as agent.artifact (EmitArtifact) and listed in Result.Artifacts.
	// On for sessions driven from the UI; ferry run sets it with
	// --artifacts. Adapters that cannot tell which files their agent wrote
	// ignore it.
	Artifacts bool
	// Commands, when set, is called with the agent's own slash commands
	// whenever the agent reports them (an ACP agent's
	// available_commands_update, Claude Code's init), in or out of a turn;
	// the client sends them as agent.commands. It must not block long.
	Commands func([]protocol.AgentCommand)
	// Instructions, when set, is called with the instruction files in the
	// agent's system prompt (AGENTS.md and the like) when the session
	// opens and whenever their set changes; the client sends them as
	// agent.instructions. Adapters that do not know their agent's files
	// never call it. It must not block long.
	Instructions func([]protocol.InstructionFile)
	// Capabilities, when set, is called with the session's own capability
	// once its agent has said what it really offers (during Open, before
	// Open returns, and again whenever that changes: an ACP agent's modes,
	// prompt capabilities and commands). It replaces the adapter's
	// declaration for this session, which must promise nothing an agent
	// may lack: the client sends it as agent.capabilities and holds the
	// session to it. Adapters whose sessions all offer the adapter's
	// declaration never call it. It must not block long.
	Capabilities func(protocol.AdapterCapability)
	// Title, when set, is called with a title the agent made for the
	// session (Claude Code's session_title_changed, an ACP agent's
	// session_info_update), as the agent said it; the client cleans it
	// and sends agent.title, which the master applies unless a person
	// titled the session.
	Title func(string)
}

// History records a session's file changes. Track and Written frame a
// write by ferry's own tools (tools.WriteHistory; the tool call id comes
// from the context); Record takes a change an agent made itself and
// reported (Claude Code's Write and Edit).
type History interface {
	Track(ctx context.Context, path string, old []byte, existed bool) error
	Written(ctx context.Context, path string, data []byte) error
	Record(ctx context.Context, toolUseID, tool, path string, before []byte, existed bool, after []byte) error
}

// ConversationRewinder is a Session whose agent's conversation ferry can
// take back to before a turn (capabilities' rewind_conversation).
type ConversationRewinder interface {
	// RewindConversation forgets turnID and every later turn; it fails
	// when the conversation no longer holds that turn's start (compacted,
	// cleared, or cut to fit the saved conversation's size bound).
	RewindConversation(turnID string) error
}

// Turn is one prompt to run.
type Turn struct {
	ID string
	// Request is the control.prompt.request, validated.
	Request *protocol.PromptRequest
	// Prompt is Request's prompt_text parsed against its file references.
	Prompt fileref.Prompt
	// Attachments are Request's context_files, fetched and checked by the
	// client, in their order. An adapter that declares the context_files
	// setting hands every one to its agent in the agent's own form.
	Attachments []attachment.File
}

// AttachmentChecker is a Session whose agent takes some attachments but
// not others (an ACP agent without the image prompt capability). The
// client calls it before the turn starts; a refusal is a coded error
// naming the context_files entry, and no turn runs.
type AttachmentChecker interface {
	CheckAttachments(files []attachment.File) *protocol.Error
}

// Result is how a turn ended.
type Result struct {
	// Text is the turn's whole final text.
	Text string
	// StopReason is end_turn, max_turns, error or refusal ("cancelled" is
	// set by the client when the turn's context was cancelled).
	StopReason string
	// Structured is the json_schema answer, if the prompt asked for one.
	Structured json.RawMessage
	// Artifacts are the files the turn handed to the user (each was also
	// sent as agent.artifact while the turn ran), whatever the stop reason;
	// adapters without artifacts leave it empty.
	Artifacts []artifact.File
}

// Session is one open agent session. Run is called for one turn at a time;
// the other methods may be called while it runs.
type Session interface {
	// Run runs one turn to its end. ctx is cancelled by
	// control.prompt.cancel: Run must then stop promptly (within a few
	// hundred milliseconds) and return.
	Run(ctx context.Context, turn Turn, emit Emit) (Result, error)
	// Answer delivers the user's answer to an interaction the running turn
	// asked (resp nil means it timed out unanswered: treat it as a denial;
	// a timeout that applied the question's default answers with that).
	Answer(interactionID string, resp *protocol.InteractionResponse) error
	// SetMode switches the mode from the next tool call on. A config the
	// adapter does not declare (mode_config) is refused (CheckModeConfig).
	SetMode(mode string, config json.RawMessage) error
	// Compact summarises the history; it returns the compaction event's payload.
	Compact(ctx context.Context, req *protocol.SessionCompact) (*protocol.CompactionDone, error)
	// Close ends the session and any process it runs.
	Close() error
}

// ModelLister is an Adapter whose sessions may run one of several models
// (capability models): it answers control.models.list. Errors are coded
// *protocol.Error values safe to show (a provider's failure says so).
type ModelLister interface {
	Models(ctx context.Context, refresh bool) (*protocol.Models, error)
}

// ModelSetter is a Session that takes a model and thinking effort for its
// next turns ("" : the default). An unknown model or an effort the model
// does not take is refused with a coded *protocol.Error naming the field,
// and nothing changes.
type ModelSetter interface {
	SetModel(ctx context.Context, model, effort string) error
}
