package protocol

import "strings"

// Artifact is agent.artifact: a file the agent handed to the user (spec
// 004). The client sends one per registered file while the turn runs,
// after the tool call that made the file finished. It carries the file's
// metadata only, never its content, and never a download token: the master
// issues tokens, and a download never takes a path from a request — the
// master maps a token to (session, artifact_id) and the client maps
// artifact_id to the path it recorded.
type Artifact struct {
	// TurnID names the turn (from agent.turn.started).
	TurnID string `json:"turn_id" jsonschema:"minLength=1,maxLength=128"`
	// ArtifactID names the artifact, unique within the session; the client
	// makes it ("art_" and a random part).
	ArtifactID string `json:"artifact_id" jsonschema:"pattern=^art_[A-Za-z0-9_-]+$,minLength=5,maxLength=128"`
	// Path of the file, relative to the workspace and "/"-separated: never
	// absolute, never with "..", "." or empty components.
	Path string `json:"path" jsonschema:"minLength=1,maxLength=4096"`
	// FileName is what the user sees and what a download is named: the last
	// element of Path unless the agent named it otherwise.
	FileName string `json:"file_name" jsonschema:"minLength=1,maxLength=1024"`
	// Size in bytes when the file was registered.
	Size int64 `json:"size" jsonschema:"minimum=0"`
	// MimeType is an IANA media type, sniffed from the content; absent when
	// it could not be determined.
	MimeType string `json:"mime_type,omitempty" jsonschema:"maxLength=256"`
	// ToolUseID of the Write, Edit or Bash call that made the file.
	ToolUseID string `json:"tool_use_id,omitempty" jsonschema:"maxLength=256"`
}

func (a *Artifact) validate() *Error {
	if why := relPathProblem(a.Path); why != "" {
		return errorf(CodeInvalidValue, "payload.path", "%s", why)
	}
	if strings.ContainsAny(a.FileName, "/\\\x00") {
		return errorf(CodeInvalidValue, "payload.file_name", "a file name holds no path separators or NUL bytes")
	}
	return nil
}

// relPathProblem says what keeps p from being a clean workspace-relative,
// "/"-separated path, or "" when nothing does.
func relPathProblem(p string) string {
	switch {
	case p == "":
		return "the path is empty"
	case strings.HasPrefix(p, "/"):
		return "the path must be relative to the workspace, not absolute"
	case strings.ContainsAny(p, "\\\x00"):
		return "the path must be /-separated and hold no NUL bytes"
	case len(p) >= 2 && p[1] == ':':
		return "the path must be relative to the workspace, not absolute"
	}
	for _, part := range strings.Split(p, "/") {
		switch part {
		case "", ".", "..":
			return "the path may not hold empty, \".\" or \"..\" components"
		}
	}
	return ""
}
