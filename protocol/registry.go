package protocol

import (
	"reflect"
	"sort"
)

// Role is who sends a message: the master, a local client, or a browser UI.
type Role uint8

// Roles, as a bit set so a message may name several senders.
const (
	RoleMaster Role = 1 << iota
	RoleClient
	RoleUI
)

func (r Role) String() string {
	switch r {
	case RoleMaster:
		return "master"
	case RoleClient:
		return "client"
	case RoleUI:
		return "ui"
	}
	return "roles"
}

// Message types of protocol version 1.
const (
	TypePromptRequest       = "control.prompt.request"
	TypePromptCancel        = "control.prompt.cancel"
	TypeInteractionResponse = "control.interaction.response"
	TypeInteractionTimeout  = "control.interaction.timeout"
	TypeSessionCompact      = "control.session.compact"
	TypeModeSwitch          = "control.mode.switch"
	TypeSessionSettings     = "control.session.settings"
	TypeFileSearch          = "control.file.search"
	TypeFileSearchCancel    = "control.file.search.cancel"

	TypeFileCandidates = "session.file.candidates"
	TypeCapabilities   = "session.capabilities"

	TypeTurnStarted         = "agent.turn.started"
	TypeTextDelta           = "agent.text.delta"
	TypeTextDone            = "agent.text.done"
	TypeToolStarted         = "agent.tool.started"
	TypeToolUpdated         = "agent.tool.updated"
	TypeToolFinished        = "agent.tool.finished"
	TypeInteractionRequest  = "agent.interaction.request"
	TypeInteractionResolved = "agent.interaction.resolved"
	TypeArtifact            = "agent.artifact"
	TypeUsage               = "agent.usage"
	TypeAgentError          = "agent.error"
	TypeModeChanged         = "agent.mode.changed"
	TypeCompactionDone      = "agent.compaction.done"

	TypeSessionOpen   = "control.session.open"
	TypeSessionOpened = "session.opened"
	TypeSettings      = "session.settings"

	TypeUIPrompt           = "ui.prompt"
	TypeMachinesList       = "ui.machines.list"
	TypeSessionStart       = "ui.session.start"
	TypeSessionsList       = "ui.sessions.list"
	TypeSessionSubscribe   = "ui.session.subscribe"
	TypeSessionUnsubscribe = "ui.session.unsubscribe"

	TypeMachines      = "master.machines"
	TypeMachineStatus = "master.machine.status"
	TypeSessionAnswer = "master.session"
	TypeSessions      = "master.sessions"
	TypeSubscribed    = "master.subscribed"
	TypeAck           = "master.ack"

	TypeError = "error"
)

// spec is what the registry knows of one message type.
type spec struct {
	payload reflect.Type
	senders Role
	// session: the envelope must carry session_id.
	session bool
	// parent: the envelope must carry parent_id (it answers a message).
	parent bool
	// summary is the one-line description docs/protocol.md is checked against.
	summary string
}

var registry = map[string]spec{
	TypePromptRequest:       {reflect.TypeFor[PromptRequest](), RoleMaster, true, false, "one user prompt for the session's agent"},
	TypePromptCancel:        {reflect.TypeFor[PromptCancel](), RoleMaster | RoleUI, true, false, "cancel a running turn"},
	TypeInteractionResponse: {reflect.TypeFor[InteractionResponse](), RoleMaster | RoleUI, true, false, "the user's answer to an interaction"},
	TypeInteractionTimeout:  {reflect.TypeFor[InteractionTimeout](), RoleMaster, true, false, "nobody answered an interaction in time"},
	TypeSessionCompact:      {reflect.TypeFor[SessionCompact](), RoleMaster | RoleUI, true, false, "summarise the session's history"},
	TypeModeSwitch:          {reflect.TypeFor[ModeSwitch](), RoleMaster | RoleUI, true, false, "switch the agent's mode"},
	TypeSessionSettings:     {reflect.TypeFor[SessionSettings](), RoleMaster | RoleUI, true, false, "change a session's settings (permission timeout, model, thinking effort)"},
	TypeFileSearch:          {reflect.TypeFor[FileSearch](), RoleMaster | RoleUI, true, false, "fuzzy file search for the @ popup"},
	TypeFileSearchCancel:    {reflect.TypeFor[FileSearchCancel](), RoleMaster | RoleUI, true, false, "stop a file search"},
	TypeFileCandidates:      {reflect.TypeFor[FileCandidates](), RoleClient, true, true, "the answer to a file search"},
	TypeCapabilities:        {reflect.TypeFor[Capabilities](), RoleClient, false, false, "what the client can do"},
	TypeTurnStarted:         {reflect.TypeFor[TurnStarted](), RoleClient, true, true, "a turn began"},
	TypeTextDelta:           {reflect.TypeFor[TextDelta](), RoleClient, true, false, "the next piece of streamed text"},
	TypeTextDone:            {reflect.TypeFor[TextDone](), RoleClient, true, false, "the turn ended (exactly one per turn)"},
	TypeToolStarted:         {reflect.TypeFor[ToolStarted](), RoleClient, true, false, "the agent called a tool"},
	TypeToolUpdated:         {reflect.TypeFor[ToolUpdated](), RoleClient, true, false, "progress of a running tool"},
	TypeToolFinished:        {reflect.TypeFor[ToolFinished](), RoleClient, true, false, "a tool call's result"},
	TypeInteractionRequest:  {reflect.TypeFor[InteractionRequest](), RoleClient, true, false, "the agent asks the user"},
	TypeInteractionResolved: {reflect.TypeFor[InteractionResolved](), RoleMaster, true, false, "an interaction was settled"},
	TypeArtifact:            {reflect.TypeFor[Artifact](), RoleClient, true, false, "the agent handed the user a file"},
	TypeUsage:               {reflect.TypeFor[Usage](), RoleClient, true, false, "tokens and cost so far"},
	TypeAgentError:          {reflect.TypeFor[AgentError](), RoleClient, true, false, "the agent or its provider failed"},
	TypeModeChanged:         {reflect.TypeFor[ModeChanged](), RoleClient, true, false, "a mode switch took effect"},
	TypeCompactionDone:      {reflect.TypeFor[CompactionDone](), RoleClient, true, false, "the history was summarised"},
	TypeSessionOpen:         {reflect.TypeFor[SessionOpen](), RoleMaster, true, false, "open (or keep) a session on a client"},
	TypeSessionOpened:       {reflect.TypeFor[SessionOpened](), RoleClient, true, true, "the client opened the session"},
	TypeSettings:            {reflect.TypeFor[Settings](), RoleClient, true, true, "the session's settings in force"},
	TypeUIPrompt:            {reflect.TypeFor[UIPrompt](), RoleUI, true, false, "a prompt as the user composed it"},
	TypeMachinesList:        {reflect.TypeFor[MachinesList](), RoleUI, false, false, "list the machines this UI may use"},
	TypeSessionStart:        {reflect.TypeFor[SessionStart](), RoleUI, false, false, "open a new session"},
	TypeSessionsList:        {reflect.TypeFor[SessionsList](), RoleUI, false, false, "list sessions, newest first"},
	TypeSessionSubscribe:    {reflect.TypeFor[SessionSubscribe](), RoleUI, true, false, "follow a session's events from a seq on"},
	TypeSessionUnsubscribe:  {reflect.TypeFor[SessionUnsubscribe](), RoleUI, true, false, "stop following a session"},
	TypeMachines:            {reflect.TypeFor[Machines](), RoleMaster, false, true, "the machines a UI may use"},
	TypeMachineStatus:       {reflect.TypeFor[MachineStatus](), RoleMaster, false, false, "a machine came, went or changed"},
	TypeSessionAnswer:       {reflect.TypeFor[SessionAnswer](), RoleMaster, true, true, "the session ui.session.start opened"},
	TypeSessions:            {reflect.TypeFor[Sessions](), RoleMaster, false, true, "the sessions a UI may see"},
	TypeSubscribed:          {reflect.TypeFor[Subscribed](), RoleMaster, true, true, "how a subscription resumes: replay or snapshot"},
	TypeAck:                 {reflect.TypeFor[Ack](), RoleMaster, false, false, "the client's messages up to one are persisted"},
	TypeArtifactsList:       {reflect.TypeFor[ArtifactsList](), RoleUI, true, false, "list a session's artifacts with fresh download links"},
	TypeArtifacts:           {reflect.TypeFor[Artifacts](), RoleMaster, true, true, "a session's artifacts with this UI's download links"},
	TypeArtifactRead:        {reflect.TypeFor[ArtifactRead](), RoleMaster, true, false, "open a recorded artifact for a download"},
	TypeArtifactRange:       {reflect.TypeFor[ArtifactRange](), RoleMaster, true, false, "send a byte range of an opened artifact"},
	TypeArtifactAck:         {reflect.TypeFor[ArtifactAck](), RoleMaster, true, false, "a download's bytes up to an offset were delivered"},
	TypeArtifactCancel:      {reflect.TypeFor[ArtifactCancel](), RoleMaster, true, false, "stop a download"},
	TypeArtifactMeta:        {reflect.TypeFor[ArtifactMeta](), RoleClient, true, true, "the opened artifact's size, time and version"},
	TypeArtifactEnd:         {reflect.TypeFor[ArtifactEnd](), RoleClient, true, false, "the last message of a download"},
	TypeError:               {reflect.TypeFor[Error](), RoleMaster | RoleClient | RoleUI, false, false, "a coded error about a message"},
}

// MessageInfo describes one registered message type.
type MessageInfo struct {
	Type string
	// Payload is the Go type of the payload (not a pointer).
	Payload reflect.Type
	// Senders is the set of roles that may send it.
	Senders Role
	// NeedsSession and NeedsParent say which envelope fields are required.
	NeedsSession, NeedsParent bool
	Summary                   string
}

// Messages lists every message type of this protocol version, sorted.
func Messages() []MessageInfo {
	out := make([]MessageInfo, 0, len(registry))
	for t, s := range registry {
		out = append(out, MessageInfo{t, s.payload, s.senders, s.session, s.parent, s.summary})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

// SentBy reports whether role may send msgType.
func SentBy(msgType string, role Role) bool {
	s, ok := registry[msgType]
	return ok && s.senders&role != 0
}
