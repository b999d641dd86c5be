// Package download answers an HTTP request for one file whose bytes are
// fetched a range at a time (the master's artifact downloads, streamed from
// the client that holds the file).
//
// It guarantees:
//   - Conditional and range requests are answered by net/http's
//     ServeContent (RFC 9110 §13 and §14): If-None-Match, If-Modified-Since,
//     If-Match, If-Unmodified-Since, Range under If-Range, 206 with one
//     range or a multipart/byteranges body for several, 304, 412 and 416.
//     A Range header ServeContent cannot parse is ignored (the whole file,
//     200), as RFC 9110 allows; a range outside the file is ErrUnsatisfiable,
//     answered by the caller.
//   - Only the bytes a response carries are asked of the source: nothing
//     for HEAD, 304 or an empty body, one Open per range otherwise.
//   - The status goes out with the first byte of the body: when the source
//     fails before it, nothing was written and Serve returns a
//     *NotStartedError, so the caller can still answer with an error
//     status; the body's headers are taken back.
//   - The response is always an attachment (Content-Disposition with a safe
//     file name, RFC 6266 and RFC 8187) with a well-formed Content-Type,
//     sandboxed by Content-Security-Policy, and same-origin only: a download
//     is never rendered on the server's origin.
//
// The package also holds the two other parts of a download that know
// nothing of the master: the link's token format (NewToken,
// WellFormedToken), and Stream, the bounded queue of one read's frames
// from the client (the file's description, data, the end), which fails a
// read whose client sends past its window instead of growing memory.
//
// Authentication, which file a request may have, and how the bytes are
// fetched from the client are the caller's.
package download

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// File is what Serve sends.
type File struct {
	// Name is the file name offered to save the download as.
	Name string
	// MimeType is the file's media type; one that is not well formed is
	// sent as application/octet-stream.
	MimeType string
	// Size is the file's length in bytes.
	Size int64
	// ETag is the file version's strong entity tag, without quotes.
	ETag string
	// ModTime is when the file was last modified; zero when unknown.
	ModTime time.Time
	// Open starts reading bytes [off, off+n) of the file (n >= 1, off+n <=
	// Size). Serve reads the reader to its end or closes it early (a
	// multipart body's next range, or the downloader left).
	Open func(ctx context.Context, off, n int64) (io.ReadCloser, error)
	// WriteStall bounds each write to the downloader (0: no bound), so one
	// that stops reading does not hold the source open for ever.
	WriteStall time.Duration
	// Changed marks a file that is no longer the version it was
	// registered as (the source kept no copy of that one): the response
	// carries ChangedHeader, so a UI can say so.
	Changed bool
	// WorkspaceDiffers marks the registered version served while the
	// source's current file is another (changed, undone or removed): the
	// response carries WorkspaceDiffersHeader.
	WorkspaceDiffers bool
}

// ChangedHeader is the response header that marks a changed file (File.Changed),
// with the value "1"; absent, the file is the version registered.
const ChangedHeader = "Ferry-Artifact-Changed"

// WorkspaceDiffersHeader is the response header that marks the registered
// version served while the current file differs (File.WorkspaceDiffers),
// with the value "1".
const WorkspaceDiffersHeader = "Ferry-Artifact-Workspace-Differs"

// markVersion sets the headers that say which version f is.
func markVersion(h http.Header, f *File) {
	if f.Changed {
		h.Set(ChangedHeader, "1")
	}
	if f.WorkspaceDiffers {
		h.Set(WorkspaceDiffersHeader, "1")
	}
}

// ErrUnsatisfiable is Serve's answer to a Range that lies outside the file:
// nothing was written, and the header carries Content-Range: bytes */size
// for the caller's 416.
var ErrUnsatisfiable = errors.New("download: the range is outside the file")

// NotStartedError is a source's failure before the first byte of the body:
// nothing was written, so the caller answers with an error status.
type NotStartedError struct{ Err error }

func (e *NotStartedError) Error() string { return "download: before the body: " + e.Err.Error() }

func (e *NotStartedError) Unwrap() error { return e.Err }

// bodyHeaders are the headers Serve sets; they describe the body and are
// taken back when an error is answered instead.
var bodyHeaders = []string{"Accept-Ranges", "Content-Type", "Content-Disposition", "Content-Security-Policy",
	"Cross-Origin-Resource-Policy", "Content-Length", "Content-Range", "ETag", "Last-Modified"}

// Serve answers r with f. A nil error means the request was answered; on
// ErrUnsatisfiable or a *NotStartedError nothing was written; any other
// error means the body was cut short after its status went out (the caller
// should abort the connection, so the downloader sees the failure).
func Serve(w http.ResponseWriter, r *http.Request, f File) error {
	h := w.Header()
	before := h.Clone()
	etag := `"` + f.ETag + `"`
	h.Set("ETag", etag)
	lastMod := ""
	if !f.ModTime.IsZero() {
		lastMod = f.ModTime.UTC().Format(http.TimeFormat)
		h.Set("Last-Modified", lastMod)
	}
	h.Set("Accept-Ranges", "bytes")
	// Set before ServeContent, which would otherwise sniff the body.
	h.Set("Content-Type", ContentType(f.MimeType))
	h.Set("Content-Disposition", ContentDisposition(f.Name))
	// Were it ever rendered, it could not run script on the server's origin.
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	markVersion(h, &f)
	set := h.Clone()

	pw, err := serveOnce(w, r, &f)
	if pw.status == http.StatusRequestedRangeNotSatisfiable {
		cr := h.Get("Content-Range")
		if cr == "" {
			// A Range ServeContent could not parse: ignored, as RFC 9110
			// allows, so the whole file is sent.
			resetHeader(h, set)
			r2 := r.Clone(r.Context())
			r2.Header.Del("Range")
			pw, err = serveOnce(w, r2, &f)
		} else {
			resetHeader(h, before)
			h.Set("ETag", etag)
			if lastMod != "" {
				h.Set("Last-Modified", lastMod)
			}
			h.Set("Content-Range", cr)
			markVersion(h, &f)
			return ErrUnsatisfiable
		}
	}
	if pw.status == http.StatusNotModified {
		// As a 304 should: what identifies the version, nothing of a body.
		for _, k := range bodyHeaders {
			h.Del(k)
		}
		h.Set("ETag", etag)
		if lastMod != "" {
			h.Set("Last-Modified", lastMod)
		}
	}
	if err != nil && !pw.sent {
		resetHeader(h, before)
		return &NotStartedError{Err: err}
	}
	if err != nil {
		return fmt.Errorf("download: body cut short: %w", err)
	}
	pw.commit()
	return nil
}

// serveOnce runs ServeContent over f's source; the error is the source's
// or the downloader's, which ServeContent does not report.
func serveOnce(w http.ResponseWriter, r *http.Request, f *File) (*pendingWriter, error) {
	pw := &pendingWriter{w: w, stall: f.WriteStall}
	body := &lazyBody{ctx: r.Context(), f: f, pw: pw}
	http.ServeContent(pw, r, "", f.ModTime, body)
	body.close()
	if pw.stall > 0 {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{}) // the connection may serve other requests
	}
	if err := body.failed(); err != nil {
		return pw, err
	}
	return pw, pw.werr
}

// resetHeader makes h exactly to.
func resetHeader(h, to http.Header) {
	for k := range h {
		delete(h, k)
	}
	for k, v := range to {
		h[k] = v
	}
}

// pendingWriter holds back the status of a response with a body until its
// first byte, and drops ServeContent's own 416 body (the caller answers).
// The multipart writer of ServeContent reads the body from a goroutine:
// what it asks of the writer is guarded.
type pendingWriter struct {
	w     http.ResponseWriter
	stall time.Duration

	mu        sync.Mutex
	status    int   // 0 until WriteHeader
	length    int64 // Content-Length at WriteHeader; -1 when absent
	multipart bool
	sent      bool // the status went out
	werr      error
}

func (p *pendingWriter) Header() http.Header { return p.w.Header() }

func (p *pendingWriter) WriteHeader(code int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.status != 0 {
		return
	}
	p.status = code
	h := p.w.Header()
	p.length = -1
	if n, err := strconv.ParseInt(h.Get("Content-Length"), 10, 64); err == nil {
		p.length = n
	}
	p.multipart = strings.HasPrefix(h.Get("Content-Type"), "multipart/")
	switch code {
	case http.StatusOK, http.StatusPartialContent, http.StatusRequestedRangeNotSatisfiable, http.StatusNotModified:
		// A body waits for its first byte; 416 and 304 are finished by Serve.
	default:
		p.w.WriteHeader(code)
		p.sent = true
	}
}

func (p *pendingWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	if p.status == 0 {
		p.mu.Unlock()
		p.WriteHeader(http.StatusOK)
		p.mu.Lock()
	}
	switch p.status {
	case http.StatusRequestedRangeNotSatisfiable, http.StatusNotModified:
		p.mu.Unlock()
		return len(b), nil
	}
	if !p.sent {
		p.w.WriteHeader(p.status)
		p.sent = true
	}
	p.mu.Unlock()
	if p.stall > 0 {
		_ = http.NewResponseController(p.w).SetWriteDeadline(time.Now().Add(p.stall))
	}
	n, err := p.w.Write(b)
	if err != nil {
		p.mu.Lock()
		if p.werr == nil {
			p.werr = fmt.Errorf("write to the downloader: %w", err)
		}
		p.mu.Unlock()
	}
	return n, err
}

// commit sends a status still held back: a body that was empty (HEAD, an
// empty file) or a 304.
func (p *pendingWriter) commit() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.sent && p.status != 0 {
		p.w.WriteHeader(p.status)
		p.sent = true
	}
}

// singleLength is the length of the one part the body carries (the whole
// file or one range), once the status is known.
func (p *pendingWriter) singleLength() (int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.status == 0 || p.multipart || p.length < 0 {
		return 0, false
	}
	return p.length, true
}

// lazyBody is the io.ReadSeeker ServeContent reads: seeking costs nothing,
// and the first read at a position opens the range that starts there.
type lazyBody struct {
	ctx context.Context
	f   *File
	pw  *pendingWriter

	// mu also orders the reads of ServeContent's multipart goroutine,
	// which may outlive ServeContent, before close: after it, nothing
	// reaches the source.
	mu     sync.Mutex
	pos    int64
	rc     io.ReadCloser
	err    error // the source's first failure
	closed bool
}

var errClosed = errors.New("download: the response is over")

func (b *lazyBody) Seek(off int64, whence int) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, errClosed
	}
	abs := off
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		abs += b.pos
	case io.SeekEnd:
		abs += b.f.Size
	default:
		return 0, errors.New("download: bad whence")
	}
	if abs < 0 {
		return 0, errors.New("download: negative position")
	}
	if abs != b.pos && b.rc != nil {
		_ = b.rc.Close()
		b.rc = nil
	}
	b.pos = abs
	return abs, nil
}

func (b *lazyBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, errClosed
	}
	if b.err != nil {
		return 0, b.err
	}
	if b.rc == nil {
		if b.pos >= b.f.Size {
			return 0, io.EOF
		}
		n := b.f.Size - b.pos
		if l, ok := b.pw.singleLength(); ok && l > 0 {
			n = min(n, l)
		}
		rc, err := b.f.Open(b.ctx, b.pos, n)
		if err != nil {
			b.err = err
			return 0, err
		}
		b.rc = rc
	}
	n, err := b.rc.Read(p)
	b.pos += int64(n)
	if err != nil && !errors.Is(err, io.EOF) {
		b.err = err
	}
	return n, err
}

func (b *lazyBody) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.rc != nil {
		_ = b.rc.Close()
		b.rc = nil
	}
}

func (b *lazyBody) failed() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}
