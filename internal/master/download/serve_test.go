package download

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// source is an in-memory file that records the ranges asked of it.
type source struct {
	data   []byte
	opened [][2]int64
	fail   error // Open fails with it
	failAt int64 // with failAfter: the reader fails after this many bytes
	cut    bool
}

func (s *source) open(_ context.Context, off, n int64) (io.ReadCloser, error) {
	s.opened = append(s.opened, [2]int64{off, n})
	if s.fail != nil {
		return nil, s.fail
	}
	r := io.Reader(bytes.NewReader(s.data[off : off+n]))
	if s.cut {
		r = io.MultiReader(io.LimitReader(r, s.failAt), errReader{})
	}
	return io.NopCloser(r), nil
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("the source broke") }

var content = []byte(strings.Repeat("0123456789", 10)) // 100 bytes

var mod = time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)

func serve(t *testing.T, method string, h map[string]string, src *source) (*httptest.ResponseRecorder, error) {
	t.Helper()
	req := httptest.NewRequest(method, "/f", nil)
	for k, v := range h {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	err := Serve(rec, req, File{Name: "f.bin", MimeType: "application/x-test", Size: int64(len(src.data)), ETag: "v1", ModTime: mod, Open: src.open})
	return rec, err
}

// TestServeConditionsAndRanges: the answers a download gave before it
// used ServeContent, request by request (they were the hand-written
// planner's cases), and only the range answered is read from the source.
func TestServeConditionsAndRanges(t *testing.T) {
	t.Parallel()
	etag := `"v1"`
	lm := mod.Format(http.TimeFormat)
	cases := []struct {
		name   string
		method string
		h      map[string]string
		status int
		start  int64
		n      int64
	}{
		{"plain", "GET", nil, 200, 0, 100},
		{"head", "HEAD", nil, 200, 0, 0},
		{"range", "GET", map[string]string{"Range": "bytes=10-19"}, 206, 10, 10},
		{"range on HEAD", "HEAD", map[string]string{"Range": "bytes=10-19"}, 206, 0, 0},
		{"suffix", "GET", map[string]string{"Range": "bytes=-5"}, 206, 95, 5},
		{"open end", "GET", map[string]string{"Range": "bytes=90-"}, 206, 90, 10},
		{"past the end clipped", "GET", map[string]string{"Range": "bytes=90-1000"}, 206, 90, 10},
		{"malformed ignored", "GET", map[string]string{"Range": "bytes=x-y"}, 200, 0, 100},
		{"another unit ignored", "GET", map[string]string{"Range": "lines=1-2"}, 200, 0, 100},
		{"if-none-match hit", "GET", map[string]string{"If-None-Match": etag}, 304, 0, 0},
		{"if-none-match weak hit", "GET", map[string]string{"If-None-Match": `W/"v1"`}, 304, 0, 0},
		{"if-none-match in a list", "GET", map[string]string{"If-None-Match": `"a", W/"b" ,"v1"`}, 304, 0, 0},
		{"if-none-match star", "GET", map[string]string{"If-None-Match": "*"}, 304, 0, 0},
		{"if-none-match miss", "GET", map[string]string{"If-None-Match": `"v0"`}, 200, 0, 100},
		{"if-none-match miss ignores if-modified-since", "GET", map[string]string{"If-None-Match": `"v0"`, "If-Modified-Since": lm}, 200, 0, 100},
		{"if-none-match beats range", "GET", map[string]string{"If-None-Match": etag, "Range": "bytes=0-1"}, 304, 0, 0},
		{"if-modified-since same second", "GET", map[string]string{"If-Modified-Since": lm}, 304, 0, 0},
		{"if-modified-since earlier", "GET", map[string]string{"If-Modified-Since": mod.Add(-time.Second).Format(http.TimeFormat)}, 200, 0, 100},
		{"if-range etag holds", "GET", map[string]string{"Range": "bytes=50-", "If-Range": etag}, 206, 50, 50},
		{"if-range etag changed", "GET", map[string]string{"Range": "bytes=50-", "If-Range": `"v0"`}, 200, 0, 100},
		{"if-range weak never holds", "GET", map[string]string{"Range": "bytes=50-", "If-Range": `W/"v1"`}, 200, 0, 100},
		{"if-range date holds", "GET", map[string]string{"Range": "bytes=50-", "If-Range": lm}, 206, 50, 50},
		{"if-range date changed", "GET", map[string]string{"Range": "bytes=50-", "If-Range": mod.Add(time.Hour).Format(http.TimeFormat)}, 200, 0, 100},
		{"if-range garbage", "GET", map[string]string{"Range": "bytes=50-", "If-Range": "yesterday"}, 200, 0, 100},
		{"if-range without a range", "GET", map[string]string{"If-Range": etag}, 200, 0, 100},
	}
	for _, tc := range cases {
		src := &source{data: content}
		rec, err := serve(t, tc.method, tc.h, src)
		if err != nil || rec.Code != tc.status {
			t.Errorf("%s: %d, %v; want %d", tc.name, rec.Code, err, tc.status)
			continue
		}
		want := content[tc.start : tc.start+tc.n]
		if !bytes.Equal(rec.Body.Bytes(), want) {
			t.Errorf("%s: body %q, want %q", tc.name, rec.Body.Bytes(), want)
		}
		switch {
		case tc.n == 0 && len(src.opened) != 0:
			t.Errorf("%s: opened %v for no body", tc.name, src.opened)
		case tc.n > 0 && (len(src.opened) != 1 || src.opened[0] != [2]int64{tc.start, tc.n}):
			t.Errorf("%s: opened %v, want [%d %d]", tc.name, src.opened, tc.start, tc.n)
		}
		if tc.status == http.StatusPartialContent && tc.method == "GET" {
			if cr := rec.Header().Get("Content-Range"); cr != fmt.Sprintf("bytes %d-%d/100", tc.start, tc.start+tc.n-1) {
				t.Errorf("%s: Content-Range %q", tc.name, cr)
			}
		}
		if tc.status == http.StatusNotModified {
			if rec.Header().Get("ETag") != etag || rec.Header().Get("Last-Modified") != lm ||
				rec.Header().Get("Content-Disposition") != "" || rec.Header().Get("Content-Type") != "" {
				t.Errorf("%s: 304 headers %v", tc.name, rec.Header())
			}
		}
	}
}

// TestServeHeaders: a body is an attachment with the safe name, a clean
// type, and sandboxed.
func TestServeHeaders(t *testing.T) {
	t.Parallel()
	rec, err := serve(t, "GET", nil, &source{data: content})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"Content-Type": "application/x-test", "Content-Length": "100", "Accept-Ranges": "bytes", "ETag": `"v1"`,
		"Last-Modified": mod.Format(http.TimeFormat), "Content-Security-Policy": "default-src 'none'; sandbox",
		"Cross-Origin-Resource-Policy": "same-origin", "Content-Disposition": ContentDisposition("f.bin"),
	} {
		if got := rec.Header().Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
}

// TestServeMultipart: several ranges come as multipart/byteranges, each
// part read as a range of its own.
func TestServeMultipart(t *testing.T) {
	t.Parallel()
	src := &source{data: content}
	rec, err := serve(t, "GET", map[string]string{"Range": "bytes=0-1,50-54"}, src)
	if err != nil || rec.Code != http.StatusPartialContent {
		t.Fatalf("%d, %v", rec.Code, err)
	}
	mt, params, err := mime.ParseMediaType(rec.Header().Get("Content-Type"))
	if err != nil || mt != "multipart/byteranges" {
		t.Fatalf("Content-Type %q", rec.Header().Get("Content-Type"))
	}
	mr := multipart.NewReader(rec.Body, params["boundary"])
	for _, want := range []string{"01", "01234"} {
		p, err := mr.NextPart()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(p)
		if string(b) != want || p.Header.Get("Content-Type") != "application/x-test" {
			t.Fatalf("part %q (%v), want %q", b, p.Header, want)
		}
	}
	if len(src.opened) != 2 || src.opened[0][0] != 0 || src.opened[1][0] != 50 {
		t.Fatalf("opened %v", src.opened)
	}
}

// TestServeUnsatisfiable: a range outside the file writes nothing and
// leaves Content-Range for the caller's 416.
func TestServeUnsatisfiable(t *testing.T) {
	t.Parallel()
	req := httptest.NewRequest(http.MethodGet, "/f", nil)
	req.Header.Set("Range", "bytes=100-")
	w := &strictWriter{h: http.Header{"Cache-Control": {"private"}}}
	src := &source{data: content}
	err := Serve(w, req, File{Name: "f", Size: 100, ETag: "v1", ModTime: mod, Open: src.open})
	if !errors.Is(err, ErrUnsatisfiable) || w.status != 0 || w.body.Len() != 0 || len(src.opened) != 0 {
		t.Fatalf("%v: status %d, %d bytes, opened %v", err, w.status, w.body.Len(), src.opened)
	}
	if w.h.Get("Content-Range") != "bytes */100" || w.h.Get("Cache-Control") != "private" || w.h.Get("ETag") != `"v1"` ||
		w.h.Get("Content-Disposition") != "" || w.h.Get("Content-Type") != "" {
		t.Fatalf("headers %v", w.h)
	}
}

// TestServeFailures: a source that fails before the first byte leaves
// the response unwritten with the caller's headers; one that fails later
// cuts the body short.
func TestServeFailures(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	req := httptest.NewRequest(http.MethodGet, "/f", nil)
	w := &strictWriter{h: http.Header{"Cache-Control": {"private"}}}
	err := Serve(w, req, File{Name: "f", Size: 100, ETag: "v1", Open: (&source{data: content, fail: boom}).open})
	var ns *NotStartedError
	if !errors.As(err, &ns) || !errors.Is(err, boom) || w.status != 0 || w.body.Len() != 0 {
		t.Fatalf("%v: status %d, %d bytes", err, w.status, w.body.Len())
	}
	if len(w.h) != 1 || w.h.Get("Cache-Control") != "private" {
		t.Fatalf("headers after a failure before the body: %v", w.h)
	}

	w = &strictWriter{h: http.Header{}}
	err = Serve(w, req, File{Name: "f", Size: 100, ETag: "v1", Open: (&source{data: content, cut: true, failAt: 10}).open})
	if err == nil || errors.As(err, &ns) || w.status != http.StatusOK || w.body.Len() != 10 {
		t.Fatalf("%v: status %d, %d bytes", err, w.status, w.body.Len())
	}
}

// strictWriter records what reaches the connection.
type strictWriter struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (w *strictWriter) Header() http.Header { return w.h }

func (w *strictWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *strictWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(b)
}

// TestServeChangedMarker: a changed file carries ChangedHeader on every
// answer about it (GET, HEAD, a range, 304, 416); the registered version
// never does, but carries WorkspaceDiffersHeader on each when the current
// file differs from it.
func TestServeChangedMarker(t *testing.T) {
	t.Parallel()
	for _, changed := range []bool{true, false} {
		for _, tc := range []struct {
			method string
			h      map[string]string
		}{
			{"GET", nil}, {"HEAD", nil}, {"GET", map[string]string{"Range": "bytes=1-2"}},
			{"GET", map[string]string{"If-None-Match": `"v1"`}}, {"GET", map[string]string{"Range": "bytes=500-"}},
		} {
			req := httptest.NewRequest(tc.method, "/f", nil)
			for k, v := range tc.h {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			src := &source{data: content}
			_ = Serve(rec, req, File{Name: "f", Size: 100, ETag: "v1", ModTime: mod, Open: src.open, Changed: changed, WorkspaceDiffers: !changed})
			want, differs := "", "1"
			if changed {
				want, differs = "1", ""
			}
			if got := rec.Header().Get(ChangedHeader); got != want {
				t.Errorf("changed %v, %s %v: %s %q, want %q", changed, tc.method, tc.h, ChangedHeader, got, want)
			}
			if got := rec.Header().Get(WorkspaceDiffersHeader); got != differs {
				t.Errorf("changed %v, %s %v: %s %q, want %q", changed, tc.method, tc.h, WorkspaceDiffersHeader, got, differs)
			}
		}
	}
}
