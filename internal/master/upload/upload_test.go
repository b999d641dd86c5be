package upload_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/master/upload"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// TestGrantLifetime: on a real SQLite store behind real HTTP, a grant
// works until its own expiry (410 after), is bound to the upload it was
// issued for, and a grant signed with another key is refused (403).
func TestGrantLifetime(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := sessionStore(t, "u1")
	var clock atomic.Int64
	clock.Store(time.Now().Unix())
	now := func() time.Time { return time.Unix(clock.Load(), 0) }
	svc, err := upload.New(upload.Config{Store: st, Key: bytes.Repeat([]byte("k"), 32), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := upload.New(upload.Config{Store: st, Key: bytes.Repeat([]byte("x"), 32), Now: now})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/sessions/{session_id}/uploads", func(w http.ResponseWriter, r *http.Request) {
		svc.Receive(w, r, store.Token{ID: "u1", Kind: store.TokenUI})
	})
	mux.HandleFunc("GET /v1/uploads/{upload_id}", svc.Serve)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "a.json")
	_, _ = fw.Write([]byte(`{"a":1}`))
	_ = mw.Close()
	resp, err := http.Post(srv.URL+"/v1/sessions/s1/uploads", mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	var ans upload.Answer
	_ = json.NewDecoder(resp.Body).Decode(&ans)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || ans.MimeType != "application/json" {
		t.Fatalf("upload: HTTP %d %+v", resp.StatusCode, ans)
	}
	grant := func(s *upload.Service, msgID string) string {
		files, err := s.Grant(ctx, "u1", "s1", msgID, []protocol.ContextFile{{FileURL: "ferry-upload:" + ans.UploadID, FileName: "a.json"}})
		if err != nil {
			t.Fatal(err)
		}
		_, g, _ := protocol.ParseUploadURL(files[0].FileURL)
		return g
	}
	status := func(g string) int {
		resp, err := http.Get(srv.URL + "/v1/uploads/" + ans.UploadID + "?grant=" + g)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	g := grant(svc, "msg-1")
	if s := status(g); s != http.StatusOK {
		t.Fatalf("fresh grant: HTTP %d", s)
	}
	if s := status(grant(other, "msg-1")); s != http.StatusForbidden {
		t.Fatalf("a grant under another key: HTTP %d, want 403", s)
	}
	// The message ID is part of what is signed.
	if s := status(strings.Replace(g, ".bXNnLTE.", ".bXNnLTI.", 1)); s != http.StatusForbidden {
		t.Fatalf("a grant moved to another prompt: HTTP %d, want 403", s)
	}
	clock.Add(int64(upload.DefaultGrantTTL/time.Second) + 1)
	if s := status(g); s != http.StatusGone {
		t.Fatalf("an expired grant: HTTP %d, want 410", s)
	}
	if s := status(grant(svc, "msg-2")); s != http.StatusOK {
		t.Fatalf("a new prompt's grant: HTTP %d", s)
	}
}
