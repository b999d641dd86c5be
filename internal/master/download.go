package master

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/connlimit"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// Downloads: ui.artifacts.list issues download tokens, GET
// /v1/artifacts/{token} streams the file from the session's client (see
// protocol/download.go for the stream and docs/artifacts.md for the
// decisions).

// DefaultDownloadTTL is how long a download link works.
const DefaultDownloadTTL = time.Hour

const (
	// downloadPrefix starts every download token; 43 characters of
	// base64url (32 random bytes) follow.
	downloadPrefix = "ferry_dl_"
	downloadChars  = 43
	// downloadWindow is the credit a download grants its client: the most
	// bytes buffered per download, here and on the client.
	downloadWindow = 32 * protocol.ArtifactChunkSize
	// minStall is the shortest wait for a download's next frame; the
	// stall timeout is the longer of it and two ping intervals.
	minStall = 30 * time.Second
	// writeStall bounds one write to the downloader: one that stops
	// reading does not keep the file open on the client for ever.
	writeStall = time.Minute
	// maxTrackedReads bounds the downloads one client connection streams.
	maxTrackedReads = 1024
)

// metaWait bounds the wait for the client to open the file (a variable so
// that tests can shorten it).
var metaWait = 30 * time.Second

// maxDownloadLinks caps the download links one UI token holds. Every
// listing issues fresh links (only their hashes are stored, so an old one
// cannot be handed out again); past the cap the oldest go, so a UI that
// lists in a loop cannot grow the store without bound. Four full listings
// (protocol.MaxArtifactsLimit each) stay valid. A variable for tests.
var maxDownloadLinks = 4 * protocol.MaxArtifactsLimit

// errNoDownload is the one answer to a download token that is malformed,
// unknown, expired, revoked or another UI's: the body never says which.
var errNoDownload = &protocol.Error{Code: protocol.CodeNotFound, Message: "no such download"}

// newDownloadSecret returns a fresh download token.
func newDownloadSecret() (string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("random download token: %w", err)
	}
	return downloadPrefix + base64.RawURLEncoding.EncodeToString(raw[:]), nil
}

// wellFormedDownload reports whether s has a download token's shape, so
// that no other string costs a store lookup.
func wellFormedDownload(s string) bool {
	enc, ok := strings.CutPrefix(s, downloadPrefix)
	if !ok || len(enc) != downloadChars {
		return false
	}
	_, err := base64.RawURLEncoding.Strict().DecodeString(enc)
	return err == nil
}

func newTokenID() (string, error) {
	var id [12]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", fmt.Errorf("random token id: %w", err)
	}
	return hex.EncodeToString(id[:]), nil
}

func wireArtifact(a store.Artifact) protocol.Artifact {
	return protocol.Artifact{TurnID: a.TurnID, ArtifactID: a.ID, Path: a.Path, FileName: a.FileName,
		Size: a.Size, MimeType: a.MimeType, ToolUseID: a.ToolUseID}
}

// listArtifacts handles ui.artifacts.list: the session's artifacts, each
// with a download token issued now for this connection's UI token.
func (m *Master) listArtifacts(c *conn, msg *protocol.Message) {
	fail := func(e *protocol.Error) { c.sendError(msg.MessageID, msg.SessionID, e) }
	s, e := m.uiSession(c, msg.SessionID)
	if e != nil {
		fail(e)
		return
	}
	p := msg.Payload.(*protocol.ArtifactsList)
	var arts []store.Artifact
	if p.ArtifactID != "" {
		a, err := m.st.Artifact(c.ctx, s.id, p.ArtifactID)
		if errors.Is(err, store.ErrNotFound) {
			fail(&protocol.Error{Code: protocol.CodeNotFound, Field: "payload.artifact_id", Message: "the session has no such artifact"})
			return
		}
		if err != nil {
			fail(m.wireError(err, "artifact"))
			return
		}
		arts = []store.Artifact{a}
	} else {
		limit := protocol.DefaultArtifactsLimit
		if p.Limit != nil {
			limit = *p.Limit
		}
		var err error
		if arts, err = m.st.Artifacts(c.ctx, s.id, limit); err != nil {
			fail(m.wireError(err, "list artifacts"))
			return
		}
	}
	// To the microsecond, as stored: the link says exactly when it ends.
	now := time.Now().UTC().Truncate(time.Microsecond)
	expires := now.Add(m.cfg.DownloadTTL)
	links := make([]protocol.ArtifactLink, len(arts))
	toks := make([]store.DownloadToken, len(arts))
	for i, a := range arts {
		secret, err := newDownloadSecret()
		if err != nil {
			fail(m.wireError(err, "issue download token"))
			return
		}
		id, err := newTokenID()
		if err != nil {
			fail(m.wireError(err, "issue download token"))
			return
		}
		toks[i] = store.DownloadToken{ID: id, Hash: auth.Hash(secret), SessionID: s.id, ArtifactID: a.ID,
			OwnerID: c.token, CreatedAt: now, ExpiresAt: expires}
		links[i] = protocol.ArtifactLink{Artifact: wireArtifact(a), RegisteredAt: a.CreatedAt.UTC().Format(time.RFC3339Nano),
			DownloadURL: "/v1/artifacts/" + secret, ExpiresAt: expires.Format(time.RFC3339Nano)}
	}
	// Paths of up to 4096 characters could make a long list too large for
	// one message: the oldest go, and only the links sent are stored.
	keep := fitLinks(msg, links)
	if err := m.st.CreateDownloadTokens(c.ctx, toks[len(toks)-keep:]); err != nil {
		fail(m.wireError(err, "store download tokens"))
		return
	}
	// Never below this listing's own links: they were just handed out.
	if _, err := m.st.TrimDownloadTokens(c.ctx, c.token, max(maxDownloadLinks, keep)); err != nil {
		fail(m.wireError(err, "trim download tokens"))
		return
	}
	c.send(msg.Reply(protocol.TypeArtifacts, &protocol.Artifacts{Artifacts: links[len(links)-keep:]}))
}

// fitLinks returns how many of the newest links fit in one answer to msg.
func fitLinks(msg *protocol.Message, links []protocol.ArtifactLink) int {
	for keep := len(links); keep > 0; keep /= 2 {
		b, err := json.Marshal(msg.Reply(protocol.TypeArtifacts, &protocol.Artifacts{Artifacts: links[len(links)-keep:]}))
		if err == nil && len(b) <= protocol.MaxMessageBytes {
			return keep
		}
	}
	return 0
}

// downloadError answers a download request that failed before its body.
func downloadError(w http.ResponseWriter, status int, e *protocol.Error) {
	httpError(w, status, e.Code, e.Message)
}

// serveArtifact handles GET (and HEAD) /v1/artifacts/{token}.
//
// The token alone is not enough: the request must also carry the login of
// the UI token it was issued to (that token's cookie share in the session
// cookie, or that UI token as a bearer token). A request without a valid
// login is 401 (with the cookie, so is a link that no longer exists: the
// share is checked against the link's owner); with one, every problem
// with the token itself — malformed, unknown, expired, revoked,
// issued to another UI token, or for a session that UI may no longer see —
// is the same 404.
func (m *Master) serveArtifact(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "private, no-cache")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	var owner store.Token
	if secret, ok := bearer(r); ok {
		if owner, ok = m.authenticate(w, r, secret, store.TokenUI); !ok {
			return
		}
	} else {
		// A browser navigates to the link: its cookie share is checked
		// against the link's owner (browser.go).
		var err error
		if owner, err = m.downloadOwner(r.Context(), r); err != nil {
			if !errors.Is(err, errNotBrowser) {
				downloadError(w, http.StatusInternalServerError, m.wireError(err, "check a download's login"))
				return
			}
			m.log.Info("refused connection", "path", "/v1/artifacts/…", "remote", m.remote(r))
			unauthorized(w)
			return
		}
	}
	dl, sess, art, err := m.lookupDownload(r.Context(), r.PathValue("token"), owner)
	switch {
	case errors.Is(err, store.ErrNotFound):
		m.log.Info("refused a download", "remote", r.RemoteAddr)
		downloadError(w, http.StatusNotFound, errNoDownload)
		return
	case err != nil:
		downloadError(w, http.StatusInternalServerError, m.wireError(err, "look up download"))
		return
	}
	connlimit.MarkAuthenticated(r.Context()) // a valid login and link
	caps, online := m.awaitOnline(r.Context(), sess.MachineID)
	if !online {
		if r.Context().Err() == nil {
			h.Set("Retry-After", "30")
			downloadError(w, http.StatusServiceUnavailable, &protocol.Error{Code: protocol.CodeClientOffline,
				Message: "the machine that holds this file is not connected; try again once it is"})
		}
		return
	}
	d := &download{m: m, w: w, r: r, sess: sess, art: art, token: dl.ID, caps: caps}
	d.run()
}

// lookupDownload resolves a download token for the UI token owner: the
// token's row, its session and its artifact. Every reason to refuse is
// store.ErrNotFound.
func (m *Master) lookupDownload(ctx context.Context, secret string, owner store.Token) (store.DownloadToken, store.Session, store.Artifact, error) {
	var (
		dl   store.DownloadToken
		sess store.Session
		art  store.Artifact
	)
	if !wellFormedDownload(secret) {
		return dl, sess, art, store.ErrNotFound
	}
	dl, err := m.st.DownloadTokenByHash(ctx, auth.Hash(secret))
	if err != nil {
		return dl, sess, art, err
	}
	if dl.OwnerID != owner.ID || !time.Now().Before(dl.ExpiresAt) {
		return dl, sess, art, store.ErrNotFound
	}
	if sess, err = m.st.Session(ctx, dl.SessionID); err != nil {
		return dl, sess, art, err
	}
	if len(owner.Machines) > 0 && !slices.Contains(owner.Machines, sess.MachineID) {
		return dl, sess, art, store.ErrNotFound
	}
	art, err = m.st.Artifact(ctx, dl.SessionID, dl.ArtifactID)
	return dl, sess, art, err
}

// download is one GET /v1/artifacts/{token} in flight: it asks the
// session's client for the file and copies the stream into the response.
type download struct {
	m     *Master
	w     http.ResponseWriter
	r     *http.Request
	sess  store.Session
	art   store.Artifact
	token string
	caps  *protocol.Capabilities

	id    string // request_id
	st    *stream
	ended bool // the client ended the read: no cancel needed
}

func (d *download) log(msg string, args ...any) {
	d.m.log.Info(msg, append([]any{"session", d.sess.ID, "artifact", d.art.ID, "download", d.token}, args...)...)
}

// send publishes a control.artifact.* message to the session's client.
func (d *download) send(msgType string, payload any) {
	msg := protocol.New(msgType, payload)
	msg.SessionID = d.sess.ID
	b, err := protocol.Encode(msg)
	if err != nil {
		d.m.log.Error("encode download control", "type", msgType, "err", err)
		return
	}
	f := controlFrame{SessionID: d.sess.ID, Type: msgType, MessageID: msg.MessageID, Stream: d.id, Msg: b}
	if err := d.m.br.Publish(d.m.ctx, machineTopic(d.sess.MachineID), f.encode()); err != nil {
		d.m.log.Error("publish download control", "type", msgType, "err", err)
	}
}

func (d *download) run() {
	ctx, cancel := context.WithCancel(d.r.Context())
	defer cancel()
	stop := context.AfterFunc(d.m.ctx, cancel) // the master shuts down
	defer stop()

	d.id = protocol.NewID()
	d.st = &stream{wake: make(chan struct{}, 1)}
	unsub, err := d.m.br.Subscribe(artifactTopic(d.sess.MachineID, d.id), d.st.deliver)
	if err != nil {
		downloadError(d.w, http.StatusInternalServerError, d.m.wireError(err, "subscribe to download"))
		return
	}
	defer unsub()
	read := protocol.New(protocol.TypeArtifactRead, &protocol.ArtifactRead{RequestID: d.id, ArtifactID: d.art.ID})
	read.SessionID = d.sess.ID
	if e := d.caps.Check(read, d.sess.Adapter); e != nil {
		downloadError(d.w, http.StatusBadGateway, &protocol.Error{Code: protocol.CodeUnsupported,
			Message: "the machine's client cannot serve downloads; update ferry there"})
		return
	}
	d.send(protocol.TypeArtifactRead, read.Payload)
	defer func() {
		if !d.ended {
			d.send(protocol.TypeArtifactCancel, &protocol.ArtifactCancel{RequestID: d.id})
		}
	}()

	it, err := d.st.next(ctx, metaWait)
	switch {
	case errors.Is(err, errStalled):
		d.log("the client did not open the file in time")
		downloadError(d.w, http.StatusGatewayTimeout, &protocol.Error{Code: protocol.CodeClientOffline,
			Message: "the machine that holds this file did not answer in time"})
		return
	case err != nil:
		if ctx.Err() == nil {
			d.log("download stream failed", "err", err)
			downloadError(d.w, http.StatusBadGateway, errInternal)
		}
		return
	case it.end != nil:
		d.ended = true
		d.clientFailed(it.end.Error)
		return
	case it.meta == nil:
		d.log("the client sent data before describing the file")
		downloadError(d.w, http.StatusBadGateway, errInternal)
		return
	}
	d.respond(ctx, it.meta)
}

// clientFailed answers the client's refusal to open the file.
func (d *download) clientFailed(e *protocol.Error) {
	if e == nil {
		e = &protocol.Error{Code: protocol.CodeInternal}
	}
	d.log("the client refused a download", "code", e.Code, "message", e.Message)
	switch e.Code {
	case protocol.CodeNotFound:
		downloadError(d.w, http.StatusNotFound, &protocol.Error{Code: protocol.CodeNotFound,
			Message: "the file is no longer available on its machine"})
	case protocol.CodeBusy:
		d.w.Header().Set("Retry-After", "5")
		downloadError(d.w, http.StatusServiceUnavailable, &protocol.Error{Code: protocol.CodeBusy,
			Message: "the machine that holds this file serves too many downloads; try again shortly"})
	case protocol.CodeClientOffline:
		d.w.Header().Set("Retry-After", "30")
		downloadError(d.w, http.StatusServiceUnavailable, &protocol.Error{Code: protocol.CodeClientOffline,
			Message: "the machine that holds this file went offline; try again once it is connected"})
	default:
		downloadError(d.w, http.StatusBadGateway, &protocol.Error{Code: protocol.CodeInternal,
			Message: "the machine that holds this file could not read it"})
	}
}

// respond answers from the file's description and streams the body.
func (d *download) respond(ctx context.Context, meta *protocol.ArtifactMeta) {
	h := d.w.Header()
	etag := `"` + meta.ETag + `"`
	mod, _ := time.Parse(time.RFC3339Nano, meta.ModifiedAt)
	h.Set("ETag", etag)
	if !mod.IsZero() {
		h.Set("Last-Modified", mod.UTC().Format(http.TimeFormat))
	}
	plan := planResponse(d.r.Method, d.r.Header, meta.Size, etag, mod)
	switch plan.status {
	case http.StatusNotModified:
		d.w.WriteHeader(http.StatusNotModified)
		return
	case http.StatusRequestedRangeNotSatisfiable:
		h.Set("Content-Range", "bytes */"+strconv.FormatInt(meta.Size, 10))
		downloadError(d.w, http.StatusRequestedRangeNotSatisfiable, &protocol.Error{Code: protocol.CodeInvalidValue,
			Field: "Range", Message: "the range is outside the file"})
		return
	}
	h.Set("Accept-Ranges", "bytes")
	h.Set("Content-Type", contentType(d.art.MimeType))
	h.Set("Content-Disposition", contentDisposition(d.art.FileName))
	// Were it ever rendered, it could not run script on the master's origin.
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Content-Length", strconv.FormatInt(plan.part.length, 10))
	if plan.status == http.StatusPartialContent {
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", plan.part.start, plan.part.start+plan.part.length-1, meta.Size))
	}
	if d.r.Method == http.MethodHead || plan.part.length == 0 {
		d.w.WriteHeader(plan.status)
		return
	}
	d.st.setWindow(downloadWindow)
	d.send(protocol.TypeArtifactRange, &protocol.ArtifactRange{RequestID: d.id, Offset: plan.part.start,
		Length: plan.part.length, Window: downloadWindow})
	if err := d.copy(ctx, plan); err != nil {
		d.log("download cut short", "err", err)
		if ctx.Err() == nil {
			// The response is under way with a Content-Length it will not
			// reach: cut the connection so the downloader sees it failed.
			panic(http.ErrAbortHandler)
		}
	}
}

// bodyHeaders describe a body; an error answered instead drops them.
var bodyHeaders = []string{"Accept-Ranges", "Content-Type", "Content-Disposition", "Content-Security-Policy",
	"Cross-Origin-Resource-Policy", "Content-Length", "Content-Range", "ETag", "Last-Modified"}

// copy writes the range's data frames to the response, in order,
// acknowledging every quarter window so the client keeps sending. The
// status goes out with the first frame, so a client that fails before
// sending any data is still answered with an error status.
func (d *download) copy(ctx context.Context, plan responsePlan) error {
	rc := http.NewResponseController(d.w)
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }() // the connection may serve other requests
	stall := max(minStall, 2*d.m.cfg.PingInterval)
	next, end, acked := plan.part.start, plan.part.start+plan.part.length, plan.part.start
	started := false
	for next < end {
		it, err := d.st.next(ctx, stall)
		switch {
		case err != nil && !started && ctx.Err() == nil:
			d.log("download stream failed before its data", "err", err)
			d.unsendBody()
			downloadError(d.w, http.StatusGatewayTimeout, &protocol.Error{Code: protocol.CodeClientOffline,
				Message: "the machine that holds this file stopped answering"})
			return nil
		case err != nil:
			return err
		case it.end != nil && !started:
			d.ended = true
			d.unsendBody()
			d.clientFailed(it.end.Error)
			return nil
		case it.end != nil:
			d.ended = true
			if it.end.Error != nil {
				return fmt.Errorf("the client ended the download: %s: %s", it.end.Error.Code, it.end.Error.Message)
			}
			return fmt.Errorf("the client ended the download at %d of %d", next, end)
		case it.meta != nil:
			return errors.New("the client described the file twice")
		}
		c := it.chunk
		if c.Offset != next || int64(len(c.Data)) != min(protocol.ArtifactChunkSize, end-next) {
			return fmt.Errorf("the client sent bytes %d+%d where %d was next", c.Offset, len(c.Data), next)
		}
		if !started {
			d.w.WriteHeader(plan.status)
			started = true
		}
		_ = rc.SetWriteDeadline(time.Now().Add(writeStall))
		if _, err := d.w.Write(c.Data); err != nil {
			return fmt.Errorf("write to the downloader: %w", err)
		}
		next += int64(len(c.Data))
		if next < end && next-acked >= downloadWindow/4 {
			d.send(protocol.TypeArtifactAck, &protocol.ArtifactAck{RequestID: d.id, Through: next})
			acked = next
		}
	}
	// Complete: the client ends the read itself.
	d.ended = true
	return nil
}

// unsendBody drops the headers of the body that will not come.
func (d *download) unsendBody() {
	for _, k := range bodyHeaders {
		d.w.Header().Del(k)
	}
}

var (
	errStalled  = errors.New("the download stalled")
	errOverflow = errors.New("the client sent past its window")
)

// stream is the receiving end of one download's topic: the client's
// frames, queued until the download's goroutine takes them. Its deliver
// never blocks; the window the client honours bounds the queue, and a
// client that does not honour it fails the download.
type stream struct {
	mu       sync.Mutex
	items    []streamItem
	buffered int64 // data bytes queued
	window   int64 // 0 until the range is sent
	failed   error
	wake     chan struct{} // cap 1
}

type streamItem struct {
	meta  *protocol.ArtifactMeta
	end   *protocol.ArtifactEnd
	chunk protocol.ArtifactChunk
}

func (st *stream) setWindow(n int64) {
	st.mu.Lock()
	st.window = n
	st.mu.Unlock()
}

// deliver is the topic's subscriber.
func (st *stream) deliver(data []byte) {
	var it streamItem
	var bad error
	if len(data) > 0 && data[0] == '{' {
		msg, err := protocol.Decode(data)
		switch {
		case err != nil:
			bad = err
		default:
			switch p := msg.Payload.(type) {
			case *protocol.ArtifactMeta:
				it.meta = p
			case *protocol.ArtifactEnd:
				it.end = p
			default:
				bad = fmt.Errorf("unexpected %s in a download", msg.Type)
			}
		}
	} else {
		it.chunk, bad = protocol.DecodeArtifactChunk(data)
	}
	st.mu.Lock()
	switch {
	case st.failed != nil:
	case bad != nil:
		st.failed = bad
	default:
		st.buffered += int64(len(it.chunk.Data))
		if st.buffered > st.window {
			st.failed = errOverflow
		} else {
			st.items = append(st.items, it)
		}
	}
	st.mu.Unlock()
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// next returns the next frame, waiting up to wait for it.
func (st *stream) next(ctx context.Context, wait time.Duration) (streamItem, error) {
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		st.mu.Lock()
		if len(st.items) > 0 {
			it := st.items[0]
			st.items[0] = streamItem{}
			st.items = st.items[1:]
			st.buffered -= int64(len(it.chunk.Data))
			st.mu.Unlock()
			return it, nil
		}
		failed := st.failed
		st.mu.Unlock()
		if failed != nil {
			return streamItem{}, failed
		}
		select {
		case <-st.wake:
		case <-ctx.Done():
			return streamItem{}, ctx.Err()
		case <-t.C:
			return streamItem{}, errStalled
		}
	}
}

// --- the client connection's side ---

// trackRead records (or forgets) a download this connection streams; it
// runs under cl.mu, from deliverControl. A read beyond the bound is not
// delivered: its download is ended as busy.
func (m *Master) trackRead(c *conn, f *controlFrame) bool {
	cl := c.cl
	switch f.Type {
	case protocol.TypeArtifactRead:
		if len(cl.reads) >= maxTrackedReads {
			m.endRead(cl.machineID, f.Stream, f.SessionID, &protocol.Error{Code: protocol.CodeBusy, Message: "too many downloads"})
			return false
		}
		cl.reads[f.Stream] = f.SessionID
	case protocol.TypeArtifactCancel:
		delete(cl.reads, f.Stream)
	}
	return true
}

// routeArtifact relays a client's session.artifact.meta or .end to the
// download it belongs to, if this connection streams it.
func (m *Master) routeArtifact(c *conn, machine string, msg *protocol.Message, data []byte) {
	var id string
	switch p := msg.Payload.(type) {
	case *protocol.ArtifactMeta:
		id = p.RequestID
	case *protocol.ArtifactEnd:
		id = p.RequestID
	}
	c.cl.mu.Lock()
	_, ok := c.cl.reads[id]
	if ok && msg.Type == protocol.TypeArtifactEnd {
		delete(c.cl.reads, id)
	}
	c.cl.mu.Unlock()
	if !ok {
		c.log.Debug("download message for no download of this connection", "type", msg.Type, "request", id)
		return
	}
	if err := m.br.Publish(c.ctx, artifactTopic(machine, id), data); err != nil {
		c.log.Error("relay download message", "err", err)
	}
}

// handleClientChunk relays a client's binary data frame to its download.
func (m *Master) handleClientChunk(c *conn, data []byte) {
	id := protocol.ArtifactChunkRequest(data)
	c.cl.mu.Lock()
	machine := c.cl.machineID
	_, ok := c.cl.reads[id]
	c.cl.mu.Unlock()
	switch {
	case id == "":
		c.sendError("", "", &protocol.Error{Code: protocol.CodeInvalidValue, Field: "frame", Message: "not an artifact data frame"})
		return
	case !ok:
		// A frame still under way when its download was cancelled.
		c.log.Debug("data frame for no download of this connection", "request", id)
		return
	}
	if err := m.br.Publish(c.ctx, artifactTopic(machine, id), data); err != nil {
		c.log.Error("relay download data", "err", err)
	}
}

// endReads ends, with client_offline, the downloads a connection that went
// away was streaming (reads maps request_id → session_id).
func (m *Master) endReads(machine string, reads map[string]string) {
	for id, sid := range reads {
		m.endRead(machine, id, sid, &protocol.Error{Code: protocol.CodeClientOffline, Message: "the client went away"})
	}
}

// endRead publishes the master's own session.artifact.end to a download.
func (m *Master) endRead(machine, id, sessionID string, e *protocol.Error) {
	end := protocol.New(protocol.TypeArtifactEnd, &protocol.ArtifactEnd{RequestID: id, Error: e})
	end.SessionID = sessionID
	b, err := protocol.Encode(end)
	if err != nil {
		m.log.Error("encode download end", "err", err)
		return
	}
	if err := m.br.Publish(m.ctx, artifactTopic(machine, id), b); err != nil {
		m.log.Error("publish download end", "err", err)
	}
}
