package protocol

import (
	"fmt"
	"reflect"
)

// Undo and rewind: the UI asks the session's client (through the master) to
// undo one tool call's change, every change to one file, or every change
// since a turn (rewind); the client checks every file first and answers
// agent.files.restored, or an error coded file_changed naming the file
// that changed since the agent's edit, having changed nothing.
const (
	TypeHistoryUndo    = "control.history.undo"
	TypeHistoryRewind  = "control.history.rewind"
	TypeHistoryList    = "control.history.list"
	TypeHistoryChanges = "session.history.changes"
	TypeFilesRestored  = "agent.files.restored"
)

// CodeFileChanged means an undo or rewind was refused because the file it
// names changed since the agent's edit (by the user, another process or a later
// change of the agent), or is now reached through a symbolic link (the file or
// a folder on its path), or is another file (device and inode) than the one
// the agent left; nothing was restored.
const CodeFileChanged = "file_changed"

// Conversation outcomes of a rewind (FilesRestored.Conversation).
const (
	ConversationRewound    = "rewound"
	ConversationNotRewound = "not_rewound"
)

// Kinds of FilesRestored.
const (
	RestoreUndo   = "undo"
	RestoreFile   = "file"
	RestoreRewind = "rewind"
)

func init() {
	ErrorCodes[CodeFileChanged] = "an undo or rewind was refused: the file it names changed since the agent's edit; nothing was restored"
	registry[TypeHistoryUndo] = spec{reflect.TypeFor[HistoryUndo](), RoleMaster | RoleUI, true, false, "undo one tool call's file change, or every change to one file"}
	registry[TypeHistoryRewind] = spec{reflect.TypeFor[HistoryRewind](), RoleMaster | RoleUI, true, false, "rewind the files (and, where it can, the conversation) to before a turn"}
	registry[TypeHistoryList] = spec{reflect.TypeFor[HistoryList](), RoleMaster | RoleUI, true, false, "list the files the session's agent changed"}
	registry[TypeHistoryChanges] = spec{reflect.TypeFor[HistoryChanges](), RoleClient, true, true, "the files the session's agent changed, with their combined diffs"}
	registry[TypeFilesRestored] = spec{reflect.TypeFor[FilesRestored](), RoleClient, true, true, "an undo or rewind restored files"}
}

// HistoryUndo is control.history.undo: exactly one of tool_use_id (the
// change one tool call made, as its diff card shows) and path (every change
// of the session to that file, as the Changes view lists it).
type HistoryUndo struct {
	// ToolUseID is the tool call whose change to undo.
	ToolUseID string `json:"tool_use_id,omitempty" jsonschema:"maxLength=256"`
	// Path is a workspace-relative file whose changes to undo.
	Path string `json:"path,omitempty" jsonschema:"maxLength=4096"`
}

func (p *HistoryUndo) validate() *Error {
	if (p.ToolUseID == "") == (p.Path == "") {
		return errorf(CodeInvalidValue, "payload", "set exactly one of tool_use_id and path")
	}
	return nil
}

// HistoryRewind is control.history.rewind: undo every file change of the
// turn and of every later turn; an agent that can (capabilities'
// rewind_conversation) also forgets those turns.
type HistoryRewind struct {
	// TurnID is the first turn to take back.
	TurnID string `json:"turn_id" jsonschema:"minLength=1,maxLength=256"`
}

// HistoryList is control.history.list; it is answered by
// session.history.changes.
type HistoryList struct{}

// HistoryChanges is session.history.changes: every file the session's
// agent changed (and that was not undone), oldest first.
type HistoryChanges struct {
	// Files changed, in the order of their first change.
	Files []ChangedFile `json:"files" jsonschema:"maxItems=10000"`
	// Dropped is set when the history's size quota dropped older changes:
	// they are not listed and cannot be undone.
	Dropped bool `json:"dropped,omitempty"`
}

func (c *HistoryChanges) validate() *Error {
	for i, f := range c.Files {
		if f.Diff != nil {
			if e := f.Diff.validate(fmt.Sprintf("payload.files[%d].diff", i)); e != nil {
				return e
			}
		}
	}
	return nil
}

// ChangedFile is one file in session.history.changes.
type ChangedFile struct {
	// Path relative to the workspace.
	Path string `json:"path" jsonschema:"minLength=1,maxLength=4096"`
	// ToolUseIDs of the changes, oldest first.
	ToolUseIDs []string `json:"tool_use_ids" jsonschema:"maxItems=10000"`
	// TurnIDs of the turns that changed it.
	TurnIDs []string `json:"turn_ids" jsonschema:"maxItems=10000"`
	// Created is set when the agent created the file (undo deletes it).
	Created bool `json:"created,omitempty"`
	// Modified is set when the file changed since the agent's last change:
	// undoing it would be refused.
	Modified bool `json:"modified,omitempty"`
	// Diff is the combined change, from before the first change to after
	// the last (absent when left out to keep the answer small).
	Diff *FileDiff `json:"diff,omitempty"`
}

// FilesRestored is agent.files.restored, the answer to a successful
// control.history.undo or control.history.rewind, kept in the transcript.
type FilesRestored struct {
	// Kind is undo (one tool call), file (every change to a file) or rewind.
	Kind string `json:"kind" jsonschema:"enum=undo,enum=file,enum=rewind"`
	// ToolUseID, Path or TurnID echo what was asked.
	ToolUseID string `json:"tool_use_id,omitempty" jsonschema:"maxLength=256"`
	Path      string `json:"path,omitempty" jsonschema:"maxLength=4096"`
	TurnID    string `json:"turn_id,omitempty" jsonschema:"maxLength=256"`
	// Files restored (none for a rewind of a turn that changed no file).
	Files []RestoredFile `json:"files" jsonschema:"maxItems=10000"`
	// Conversation (rewind only) says whether the agent's conversation was
	// rewound too; ConversationNote says why not.
	Conversation     string `json:"conversation,omitempty" jsonschema:"enum=rewound,enum=not_rewound"`
	ConversationNote string `json:"conversation_note,omitempty" jsonschema:"maxLength=1024"`
}

// RestoredFile is one file an undo or rewind put back.
type RestoredFile struct {
	// Path relative to the workspace.
	Path string `json:"path" jsonschema:"minLength=1,maxLength=4096"`
	// Deleted is set when the agent had created the file, so restoring
	// removed it.
	Deleted bool `json:"deleted,omitempty"`
}
