package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Artifact is a file the agent handed to the user, in the form a message
// carries it (spec 004 §3, the message side): a reference — path, name,
// size, media type, the tool call that made it and, once the application
// issued one, a download token — never the content. It is immutable: the
// only change, WithDownloadToken, returns a new value.
//
// It lives beside Message because it travels with the conversation (it is
// serialised with the transcript) while this package depends on nothing of
// the agent; internal/artifact has the collector-side form and converts.
// Artifacts are bookkeeping for the user: providers never send them to the
// model.
type Artifact struct {
	path, fileName, mimeType, toolUseID, downloadToken string
	size                                               int64
}

// ArtifactFields are the fields of an Artifact, for NewArtifact and for
// reading one whole.
type ArtifactFields struct {
	// Path is where the file is, in the file system the tools use
	// (ferry: workspace-relative, "/"-separated). Required, not blank.
	Path string `json:"path"`
	// FileName is what the user sees. Required, not blank.
	FileName string `json:"file_name"`
	// Size in bytes, not negative.
	Size int64 `json:"size"`
	// MimeType, ToolUseID and DownloadToken are optional ("" when unknown).
	MimeType      string `json:"mime_type,omitempty"`
	ToolUseID     string `json:"tool_use_id,omitempty"`
	DownloadToken string `json:"download_token,omitempty"`
}

// ErrInvalidArtifact is wrapped by the errors of NewArtifact and of
// decoding an Artifact that breaks its rules.
var ErrInvalidArtifact = errors.New("llm: invalid artifact")

// NewArtifact makes an Artifact, checking the rules of ArtifactFields.
func NewArtifact(f ArtifactFields) (Artifact, error) {
	switch {
	case strings.TrimSpace(f.Path) == "":
		return Artifact{}, fmt.Errorf("%w: the path is blank", ErrInvalidArtifact)
	case strings.TrimSpace(f.FileName) == "":
		return Artifact{}, fmt.Errorf("%w: the file name of %q is blank", ErrInvalidArtifact, f.Path)
	case f.Size < 0:
		return Artifact{}, fmt.Errorf("%w: the size of %q is negative (%d)", ErrInvalidArtifact, f.Path, f.Size)
	}
	return Artifact{path: f.Path, fileName: f.FileName, size: f.Size, mimeType: f.MimeType, toolUseID: f.ToolUseID, downloadToken: f.DownloadToken}, nil
}

// Path is the file's path (see ArtifactFields).
func (a Artifact) Path() string { return a.path }

// FileName is the name shown to the user and used for a download.
func (a Artifact) FileName() string { return a.fileName }

// Size is the file's size in bytes when it was registered.
func (a Artifact) Size() int64 { return a.size }

// MimeType is the file's media type, "" when unknown.
func (a Artifact) MimeType() string { return a.mimeType }

// ToolUseID names the tool call that made the file, "" when unknown.
func (a Artifact) ToolUseID() string { return a.toolUseID }

// DownloadToken is the application's download token, "" when none.
func (a Artifact) DownloadToken() string { return a.downloadToken }

// Fields returns the artifact's fields.
func (a Artifact) Fields() ArtifactFields {
	return ArtifactFields{Path: a.path, FileName: a.fileName, Size: a.size, MimeType: a.mimeType, ToolUseID: a.toolUseID, DownloadToken: a.downloadToken}
}

// WithDownloadToken returns a copy of a carrying token; a is unchanged. The
// application calls it: the token exists only after the value was made.
func (a Artifact) WithDownloadToken(token string) Artifact {
	a.downloadToken = token
	return a
}

// MarshalJSON encodes the fields (ArtifactFields' JSON names).
func (a Artifact) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(a.Fields())
	if err != nil {
		return nil, fmt.Errorf("llm: encode artifact: %w", err)
	}
	return b, nil
}

// UnmarshalJSON decodes what MarshalJSON wrote and checks the rules, so a
// transcript cannot smuggle in an artifact NewArtifact would refuse.
func (a *Artifact) UnmarshalJSON(b []byte) error {
	var f ArtifactFields
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("llm: decode artifact: %w", err)
	}
	v, err := NewArtifact(f)
	if err != nil {
		return err
	}
	*a = v
	return nil
}
