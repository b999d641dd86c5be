package attachment

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/ferry-dev/ferry/internal/netguard"
	"github.com/ferry-dev/ferry/protocol"
)

// DefaultTimeout bounds one file's fetch, from dialling to its last byte.
const DefaultTimeout = 30 * time.Second

// MaxTotalBytes caps the content of one prompt's attachments together, so
// a prompt with many large files cannot hold unbounded memory.
const MaxTotalBytes = 3 * MaxBytes

// MaxFetchTime bounds the fetching of one prompt's attachments together
// (the session waits for it before the turn can start).
const MaxFetchTime = 2 * time.Minute

// maxRedirects bounds the redirects an https fetch follows.
const maxRedirects = 3

// Why a fetch failed; Fetch maps them to wire errors in wireError.
var (
	// errURLsOff: an https URL while the operator has not enabled fetching them.
	errURLsOff = errors.New("fetching https URLs is off")
	// errRefused: the master refused the grant (401, 403 or 410).
	errRefused = errors.New("the master refused the grant")
	// errGone: the file does not exist (404).
	errGone = errors.New("no such file")
	// errStatus: any other HTTP status but 200.
	errStatus = errors.New("unexpected HTTP status")
	// errBadURL: a URL the fetcher cannot use (protocol checks most).
	errBadURL = errors.New("unusable URL")
)

// Fetcher turns a prompt's context_files into Files: data: URLs are decoded
// in place, ferry-upload URLs are fetched from the master with their grant,
// and other https URLs only when AllowURLs is set. Every file is read only
// up to its cap (never further), its type sniffed from its bytes (Sniff)
// and compared with the mime_type the prompt declared. The zero Fetcher
// fetches nothing but data: URLs.
//
// Server-side request forgery: an https URL is a request the client makes
// on a prompt's say-so, from inside the operator's network. So it is off by
// default, never goes through a proxy from the environment, and its dialer
// refuses loopback, private, link-local, unspecified, multicast and other
// non-public addresses after resolving and before connecting (netguard) — for every
// redirect too, and whatever name the URL used.
type Fetcher struct {
	// Master is the master's base URL (http, https, ws or wss; a ws base
	// is fetched over http, wss over https). Uploads are fetched from
	// {Master}/v1/uploads/{id}?grant=G; "" refuses ferry-upload URLs.
	Master string
	// MasterClient fetches from the master; nil: a client without
	// redirects. The master is the operator's own (often on loopback for
	// ferry up), so the address filter does not apply to it.
	MasterClient *http.Client
	// AllowURLs enables fetching https URLs of other hosts (ferry connect
	// --fetch-attachment-urls).
	AllowURLs bool
	// MaxBytes caps each file; 0: MaxBytes.
	MaxBytes int64
	// Timeout bounds each fetch; 0: DefaultTimeout.
	Timeout time.Duration

	// allowAddr decides whether a resolved address may be dialled; nil:
	// netguard.PublicAddr. tlsConfig is the https fetches' TLS configuration; nil:
	// the system's. Both are set by tests only.
	allowAddr func(netip.Addr) bool
	tlsConfig *tls.Config
}

// Fetch returns the files in order, or the coded error of the first that
// cannot be had, naming payload.context_files[i] and the field at fault.
// Nothing is dropped: it is all the files or an error.
func (f *Fetcher) Fetch(ctx context.Context, files []protocol.ContextFile) ([]File, *protocol.Error) {
	if len(files) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, MaxFetchTime)
	defer cancel()
	out := make([]File, 0, len(files))
	budget := int64(MaxTotalBytes)
	var ext *http.Client
	defer func() {
		if ext != nil {
			ext.CloseIdleConnections()
		}
	}()
	for i, cf := range files {
		at := fmt.Sprintf("payload.context_files[%d].", i)
		limit := min(f.maxBytes(), budget)
		var (
			data     []byte
			declared = cf.MimeType
			err      error
		)
		switch scheme, _, _ := strings.Cut(cf.FileURL, ":"); strings.ToLower(scheme) {
		case "data":
			var urlType string
			data, urlType, err = decodeDataURL(cf.FileURL, limit)
			if declared == "" {
				declared = urlType
			}
		case protocol.UploadScheme:
			data, err = f.fetchUpload(ctx, cf.FileURL, limit)
		case "https":
			if !f.AllowURLs {
				err = errURLsOff
				break
			}
			if ext == nil {
				ext = f.externalClient()
			}
			data, err = f.get(ctx, ext, cf.FileURL, limit)
		default:
			err = errBadURL
		}
		if err != nil {
			return nil, wireError(at, err, limit < f.maxBytes())
		}
		mt, err := Sniff(cf.FileName, data)
		if err != nil {
			return nil, wireError(at, err, false)
		}
		if !Matches(declared, mt) {
			return nil, &protocol.Error{Code: protocol.CodeInvalidValue, Field: at + "mime_type",
				Message: fmt.Sprintf("the file is %s, not the declared %s", mt, declared)}
		}
		budget -= int64(len(data))
		out = append(out, File{Name: cf.FileName, MediaType: mt, Data: data, Intent: cf.Intent})
	}
	return out, nil
}

// wireError is the one place a fetch failure becomes a wire error; at is
// the file's field prefix. Internal details (addresses, resolver and TLS
// messages) stay out of it. total says the prompt's budget, not the file's
// cap, ran out.
func wireError(at string, err error, total bool) *protocol.Error {
	e := &protocol.Error{Code: protocol.CodeInvalidValue, Field: at + "file_url"}
	switch {
	case errors.Is(err, ErrTooLarge) && total:
		e.Message = fmt.Sprintf("the attached files pass %d MiB together", MaxTotalBytes>>20)
	case errors.Is(err, ErrTooLarge):
		e.Message = "the file is larger than the client's cap for one attachment"
	case errors.Is(err, ErrUnsupportedType):
		e.Code, e.Message = protocol.CodeUnsupported, "the file is not an image (PNG, JPEG, GIF, WebP), a PDF or UTF-8 text"
	case errors.Is(err, errURLsOff):
		e.Code, e.Message = protocol.CodeUnsupported, "this client does not fetch https URLs (its operator can enable it with --fetch-attachment-urls); attach the file instead"
	case errors.Is(err, netguard.ErrForbiddenAddr):
		e.Message = "the URL's host is a loopback, private or otherwise non-public address; it is not fetched"
	case errors.Is(err, errRefused):
		e.Code, e.Message = protocol.CodeUnauthorized, "the master refused this prompt's grant for the upload (expired or not this upload's)"
	case errors.Is(err, errGone):
		e.Code, e.Message = protocol.CodeNotFound, "the file does not exist (any more)"
	case errors.Is(err, errStatus):
		e.Message = "the file's server did not answer with the file"
	case errors.Is(err, errBadURL), errors.Is(err, netguard.ErrRedirect):
		e.Message = "the URL cannot be fetched"
	case errors.Is(err, context.DeadlineExceeded):
		e.Message = "fetching the file timed out"
	case errors.Is(err, context.Canceled):
		e.Message = "fetching the file was cancelled"
	default:
		e.Message = "the file could not be fetched"
	}
	return e
}

func (f *Fetcher) maxBytes() int64 {
	if f.MaxBytes > 0 {
		return f.MaxBytes
	}
	return MaxBytes
}

func (f *Fetcher) timeout() time.Duration {
	if f.Timeout > 0 {
		return f.Timeout
	}
	return DefaultTimeout
}

// MasterHTTPBase is the http(s) base of a master URL given as http(s) or
// ws(s), without a trailing slash.
func MasterHTTPBase(master string) (*url.URL, error) {
	u, err := url.Parse(master)
	if err != nil {
		return nil, fmt.Errorf("%w: master URL: %w", errBadURL, err)
	}
	switch strings.ToLower(u.Scheme) {
	case "ws", "http":
		u.Scheme = "http"
	case "wss", "https":
		u.Scheme = "https"
	default:
		return nil, fmt.Errorf("%w: master URL scheme %q", errBadURL, u.Scheme)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%w: master URL without a host", errBadURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawQuery, u.Fragment, u.RawPath = "", "", ""
	return u, nil
}

// fetchUpload fetches a ferry-upload URL from the master.
func (f *Fetcher) fetchUpload(ctx context.Context, raw string, limit int64) ([]byte, error) {
	id, grant, ok := protocol.ParseUploadURL(raw)
	if !ok || grant == "" || f.Master == "" {
		return nil, errBadURL
	}
	base, err := MasterHTTPBase(f.Master)
	if err != nil {
		return nil, err
	}
	u := base.JoinPath("v1", "uploads", id)
	u.RawQuery = url.Values{"grant": {grant}}.Encode()
	c := f.MasterClient
	if c == nil {
		c = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return f.get(ctx, c, u.String(), limit)
}

// get fetches u with c within the timeout, reading at most limit bytes.
func (f *Fetcher) get(ctx context.Context, c *http.Client, u string, limit int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadURL, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("get: %w", ctx.Err())
		}
		return nil, fmt.Errorf("get: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusGone:
		return nil, fmt.Errorf("%w: HTTP %d", errRefused, resp.StatusCode)
	case http.StatusNotFound:
		return nil, fmt.Errorf("%w: HTTP %d", errGone, resp.StatusCode)
	default:
		return nil, fmt.Errorf("%w: HTTP %d", errStatus, resp.StatusCode)
	}
	if resp.ContentLength > limit {
		return nil, fmt.Errorf("%w: %d bytes announced", ErrTooLarge, resp.ContentLength)
	}
	data, err := readCapped(resp.Body, limit)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("read: %w", ctx.Err())
	}
	return data, err
}

// readCapped reads r to its end, but never more than limit+1 bytes: one
// byte past the cap is ErrTooLarge.
func readCapped(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: over %d bytes", ErrTooLarge, limit)
	}
	return data, nil
}

// externalClient is the client for https URLs of other hosts: no proxy,
// https only (redirects too), and every host resolved and checked before
// anything connects (netguard).
func (f *Fetcher) externalClient() *http.Client {
	return netguard.Policy{Allow: f.allowAddr, TLS: f.tlsConfig, MaxRedirects: maxRedirects}.Client()
}

// decodeDataURL decodes a data: URL's content (at most limit bytes) and
// returns its media type ("" when it names none).
func decodeDataURL(raw string, limit int64) ([]byte, string, error) {
	_, rest, _ := strings.Cut(raw, ":")
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, "", errBadURL
	}
	mediaType, isBase64 := strings.CutSuffix(meta, ";base64")
	if mediaType != "" && !strings.HasPrefix(mediaType, ";") {
		mt, _, err := mime.ParseMediaType(mediaType)
		if err != nil {
			return nil, "", fmt.Errorf("%w: %w", errBadURL, err)
		}
		mediaType = mt
	} else {
		mediaType = ""
	}
	if isBase64 {
		if int64(base64.StdEncoding.DecodedLen(len(payload))) > limit+2 {
			return nil, "", fmt.Errorf("%w: data: URL", ErrTooLarge)
		}
		data, err := base64.StdEncoding.DecodeString(payload)
		if err != nil {
			return nil, "", fmt.Errorf("%w: %w", errBadURL, err)
		}
		if int64(len(data)) > limit {
			return nil, "", fmt.Errorf("%w: data: URL", ErrTooLarge)
		}
		return data, mediaType, nil
	}
	s, err := url.PathUnescape(payload)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", errBadURL, err)
	}
	if int64(len(s)) > limit {
		return nil, "", fmt.Errorf("%w: data: URL", ErrTooLarge)
	}
	return []byte(s), mediaType, nil
}
