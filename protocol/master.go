package protocol

// Messages of the live system (§ "Sessions" in docs/protocol.md): what a UI
// asks the master (ui.*), what the master answers (master.*), and how the
// master opens a session on a client (control.session.open and its answer
// session.opened). Events the master persists carry seq and epoch in the
// envelope; a UI resumes a session with ui.session.subscribe from the last
// seq it saw.

// Workspace is one folder a client serves.
type Workspace struct {
	// ID names the workspace on its client; stable across reconnects.
	ID string `json:"id" jsonschema:"minLength=1,maxLength=128"`
	// Name is shown to people (the folder's base name by default); no control, format (Cf) or otherwise invisible character (CheckName).
	Name string `json:"name" jsonschema:"minLength=1,maxLength=256"`
	// Path is the absolute path on the client's machine.
	Path string `json:"path" jsonschema:"minLength=1,maxLength=4096"`
	// Git is set when the workspace is in a git repository: a session there may be isolated (ui.session.start's isolation).
	Git bool `json:"git,omitempty"`
	// Branch is the repository's current branch (the default base of an isolated session); absent on a detached HEAD.
	Branch string `json:"branch,omitempty" jsonschema:"maxLength=256"`
}

// MachineInfo names the machine a client runs on.
type MachineInfo struct {
	// ID is stable for the machine (kept in the client's state directory).
	ID string `json:"id" jsonschema:"minLength=1,maxLength=128"`
	// Name is shown to people (the host name by default); no control, format (Cf) or otherwise invisible character (CheckName).
	Name string `json:"name" jsonschema:"minLength=1,maxLength=256"`
}

// Machine is one client as the master shows it to a UI.
type Machine struct {
	// ID of the machine.
	ID string `json:"id" jsonschema:"minLength=1,maxLength=128"`
	// Name is shown to people.
	Name string `json:"name" jsonschema:"minLength=1,maxLength=256"`
	// Online is true while the client is connected.
	Online bool `json:"online"`
	// Workspaces the client serves.
	Workspaces []Workspace `json:"workspaces" jsonschema:"maxItems=1024"`
	// Adapters the client can run.
	Adapters []AdapterCapability `json:"adapters" jsonschema:"maxItems=64"`
	// FileSearch is true when the client answers control.file.search (the @ popup).
	FileSearch bool `json:"file_search"`
	// FileHistory is true when the client keeps its sessions' file history
	// (control.history.*: undo, rewind, the Changes view).
	FileHistory bool `json:"file_history,omitempty"`
}

// Session states.
const (
	SessionIdle    = "idle"
	SessionRunning = "running"
)

// SessionInfo describes one session.
type SessionInfo struct {
	// ID of the session.
	ID string `json:"id" jsonschema:"minLength=1,maxLength=128"`
	// MachineID of the client the session runs on.
	MachineID string `json:"machine_id" jsonschema:"minLength=1,maxLength=128"`
	// WorkspaceID on that client.
	WorkspaceID string `json:"workspace_id" jsonschema:"minLength=1,maxLength=128"`
	// Adapter running the session's agent.
	Adapter string `json:"adapter" jsonschema:"minLength=1,maxLength=128"`
	// Title is shown in session lists.
	Title string `json:"title,omitempty" jsonschema:"maxLength=1024"`
	// TitleSource says where the title came from: user (a person set it; no automatic title replaces it), prompt (the first line of the first prompt, set by the master when the session is first prompted) or agent (the session's agent made it). Absent: no title, or one from before sources were kept.
	TitleSource string `json:"title_source,omitempty" jsonschema:"enum=user,enum=prompt,enum=agent"`
	// Preview is the session's last message on one line (the agent's last answer, else the last prompt): Markdown marks dropped, whitespace collapsed, at most 140 characters with "…" where cut. Absent: nothing said yet.
	Preview string `json:"preview,omitempty" jsonschema:"maxLength=1024"`
	// Match says why the session matched, in an answer to ui.sessions.list with a query.
	Match *SessionMatch `json:"match,omitempty"`
	// Mode in force.
	Mode string `json:"mode" jsonschema:"enum=default,enum=plan,enum=review"`
	// State is idle or running (a turn is open).
	State string `json:"state" jsonschema:"enum=idle,enum=running"`
	// Waiting is how many interactions (agent.interaction.request) wait for
	// the user's answer: a session with one is "waiting for you", not just
	// running.
	Waiting int `json:"waiting,omitempty" jsonschema:"minimum=0"`
	// CreatedAt is RFC 3339.
	CreatedAt string `json:"created_at" jsonschema:"format=date-time"`
	// UpdatedAt is RFC 3339: the time of the last event (a session list may
	// say a time up to a second earlier while events stream).
	UpdatedAt string `json:"updated_at" jsonschema:"format=date-time"`
	// Epoch changes when the session's history is lost; seq numbers are only comparable within one epoch.
	Epoch string `json:"epoch" jsonschema:"minLength=1,maxLength=64"`
	// LastSeq is the seq of the session's newest event (0: none yet).
	LastSeq uint64 `json:"last_seq"`
	// Settings in force, as the client last reported them (absent: not yet known).
	Settings *Settings `json:"settings,omitempty"`
	// Archived is true when a person archived the session: it is listed only with archived set, and takes no prompt.
	Archived bool `json:"archived,omitempty"`
	// Worktree is set for an isolated session: its worktree as its client last reported it (absent until the client first did).
	Worktree *Worktree `json:"worktree,omitempty"`
	// Usage is the session's tokens and cost over its turns that ended (each turn's last agent.usage); absent before the first.
	Usage *UsageTotals `json:"usage,omitempty"`
}

// UsageTotals are a session's tokens and cost over its ended turns (the compare view of best-of-N).
type UsageTotals struct {
	// Turns counted (those that reported usage).
	Turns int `json:"turns" jsonschema:"minimum=0"`
	// InputTokens, OutputTokens, CacheReadTokens and CacheCreationTokens summed.
	InputTokens         int64 `json:"input_tokens" jsonschema:"minimum=0"`
	OutputTokens        int64 `json:"output_tokens" jsonschema:"minimum=0"`
	CacheReadTokens     int64 `json:"cache_read_tokens,omitempty" jsonschema:"minimum=0"`
	CacheCreationTokens int64 `json:"cache_creation_tokens,omitempty" jsonschema:"minimum=0"`
	// CostUSD summed (the turns whose agent reported a cost).
	CostUSD float64 `json:"cost_usd,omitempty" jsonschema:"minimum=0"`
}

// Fields of a session a search matches (SessionMatch.Field).
const (
	MatchTitle  = "title"
	MatchPrompt = "prompt"
	MatchAnswer = "answer"
)

// SessionMatch says why a session matched ui.sessions.list's query.
type SessionMatch struct {
	// Field is what matched: title, prompt (a prompt's text) or answer (an agent's final answer).
	Field string `json:"field" jsonschema:"enum=title,enum=prompt,enum=answer"`
	// Snippet is the matching text on one line around its first match, at most 140 characters with "…" where cut. Empty when the matching message is older than the session's snapshot keeps (its newest 100 turns).
	Snippet string `json:"snippet" jsonschema:"maxLength=1024"`
	// Ranges are where the query matches in Snippet, in UTF-16 code units (end exclusive), as match_ranges are.
	Ranges []MatchRange `json:"ranges,omitempty" jsonschema:"maxItems=32"`
}

// TurnSnapshot is one turn as a snapshot summarises it.
type TurnSnapshot struct {
	// TurnID names the turn.
	TurnID string `json:"turn_id" jsonschema:"minLength=1,maxLength=128"`
	// Prompt is the prompt_text that opened it.
	Prompt string `json:"prompt"`
	// Text is the agent's text so far (all of it once Done).
	Text string `json:"text"`
	// Done is true once agent.text.done arrived.
	Done bool `json:"done"`
	// Cancelled is true when the turn was cancelled.
	Cancelled bool `json:"cancelled,omitempty"`
	// StopReason from agent.text.done.
	StopReason string `json:"stop_reason,omitempty" jsonschema:"maxLength=64"`
}

// SessionSnapshot is the state of a session at one seq, sent instead of a
// replay when the events a UI missed are no longer kept.
type SessionSnapshot struct {
	// Session is the session's description.
	Session SessionInfo `json:"session"`
	// Turns are the session's turns, oldest first (the newest ones, up to a limit).
	Turns []TurnSnapshot `json:"turns" jsonschema:"maxItems=100000"`
	// OpenInteractions are the questions still waiting for an answer.
	OpenInteractions []InteractionRequest `json:"open_interactions,omitempty" jsonschema:"maxItems=1024"`
	// Artifacts are the files handed to the user so far.
	Artifacts []Artifact `json:"artifacts,omitempty" jsonschema:"maxItems=100000"`
	// Commands are the agent's own slash commands, as its last agent.commands said.
	Commands []AgentCommand `json:"commands,omitempty" jsonschema:"maxItems=256"`
	// Instructions are the instruction files in the agent's system prompt, as its last agent.instructions said.
	Instructions []InstructionFile `json:"instructions,omitempty" jsonschema:"maxItems=64"`
	// Capabilities are what the session's agent really offers, as its last agent.capabilities said; absent: the adapter's declaration in session.capabilities holds.
	Capabilities *AdapterCapability `json:"capabilities,omitempty"`
	// Isolation is what an isolated session was started with (ui.session.start's isolation); session.worktree tells the worktree once its client made it.
	Isolation *Isolation `json:"isolation,omitempty"`
}

// MachinesList is ui.machines.list: which machines may this UI use.
type MachinesList struct{}

// Machines is master.machines, the answer to ui.machines.list.
type Machines struct {
	// Machines the UI may use, online first.
	Machines []Machine `json:"machines" jsonschema:"maxItems=10000"`
}

// MachineStatus is master.machine.status, sent to every UI that may see the
// machine when its client
// connects, goes away or changes what it announces.
type MachineStatus struct {
	// Machine as it is now.
	Machine Machine `json:"machine"`
}

// SessionStart is ui.session.start: open a new session on a machine's
// workspace with an adapter. The answer is master.session.
type SessionStart struct {
	// MachineID of the client.
	MachineID string `json:"machine_id" jsonschema:"minLength=1,maxLength=128"`
	// WorkspaceID on that client.
	WorkspaceID string `json:"workspace_id" jsonschema:"minLength=1,maxLength=128"`
	// Adapter to run, one of the client's adapters.
	Adapter string `json:"adapter" jsonschema:"minLength=1,maxLength=128"`
	// Title for session lists, trimmed by the master; the same rules as ui.session.rename's title.
	Title string `json:"title,omitempty" jsonschema:"maxLength=1024"`
	// Mode to start in.
	Mode string `json:"mode,omitempty" jsonschema:"enum=default,enum=plan,enum=review,default=default"`
	// Isolation makes the session isolated: it runs in a git worktree of its own on a new branch (the workspace must be in a git repository: machine workspaces' git).
	Isolation *Isolation `json:"isolation,omitempty"`
}

func (p *SessionStart) validate() *Error {
	if _, e := CleanTitle(p.Title); e != nil {
		return e
	}
	return p.Isolation.validate("payload.isolation")
}

// SessionAnswer is master.session: the session a ui.session.start opened.
type SessionAnswer struct {
	// Session is the new session.
	Session SessionInfo `json:"session"`
}

// SessionsList is ui.sessions.list: the sessions this UI may see, newest first.
type SessionsList struct {
	// MachineID keeps the sessions of one machine only.
	MachineID string `json:"machine_id,omitempty" jsonschema:"maxLength=128"`
	// Limit is the most sessions wanted.
	Limit *int `json:"limit,omitempty" jsonschema:"minimum=1,maximum=1000,default=100"`
	// Query keeps the sessions whose title, prompts or final answers contain it (case-insensitive, literal).
	Query string `json:"query,omitempty" jsonschema:"maxLength=256"`
	// Archived lists the archived sessions instead of the others.
	Archived bool `json:"archived,omitempty"`
}

// Sessions is master.sessions, the answer to ui.sessions.list.
type Sessions struct {
	// Sessions, most recently updated first.
	Sessions []SessionInfo `json:"sessions" jsonschema:"maxItems=1000"`
}

// SessionSubscribe is ui.session.subscribe (session_id in the envelope):
// send me this session's events from after_seq on, then live. The master
// answers master.subscribed, then the missed events in seq order (when
// recovered), then every open interaction again, then live events.
type SessionSubscribe struct {
	// AfterSeq is the last seq the UI holds; 0 asks for the whole retained history.
	AfterSeq uint64 `json:"after_seq"`
	// Epoch the UI's seq belongs to; a different epoch is never recovered.
	Epoch string `json:"epoch,omitempty" jsonschema:"maxLength=64"`
}

// SessionUnsubscribe is ui.session.unsubscribe: stop sending this session's events.
type SessionUnsubscribe struct{}

// Subscribed is master.subscribed, the answer to ui.session.subscribe.
type Subscribed struct {
	// Recovered is true when every event after after_seq follows; false means
	// they are lost to this UI: Snapshot replaces them and live events follow.
	Recovered bool `json:"recovered"`
	// Epoch of the session's history.
	Epoch string `json:"epoch" jsonschema:"minLength=1,maxLength=64"`
	// FromSeq is the first seq that follows (after_seq+1 when recovered).
	FromSeq uint64 `json:"from_seq"`
	// LastSeq is the session's newest seq at subscription; replayed events end there and live ones go on from it.
	LastSeq uint64 `json:"last_seq"`
	// Reason says why not recovered: epoch (the history was lost) or retention (the events were dropped).
	Reason string `json:"reason,omitempty" jsonschema:"enum=epoch,enum=retention"`
	// Snapshot is the session's state at LastSeq when not recovered.
	Snapshot *SessionSnapshot `json:"snapshot,omitempty"`
}

// SessionOpen is control.session.open: the master asks a client to open (or
// keep) a session on one of its workspaces. Idempotent: opening an open
// session changes nothing. The client answers session.opened or an error.
type SessionOpen struct {
	// WorkspaceID on the client.
	WorkspaceID string `json:"workspace_id" jsonschema:"minLength=1,maxLength=128"`
	// Adapter to run.
	Adapter string `json:"adapter" jsonschema:"minLength=1,maxLength=128"`
	// Mode to start in.
	Mode string `json:"mode,omitempty" jsonschema:"enum=default,enum=plan,enum=review,default=default"`
	// PermissionTimeoutMS is the session's own permission timeout (see control.session.settings); absent: the client's default.
	PermissionTimeoutMS *int `json:"permission_timeout_ms,omitempty" jsonschema:"minimum=0,maximum=604800000"`
	// Model is the session's own model (see control.session.settings); absent: the agent's default.
	Model string `json:"model,omitempty" jsonschema:"maxLength=256"`
	// Effort is the session's own thinking effort; absent: the provider's default.
	Effort string `json:"effort,omitempty" jsonschema:"enum=off,enum=low,enum=medium,enum=high"`
	// Isolation is set for an isolated session. On a re-open the master sends the name (and base, group) the client reported, so the client reuses that worktree.
	Isolation *Isolation `json:"isolation,omitempty"`
	// Title is the session's title when it opens, from which the client makes an isolated session's worktree name when isolation has none.
	Title string `json:"title,omitempty" jsonschema:"maxLength=1024"`
}

func (p *SessionOpen) validate() *Error {
	return p.Isolation.validate("payload.isolation")
}

// SessionOpened is session.opened, the client's answer to control.session.open.
type SessionOpened struct {
	// Adapter running the session.
	Adapter string `json:"adapter" jsonschema:"minLength=1,maxLength=128"`
	// Mode in force.
	Mode string `json:"mode" jsonschema:"enum=default,enum=plan,enum=review"`
	// Settings in force.
	Settings *Settings `json:"settings,omitempty"`
	// Worktree is set when the session is isolated.
	Worktree *Worktree `json:"worktree,omitempty"`
}

// Ack is master.ack: every message the client sent on this connection up to
// and including Through is persisted; the client may drop them from its
// outbox. Acks are cumulative and may be coalesced.
type Ack struct {
	// Through is the message_id of the newest persisted message.
	Through string `json:"through" jsonschema:"format=uuid"`
}
