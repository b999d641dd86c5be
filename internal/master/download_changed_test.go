package master_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/ferry-dev/ferry/internal/master"
	dl "github.com/ferry-dev/ferry/internal/master/download"
	"github.com/ferry-dev/ferry/protocol"
)

// TestDownloadChangedMarker: when the client says the file it serves is
// no longer the version the agent made (changed_since), GET and HEAD of
// /v1/artifacts/{token} carry Ferry-Artifact-Changed: 1 over the master's
// real HTTP path; the agent's version carries Ferry-Artifact-Workspace-
// Differs: 1 instead when the client says the workspace's file is another.
func TestDownloadChangedMarker(t *testing.T) {
	e, _, c, info, l := downloadSetup(t, master.Config{})
	content := []byte("the file as it is now")
	for _, tc := range []struct {
		method  string
		changed bool
	}{{http.MethodGet, true}, {http.MethodHead, true}, {http.MethodGet, false}, {http.MethodHead, false}} {
		res := make(chan *http.Response, 1)
		body := make(chan []byte, 1)
		go func() {
			req, err := http.NewRequestWithContext(testCtx(t), tc.method, e.srv.URL+l.DownloadURL, nil)
			if err != nil {
				res <- nil
				return
			}
			req.Header = bearer(e.ui)
			r, err := http.DefaultClient.Do(req)
			if err != nil {
				res <- nil
				return
			}
			b, _ := io.ReadAll(r.Body)
			_ = r.Body.Close()
			body <- b
			res <- r
		}()
		read := c.next(protocol.TypeArtifactRead)
		id := read.Payload.(*protocol.ArtifactRead).RequestID
		meta := protocol.New(protocol.TypeArtifactMeta, &protocol.ArtifactMeta{RequestID: id, Size: int64(len(content)),
			ModifiedAt: "2026-01-02T03:04:05Z", ETag: "v2", ChangedSince: tc.changed,
			WorkspaceDiffers: !tc.changed})
		meta.SessionID, meta.ParentID = read.SessionID, read.MessageID
		c.send(meta)
		if tc.method == http.MethodGet {
			c.next(protocol.TypeArtifactRange)
			c.sendChunk(id, 0, content)
			c.end(info.ID, id, nil)
		} else {
			c.next(protocol.TypeArtifactCancel) // HEAD needs no body
		}
		r := <-res
		if r == nil {
			t.Fatalf("%s: the request failed", tc.method)
		}
		want := ""
		if tc.changed {
			want = "1"
		}
		if r.StatusCode != http.StatusOK || r.Header.Get(dl.ChangedHeader) != want {
			t.Errorf("%s changed=%v: %d, %s %q, want %q", tc.method, tc.changed, r.StatusCode, dl.ChangedHeader, r.Header.Get(dl.ChangedHeader), want)
		}
		if differs := map[bool]string{true: "", false: "1"}[tc.changed]; r.Header.Get(dl.WorkspaceDiffersHeader) != differs {
			t.Errorf("%s changed=%v: %s %q, want %q", tc.method, tc.changed, dl.WorkspaceDiffersHeader, r.Header.Get(dl.WorkspaceDiffersHeader), differs)
		}
		if b := <-body; tc.method == http.MethodGet && string(b) != string(content) {
			t.Errorf("%s: body %q", tc.method, b)
		}
	}
}
