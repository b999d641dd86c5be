package attachment_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/attachment"
	"github.com/ferry-dev/ferry/protocol"
)

// A 1×1 PNG.
var pngBytes, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

// countingServer is an https server on loopback that counts the TCP
// connections that reached it.
type countingServer struct {
	*httptest.Server
	conns atomic.Int64
}

func newCountingServer(t *testing.T, h http.Handler) *countingServer {
	t.Helper()
	cs := &countingServer{}
	cs.Server = httptest.NewUnstartedServer(h)
	cs.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			cs.conns.Add(1)
		}
	}
	cs.StartTLS()
	t.Cleanup(cs.Close)
	return cs
}

// connections returns how many connections reached the server before
// now: it dials once itself and waits for that one to be counted (the
// listener accepts in order, so any earlier one is counted first).
func (cs *countingServer) connections(t *testing.T) int64 {
	t.Helper()
	before := cs.conns.Load()
	c, err := net.Dial("tcp", cs.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	for deadline := time.Now().Add(5 * time.Second); cs.conns.Load() == before; {
		if time.Now().After(deadline) {
			t.Fatal("the sentinel connection was never accepted")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return cs.conns.Load() - 1
}

func wantError(t *testing.T, e *protocol.Error, code, field string) {
	t.Helper()
	if e == nil {
		t.Fatalf("no error, want %s at %s", code, field)
	}
	if e.Code != code || e.Field != field {
		t.Fatalf("error %s at %s (%s), want %s at %s", e.Code, e.Field, e.Message, code, field)
	}
}

func TestFetchDataURLs(t *testing.T) {
	t.Parallel()
	f := &attachment.Fetcher{}
	files, e := f.Fetch(t.Context(), []protocol.ContextFile{
		{FileURL: "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes), FileName: "a.png"},
		{FileURL: "data:,hello%20world", FileName: "notes.md", MimeType: "text/markdown", Intent: protocol.IntentEditTarget},
	})
	if e != nil {
		t.Fatal(e)
	}
	// The intent travels with the file, for the adapter to state it.
	if files[0].Intent != "" || files[1].Intent != protocol.IntentEditTarget {
		t.Fatalf("intents %q %q", files[0].Intent, files[1].Intent)
	}
	if len(files) != 2 || !bytes.Equal(files[0].Data, pngBytes) || files[0].MediaType != "image/png" || files[0].Name != "a.png" {
		t.Fatalf("image: %+v", files[0])
	}
	if string(files[1].Data) != "hello world" || files[1].MediaType != "text/markdown" {
		t.Fatalf("text: %q %s", files[1].Data, files[1].MediaType)
	}

	for _, tc := range []struct {
		name, url, mime, code, field string
	}{
		{"binary", "data:;base64," + base64.StdEncoding.EncodeToString([]byte("\x7fELF\x02\x01\x01\x00")), "", protocol.CodeUnsupported, "file_url"},
		{"declared png is text", "data:,just%20text", "image/png", protocol.CodeInvalidValue, "mime_type"},
		{"url type png is text", "data:image/png,just%20text", "", protocol.CodeInvalidValue, "mime_type"},
	} {
		_, e := f.Fetch(t.Context(), []protocol.ContextFile{{FileURL: "data:,ok", FileName: "ok.txt"}, {FileURL: tc.url, FileName: "x", MimeType: tc.mime}})
		wantError(t, e, tc.code, "payload.context_files[1]."+tc.field)
	}

	small := &attachment.Fetcher{MaxBytes: 4}
	_, e = small.Fetch(t.Context(), []protocol.ContextFile{{FileURL: "data:,12345", FileName: "a.txt"}})
	wantError(t, e, protocol.CodeInvalidValue, "payload.context_files[0].file_url")
	if _, e = small.Fetch(t.Context(), []protocol.ContextFile{{FileURL: "data:,1234", FileName: "a.txt"}}); e != nil {
		t.Fatalf("at the cap: %v", e)
	}
}

// fakeUploads serves GET /v1/uploads/{id} as the master does, for the
// fetcher's side only (the real master's handler is tested in
// internal/master/upload).
// The big upload is 64 MiB, far past what loopback sockets can buffer, and
// bigDone is closed when its handler stops writing.
func fakeUploads(t *testing.T, body []byte, sent *atomic.Int64, bigDone chan<- struct{}) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/uploads/{id}", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("grant") {
		case "good":
		case "expired":
			w.WriteHeader(http.StatusGone)
			return
		case "missing":
			w.WriteHeader(http.StatusNotFound)
			return
		default:
			w.WriteHeader(http.StatusForbidden)
			return
		}
		if r.PathValue("id") == "upl_big" {
			// Chunked, no length: the fetcher must stop reading at its cap.
			defer close(bigDone)
			chunk := bytes.Repeat([]byte("a"), 64<<10)
			for range 1024 {
				n, err := w.Write(chunk)
				sent.Add(int64(n))
				if err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
			return
		}
		_, _ = w.Write(body)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestFetchUploads(t *testing.T) {
	t.Parallel()
	var sent atomic.Int64
	bigDone := make(chan struct{})
	srv := fakeUploads(t, pngBytes, &sent, bigDone)
	f := &attachment.Fetcher{Master: "ws" + strings.TrimPrefix(srv.URL, "http")}
	files, e := f.Fetch(t.Context(), []protocol.ContextFile{{FileURL: "ferry-upload:upl_1?grant=good", FileName: "shot.png", MimeType: "image/png"}})
	if e != nil {
		t.Fatal(e)
	}
	if !bytes.Equal(files[0].Data, pngBytes) || files[0].MediaType != "image/png" {
		t.Fatalf("got %+v", files[0])
	}
	for grant, code := range map[string]string{
		"expired": protocol.CodeUnauthorized,
		"forged":  protocol.CodeUnauthorized,
		"missing": protocol.CodeNotFound,
	} {
		_, e := f.Fetch(t.Context(), []protocol.ContextFile{{FileURL: "ferry-upload:upl_1?grant=" + grant, FileName: "a"}})
		wantError(t, e, code, "payload.context_files[0].file_url")
	}
	// Without a grant there is nothing to fetch with.
	_, e = f.Fetch(t.Context(), []protocol.ContextFile{{FileURL: "ferry-upload:upl_1", FileName: "a"}})
	wantError(t, e, protocol.CodeInvalidValue, "payload.context_files[0].file_url")

	capped := &attachment.Fetcher{Master: srv.URL, MaxBytes: 100 << 10}
	_, e = capped.Fetch(t.Context(), []protocol.ContextFile{{FileURL: "ferry-upload:upl_big?grant=good", FileName: "a.txt"}})
	wantError(t, e, protocol.CodeInvalidValue, "payload.context_files[0].file_url")
	select {
	case <-bigDone:
	case <-time.After(30 * time.Second):
		t.Fatal("the server is still sending: the fetcher kept reading past its cap")
	}
	// Whatever the sockets buffered, far less than the whole body left.
	if n := sent.Load(); n >= 32<<20 {
		t.Fatalf("the server sent %d of 64 MiB: the fetcher read past its cap", n)
	}
}

func TestFetchHTTPSOffRefusesWithoutConnecting(t *testing.T) {
	t.Parallel()
	srv := newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(pngBytes) }))
	f := &attachment.Fetcher{}
	for _, u := range []string{srv.URL + "/a.png", "https://10.0.0.1/a.png", "https://files.example/a.png"} {
		_, e := f.Fetch(t.Context(), []protocol.ContextFile{{FileURL: u, FileName: "a.png"}})
		wantError(t, e, protocol.CodeUnsupported, "payload.context_files[0].file_url")
	}
	if n := srv.connections(t); n != 0 {
		t.Fatalf("%d connections reached the loopback server", n)
	}
}

func TestFetchHTTPSOnRefusesNonPublicBeforeConnecting(t *testing.T) {
	t.Parallel()
	srv := newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(pngBytes) }))
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	f := &attachment.Fetcher{AllowURLs: true, Timeout: 5 * time.Second}
	f.SetDialPolicy(nil, srv.Client().Transport.(*http.Transport).TLSClientConfig)
	for _, u := range []string{
		srv.URL + "/a.png",
		"https://localhost:" + port + "/a.png",
		"https://[::ffff:127.0.0.1]:" + port + "/a.png",
		"https://10.1.2.3/a.png", "https://192.168.0.1/a.png", "https://169.254.169.254/latest", "https://0.0.0.0:" + port + "/",
	} {
		start := time.Now()
		_, e := f.Fetch(t.Context(), []protocol.ContextFile{{FileURL: u, FileName: "a.png"}})
		wantError(t, e, protocol.CodeInvalidValue, "payload.context_files[0].file_url")
		if !strings.Contains(e.Message, "non-public") {
			t.Errorf("%s: %s, want the address refusal", u, e.Message)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: took %v: refused after trying to connect?", u, d)
		}
	}
	if n := srv.connections(t); n != 0 {
		t.Fatalf("%d connections reached the loopback server", n)
	}
}

func TestFetchHTTPSWhenAllowed(t *testing.T) {
	t.Parallel()
	var redirected atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/a.png", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(pngBytes) })
	mux.HandleFunc("/to-http", func(w http.ResponseWriter, r *http.Request) {
		redirected.Store(true)
		http.Redirect(w, r, "http://"+r.Host+"/a.png", http.StatusFound)
	})
	srv := newCountingServer(t, mux)
	f := &attachment.Fetcher{AllowURLs: true}
	// This test's server is on loopback: let loopback through, nothing else.
	f.SetDialPolicy(func(a netip.Addr) bool { return a.IsLoopback() }, srv.Client().Transport.(*http.Transport).TLSClientConfig)
	files, e := f.Fetch(t.Context(), []protocol.ContextFile{{FileURL: srv.URL + "/a.png", FileName: "a.png"}})
	if e != nil {
		t.Fatal(e)
	}
	if !bytes.Equal(files[0].Data, pngBytes) {
		t.Fatal("wrong bytes")
	}
	_, e = f.Fetch(t.Context(), []protocol.ContextFile{{FileURL: srv.URL + "/to-http", FileName: "a.png"}})
	wantError(t, e, protocol.CodeInvalidValue, "payload.context_files[0].file_url")
	if !redirected.Load() {
		t.Fatal("the redirect was not reached")
	}
}

func TestFetchTimeLimit(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(block); srv.Close() })
	f := &attachment.Fetcher{Master: srv.URL, Timeout: 200 * time.Millisecond}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, e := f.Fetch(ctx, []protocol.ContextFile{{FileURL: "ferry-upload:upl_1?grant=g", FileName: "a"}})
	wantError(t, e, protocol.CodeInvalidValue, "payload.context_files[0].file_url")
	if !strings.Contains(e.Message, "timed out") {
		t.Fatalf("message %q", e.Message)
	}
}

func TestSniff(t *testing.T) {
	t.Parallel()
	pdf := []byte("%PDF-1.4\n%âãÏÓ\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n")
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"a.png", pngBytes, "image/png"},
		{"x.txt", pngBytes, "image/png"},
		{"doc.pdf", pdf, "application/pdf"},
		{"main.go", []byte("package main\n"), "text/plain"},
		{"README.md", []byte("# hi\n"), "text/markdown"},
		{"d.json", []byte(`{"a":1}`), "application/json"},
		{"d.csv", []byte("a,b\n1,2\n"), "text/csv"},
		{"page.html", []byte("<html><script>alert(1)</script></html>"), "text/plain"},
		{"utf8.txt", []byte("grüß dich\r\n"), "text/plain"},
	} {
		got, err := attachment.Sniff(tc.name, tc.data)
		if err != nil || got != tc.want {
			t.Errorf("Sniff(%s) = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	for _, data := range [][]byte{[]byte("\x7fELF\x02"), {0xff, 0xfe, 0x00}, []byte("text\x00nul"), []byte("PK\x03\x04zip")} {
		if got, err := attachment.Sniff("a.txt", data); err == nil {
			t.Errorf("Sniff(%q) = %q, want an error", data, got)
		}
	}
	if !attachment.Matches("image/jpg", "image/jpeg") || attachment.Matches("image/png", "image/gif") ||
		!attachment.Matches("text/x-go", "text/plain") || attachment.Matches("text/plain", "image/png") {
		t.Error("Matches")
	}
}
