package master_test

import (
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/protocol"
)

// TestDownloadSeveralRanges: several ranges come as one multipart body,
// each part a read of its own from the client, which must find the same
// version of the file; a part that finds another version cuts the body.
func TestDownloadSeveralRanges(t *testing.T) {
	content := []byte(strings.Repeat("0123456789", 10))
	for _, changed := range []bool{false, true} {
		e, _, c, info, l := downloadSetup(t, master.Config{})
		h := bearer(e.ui)
		h.Set("Range", "bytes=0-1,10-14")
		res := e.download(testCtx(t), l.DownloadURL, h)
		_, id := c.answerRead(int64(len(content)))
		rng := c.next(protocol.TypeArtifactRange).Payload.(*protocol.ArtifactRange)
		if rng.RequestID != id || rng.Offset != 0 || rng.Length < 2 {
			t.Fatalf("first range %+v", rng)
		}
		c.sendChunk(id, 0, content[:rng.Length])
		if got := c.next(protocol.TypeArtifactCancel).Payload.(*protocol.ArtifactCancel); got.RequestID != id {
			t.Fatalf("cancel of %s, want the first read %s", got.RequestID, id)
		}
		read := c.next(protocol.TypeArtifactRead)
		id2 := read.Payload.(*protocol.ArtifactRead).RequestID
		etag := "v1"
		if changed {
			etag = "v2"
		}
		meta := protocol.New(protocol.TypeArtifactMeta, &protocol.ArtifactMeta{RequestID: id2, Size: int64(len(content)),
			ModifiedAt: "2026-01-02T03:04:05Z", ETag: etag})
		meta.SessionID, meta.ParentID = info.ID, read.MessageID
		c.send(meta)
		if changed {
			r := <-res
			if r.err == nil && strings.Contains(string(r.body), "01234") {
				t.Fatalf("a part of another version was served: %q", r.body)
			}
			continue
		}
		rng = c.next(protocol.TypeArtifactRange).Payload.(*protocol.ArtifactRange)
		if rng.RequestID != id2 || rng.Offset != 10 || rng.Length < 5 {
			t.Fatalf("second range %+v", rng)
		}
		c.sendChunk(id2, 10, content[10:10+rng.Length])
		r := <-res
		if r.err != nil || r.resp.StatusCode != http.StatusPartialContent {
			t.Fatalf("%v: %v", r.err, r.resp)
		}
		mt, params, err := mime.ParseMediaType(r.resp.Header.Get("Content-Type"))
		if err != nil || mt != "multipart/byteranges" {
			t.Fatalf("Content-Type %q", r.resp.Header.Get("Content-Type"))
		}
		mr := multipart.NewReader(strings.NewReader(string(r.body)), params["boundary"])
		for _, want := range []string{"01", "01234"} {
			p, err := mr.NextPart()
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := io.ReadAll(p); string(b) != want {
				t.Fatalf("part %q, want %q", b, want)
			}
		}
	}
}
