// Package upload is the master's side of attachments: it receives the
// files a browser uploads for a session's prompts, checks a prompt's
// ferry-upload URLs and grants them to that prompt, and serves an upload
// to the client that holds a grant.
//
// Endpoints (routed by package master, which authenticates the uploader):
//
//   - POST /v1/sessions/{session_id}/uploads (Receive): one multipart part
//     named "file". Answers 201 {"upload_id","file_name","mime_type",
//     "size_bytes","expires_at"}.
//   - GET /v1/uploads/{upload_id}?grant=G (Serve): the bytes.
//
// Guarantees:
//
//   - An upload is stored only when everything about it is right: the
//     session exists and its machine is one the uploader's UI token may
//     see, the body is one "file" part with a bare file name (the check
//     context_files' file_name passes), its content is within the cap
//     (read at most one byte past it, never buffered further), its type
//     sniffed from the bytes is an allowed one (attachment.Sniff), and the
//     session's quota holds. Anything else is a coded JSON error
//     {"error":{"code","field","message"}} with a fitting status, and
//     nothing is stored.
//   - An upload is bound to its session and its uploader (the UI token)
//     and expires (Config.TTL); it goes with either (store cascades).
//   - A prompt may name an upload only of its own session and its own
//     sender's UI token, not expired; Grant rewrites each such URL to
//     carry a grant: an HMAC (key shared by the master nodes, from the
//     store) over the upload ID, the session ID, the prompt's message_id
//     and an expiry (Config.GrantTTL). A prompt the master sends again
//     (the client had not answered it) is granted again the same way by
//     Regrant, which checks that each upload is still the session's and
//     not expired. Serve hands out the bytes only for a valid, unexpired
//     grant of that upload, as the sniffed type, with nosniff, no caching,
//     as an attachment in a sandbox.
//   - At most Config.MaxReceiving uploads are read at once (each holds its
//     file in memory until it is stored), and at most
//     Config.MaxReceivingPerOwner of one UI token. An upload waits for a
//     slot at most Config.SlotWait, then is answered 503 busy with
//     Retry-After: never a hang.
//   - A slot cannot be held by a peer that stalls: while it holds one, its
//     body must bring at least Config.MinRate bytes a second over every
//     Config.RateWindow and arrive whole within Config.BodyTimeout, or it
//     is answered 408 and its connection closed. Both are the
//     connection's read deadline, so a stalled read returns.
//   - Internal errors are logged and answered as code internal only; the
//     mapping is in one function (writeError).
package upload

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ferry-dev/ferry/internal/attachment"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// Defaults of Config.
const (
	DefaultTTL        = 24 * time.Hour
	DefaultGrantTTL   = 15 * time.Minute
	DefaultQuotaCount = 20
	DefaultQuotaBytes = 100 << 20
)

// KeyName is the store secret that signs grants.
const KeyName = "upload-grant-key"

// multipartSlack is what the body may hold beyond the file's cap: the
// part's headers and the boundaries.
const multipartSlack = 64 << 10

// maxFileNameLen matches context_files' file_name limit.
const maxFileNameLen = 1024

// Defaults of Config's receive bounds. The uploads read at once each hold
// their file in memory until it is stored, so the others wait for a slot
// (bounded memory, MaxBytes each) rather than all reading together; a
// slot is held only while the body keeps coming.
const (
	DefaultMaxReceiving         = 4
	DefaultMaxReceivingPerOwner = 2
	DefaultSlotWait             = 5 * time.Second
	DefaultBodyTimeout          = 5 * time.Minute
	DefaultMinRate              = 4 << 10 // bytes a second
	DefaultRateWindow           = 10 * time.Second
)

// retryAfter is what a busy answer tells the uploader to wait.
const retryAfter = 2 * time.Second

// Config configures a Service.
type Config struct {
	// Store keeps the uploads (required).
	Store store.Store
	// Key signs grants (required, at least 32 bytes).
	Key []byte
	// MaxBytes caps one upload; 0 (or more than attachment.MaxBytes):
	// attachment.MaxBytes, which the client enforces too.
	MaxBytes int64
	// TTL is how long an upload is kept; default DefaultTTL.
	TTL time.Duration
	// GrantTTL is how long a prompt's grant lets the client fetch;
	// default DefaultGrantTTL.
	GrantTTL time.Duration
	// Quota bounds one session's live uploads; a zero field takes the
	// default (DefaultQuotaCount, DefaultQuotaBytes), a negative one is
	// no bound.
	Quota store.UploadQuota
	// Logger receives failures; nil: discard.
	Logger *slog.Logger
	// Now is the clock of expiries; nil: time.Now. (Reading a body is
	// timed by the real clock: it sets the connection's deadlines.)
	Now func() time.Time

	// MaxReceiving bounds the uploads read at once, MaxReceivingPerOwner
	// those of one UI token; SlotWait is how long an upload waits for a
	// slot before it is answered busy. MinRate (bytes a second, over each
	// RateWindow) and BodyTimeout bound a body while it holds a slot.
	// Zero takes the Default* value.
	MaxReceiving, MaxReceivingPerOwner int
	SlotWait, BodyTimeout, RateWindow  time.Duration
	MinRate                            int64
}

// Service receives, grants and serves uploads.
type Service struct {
	cfg   Config
	slots *slots // the uploads being read
}

// New checks cfg and fills its defaults.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("upload: Config.Store is required")
	}
	if len(cfg.Key) < 32 {
		return nil, errors.New("upload: Config.Key needs at least 32 bytes")
	}
	if cfg.MaxBytes <= 0 || cfg.MaxBytes > attachment.MaxBytes {
		cfg.MaxBytes = attachment.MaxBytes
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.GrantTTL <= 0 {
		cfg.GrantTTL = DefaultGrantTTL
	}
	cfg.Quota.Count = quota(cfg.Quota.Count, DefaultQuotaCount)
	cfg.Quota.Bytes = quota(cfg.Quota.Bytes, DefaultQuotaBytes)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.MaxReceiving = orDefault(cfg.MaxReceiving, DefaultMaxReceiving)
	cfg.MaxReceivingPerOwner = orDefault(cfg.MaxReceivingPerOwner, DefaultMaxReceivingPerOwner)
	cfg.SlotWait = orDefault(cfg.SlotWait, DefaultSlotWait)
	cfg.BodyTimeout = orDefault(cfg.BodyTimeout, DefaultBodyTimeout)
	cfg.RateWindow = orDefault(cfg.RateWindow, DefaultRateWindow)
	cfg.MinRate = orDefault(cfg.MinRate, DefaultMinRate)
	return &Service{cfg: cfg, slots: newSlots(cfg.MaxReceiving, cfg.MaxReceivingPerOwner)}, nil
}

// orDefault is v, or def when v is not positive.
func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// quota is v with 0 as def and a negative value as no bound (0 in the store).
func quota[T int | int64](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// MaxBytes is the cap on one upload.
func (s *Service) MaxBytes() int64 { return s.cfg.MaxBytes }

// Answer is the JSON body of a stored upload (201).
type Answer struct {
	UploadID  string    `json:"upload_id"`
	FileName  string    `json:"file_name"`
	MimeType  string    `json:"mime_type"`
	SizeBytes int64     `json:"size_bytes"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Error is a refusal with its HTTP status; writeError answers it.
type Error struct {
	Status int
	Wire   *protocol.Error
	// RetryAfter, when set, is sent as Retry-After (whole seconds).
	RetryAfter time.Duration
}

func (e *Error) Error() string { return e.Wire.Code + ": " + e.Wire.Message }

func refuse(status int, code, field, msg string) *Error {
	return &Error{Status: status, Wire: &protocol.Error{Code: code, Field: field, Message: msg}}
}

// Unauthorized is the answer to a request without a valid UI login.
var Unauthorized = refuse(http.StatusUnauthorized, protocol.CodeUnauthorized, "", "missing, invalid or expired UI login")

var (
	errNoSession = refuse(http.StatusNotFound, protocol.CodeNotFound, "session_id", "no such session")
	errNoUpload  = refuse(http.StatusNotFound, protocol.CodeNotFound, "upload_id", "no such upload")
	errBadGrant  = refuse(http.StatusForbidden, protocol.CodeUnauthorized, "grant", "the grant is not valid for this upload")
	errOldGrant  = refuse(http.StatusGone, protocol.CodeUnauthorized, "grant", "the grant has expired; send the prompt again")
	errExpired   = refuse(http.StatusGone, protocol.CodeNotFound, "upload_id", "the upload has expired; attach the file again")
)

// WriteError answers a request that failed: a *Error as it says, anything
// else logged and answered as internal. It is the one place failures
// become what a peer sees.
func (s *Service) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	var e *Error
	if !errors.As(err, &e) {
		if r.Context().Err() != nil {
			return // the peer went away
		}
		s.cfg.Logger.Error("upload request failed", "route", r.Pattern, "err", err)
		e = refuse(http.StatusInternalServerError, protocol.CodeInternal, "", "internal error")
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(int64((e.RetryAfter+time.Second-1)/time.Second), 10))
	}
	writeJSON(w, e.Status, struct {
		Error *protocol.Error `json:"error"`
	}{e.Wire})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Receive handles POST /v1/sessions/{session_id}/uploads for owner, the
// UI token the master authenticated the request as.
func (s *Service) Receive(w http.ResponseWriter, r *http.Request, owner store.Token) {
	ans, err := s.receive(w, r, owner)
	if err != nil {
		// Whatever is left of a refused body is not read: close instead
		// of draining up to the cap.
		w.Header().Set("Connection", "close")
		s.WriteError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, ans)
}

func (s *Service) receive(w http.ResponseWriter, r *http.Request, owner store.Token) (*Answer, error) {
	ctx := r.Context()
	sessionID := r.PathValue("session_id")
	if err := s.checkSession(ctx, sessionID, owner); err != nil {
		return nil, err
	}
	if r.ContentLength > s.cfg.MaxBytes+multipartSlack {
		return nil, s.tooLarge()
	}
	release, err := s.slots.acquire(ctx, owner.ID, s.cfg.SlotWait)
	if err != nil {
		return nil, err
	}
	defer release()
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, refuse(http.StatusUnsupportedMediaType, protocol.CodeUnsupported, "Content-Type", "send multipart/form-data with one part named \"file\"")
	}
	paced, err := s.pace(w, r.Body)
	if err != nil {
		return nil, err
	}
	name, data, err := s.readFile(paced, params["boundary"])
	if err != nil {
		return nil, err
	}
	paced.finish()
	sniffed, err := attachment.Sniff(name, data)
	if err != nil {
		return nil, refuse(http.StatusUnsupportedMediaType, protocol.CodeUnsupported, "file",
			"the file is not an image (PNG, JPEG, GIF, WebP), a PDF or UTF-8 text")
	}
	id, err := newID()
	if err != nil {
		return nil, err
	}
	now := s.cfg.Now().UTC().Truncate(time.Microsecond)
	u := store.Upload{ID: id, SessionID: sessionID, OwnerID: owner.ID, FileName: name, MimeType: sniffed,
		Size: int64(len(data)), Data: data, CreatedAt: now, ExpiresAt: now.Add(s.cfg.TTL)}
	switch err := s.cfg.Store.PutUpload(ctx, u, s.cfg.Quota); {
	case errors.Is(err, store.ErrQuota):
		return nil, refuse(http.StatusRequestEntityTooLarge, protocol.CodeInvalidValue, "file",
			"this session already holds the most uploads it may ("+s.quotaText()+"); wait for older ones to expire")
	case errors.Is(err, store.ErrNotFound): // the session or the owner went meanwhile
		return nil, errNoSession
	case err != nil:
		return nil, fmt.Errorf("store upload: %w", err)
	}
	return &Answer{UploadID: id, FileName: name, MimeType: sniffed, SizeBytes: u.Size, ExpiresAt: u.ExpiresAt}, nil
}

// readFile reads the multipart body: one part named "file", its bare
// name and at most MaxBytes of content.
func (s *Service) readFile(body *pacedBody, boundary string) (string, []byte, error) {
	mr := multipart.NewReader(http.MaxBytesReader(nil, body, s.cfg.MaxBytes+multipartSlack), boundary)
	part, err := mr.NextPart()
	if err != nil {
		return "", nil, s.bodyError(err, body)
	}
	if part.FormName() != "file" {
		return "", nil, refuse(http.StatusBadRequest, protocol.CodeInvalidValue, "file", "the body must hold exactly one part, named \"file\"")
	}
	name, err := fileName(part)
	if err != nil {
		return "", nil, err
	}
	data, err := io.ReadAll(io.LimitReader(part, s.cfg.MaxBytes+1))
	if err != nil {
		return "", nil, s.bodyError(err, body)
	}
	if int64(len(data)) > s.cfg.MaxBytes {
		return "", nil, s.tooLarge()
	}
	if _, err := mr.NextPart(); !errors.Is(err, io.EOF) {
		if err == nil {
			return "", nil, refuse(http.StatusBadRequest, protocol.CodeInvalidValue, "file", "the body must hold exactly one part, named \"file\"")
		}
		return "", nil, s.bodyError(err, body)
	}
	return name, data, nil
}

// quotaText says the session quota, e.g. "20 files, 100 MiB together".
func (s *Service) quotaText() string {
	var parts []string
	if q := s.cfg.Quota; q.Count > 0 {
		parts = append(parts, fmt.Sprintf("%d files", q.Count))
	}
	if q := s.cfg.Quota; q.Bytes > 0 {
		parts = append(parts, fmt.Sprintf("%d MiB together", q.Bytes>>20))
	}
	return strings.Join(parts, ", ")
}

// size says n bytes in whole MiB or KiB where it is one.
func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

func (s *Service) tooLarge() *Error {
	return refuse(http.StatusRequestEntityTooLarge, protocol.CodeInvalidValue, "file",
		"the file is larger than "+size(s.cfg.MaxBytes)+", the most this master takes")
}

// bodyError classifies a failure reading the multipart body.
func (s *Service) bodyError(err error, body *pacedBody) error {
	var mbe *http.MaxBytesError
	switch {
	case body.cut != nil:
		return body.cut
	case errors.As(err, &mbe):
		return s.tooLarge()
	case errors.Is(err, io.EOF):
		return refuse(http.StatusBadRequest, protocol.CodeMissingField, "file", "the body has no part named \"file\"")
	}
	return refuse(http.StatusBadRequest, protocol.CodeInvalidValue, "file", "the multipart body is malformed")
}

// fileName is the part's filename parameter as sent: multipart's
// FileName would quietly cut a path down to its last element, and a name
// with a path is refused instead, like context_files' file_name.
func fileName(part *multipart.Part) (string, error) {
	_, params, err := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
	name := params["filename"]
	if err != nil || name == "" || len(name) > maxFileNameLen {
		return "", refuse(http.StatusBadRequest, protocol.CodeInvalidValue, "file.filename", "the part needs a filename (a bare name of at most 1024 bytes)")
	}
	if msg := protocol.CheckFileName(name); msg != "" {
		return "", refuse(http.StatusBadRequest, protocol.CodeInvalidValue, "file.filename", msg)
	}
	return name, nil
}

// checkSession: the session exists and owner may see its machine; both
// failures look the same.
func (s *Service) checkSession(ctx context.Context, sessionID string, owner store.Token) error {
	if sessionID == "" {
		return errNoSession
	}
	sess, err := s.cfg.Store.Session(ctx, sessionID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return errNoSession
	case err != nil:
		return fmt.Errorf("look up session: %w", err)
	}
	if len(owner.Machines) > 0 && !slices.Contains(owner.Machines, sess.MachineID) {
		return errNoSession
	}
	return nil
}

// newID is a fresh upload ID: upl_ and 128 random bits.
func newID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("upload id: %w", err)
	}
	return protocol.UploadIDPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// Grant checks a prompt's context_files for the uploads it names and
// returns them with every ferry-upload URL granted to this prompt (the
// others unchanged, the slice not shared with files). Each named upload
// must exist, belong to sessionID and ownerID (the sending UI token) and
// not have expired; its mime_type becomes the sniffed one. A refusal names
// payload.context_files[i].file_url.
func (s *Service) Grant(ctx context.Context, ownerID, sessionID, messageID string, files []protocol.ContextFile) ([]protocol.ContextFile, error) {
	return s.grant(ctx, &ownerID, sessionID, messageID, files)
}

// Regrant grants again the uploads a stored prompt names (the session's
// log keeps their URLs without a grant), so that the master can send that
// prompt to the client again: each must still be an upload of sessionID,
// not expired. Its owner is not checked again: Grant did when the prompt
// was sent and stored.
func (s *Service) Regrant(ctx context.Context, sessionID, messageID string, files []protocol.ContextFile) ([]protocol.ContextFile, error) {
	return s.grant(ctx, nil, sessionID, messageID, files)
}

// grant is Grant, checking each upload's owner against *ownerID unless
// ownerID is nil (Regrant).
func (s *Service) grant(ctx context.Context, ownerID *string, sessionID, messageID string, files []protocol.ContextFile) ([]protocol.ContextFile, error) {
	var out []protocol.ContextFile
	now := s.cfg.Now()
	for i, f := range files {
		id, grant, ok := protocol.ParseUploadURL(f.FileURL)
		if !ok {
			continue
		}
		field := fmt.Sprintf("payload.context_files[%d].file_url", i)
		if grant != "" {
			return nil, &protocol.Error{Code: protocol.CodeInvalidValue, Field: field, Message: "a prompt names an upload without a grant; the master grants it"}
		}
		u, err := s.cfg.Store.UploadInfo(ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound) || err == nil && (u.SessionID != sessionID || ownerID != nil && u.OwnerID != *ownerID):
			return nil, &protocol.Error{Code: protocol.CodeNotFound, Field: field, Message: "no such upload in this session"}
		case err != nil:
			return nil, fmt.Errorf("look up upload: %w", err)
		case !now.Before(u.ExpiresAt):
			return nil, &protocol.Error{Code: protocol.CodeInvalidValue, Field: field, Message: "the upload has expired; attach the file again"}
		}
		if out == nil {
			out = slices.Clone(files)
		}
		exp := now.Add(s.cfg.GrantTTL)
		if u.ExpiresAt.Before(exp) {
			exp = u.ExpiresAt
		}
		out[i].FileURL = protocol.UploadURL(id, s.sign(id, sessionID, messageID, exp.Unix()))
		out[i].MimeType = u.MimeType
	}
	if out == nil {
		return files, nil
	}
	return out, nil
}

// Grant format: v1.<expiry, Unix seconds>.<message_id, base64url>.<MAC,
// base64url>; the MAC covers the upload and session IDs too, which the
// upload's row supplies when it is checked.
const grantVersion = "v1"

func (s *Service) mac(uploadID, sessionID, messageID string, exp int64) []byte {
	h := hmac.New(sha256.New, s.cfg.Key)
	for _, p := range []string{"ferry upload grant " + grantVersion, uploadID, sessionID, messageID, strconv.FormatInt(exp, 10)} {
		_, _ = io.WriteString(h, p)
		_, _ = h.Write([]byte{0})
	}
	return h.Sum(nil)
}

func (s *Service) sign(uploadID, sessionID, messageID string, exp int64) string {
	return strings.Join([]string{grantVersion, strconv.FormatInt(exp, 10),
		base64.RawURLEncoding.EncodeToString([]byte(messageID)),
		base64.RawURLEncoding.EncodeToString(s.mac(uploadID, sessionID, messageID, exp))}, ".")
}

// verify checks grant for the upload: errBadGrant unless it is one this
// master signed for it, errOldGrant when it has expired.
func (s *Service) verify(grant string, u store.Upload) error {
	parts := strings.Split(grant, ".")
	if len(parts) != 4 || parts[0] != grantVersion {
		return errBadGrant
	}
	exp, err1 := strconv.ParseInt(parts[1], 10, 64)
	msgID, err2 := base64.RawURLEncoding.DecodeString(parts[2])
	// Signed again and compared whole: only the canonical form of a grant
	// this master issued passes (no leading zeros, no padding bits).
	if err1 != nil || err2 != nil || !hmac.Equal([]byte(grant), []byte(s.sign(u.ID, u.SessionID, string(msgID), exp))) {
		return errBadGrant
	}
	if !s.cfg.Now().Before(time.Unix(exp, 0)) {
		return errOldGrant
	}
	return nil
}

// Serve handles GET /v1/uploads/{upload_id}?grant=G.
func (s *Service) Serve(w http.ResponseWriter, r *http.Request) {
	u, err := s.serve(r)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	h := w.Header()
	ct := u.MimeType
	if strings.HasPrefix(ct, "text/") || ct == "application/json" {
		ct += "; charset=utf-8"
	}
	h.Set("Content-Type", ct)
	h.Set("Content-Length", strconv.FormatInt(u.Size, 10))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	// Never a page of the master's origin, whatever the bytes are.
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": u.FileName}))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(u.Data)
	}
}

func (s *Service) serve(r *http.Request) (store.Upload, error) {
	id := r.PathValue("upload_id")
	q := r.URL.Query()
	grant := q.Get("grant")
	if _, _, ok := protocol.ParseUploadURL(protocol.UploadURL(id, "")); !ok {
		return store.Upload{}, errNoUpload
	}
	if grant == "" || len(q) != 1 || len(q["grant"]) != 1 {
		return store.Upload{}, errBadGrant
	}
	info, err := s.cfg.Store.UploadInfo(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Upload{}, errNoUpload
	case err != nil:
		return store.Upload{}, fmt.Errorf("look up upload: %w", err)
	}
	if err := s.verify(grant, info); err != nil {
		return store.Upload{}, err
	}
	if !s.cfg.Now().Before(info.ExpiresAt) {
		return store.Upload{}, errExpired
	}
	u, err := s.cfg.Store.Upload(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrNotFound): // swept meanwhile
		return store.Upload{}, errExpired
	case err != nil:
		return store.Upload{}, fmt.Errorf("read upload: %w", err)
	}
	return u, nil
}
