package master

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/connlimit"
	dl "github.com/ferry-dev/ferry/internal/master/download"
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
		secret, err := dl.NewToken()
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
	link, sess, art, err := m.lookupDownload(r.Context(), r.PathValue("token"), owner)
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
	d := &download{m: m, w: w, r: r, sess: sess, art: art, token: link.ID, caps: caps}
	d.run()
}

// lookupDownload resolves a download token for the UI token owner: the
// token's row, its session and its artifact. Every reason to refuse is
// store.ErrNotFound.
func (m *Master) lookupDownload(ctx context.Context, secret string, owner store.Token) (store.DownloadToken, store.Session, store.Artifact, error) {
	var (
		link store.DownloadToken
		sess store.Session
		art  store.Artifact
	)
	if !dl.WellFormedToken(secret) {
		return link, sess, art, store.ErrNotFound
	}
	link, err := m.st.DownloadTokenByHash(ctx, auth.Hash(secret))
	if err != nil {
		return link, sess, art, err
	}
	if link.OwnerID != owner.ID || !time.Now().Before(link.ExpiresAt) {
		return link, sess, art, store.ErrNotFound
	}
	if sess, err = m.st.Session(ctx, link.SessionID); err != nil {
		return link, sess, art, err
	}
	if len(owner.Machines) > 0 && !slices.Contains(owner.Machines, sess.MachineID) {
		return link, sess, art, store.ErrNotFound
	}
	art, err = m.st.Artifact(ctx, link.SessionID, link.ArtifactID)
	return link, sess, art, err
}

// download is one GET /v1/artifacts/{token} in flight: it asks the
// session's client for the file and serves the stream through the
// download package, which answers the request's ranges and conditions.
type download struct {
	m     *Master
	w     http.ResponseWriter
	r     *http.Request
	sess  store.Session
	art   store.Artifact
	token string
	caps  *protocol.Capabilities

	id     string // request_id of the read under way
	st     *dl.Stream
	unsub  func() // of the read's topic; nil when no read is under way
	ended  bool   // the client ended the read: no cancel needed
	meta   *protocol.ArtifactMeta
	ranges int // ranges asked of the file so far
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

var (
	// errNoDownloads: the machine's client predates downloads.
	errNoDownloads = errors.New("the client cannot serve downloads")
)

// subscribeError is a broker failure to follow a read's topic.
type subscribeError struct{ err error }

func (e subscribeError) Error() string { return "subscribe to download: " + e.err.Error() }
func (e subscribeError) Unwrap() error { return e.err }

// startRead asks the client to open the file under a fresh request_id and
// waits for its first answer: the file's description, or its refusal.
func (d *download) startRead(ctx context.Context) (dl.Frame, error) {
	d.id = protocol.NewID()
	d.ended = false
	d.st = dl.NewStream()
	unsub, err := d.m.br.Subscribe(artifactTopic(d.sess.MachineID, d.id), d.st.Deliver)
	if err != nil {
		return dl.Frame{}, subscribeError{err}
	}
	read := protocol.New(protocol.TypeArtifactRead, &protocol.ArtifactRead{RequestID: d.id, ArtifactID: d.art.ID})
	read.SessionID = d.sess.ID
	if e := d.caps.Check(read, d.sess.Adapter); e != nil {
		unsub()
		return dl.Frame{}, errNoDownloads
	}
	d.unsub = unsub
	d.send(protocol.TypeArtifactRead, read.Payload)
	return d.st.Next(ctx, metaWait)
}

// closeRead ends the read under way: a cancel unless the client ended it.
func (d *download) closeRead() {
	if d.unsub == nil {
		return
	}
	if !d.ended {
		d.send(protocol.TypeArtifactCancel, &protocol.ArtifactCancel{RequestID: d.id})
	}
	d.unsub()
	d.unsub = nil
}

func (d *download) run() {
	ctx, cancel := context.WithCancel(d.r.Context())
	defer cancel()
	stop := context.AfterFunc(d.m.ctx, cancel) // the master shuts down
	defer stop()
	defer d.closeRead()

	it, err := d.startRead(ctx)
	var se subscribeError
	switch {
	case errors.As(err, &se):
		downloadError(d.w, http.StatusInternalServerError, d.m.wireError(se.err, "subscribe to download"))
		return
	case errors.Is(err, errNoDownloads):
		downloadError(d.w, http.StatusBadGateway, &protocol.Error{Code: protocol.CodeUnsupported,
			Message: "the machine's client cannot serve downloads; update ferry there"})
		return
	case errors.Is(err, dl.ErrStalled):
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
	case it.End != nil:
		d.ended = true
		d.clientFailed(it.End.Error)
		return
	case it.Meta == nil:
		d.log("the client sent data before describing the file")
		downloadError(d.w, http.StatusBadGateway, errInternal)
		return
	}
	d.meta = it.Meta
	d.respond(ctx)
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

// respond serves the described file; the download package reads the
// ranges the request asks for through openRange.
func (d *download) respond(ctx context.Context) {
	mod, _ := time.Parse(time.RFC3339Nano, d.meta.ModifiedAt)
	err := dl.Serve(d.w, d.r.WithContext(ctx), dl.File{
		Name: d.art.FileName, MimeType: d.art.MimeType, Size: d.meta.Size, ETag: d.meta.ETag, ModTime: mod,
		Open: d.openRange, WriteStall: writeStall, Changed: d.meta.ChangedSince,
		WorkspaceDiffers: d.meta.WorkspaceDiffers,
	})
	var (
		notStarted *dl.NotStartedError
		stream     streamError
		end        *clientEndError
	)
	switch {
	case err == nil:
	case errors.Is(err, dl.ErrUnsatisfiable):
		downloadError(d.w, http.StatusRequestedRangeNotSatisfiable, &protocol.Error{Code: protocol.CodeInvalidValue,
			Field: "Range", Message: "the range is outside the file"})
	case errors.As(err, &notStarted) && errors.As(err, &end):
		d.clientFailed(end.e)
	case errors.As(err, &notStarted) && errors.As(err, &stream) && ctx.Err() == nil:
		d.log("download stream failed before its data", "err", err)
		downloadError(d.w, http.StatusGatewayTimeout, &protocol.Error{Code: protocol.CodeClientOffline,
			Message: "the machine that holds this file stopped answering"})
	default:
		d.log("download cut short", "err", err)
		if ctx.Err() == nil {
			// The response is under way with a Content-Length it will not
			// reach (or a client broke the stream's rules): cut the
			// connection so the downloader sees it failed.
			panic(http.ErrAbortHandler)
		}
	}
}

// openRange asks the client for bytes [off, off+n). The first range is
// read from the file the request opened; a further one (a multipart
// answer) from a new read, which must find the same version.
func (d *download) openRange(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	if d.ranges > 0 {
		d.closeRead()
		it, err := d.startRead(ctx)
		switch {
		case err != nil:
			return nil, streamError{err}
		case it.End != nil:
			d.ended = true
			return nil, &clientEndError{e: it.End.Error}
		case it.Meta == nil || it.Meta.ETag != d.meta.ETag || it.Meta.Size != d.meta.Size:
			return nil, errors.New("the file changed between two ranges of one download")
		}
	}
	d.ranges++
	d.st.SetWindow(downloadWindow)
	d.send(protocol.TypeArtifactRange, &protocol.ArtifactRange{RequestID: d.id, Offset: off, Length: n, Window: downloadWindow})
	return &rangeBody{d: d, ctx: ctx, next: off, end: off + n, acked: off, stall: max(minStall, 2*d.m.cfg.PingInterval)}, nil
}

// streamError is a failure of the stream of frames itself: it stalled,
// overflowed its window or carried something undecodable.
type streamError struct{ err error }

func (e streamError) Error() string { return e.err.Error() }
func (e streamError) Unwrap() error { return e.err }

// clientEndError is the client's end of a read before its range was
// complete.
type clientEndError struct {
	e         *protocol.Error
	next, end int64
}

func (e *clientEndError) Error() string {
	if e.e != nil {
		return fmt.Sprintf("the client ended the download: %s: %s", e.e.Code, e.e.Message)
	}
	return fmt.Sprintf("the client ended the download at %d of %d", e.next, e.end)
}

// rangeBody reads one range's data frames, in order, acknowledging every
// quarter window once what came before was written (the next Read means
// it was), so the client keeps sending.
type rangeBody struct {
	d                *download
	ctx              context.Context
	next, end, acked int64
	stall            time.Duration
	buf              []byte
}

func (b *rangeBody) Read(p []byte) (int, error) {
	if len(b.buf) == 0 {
		if b.next >= b.end {
			return 0, io.EOF
		}
		if b.next > b.acked && b.next-b.acked >= downloadWindow/4 {
			b.d.send(protocol.TypeArtifactAck, &protocol.ArtifactAck{RequestID: b.d.id, Through: b.next})
			b.acked = b.next
		}
		it, err := b.d.st.Next(b.ctx, b.stall)
		switch {
		case err != nil:
			return 0, streamError{err}
		case it.End != nil:
			b.d.ended = true
			return 0, &clientEndError{e: it.End.Error, next: b.next, end: b.end}
		case it.Meta != nil:
			return 0, errors.New("the client described the file twice")
		}
		c := it.Chunk
		if c.Offset != b.next || int64(len(c.Data)) != min(protocol.ArtifactChunkSize, b.end-b.next) {
			return 0, fmt.Errorf("the client sent bytes %d+%d where %d was next", c.Offset, len(c.Data), b.next)
		}
		b.buf = c.Data
		b.next += int64(len(c.Data))
	}
	n := copy(p, b.buf)
	b.buf = b.buf[n:]
	return n, nil
}

// Close notes a range read to its end: the client ends the read itself.
func (b *rangeBody) Close() error {
	if b.next >= b.end && len(b.buf) == 0 {
		b.d.ended = true
	}
	return nil
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
