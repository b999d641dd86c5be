package protocol

// FileReference is the metadata of one file mentioned inline in prompt_text by a
// <@file:ref_id|display_path> token (§16.2, §6.1.1 file_references).
type FileReference struct {
	// RefID matches the ref_id of exactly one token in prompt_text.
	RefID string `json:"ref_id" jsonschema:"pattern=^[a-zA-Z0-9_-]+$,minLength=1,maxLength=64"`
	// Path is relative to the workspace, as session.file.candidates gave it.
	Path string `json:"path" jsonschema:"minLength=1,maxLength=4096"`
	// Name is the file name, the last element of Path.
	Name string `json:"name" jsonschema:"minLength=1,maxLength=1024"`
	// Extension with its dot, e.g. ".ts".
	Extension string `json:"extension,omitempty" jsonschema:"maxLength=256"`
	// MimeType is an IANA media type.
	MimeType string `json:"mime_type,omitempty" jsonschema:"maxLength=256"`
	// SizeBytes when the picker knew it.
	SizeBytes *int64 `json:"size_bytes,omitempty" jsonschema:"minimum=0"`
	// WorkspaceRelativePath is the path relative to the workspace root.
	WorkspaceRelativePath string `json:"workspace_relative_path" jsonschema:"minLength=1,maxLength=4096"`
	// WorkspaceID names the workspace both paths are relative to, as the candidate gave it (scope global); absent means the session's workspace.
	WorkspaceID string `json:"workspace_id,omitempty" jsonschema:"maxLength=128"`
}

// Segment kinds of a ui.prompt: typed text, or a file picked in the @ popup.
const (
	SegmentText = "text"
	SegmentFile = "file"
)

// PromptSegment is one piece of what the user composed: text they typed, or a
// file they picked in the popup. Only picked files become tokens.
type PromptSegment struct {
	// Kind is "text" (typed) or "file" (picked in the popup).
	Kind string `json:"kind" jsonschema:"enum=text,enum=file"`
	// Text is what the user typed, verbatim (kind text).
	Text string `json:"text,omitempty"`
	// File is the picked file (kind file).
	File *PickedFile `json:"file,omitempty"`
}

// PickedFile is a file the user picked in the @ popup, as the popup showed it
// (a session.file.candidates entry).
type PickedFile struct {
	// Path is the candidate path the popup offered.
	Path string `json:"path" jsonschema:"minLength=1,maxLength=4096"`
	// DisplayPath is what the popup showed; Path when empty.
	DisplayPath string `json:"display_path,omitempty" jsonschema:"maxLength=4096"`
	// WorkspaceID is the candidate's workspace_id (scope global); absent for the session's workspace.
	WorkspaceID string `json:"workspace_id,omitempty" jsonschema:"maxLength=128"`
	Name        string `json:"name,omitempty" jsonschema:"maxLength=1024"`
	Extension   string `json:"extension,omitempty" jsonschema:"maxLength=256"`
	MimeType    string `json:"mime_type,omitempty" jsonschema:"maxLength=256"`
	SizeBytes   *int64 `json:"size_bytes,omitempty" jsonschema:"minimum=0"`
}
