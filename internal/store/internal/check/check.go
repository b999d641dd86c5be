// Package check validates the arguments of store.Store calls, so that every
// implementation rejects bad input the same way and with a clear message
// before it touches the database.
package check

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/internal/store"
)

// ErrInvalid marks an argument a store refuses (wrapped with the reason).
var ErrInvalid = errors.New("invalid argument")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// ID checks that an identifier of the named kind is not empty.
func ID(kind, id string) error {
	if id == "" {
		return invalid("empty %s ID", kind)
	}
	return nil
}

// MaxDevice is the longest device name a token may hold.
const MaxDevice = 64

// Token checks a token about to be created.
func Token(t store.Token) error {
	if err := ID("token", t.ID); err != nil {
		return err
	}
	switch t.Kind {
	case store.TokenClient, store.TokenUI, store.TokenLogin:
	default:
		return invalid("token kind %q (want %s, %s or %s)", t.Kind, store.TokenClient, store.TokenUI, store.TokenLogin)
	}
	if len(t.Hash) != sha256.Size {
		return invalid("token hash of %d bytes (want a SHA-256, %d bytes)", len(t.Hash), sha256.Size)
	}
	if t.Kind == store.TokenClient && len(t.Machines) > 0 {
		return invalid("client token %s has a machine scope (only UI and login tokens have one)", t.ID)
	}
	for i, id := range t.Machines {
		if id == "" {
			return invalid("token %s: machine %d of its scope is empty", t.ID, i)
		}
	}
	// A device name is ferry's own few words: a long one or one with
	// control characters is not one of them.
	if len(t.Device) > MaxDevice || strings.IndexFunc(t.Device, func(r rune) bool { return r < ' ' || r > '~' }) >= 0 {
		return invalid("token %s: device name of %d bytes, not printable ASCII of at most %d", t.ID, len(t.Device), MaxDevice)
	}
	return nil
}

// EncodeMachines is a token's machine scope as both backends store it: a
// JSON array, "[]" for none.
func EncodeMachines(ids []string) string {
	if len(ids) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(ids) // a []string always marshals
	return string(b)
}

// DecodeMachines reads a stored machine scope; an empty scope is nil.
func DecodeMachines(s string) ([]string, error) {
	var ids []string
	if err := json.Unmarshal([]byte(s), &ids); err != nil {
		return nil, fmt.Errorf("token machines: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return ids, nil
}

// Hash checks a token hash to look up.
func Hash(h []byte) error {
	if len(h) != sha256.Size {
		return invalid("token hash of %d bytes (want a SHA-256, %d bytes)", len(h), sha256.Size)
	}
	return nil
}

// Machine checks a machine about to be stored.
func Machine(m store.Machine) error {
	return ID("machine", m.ID)
}

// NewSession checks a session about to be created.
func NewSession(s store.Session) error {
	if err := ID("session", s.ID); err != nil {
		return err
	}
	if err := ID("machine", s.MachineID); err != nil {
		return err
	}
	if s.Epoch == "" {
		return invalid("session %s has an empty epoch", s.ID)
	}
	switch s.TitleSource {
	case "", store.TitleUser, store.TitlePrompt, store.TitleAgent:
	default:
		return invalid("session %s has an unknown title source %q", s.ID, s.TitleSource)
	}
	if err := Title(s.Title); err != nil {
		return err
	}
	if s.LastSeq > math.MaxInt64 {
		return invalid("session %s last seq %d out of range", s.ID, s.LastSeq)
	}
	return nil
}

// MaxTitle is the longest title RenameSession stores, in bytes (a
// person's title is at most 200 characters: protocol.MaxTitleRunes).
const MaxTitle = 1024

// Title checks a title about to be stored by RenameSession.
func Title(t string) error {
	if len(t) > MaxTitle {
		return invalid("title of %d bytes is over %d", len(t), MaxTitle)
	}
	if !utf8.ValidString(t) {
		return invalid("title is not UTF-8")
	}
	return nil
}

// MaxQuery is the longest search query, in bytes.
const MaxQuery = 256

// Query checks a session search query.
func Query(q string) error {
	if len(q) > MaxQuery {
		return invalid("query of %d bytes is over %d", len(q), MaxQuery)
	}
	if !utf8.ValidString(q) {
		return invalid("query is not UTF-8")
	}
	return nil
}

// Events checks a batch about to be appended to a session.
func Events(sessionID string, evs []store.Event) error {
	if err := ID("session", sessionID); err != nil {
		return err
	}
	for i, ev := range evs {
		if ev.MessageID == "" {
			return invalid("event %d has an empty message ID", i)
		}
		if ev.Type == "" {
			return invalid("event %d (%s) has an empty type", i, ev.MessageID)
		}
		if len(ev.Data) == 0 {
			return invalid("event %d (%s) has no data", i, ev.MessageID)
		}
		if ev.Answers == ev.MessageID {
			return invalid("event %d (%s) answers itself", i, ev.MessageID)
		}
	}
	return nil
}

// Keep checks Trim's keep count.
func Keep(keep int) error {
	if keep < 0 {
		return invalid("trim keep %d is negative", keep)
	}
	return nil
}

// Interaction checks an interaction about to be opened.
func Interaction(in store.Interaction) error {
	if err := ID("session", in.SessionID); err != nil {
		return err
	}
	if err := ID("interaction", in.ID); err != nil {
		return err
	}
	if in.Outcome != "" {
		return invalid("interaction %s opened with outcome %q", in.ID, in.Outcome)
	}
	return nil
}

// Outcome checks the outcome an interaction is settled with.
func Outcome(outcome string) error {
	switch outcome {
	case "answered", "timeout", "cancelled":
		return nil
	}
	return invalid("interaction outcome %q (want answered, timeout or cancelled)", outcome)
}

// Settle checks the arguments of SettleInteraction: the session and
// interaction IDs, then the outcome.
func Settle(sessionID, id, outcome string) error {
	if err := ID("session", sessionID); err != nil {
		return err
	}
	if err := ID("interaction", id); err != nil {
		return err
	}
	return Outcome(outcome)
}

// Artifact checks an artifact about to be registered.
func Artifact(a store.Artifact) error {
	if err := ID("session", a.SessionID); err != nil {
		return err
	}
	if err := ID("artifact", a.ID); err != nil {
		return err
	}
	if a.Path == "" {
		return invalid("artifact %s has an empty path", a.ID)
	}
	if a.FileName == "" {
		return invalid("artifact %s has an empty file name", a.ID)
	}
	if a.Size < 0 {
		return invalid("artifact %s has a negative size %d", a.ID, a.Size)
	}
	return nil
}

// SameArtifact reports whether a and b register the same file: every
// field but CreatedAt is equal.
func SameArtifact(a, b store.Artifact) bool {
	a.CreatedAt, b.CreatedAt = time.Time{}, time.Time{}
	return a == b
}

// DownloadToken checks a download token about to be created.
func DownloadToken(t store.DownloadToken) error {
	if err := ID("download token", t.ID); err != nil {
		return err
	}
	if len(t.Hash) != sha256.Size {
		return invalid("download token hash of %d bytes (want a SHA-256, %d bytes)", len(t.Hash), sha256.Size)
	}
	if err := ID("session", t.SessionID); err != nil {
		return err
	}
	if err := ID("artifact", t.ArtifactID); err != nil {
		return err
	}
	if err := ID("owner token", t.OwnerID); err != nil {
		return err
	}
	if t.ExpiresAt.IsZero() {
		return invalid("download token %s never expires (an expiry is required)", t.ID)
	}
	return nil
}

// Trim checks the arguments of TrimDownloadTokens.
func Trim(ownerID string, keep int) error {
	if err := ID("owner token", ownerID); err != nil {
		return err
	}
	if keep < 0 {
		return invalid("keep %d is negative", keep)
	}
	return nil
}

// Seq converts an input seq to the signed integer both databases store;
// seqs beyond math.MaxInt64 never exist, so a larger bound is clamped.
func Seq(seq uint64) int64 {
	if seq > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(seq)
}

// ActivityStep is how far behind a session's UpdatedAt must be for
// AppendEvents to move it. Moving it with every batch rewrote the entries
// of the three session indexes on updated_at in each commit (about a third
// of the pages SQLite wrote per event); the lists it orders need no finer
// step.
const ActivityStep = time.Second

// Now is the store's clock: UTC, to the microsecond, the precision both
// backends keep.
func Now() time.Time {
	return Time(time.Now())
}

// Time normalizes a caller's time to what the store returns (UTC, whole
// microseconds); the zero time stays zero.
func Time(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Microsecond)
}

// OrNow is Time(t), or Now() when t is zero.
func OrNow(t time.Time) time.Time {
	if t.IsZero() {
		return Now()
	}
	return Time(t)
}

// Wrap prefixes err with the backend and operation, and, when ctx is done,
// also wraps ctx.Err() so that errors.Is(err, context.Canceled) holds
// whatever the driver reported.
func Wrap(ctxErr error, backend, op string, err error) error {
	if err == nil {
		return nil
	}
	if ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("%s: %s: %w (%w)", backend, op, err, ctxErr)
	}
	return fmt.Errorf("%s: %s: %w", backend, op, err)
}

// Upload checks an upload about to be stored, and the quota it is stored
// within.
func Upload(u store.Upload, q store.UploadQuota) error {
	if err := ID("upload", u.ID); err != nil {
		return err
	}
	if err := ID("session", u.SessionID); err != nil {
		return err
	}
	if err := ID("owner token", u.OwnerID); err != nil {
		return err
	}
	if u.FileName == "" || u.MimeType == "" {
		return invalid("upload %s needs a file name and a media type", u.ID)
	}
	if u.Size != int64(len(u.Data)) {
		return invalid("upload %s has size %d but %d bytes of content", u.ID, u.Size, len(u.Data))
	}
	if u.ExpiresAt.IsZero() {
		return invalid("upload %s never expires (an expiry is required)", u.ID)
	}
	if q.Count < 0 || q.Bytes < 0 {
		return invalid("negative upload quota %+v", q)
	}
	return nil
}

// PushSubscription checks a push subscription about to be stored.
func PushSubscription(p store.PushSubscription) error {
	if p.Endpoint == "" {
		return invalid("empty push endpoint")
	}
	if err := ID("owner token", p.OwnerID); err != nil {
		return err
	}
	if len(p.P256dh) != 65 || p.P256dh[0] != 4 {
		return invalid("push key p256dh of %d bytes (want an uncompressed P-256 point, 65 bytes)", len(p.P256dh))
	}
	if len(p.Auth) != 16 {
		return invalid("push auth secret of %d bytes (want 16)", len(p.Auth))
	}
	return nil
}
