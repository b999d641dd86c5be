package protocol

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
)

// Downloads of artifacts (see "Downloads" in docs/artifacts.md).
//
// A UI lists a session's artifacts with ui.artifacts.list and gets, per
// artifact, a download URL whose token the master issued for that UI's own
// token. A GET of that URL makes the master read the file from the
// session's client over the client's WebSocket:
//
//	master → client  control.artifact.read    {request_id, artifact_id}
//	client → master  session.artifact.meta    {request_id, size, modified_at, etag[, changed_since]}
//	                 (or session.artifact.end with an error)
//	master → client  control.artifact.range   {request_id, offset, length, window}
//	                 (or control.artifact.cancel when no body is needed)
//	client → master  binary data frames, at most window bytes past the last
//	                 control.artifact.ack {request_id, through}
//	client → master  session.artifact.end     {request_id[, error]}
//
// The master may send control.artifact.cancel at any time (the downloader
// went away); the client then stops and closes the file.
//
// The version read is the snapshot the client took when the agent handed
// the file over; once that is gone (evicted by the client's quota, or
// never taken), the file as it is now, with changed_since set when it is
// no longer the registered version (see "Snapshots" in docs/artifacts.md).
//
// Data travels in binary WebSocket frames (ArtifactChunk), not in JSON: a
// gigabyte in base64 would be a third larger and pass through the strict
// JSON decoder thousands of times. The credit window bounds memory on both
// sides: one client connection carries every session of its machine, so
// pausing that connection (TCP's own flow control) for one slow downloader
// would stall everything else on it; instead the client sends at most
// window bytes beyond what the master acknowledged as written to the
// downloader, and the master buffers at most that much per download.

// Message types of artifact downloads.
const (
	TypeArtifactsList  = "ui.artifacts.list"
	TypeArtifacts      = "master.artifacts"
	TypeArtifactRead   = "control.artifact.read"
	TypeArtifactRange  = "control.artifact.range"
	TypeArtifactAck    = "control.artifact.ack"
	TypeArtifactCancel = "control.artifact.cancel"
	TypeArtifactMeta   = "session.artifact.meta"
	TypeArtifactEnd    = "session.artifact.end"
)

// Limits of ui.artifacts.list.
const (
	DefaultArtifactsLimit = 100
	MaxArtifactsLimit     = 1000
)

// Sizes of the download stream.
const (
	// ArtifactChunkSize is the number of data bytes every data frame of a
	// range carries, except the range's last, which carries the rest.
	ArtifactChunkSize = 64 << 10
	// ArtifactChunkHeader is the size of a data frame's header.
	ArtifactChunkHeader = 1 + 16 + 8
	// MinArtifactWindow and MaxArtifactWindow bound a range's window.
	MinArtifactWindow = ArtifactChunkSize
	MaxArtifactWindow = 64 << 20
)

// artifactChunkKind is the first byte of an artifact data frame; other
// values are reserved for later kinds of binary frames.
const artifactChunkKind = 0x01

// ArtifactsList is ui.artifacts.list (session_id in the envelope): list the
// session's artifacts with fresh download links for this UI. The answer is
// master.artifacts.
type ArtifactsList struct {
	// ArtifactID, when set, lists that artifact only (to refresh one link).
	ArtifactID string `json:"artifact_id,omitempty" jsonschema:"maxLength=128"`
	// Limit is the most artifacts wanted, the newest; default 100.
	Limit *int `json:"limit,omitempty" jsonschema:"minimum=1,maximum=1000,default=100"`
}

// Artifacts is master.artifacts, the answer to ui.artifacts.list.
type Artifacts struct {
	// Artifacts in the order the agent registered them (the newest Limit of them).
	Artifacts []ArtifactLink `json:"artifacts" jsonschema:"maxItems=1000"`
}

// ArtifactLink is one artifact with a download link for the UI that asked.
type ArtifactLink struct {
	// Artifact is the file as the agent registered it.
	Artifact Artifact `json:"artifact"`
	// RegisteredAt is when the master registered it, RFC 3339.
	RegisteredAt string `json:"registered_at" jsonschema:"format=date-time"`
	// DownloadURL is the path, on the master's own origin, that downloads the
	// file (GET /v1/artifacts/{token}); it works only with this UI's login.
	DownloadURL string `json:"download_url" jsonschema:"minLength=1,maxLength=512"`
	// ExpiresAt is when the link stops working, RFC 3339; list again for a new one.
	ExpiresAt string `json:"expires_at" jsonschema:"format=date-time"`
}

// ArtifactRead is control.artifact.read: open a recorded artifact of the
// session and describe it. The client answers session.artifact.meta, or
// session.artifact.end with an error.
type ArtifactRead struct {
	// RequestID names this download in every later message and data frame.
	RequestID string `json:"request_id" jsonschema:"minLength=1,format=uuid"`
	// ArtifactID is an artifact_id of the session's agent.artifact events.
	ArtifactID string `json:"artifact_id" jsonschema:"minLength=1,maxLength=128"`
}

// ArtifactMeta is session.artifact.meta: the version the download serves — the snapshot the client took when the agent handed the file over, else the file as it is now.
type ArtifactMeta struct {
	// RequestID of the control.artifact.read.
	RequestID string `json:"request_id" jsonschema:"minLength=1,format=uuid"`
	// Size of the version served (the registered size, unless changed_since).
	Size int64 `json:"size" jsonschema:"minimum=0"`
	// ModifiedAt is the served version's modification time, RFC 3339.
	ModifiedAt string `json:"modified_at" jsonschema:"format=date-time"`
	// ETag is an opaque version of the file: it changes when the file does.
	ETag string `json:"etag" jsonschema:"minLength=1,maxLength=64,pattern=^[A-Za-z0-9_-]+$"`
	// ChangedSince is set when the client no longer keeps the version the agent made (its snapshot was evicted or never taken) and the file changed since: the download serves the current file, and the master marks the response (Ferry-Artifact-Changed: 1). Absent or false: the agent's version.
	ChangedSince bool `json:"changed_since,omitempty"`
	// WorkspaceDiffers is set when the download serves the agent's version (its snapshot) but the file in the workspace is no longer that version (changed, undone or removed since): the master marks the response (Ferry-Artifact-Workspace-Differs: 1), so a UI can say which version a download gives.
	WorkspaceDiffers bool `json:"workspace_differs,omitempty"`
}

// ArtifactRange is control.artifact.range: send bytes [offset,
// offset+length) of the opened file as data frames, then
// session.artifact.end.
type ArtifactRange struct {
	// RequestID of the control.artifact.read.
	RequestID string `json:"request_id" jsonschema:"minLength=1,format=uuid"`
	// Offset of the first byte.
	Offset int64 `json:"offset" jsonschema:"minimum=0"`
	// Length is the number of bytes; offset+length may not pass the size the meta gave.
	Length int64 `json:"length" jsonschema:"minimum=1"`
	// Window is how many bytes may be sent past the last acknowledged offset (initially offset).
	Window int64 `json:"window" jsonschema:"minimum=65536,maximum=67108864"`
}

// ArtifactAck is control.artifact.ack: the master wrote every byte before
// Through to the downloader; the client may send up to Through+window.
type ArtifactAck struct {
	// RequestID of the control.artifact.read.
	RequestID string `json:"request_id" jsonschema:"minLength=1,format=uuid"`
	// Through is a file offset; acknowledgements are cumulative.
	Through int64 `json:"through" jsonschema:"minimum=0"`
}

// ArtifactCancel is control.artifact.cancel: stop this download and close
// the file. It needs no answer.
type ArtifactCancel struct {
	// RequestID of the control.artifact.read.
	RequestID string `json:"request_id" jsonschema:"minLength=1,format=uuid"`
}

// ArtifactEnd is session.artifact.end, the last message of a download:
// the range was sent in full, or Error says why not (not_found: no such
// artifact of this session, or its file is gone or has left the
// workspace; busy: too many downloads at once; invalid_value: a range past
// the end; internal).
type ArtifactEnd struct {
	// RequestID of the control.artifact.read.
	RequestID string `json:"request_id" jsonschema:"minLength=1,format=uuid"`
	// Error is set when the download failed.
	Error *Error `json:"error,omitempty"`
}

func (r *ArtifactRange) validate() *Error {
	if r.Offset > math.MaxInt64-r.Length {
		return errorf(CodeInvalidValue, "payload.length", "offset+length overflows")
	}
	return nil
}

// ArtifactChunk is one binary data frame of a download:
//
//	byte  0      0x01 (the kind: artifact data)
//	bytes 1–16   the request_id, as the 16 bytes of the UUID
//	bytes 17–24  the offset of the first data byte in the file, big-endian
//	bytes 25–    the data: 1 to ArtifactChunkSize bytes
type ArtifactChunk struct {
	RequestID string
	Offset    int64
	Data      []byte
}

// AppendArtifactChunk appends c's frame to dst.
func AppendArtifactChunk(dst []byte, c ArtifactChunk) ([]byte, error) {
	id, ok := uuidBytes(c.RequestID)
	switch {
	case !ok:
		return dst, errorf(CodeInvalidValue, "request_id", "not a UUID")
	case c.Offset < 0 || c.Offset > math.MaxInt64-int64(len(c.Data)):
		return dst, errorf(CodeInvalidValue, "offset", "out of range")
	case len(c.Data) == 0 || len(c.Data) > ArtifactChunkSize:
		return dst, errorf(CodeInvalidValue, "data", "a frame carries 1 to %d bytes, not %d", ArtifactChunkSize, len(c.Data))
	}
	dst = append(dst, artifactChunkKind)
	dst = append(dst, id[:]...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(c.Offset))
	return append(dst, c.Data...), nil
}

// NewArtifactChunkFrame allocates the frame of a chunk of n bytes at offset
// with its header written, and returns it with the part the data goes in,
// so that a sender reads the data straight into the frame.
func NewArtifactChunkFrame(requestID string, offset int64, n int) (frame, data []byte, err error) {
	id, ok := uuidBytes(requestID)
	switch {
	case !ok:
		return nil, nil, errorf(CodeInvalidValue, "request_id", "not a UUID")
	case n <= 0 || n > ArtifactChunkSize:
		return nil, nil, errorf(CodeInvalidValue, "data", "a frame carries 1 to %d bytes, not %d", ArtifactChunkSize, n)
	case offset < 0 || offset > math.MaxInt64-int64(n):
		return nil, nil, errorf(CodeInvalidValue, "offset", "out of range")
	}
	frame = make([]byte, ArtifactChunkHeader+n)
	frame[0] = artifactChunkKind
	copy(frame[1:17], id[:])
	binary.BigEndian.PutUint64(frame[17:25], uint64(offset))
	return frame, frame[ArtifactChunkHeader:], nil
}

// DecodeArtifactChunk parses a binary frame. Data aliases frame. It fails
// with an *Error of code invalid_value, never panics.
func DecodeArtifactChunk(frame []byte) (ArtifactChunk, error) {
	if len(frame) < ArtifactChunkHeader+1 {
		return ArtifactChunk{}, errorf(CodeInvalidValue, "frame", "a data frame is at least %d bytes, got %d", ArtifactChunkHeader+1, len(frame))
	}
	if frame[0] != artifactChunkKind {
		return ArtifactChunk{}, errorf(CodeInvalidValue, "frame", "unknown binary frame kind %#x", frame[0])
	}
	data := frame[ArtifactChunkHeader:]
	if len(data) > ArtifactChunkSize {
		return ArtifactChunk{}, errorf(CodeInvalidValue, "frame", "a data frame carries at most %d bytes, got %d", ArtifactChunkSize, len(data))
	}
	off := binary.BigEndian.Uint64(frame[17:25])
	if off > uint64(math.MaxInt64-int64(len(data))) {
		return ArtifactChunk{}, errorf(CodeInvalidValue, "frame", "offset out of range")
	}
	return ArtifactChunk{RequestID: uuidString(frame[1:17]), Offset: int64(off), Data: data}, nil
}

// ArtifactChunkRequest returns the request_id of a data frame without
// checking the rest, or "" when frame is not one.
func ArtifactChunkRequest(frame []byte) string {
	if len(frame) < ArtifactChunkHeader || frame[0] != artifactChunkKind {
		return ""
	}
	return uuidString(frame[1:17])
}

// uuidBytes parses a canonical UUID.
func uuidBytes(s string) (b [16]byte, ok bool) {
	if !IsUUID(s) {
		return b, false
	}
	_, err := hex.Decode(b[:], []byte(s[0:8]+s[9:13]+s[14:18]+s[19:23]+s[24:36]))
	return b, err == nil
}

// uuidString formats 16 bytes as a canonical lower-case UUID.
func uuidString(b []byte) string {
	h := hex.EncodeToString(b)
	return fmt.Sprintf("%s-%s-%s-%s-%s", h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])
}
