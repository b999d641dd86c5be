package master_test

import (
	"bytes"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the driver, to count uploads in the master's file behind its back

	"github.com/ferry-dev/ferry/internal/attachment"
	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// A 1×1 PNG.
var testPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

// uploadAnswer is a POST …/uploads answer: the 201 body or the error.
type uploadAnswer struct {
	status int
	ok     struct {
		UploadID  string    `json:"upload_id"`
		FileName  string    `json:"file_name"`
		MimeType  string    `json:"mime_type"`
		SizeBytes int64     `json:"size_bytes"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	err protocol.Error
}

// multipartBody is a body with one part per name → (file name, content).
func multipartBody(t testing.TB, parts ...[3]string) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="`+p[0]+`"; filename="`+p[1]+`"`)
		h.Set("Content-Type", "application/octet-stream")
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(w, p[2])
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return mw.FormDataContentType(), b.Bytes()
}

// postUpload posts body to the session's uploads with headers h.
func (e *env) postUpload(sessionID string, h http.Header, contentType string, body []byte) uploadAnswer {
	e.t.Helper()
	req, err := http.NewRequestWithContext(testCtx(e.t), http.MethodPost, e.srv.URL+"/v1/sessions/"+url.PathEscape(sessionID)+"/uploads", bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var a uploadAnswer
	a.status = resp.StatusCode
	raw, _ := io.ReadAll(resp.Body)
	if a.status == http.StatusCreated {
		err = json.Unmarshal(raw, &a.ok)
	} else {
		var wrap struct {
			Error *protocol.Error `json:"error"`
		}
		if err = json.Unmarshal(raw, &wrap); err == nil && wrap.Error != nil {
			a.err = *wrap.Error
		}
	}
	if err != nil {
		e.t.Fatalf("upload answer HTTP %d: %v: %s", a.status, err, raw)
	}
	return a
}

func (e *env) upload(sessionID, secret, name, content string) uploadAnswer {
	e.t.Helper()
	ct, body := multipartBody(e.t, [3]string{"file", name, content})
	return e.postUpload(sessionID, bearer(secret), ct, body)
}

// countUploads counts the rows of the uploads table in the master's
// SQLite file.
func (e *env) countUploads() int {
	e.t.Helper()
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: e.path}).EscapedPath()+"?mode=ro")
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(testCtx(e.t), `SELECT COUNT(*) FROM uploads`).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func wantRefusal(t testing.TB, what string, a uploadAnswer, status int, code, field string) {
	t.Helper()
	if a.status != status || a.err.Code != code || a.err.Field != field || a.err.Message == "" {
		t.Errorf("%s: HTTP %d %+v, want HTTP %d %s at %q", what, a.status, a.err, status, code, field)
	}
}

func promptWith(sessionID string, files ...protocol.ContextFile) *protocol.Message {
	m := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{
		Segments: []protocol.PromptSegment{{Kind: protocol.SegmentText, Text: "look"}}, ContextFiles: files})
	m.SessionID = sessionID
	return m
}

// TestUploadGrantAndFetch: a PNG uploaded with the UI token reaches the
// client's prompt as a granted ferry-upload URL, and the client's fetcher
// gets the exact bytes from the master over HTTP; the grant opens only
// that upload, and nothing opens it without one.
func TestUploadGrantAndFetch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)

	a := e.upload(info.ID, e.ui, "shot.png", string(testPNG))
	if a.status != http.StatusCreated || !strings.HasPrefix(a.ok.UploadID, "upl_") || a.ok.FileName != "shot.png" ||
		a.ok.MimeType != "image/png" || a.ok.SizeBytes != int64(len(testPNG)) || !a.ok.ExpiresAt.After(time.Now()) {
		t.Fatalf("upload: HTTP %d %+v %+v", a.status, a.ok, a.err)
	}
	other := e.upload(info.ID, e.ui, "notes.md", "# notes\n")
	if other.status != http.StatusCreated || other.ok.MimeType != "text/markdown" {
		t.Fatalf("second upload: HTTP %d %+v", other.status, other.err)
	}

	p := ui.send(promptWith(info.ID, protocol.ContextFile{FileURL: "ferry-upload:" + a.ok.UploadID, FileName: "shot.png"}))
	req := c.next(protocol.TypePromptRequest)
	if req.MessageID != p.MessageID {
		t.Fatalf("the client got %s", req.MessageID)
	}
	files := req.Payload.(*protocol.PromptRequest).ContextFiles
	id, grant, ok := protocol.ParseUploadURL(files[0].FileURL)
	if len(files) != 1 || !ok || id != a.ok.UploadID || grant == "" || files[0].MimeType != "image/png" {
		t.Fatalf("relayed context_files %+v", files)
	}
	// The session's event log, which every UI that may see the session
	// reads, keeps the prompt without the grant: only the client gets it.
	sub := subscribe(ui, info.ID, 0, "")
	var logged *protocol.PromptRequest
	for _, ev := range events(ui, int(sub.LastSeq), 0) {
		if ev.MessageID == p.MessageID {
			logged, _ = ev.Payload.(*protocol.PromptRequest)
		}
	}
	if logged == nil || len(logged.ContextFiles) != 1 || logged.ContextFiles[0].FileURL != "ferry-upload:"+a.ok.UploadID ||
		logged.ContextFiles[0].MimeType != "image/png" {
		t.Fatalf("the logged prompt's context_files: %+v", logged)
	}

	f := &attachment.Fetcher{Master: e.wsURL("")}
	got, pe := f.Fetch(testCtx(t), files)
	if pe != nil {
		t.Fatalf("fetch: %+v", pe)
	}
	if !bytes.Equal(got[0].Data, testPNG) || got[0].MediaType != "image/png" || got[0].Name != "shot.png" {
		t.Fatalf("fetched %+v", got[0])
	}

	get := func(path string) (int, http.Header, protocol.Error) {
		resp, err := http.Get(e.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var wrap struct {
			Error protocol.Error `json:"error"`
		}
		if resp.StatusCode != http.StatusOK {
			_ = json.NewDecoder(resp.Body).Decode(&wrap)
		}
		return resp.StatusCode, resp.Header, wrap.Error
	}
	status, h, _ := get("/v1/uploads/" + id + "?grant=" + grant)
	if status != http.StatusOK || h.Get("Content-Type") != "image/png" || h.Get("X-Content-Type-Options") != "nosniff" ||
		h.Get("Cache-Control") != "no-store" || !strings.HasPrefix(h.Get("Content-Disposition"), "attachment") {
		t.Fatalf("GET with the grant: HTTP %d %v", status, h)
	}
	forged := grant[:len(grant)-2] + "AA"
	if grant[len(grant)-2:] == "AA" {
		forged = grant[:len(grant)-2] + "BB"
	}
	for name, path := range map[string]string{
		"no grant":              "/v1/uploads/" + id,
		"forged grant":          "/v1/uploads/" + id + "?grant=" + forged,
		"another upload's":      "/v1/uploads/" + other.ok.UploadID + "?grant=" + grant,
		"extra parameter":       "/v1/uploads/" + id + "?grant=" + grant + "&x=1",
		"garbage":               "/v1/uploads/" + id + "?grant=v1.1.2.3",
		"the ID without prefix": "/v1/uploads/" + strings.TrimPrefix(id, "upl_") + "?grant=" + grant,
	} {
		status, _, pe := get(path)
		switch {
		case name == "the ID without prefix":
			if status != http.StatusNotFound || pe.Code != protocol.CodeNotFound {
				t.Errorf("%s: HTTP %d %+v", name, status, pe)
			}
		case status != http.StatusForbidden || pe.Code != protocol.CodeUnauthorized:
			t.Errorf("%s: HTTP %d %+v, want 403 unauthorized", name, status, pe)
		}
	}
}

// TestUploadRefusals: every bad upload is a coded error with a fitting
// status, and none is stored.
func TestUploadRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{UploadMaxBytes: 1 << 10})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	scoped, _, err := auth.Issue(testCtx(t), e.st, store.TokenUI, "other machines", time.Hour, auth.WithMachines("m2"))
	if err != nil {
		t.Fatal(err)
	}

	wantRefusal(t, "oversize", e.upload(info.ID, e.ui, "big.txt", strings.Repeat("a", 1<<10+1)), http.StatusRequestEntityTooLarge, protocol.CodeInvalidValue, "file")
	wantRefusal(t, "wrong type", e.upload(info.ID, e.ui, "a.txt", "\x7fELF\x02\x01\x01\x00binary"), http.StatusUnsupportedMediaType, protocol.CodeUnsupported, "file")
	wantRefusal(t, "html is text only in name", e.upload(info.ID, e.ui, "a.svg", "<svg onload=alert(1)>\x00"), http.StatusUnsupportedMediaType, protocol.CodeUnsupported, "file")
	wantRefusal(t, "path as name", e.upload(info.ID, e.ui, "../../.bashrc", "x"), http.StatusBadRequest, protocol.CodeInvalidValue, "file.filename")
	wantRefusal(t, "bidi control in name", e.upload(info.ID, e.ui, "a\u202etxt.exe", "x"), http.StatusBadRequest, protocol.CodeInvalidValue, "file.filename")
	// Every invisible character, not only the bidirectional controls
	// (protocol.CheckName).
	for _, name := range []string{"a\u200b.txt", "\ufeffa.txt", "a\u2060.txt", "a\u00ad.txt", "\u3164.txt", "a\U000E0041.txt"} {
		wantRefusal(t, fmt.Sprintf("%+q as name", name), e.upload(info.ID, e.ui, name, "x"), http.StatusBadRequest, protocol.CodeInvalidValue, "file.filename")
	}
	wantRefusal(t, "no auth", e.upload(info.ID, "", "a.txt", "x"), http.StatusUnauthorized, protocol.CodeUnauthorized, "")
	wantRefusal(t, "a client token", e.upload(info.ID, e.client, "a.txt", "x"), http.StatusUnauthorized, protocol.CodeUnauthorized, "")
	wantRefusal(t, "unknown session", e.upload("nope", e.ui, "a.txt", "x"), http.StatusNotFound, protocol.CodeNotFound, "session_id")
	wantRefusal(t, "another user's session", e.upload(info.ID, scoped, "a.txt", "x"), http.StatusNotFound, protocol.CodeNotFound, "session_id")
	ct, body := multipartBody(t, [3]string{"file", "a.txt", "x"}, [3]string{"file", "b.txt", "y"})
	wantRefusal(t, "two parts", e.postUpload(info.ID, bearer(e.ui), ct, body), http.StatusBadRequest, protocol.CodeInvalidValue, "file")
	ct, body = multipartBody(t, [3]string{"other", "a.txt", "x"})
	wantRefusal(t, "wrong part", e.postUpload(info.ID, bearer(e.ui), ct, body), http.StatusBadRequest, protocol.CodeInvalidValue, "file")
	wantRefusal(t, "not multipart", e.postUpload(info.ID, bearer(e.ui), "text/plain", []byte("x")), http.StatusUnsupportedMediaType, protocol.CodeUnsupported, "Content-Type")
	if n := e.countUploads(); n != 0 {
		t.Fatalf("%d uploads stored after refusals", n)
	}
	// At the cap is fine.
	if a := e.upload(info.ID, e.ui, "max.txt", strings.Repeat("a", 1<<10)); a.status != http.StatusCreated {
		t.Fatalf("at the cap: HTTP %d %+v", a.status, a.err)
	}
}

// TestUploadBrowserLogin: a browser uploads with its session cookie and
// its key share from the master's own origin; the cookie alone, or from
// another origin, is refused.
func TestUploadBrowserLogin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	b := e.login()
	ct, body := multipartBody(t, [3]string{"file", "a.txt", "hello"})
	h := func(origin, key string) http.Header {
		h := http.Header{"Cookie": {b.cookie.Name + "=" + b.cookie.Value}, "Origin": {origin}}
		if key != "" {
			h.Set(master.KeyHeader, key)
		}
		return h
	}
	wantRefusal(t, "cookie alone", e.postUpload(info.ID, h(e.srv.URL, ""), ct, body), http.StatusUnauthorized, protocol.CodeUnauthorized, "")
	wantRefusal(t, "another origin", e.postUpload(info.ID, h("https://evil.example", b.key), ct, body), http.StatusUnauthorized, protocol.CodeUnauthorized, "")
	wantRefusal(t, "a wrong key", e.postUpload(info.ID, h(e.srv.URL, "ferry_uikey_"+strings.Repeat("A", 43)), ct, body), http.StatusUnauthorized, protocol.CodeUnauthorized, "")
	if n := e.countUploads(); n != 0 {
		t.Fatalf("%d uploads stored after refusals", n)
	}
	if a := e.postUpload(info.ID, h(e.srv.URL, b.key), ct, body); a.status != http.StatusCreated || a.ok.MimeType != "text/plain" {
		t.Fatalf("browser upload: HTTP %d %+v", a.status, a.err)
	}
}

// TestPromptUploadChecks: a prompt may name only its own session's
// uploads of its own UI token, not expired, and without a grant of its
// own; each refusal names the file and relays nothing.
func TestPromptUploadChecks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	info2, _ := startSession(ui, c)
	other, _, err := auth.Issue(testCtx(t), e.st, store.TokenUI, "another browser", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	mine := e.upload(info.ID, e.ui, "a.txt", "mine")
	theirs := e.upload(info.ID, other, "b.txt", "theirs")
	elsewhere := e.upload(info2.ID, e.ui, "c.txt", "other session")
	for _, a := range []uploadAnswer{mine, theirs, elsewhere} {
		if a.status != http.StatusCreated {
			t.Fatalf("upload: HTTP %d %+v", a.status, a.err)
		}
	}
	good := protocol.ContextFile{FileURL: "ferry-upload:" + mine.ok.UploadID, FileName: "a.txt"}
	for name, tc := range map[string]struct {
		url, code string
	}{
		"unknown upload":         {"ferry-upload:upl_doesnotexist", protocol.CodeNotFound},
		"another user's upload":  {"ferry-upload:" + theirs.ok.UploadID, protocol.CodeNotFound},
		"another session's":      {"ferry-upload:" + elsewhere.ok.UploadID, protocol.CodeNotFound},
		"a grant from the UI":    {"ferry-upload:" + mine.ok.UploadID + "?grant=v1.9999999999.eA.eA", protocol.CodeInvalidValue},
		"a malformed upload URL": {"ferry-upload:" + mine.ok.UploadID + "?x=1", protocol.CodeInvalidValue},
	} {
		m := ui.send(promptWith(info.ID, good, protocol.ContextFile{FileURL: tc.url, FileName: "x.txt"}))
		ans := ui.next(protocol.TypeError)
		if pe := ans.Payload.(*protocol.Error); ans.ParentID != m.MessageID || pe.Code != tc.code || pe.Field != "payload.context_files[1].file_url" {
			t.Errorf("%s: %+v, want %s at payload.context_files[1].file_url", name, pe, tc.code)
		}
	}
	ok := ui.send(promptWith(info.ID, good))
	if req := c.next(protocol.TypePromptRequest); req.MessageID != ok.MessageID {
		t.Fatalf("the client got %s, want only the valid prompt %s", req.MessageID, ok.MessageID)
	}
}

// TestUploadExpiry: an expired upload is refused on a prompt; a grant
// issued before the upload expired stops working with it (410), and the
// client's fetcher reports it as a coded error.
func TestUploadExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{UploadTTL: 500 * time.Millisecond})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	first := e.upload(info.ID, e.ui, "a.txt", "soon gone")
	ui.send(promptWith(info.ID, protocol.ContextFile{FileURL: "ferry-upload:" + first.ok.UploadID, FileName: "a.txt"}))
	files := c.next(protocol.TypePromptRequest).Payload.(*protocol.PromptRequest).ContextFiles
	time.Sleep(time.Until(first.ok.ExpiresAt) + 50*time.Millisecond)

	id, grant, _ := protocol.ParseUploadURL(files[0].FileURL)
	resp, err := http.Get(e.srv.URL + "/v1/uploads/" + id + "?grant=" + grant)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusGone {
		t.Fatalf("GET with a grant past the upload's expiry: HTTP %d, want 410", resp.StatusCode)
	}
	_, pe := (&attachment.Fetcher{Master: e.srv.URL}).Fetch(testCtx(t), files)
	if pe == nil || pe.Code != protocol.CodeUnauthorized || pe.Field != "payload.context_files[0].file_url" {
		t.Fatalf("fetch of an expired grant: %+v", pe)
	}
	m := ui.send(promptWith(info.ID, protocol.ContextFile{FileURL: "ferry-upload:" + first.ok.UploadID, FileName: "a.txt"}))
	ans := ui.next(protocol.TypeError)
	if pe := ans.Payload.(*protocol.Error); ans.ParentID != m.MessageID || pe.Code != protocol.CodeInvalidValue ||
		pe.Field != "payload.context_files[0].file_url" || !strings.Contains(pe.Message, "expired") {
		t.Fatalf("a prompt with an expired upload: %+v", pe)
	}
}

// TestUploadQuota: a session's uploads stop at its quota, and nothing past
// it is stored.
func TestUploadQuota(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{UploadQuota: store.UploadQuota{Count: 2}})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	for i := range 2 {
		if a := e.upload(info.ID, e.ui, "a.txt", "x"); a.status != http.StatusCreated {
			t.Fatalf("upload %d: HTTP %d %+v", i, a.status, a.err)
		}
	}
	wantRefusal(t, "past the quota", e.upload(info.ID, e.ui, "a.txt", "x"), http.StatusRequestEntityTooLarge, protocol.CodeInvalidValue, "file")
	if n := e.countUploads(); n != 2 {
		t.Fatalf("%d uploads stored, want 2", n)
	}
}

// TestUploadSweep: the master's sweep deletes expired uploads from the
// store.
func TestUploadSweep(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{UploadTTL: 100 * time.Millisecond, RevokeCheck: 50 * time.Millisecond})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	if a := e.upload(info.ID, e.ui, "a.txt", "x"); a.status != http.StatusCreated {
		t.Fatalf("upload: HTTP %d %+v", a.status, a.err)
	}
	for deadline := time.Now().Add(wait); e.countUploads() != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the expired upload was never swept")
		}
	}
}
