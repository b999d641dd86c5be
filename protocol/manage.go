package protocol

import (
	"reflect"
	"strings"
	"unicode/utf8"
)

// Messages with which a person manages sessions: rename, archive or
// unarchive, delete. The master answers each with master.session.changed
// (parent_id set) and tells every other UI that may see the session the
// same (no parent_id), so open lists and views follow at once. The same
// message, with change status, tells every UI that may see the session
// that it opened, started or ended a turn, or began or stopped waiting for
// the user.
const (
	TypeSessionRename  = "ui.session.rename"
	TypeSessionArchive = "ui.session.archive"
	TypeSessionDelete  = "ui.session.delete"
	TypeSessionChanged = "master.session.changed"
)

// MaxTitleRunes bounds a session title a person sets, in characters.
const MaxTitleRunes = 200

// MaxSessionQuery bounds ui.sessions.list's query, in bytes.
const MaxSessionQuery = 256

// Changes master.session.changed reports.
const (
	// ChangeStatus: the session opened (is new, or is reopened), its state
	// changed, or its count of waiting interactions changed. A hint for
	// session lists, never an answer (no parent_id).
	ChangeStatus = "status"
	// ChangeRenamed: the title changed, by a person's rename (the answer
	// to it) or automatically (no parent_id): from the session's first
	// prompt, or by its agent; session.title_source says which.
	ChangeRenamed    = "renamed"
	ChangeArchived   = "archived"
	ChangeUnarchived = "unarchived"
	ChangeDeleted    = "deleted"
)

// CodeArchived is the code of a prompt to an archived session, which
// takes no prompt until it is unarchived.
const CodeArchived = "archived"

// ErrArchived is the sentinel of CodeArchived for errors.Is.
var ErrArchived = &Error{Code: CodeArchived}

func init() {
	registry[TypeSessionRename] = spec{reflect.TypeFor[SessionRename](), RoleUI, true, false, "rename a session (empty: no title)"}
	registry[TypeSessionArchive] = spec{reflect.TypeFor[SessionArchive](), RoleUI, true, false, "archive or unarchive a session"}
	registry[TypeSessionDelete] = spec{reflect.TypeFor[SessionDelete](), RoleUI, true, false, "delete an idle session with its history, uploads and links"}
	registry[TypeSessionChanged] = spec{reflect.TypeFor[SessionChanged](), RoleMaster, true, false, "a session changed: its status (opened, a turn, waiting for the user), or it was renamed, archived, unarchived or deleted"}
	ErrorCodes[CodeArchived] = "the session is archived; unarchive it to prompt it"
}

// SessionRename is ui.session.rename (session_id in the envelope).
type SessionRename struct {
	// Title is the new title, trimmed by the master; empty removes the title (the UI then shows its automatic label). At most 200 characters, none of them control, format (Cf: bidirectional, zero-width, …) or otherwise invisible.
	Title string `json:"title" jsonschema:"maxLength=1024"`
}

func (p *SessionRename) validate() *Error {
	if _, e := CleanTitle(p.Title); e != nil {
		return e
	}
	return nil
}

// CleanTitle is a title as a person typed it, trimmed, or a coded error
// naming what is wrong: too long, or a character CheckName refuses
// (which could hide or reorder what other UIs show).
func CleanTitle(title string) (string, *Error) {
	t := strings.TrimSpace(title)
	if e := CheckName("payload.title", t); e != nil {
		return "", e
	}
	if n := utf8.RuneCountInString(t); n > MaxTitleRunes {
		return "", errorf(CodeInvalidValue, "payload.title", "the title has %d characters; at most %d", n, MaxTitleRunes)
	}
	return t, nil
}

// SessionArchive is ui.session.archive (session_id in the envelope).
type SessionArchive struct {
	// Archived is true to archive (the session leaves the default list and takes no prompt), false to unarchive.
	Archived bool `json:"archived"`
	// Discard archives an isolated session whose worktree has unshipped changes (else refused with unshipped_changes). Archiving an isolated session removes its worktree.
	Discard bool `json:"discard,omitempty"`
	// DeleteBranch also deletes the branch ferry/NAME when the worktree is removed (kept by default).
	DeleteBranch bool `json:"delete_branch,omitempty"`
}

// SessionDelete is ui.session.delete (session_id in the envelope): delete
// the session, its history (events, snapshot, interactions), its uploads,
// its artifacts' records and their download links. A running session is
// refused with busy: cancel its turn first.
type SessionDelete struct {
	// IfEmpty deletes the session only while it is empty: never prompted, untitled, and open in no other UI (of the same master node). A UI sends it when a person leaves a session they started and never used, so that it is not kept as clutter; a session that is not empty is kept and the answer is busy (field payload.if_empty).
	IfEmpty bool `json:"if_empty,omitempty"`
	// Discard deletes an isolated session whose worktree has unshipped changes (else refused with unshipped_changes). Deleting an isolated session removes its worktree.
	Discard bool `json:"discard,omitempty"`
	// DeleteBranch also deletes the branch ferry/NAME (kept by default).
	DeleteBranch bool `json:"delete_branch,omitempty"`
}

// SessionChanged is master.session.changed, sent to every UI that may see
// the session's machine: with change status when the session opens (is
// new, or is reopened), when its state changes and when its count of
// waiting interactions changes, so session lists show a new session and
// "waiting for you" at once rather than at their next refresh; with
// renamed, archived, unarchived or deleted when a person manages it (the
// UI that asked gets it as the answer, parent_id set).
type SessionChanged struct {
	// Change is what happened: status (opened, a turn started or ended, an interaction opened or settled), renamed (by a person, or automatically: see session.title_source), archived, unarchived or deleted (by a person, or by the master's sweep of sessions never prompted).
	Change string `json:"change" jsonschema:"enum=status,enum=renamed,enum=archived,enum=unarchived,enum=deleted"`
	// Session is the session as it is now (as it was, for deleted).
	Session SessionInfo `json:"session"`
}
