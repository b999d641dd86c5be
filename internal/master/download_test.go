package master_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// downloadCaps is testCaps plus the download messages.
func downloadCaps(machineID string) *protocol.Capabilities {
	caps := testCaps(machineID)
	caps.Messages = append(caps.Messages, protocol.TypeArtifactRead, protocol.TypeArtifactRange,
		protocol.TypeArtifactAck, protocol.TypeArtifactCancel)
	return caps
}

func testArtifact(turnID, id, path string) *protocol.Artifact {
	return &protocol.Artifact{TurnID: turnID, ArtifactID: id, Path: path, FileName: path[strings.LastIndex(path, "/")+1:],
		Size: 10, MimeType: "text/csv", ToolUseID: "toolu_1"}
}

// listArtifacts sends ui.artifacts.list and returns the answer.
func listArtifacts(ui *peer, sessionID string, p *protocol.ArtifactsList) *protocol.Message {
	ui.t.Helper()
	m := protocol.New(protocol.TypeArtifactsList, p)
	m.SessionID = sessionID
	ui.send(m)
	ans := ui.next(protocol.TypeArtifacts, protocol.TypeError)
	if ans.ParentID != m.MessageID {
		ui.t.Fatalf("the answer is for %s, want %s", ans.ParentID, m.MessageID)
	}
	return ans
}

func TestArtifactRegistrationAndLinks(t *testing.T) {
	e := newEnv(t, master.Config{DownloadTTL: 2 * time.Hour})
	ui := e.dialUI("ui")
	c := e.connectClient(downloadCaps("m1"), ui)
	info, _ := startSession(ui, c)
	subscribe(ui, info.ID, 1, info.Epoch)
	art := testArtifact("turn-1", "art_one", "out/a.csv")
	ev := c.emit(info.ID, protocol.TypeArtifact, art)
	c.waitAck(ev.MessageID)
	if got := ui.next(protocol.TypeArtifact).Payload.(*protocol.Artifact); *got != *art {
		t.Fatalf("relayed %+v", got)
	}

	// The same artifact again (a new event) registers nothing new; another
	// file under its artifact_id is refused, acknowledged and not relayed.
	c.waitAck(c.emit(info.ID, protocol.TypeArtifact, art).MessageID)
	ui.next(protocol.TypeArtifact)
	clash := testArtifact("turn-1", "art_one", "out/b.csv")
	bad := c.emit(info.ID, protocol.TypeArtifact, clash)
	c.expectError(bad.MessageID, protocol.CodeInvalidValue, "payload.artifact_id")
	c.waitAck(bad.MessageID)
	c.waitAck(c.emit(info.ID, protocol.TypeArtifact, testArtifact("turn-1", "art_two", "b.csv")).MessageID)
	if got := ui.next(protocol.TypeArtifact).Payload.(*protocol.Artifact); got.ArtifactID != "art_two" {
		t.Fatalf("after the refused one, relayed %+v", got)
	}

	before := time.Now()
	ans := listArtifacts(ui, info.ID, &protocol.ArtifactsList{})
	links := ans.Payload.(*protocol.Artifacts).Artifacts
	if len(links) != 2 || links[0].Artifact != *art || links[1].Artifact.ArtifactID != "art_two" {
		t.Fatalf("links %+v", links)
	}
	uiTok, err := auth.Verify(testCtx(t), e.st, e.ui, store.TokenUI)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		secret := strings.TrimPrefix(l.DownloadURL, "/v1/artifacts/")
		dl, err := e.st.DownloadTokenByHash(testCtx(t), auth.Hash(secret))
		if err != nil {
			t.Fatalf("the link's token is not stored: %v", err)
		}
		exp, _ := time.Parse(time.RFC3339Nano, l.ExpiresAt)
		if dl.OwnerID != uiTok.ID || dl.SessionID != info.ID || dl.ArtifactID != l.Artifact.ArtifactID ||
			!dl.ExpiresAt.Equal(exp) || dl.ExpiresAt.Before(before.Add(2*time.Hour-time.Minute)) {
			t.Fatalf("stored token %+v for link %+v", dl, l)
		}
		if len(secret) != len("ferry_dl_")+43 {
			t.Fatalf("token %q: want 32 random bytes", secret)
		}
	}
	if got := listArtifacts(ui, info.ID, &protocol.ArtifactsList{Limit: ptr(1)}).Payload.(*protocol.Artifacts).Artifacts; len(got) != 1 || got[0].Artifact.ArtifactID != "art_two" {
		t.Fatalf("limit 1: %+v, want the newest", got)
	}
	if e := listArtifacts(ui, info.ID, &protocol.ArtifactsList{ArtifactID: "art_none"}).Payload.(*protocol.Error); e.Code != protocol.CodeNotFound || e.Field != "payload.artifact_id" {
		t.Fatalf("an unknown artifact: %+v", e)
	}

	// A UI whose token does not see the machine cannot list it, exactly as
	// if the session did not exist.
	scoped, _, err := auth.Issue(testCtx(t), e.st, store.TokenUI, "phone", time.Hour, auth.WithMachines("m2"))
	if err != nil {
		t.Fatal(err)
	}
	p, _, _, err := dial(t, e.wsURL("/v1/ui"), bearer(scoped))
	if err != nil {
		t.Fatal(err)
	}
	p.name = "scoped"
	if e := listArtifacts(p, info.ID, &protocol.ArtifactsList{}).Payload.(*protocol.Error); e.Code != protocol.CodeNotFound || e.Field != "session_id" {
		t.Fatalf("a scoped UI listing another machine's session: %+v", e)
	}

	// The registrations survive a restart of the master.
	e.restart()
	ui = e.dialUI("ui2")
	if got := listArtifacts(ui, info.ID, &protocol.ArtifactsList{}).Payload.(*protocol.Artifacts).Artifacts; len(got) != 2 {
		t.Fatalf("after a restart: %d links", len(got))
	}
}

func ptr[T any](v T) *T { return &v }

// httpGet starts a download request; the caller closes the body.
func (e *env) httpGet(ctx context.Context, path string, h http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header = h
	return http.DefaultClient.Do(req)
}

type result struct {
	resp *http.Response
	body []byte
	err  error
}

// download runs a GET in the background; its result arrives on the channel.
func (e *env) download(ctx context.Context, path string, h http.Header) <-chan result {
	ch := make(chan result, 1)
	go func() {
		resp, err := e.httpGet(ctx, path, h)
		if err != nil {
			ch <- result{err: err}
			return
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		ch <- result{resp, body, err}
	}()
	return ch
}

// sendChunk sends one binary data frame.
func (c *fakeClient) sendChunk(id string, off int64, data []byte) {
	c.t.Helper()
	frame, err := protocol.AppendArtifactChunk(nil, protocol.ArtifactChunk{RequestID: id, Offset: off, Data: data})
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageBinary, frame); err != nil {
		c.t.Fatal(err)
	}
}

// answerRead waits for a control.artifact.read and answers its meta.
func (c *fakeClient) answerRead(size int64) (read *protocol.Message, id string) {
	c.t.Helper()
	read = c.next(protocol.TypeArtifactRead)
	id = read.Payload.(*protocol.ArtifactRead).RequestID
	meta := protocol.New(protocol.TypeArtifactMeta, &protocol.ArtifactMeta{RequestID: id, Size: size,
		ModifiedAt: "2026-01-02T03:04:05Z", ETag: "v1"})
	meta.SessionID, meta.ParentID = read.SessionID, read.MessageID
	c.send(meta)
	return read, id
}

func (c *fakeClient) end(sessionID, id string, e *protocol.Error) {
	end := protocol.New(protocol.TypeArtifactEnd, &protocol.ArtifactEnd{RequestID: id, Error: e})
	end.SessionID = sessionID
	c.send(end)
}

// downloadSetup is a session with one registered artifact and this UI's
// link for it.
func downloadSetup(t *testing.T, cfg master.Config) (*env, *peer, *fakeClient, protocol.SessionInfo, protocol.ArtifactLink) {
	e := newEnv(t, cfg)
	ui := e.dialUI("ui")
	c := e.connectClient(downloadCaps("m1"), ui)
	info, _ := startSession(ui, c)
	c.waitAck(c.emit(info.ID, protocol.TypeArtifact, testArtifact("turn-1", "art_one", "out/a.csv")).MessageID)
	l := listArtifacts(ui, info.ID, &protocol.ArtifactsList{}).Payload.(*protocol.Artifacts).Artifacts[0]
	return e, ui, c, info, l
}

// TestDownloadStreamsThroughTheMaster: the read reaches a client
// connection that never opened the session (no control.session.open
// first), the range covers the file, acks come as the data is delivered,
// and the bytes arrive in order.
func TestDownloadStreamsThroughTheMaster(t *testing.T) {
	e, ui, c, info, l := downloadSetup(t, master.Config{})
	c.reconnect(ui) // a connection that has not opened the session
	content := bytes.Repeat([]byte("abcdefgh"), 5*protocol.ArtifactChunkSize/8+100)
	res := e.download(testCtx(t), l.DownloadURL, bearer(e.ui))
	read, id := c.answerRead(int64(len(content)))
	if read.SessionID != info.ID || read.Payload.(*protocol.ArtifactRead).ArtifactID != "art_one" {
		t.Fatalf("read %+v for %s", read.Payload, read.SessionID)
	}
	rng := c.next(protocol.TypeArtifactRange).Payload.(*protocol.ArtifactRange)
	if rng.RequestID != id || rng.Offset != 0 || rng.Length != int64(len(content)) || rng.Window < protocol.MinArtifactWindow {
		t.Fatalf("range %+v", rng)
	}
	var acks []int64
	for off := int64(0); off < int64(len(content)); {
		n := min(int64(protocol.ArtifactChunkSize), int64(len(content))-off)
		if off+n > rng.Window+max(0, lastOf(acks)) {
			// Wait for credit, as a client must.
			ack := c.next(protocol.TypeArtifactAck).Payload.(*protocol.ArtifactAck)
			acks = append(acks, ack.Through)
			continue
		}
		c.sendChunk(id, off, content[off:off+n])
		off += n
	}
	c.end(info.ID, id, nil)
	r := <-res
	if r.err != nil || r.resp.StatusCode != http.StatusOK || !bytes.Equal(r.body, content) {
		t.Fatalf("download: %v, %d bytes", r.err, len(r.body))
	}
	if r.resp.Header.Get("ETag") != `"v1"` || r.resp.Header.Get("Last-Modified") != "Fri, 02 Jan 2026 03:04:05 GMT" {
		t.Fatalf("headers %v", r.resp.Header)
	}
}

func lastOf(s []int64) int64 {
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1]
}

// TestDownloaderLeaves: when the HTTP client goes away, the master cancels
// the client's read.
func TestDownloaderLeaves(t *testing.T) {
	e, _, c, info, l := downloadSetup(t, master.Config{})
	ctx, cancel := context.WithCancel(testCtx(t))
	resp := make(chan *http.Response, 1)
	go func() {
		r, err := e.httpGet(ctx, l.DownloadURL, bearer(e.ui)) //nolint:bodyclose // closed by the test below
		if err == nil {
			resp <- r
		}
	}()
	size := int64(8 * protocol.ArtifactChunkSize)
	_, id := c.answerRead(size)
	c.next(protocol.TypeArtifactRange)
	c.sendChunk(id, 0, make([]byte, protocol.ArtifactChunkSize))
	r := <-resp
	if _, err := io.ReadFull(r.Body, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	cancel()
	_ = r.Body.Close()
	got := c.next(protocol.TypeArtifactCancel).Payload.(*protocol.ArtifactCancel)
	if got.RequestID != id {
		t.Fatalf("cancel for %s, want %s", got.RequestID, id)
	}
	_ = info
}

// TestDownloadClientMisbehaves: a gap in the data, an end before the
// range is complete, or a client that goes away mid-stream each cut the
// response short (never a complete-looking wrong file), and the first two
// end with a cancel to the client.
func TestDownloadClientMisbehaves(t *testing.T) {
	size := int64(4 * protocol.ArtifactChunkSize)
	for name, misbehave := range map[string]func(c *fakeClient, sessionID, id string){
		"gap": func(c *fakeClient, _, id string) {
			c.sendChunk(id, 0, make([]byte, protocol.ArtifactChunkSize))
			c.sendChunk(id, 2*protocol.ArtifactChunkSize, make([]byte, protocol.ArtifactChunkSize))
		},
		"short chunk": func(c *fakeClient, _, id string) {
			c.sendChunk(id, 0, make([]byte, 100))
		},
		"early end": func(c *fakeClient, sessionID, id string) {
			c.sendChunk(id, 0, make([]byte, protocol.ArtifactChunkSize))
			c.end(sessionID, id, nil)
		},
		"gone": func(c *fakeClient, _, id string) {
			c.sendChunk(id, 0, make([]byte, protocol.ArtifactChunkSize))
			_ = c.ws.CloseNow()
		},
	} {
		t.Run(name, func(t *testing.T) {
			e, _, c, info, l := downloadSetup(t, master.Config{})
			res := e.download(testCtx(t), l.DownloadURL, bearer(e.ui))
			_, id := c.answerRead(size)
			c.next(protocol.TypeArtifactRange)
			misbehave(c, info.ID, id)
			r := <-res
			if r.err == nil && int64(len(r.body)) == size {
				t.Fatalf("a misbehaving client's download looked complete (%d)", r.resp.StatusCode)
			}
			if name == "gap" || name == "short chunk" {
				if got := c.next(protocol.TypeArtifactCancel).Payload.(*protocol.ArtifactCancel); got.RequestID != id {
					t.Fatalf("cancel for %s", got.RequestID)
				}
			}
		})
	}
}

// TestDownloadClientAnswers: the client's refusals and silence map to HTTP
// statuses, and a client without downloads is told apart.
func TestDownloadClientAnswers(t *testing.T) {
	cases := map[string]struct {
		answer func(c *fakeClient, read *protocol.Message, id string)
		status int
		text   string
	}{
		"not found": {func(c *fakeClient, read *protocol.Message, id string) {
			c.end(read.SessionID, id, &protocol.Error{Code: protocol.CodeNotFound, Message: "/home/me/secret path"})
		}, http.StatusNotFound, "no longer available"},
		"busy": {func(c *fakeClient, read *protocol.Message, id string) {
			c.end(read.SessionID, id, &protocol.Error{Code: protocol.CodeBusy, Message: "busy"})
		}, http.StatusServiceUnavailable, "too many downloads"},
		"internal": {func(c *fakeClient, read *protocol.Message, id string) {
			c.end(read.SessionID, id, &protocol.Error{Code: protocol.CodeInternal, Message: "disk on fire at /dev/sda"})
		}, http.StatusBadGateway, "could not read it"},
		"fails before the data": {func(c *fakeClient, read *protocol.Message, id string) {
			meta := protocol.New(protocol.TypeArtifactMeta, &protocol.ArtifactMeta{RequestID: id, Size: 10, ModifiedAt: "2026-01-02T03:04:05Z", ETag: "v1"})
			meta.SessionID, meta.ParentID = read.SessionID, read.MessageID
			c.send(meta)
			c.next(protocol.TypeArtifactRange)
			c.end(read.SessionID, id, &protocol.Error{Code: protocol.CodeInternal, Message: "read failed"})
		}, http.StatusBadGateway, "could not read it"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e, _, c, _, l := downloadSetup(t, master.Config{})
			res := e.download(testCtx(t), l.DownloadURL, bearer(e.ui))
			read := c.next(protocol.TypeArtifactRead)
			tc.answer(c, read, read.Payload.(*protocol.ArtifactRead).RequestID)
			r := <-res
			if r.err != nil || r.resp.StatusCode != tc.status || !strings.Contains(string(r.body), tc.text) {
				t.Fatalf("%v: %d %s, want %d saying %q", r.err, r.resp.StatusCode, r.body, tc.status, tc.text)
			}
			if strings.Contains(string(r.body), "/") || r.resp.Header.Get("Content-Disposition") != "" {
				t.Fatalf("the answer leaks the client's detail or promises a body: %s %v", r.body, r.resp.Header)
			}
		})
	}
	t.Run("no answer", func(t *testing.T) {
		defer master.SetMetaWait(100 * time.Millisecond)()
		e, _, c, _, l := downloadSetup(t, master.Config{})
		res := e.download(testCtx(t), l.DownloadURL, bearer(e.ui))
		c.next(protocol.TypeArtifactRead) // and never answered
		r := <-res
		if r.err != nil || r.resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(r.body), "did not answer in time") {
			t.Fatalf("%v: %d %s", r.err, r.resp.StatusCode, r.body)
		}
		c.next(protocol.TypeArtifactCancel)
	})
	t.Run("no downloads", func(t *testing.T) {
		e := newEnv(t, master.Config{})
		ui := e.dialUI("ui")
		c := e.connectClient(testCaps("m1"), ui)
		info, _ := startSession(ui, c)
		c.waitAck(c.emit(info.ID, protocol.TypeArtifact, testArtifact("turn-1", "art_one", "out/a.csv")).MessageID)
		l := listArtifacts(ui, info.ID, &protocol.ArtifactsList{}).Payload.(*protocol.Artifacts).Artifacts[0]
		r := <-e.download(testCtx(t), l.DownloadURL, bearer(e.ui))
		if r.err != nil || r.resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(r.body), "cannot serve downloads") {
			t.Fatalf("%v: %d %s", r.err, r.resp.StatusCode, r.body)
		}
	})
}

// TestDownloadFrames: a binary frame that is not a data frame is refused
// with invalid_value; a data frame of no download of the connection (a
// guessed or stale request_id) goes nowhere.
func TestDownloadFrames(t *testing.T) {
	e, _, c, info, l := downloadSetup(t, master.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageBinary, []byte("not a chunk")); err != nil {
		t.Fatal(err)
	}
	c.expectError("", protocol.CodeInvalidValue, "frame")
	// Frames for a download this connection was never asked for: dropped.
	res := e.download(testCtx(t), l.DownloadURL, bearer(e.ui))
	_, id := c.answerRead(3)
	c.sendChunk(protocol.NewID(), 0, []byte("bad"))
	c.next(protocol.TypeArtifactRange)
	c.sendChunk(id, 0, []byte("abc"))
	c.end(info.ID, id, nil)
	if r := <-res; r.err != nil || string(r.body) != "abc" {
		t.Fatalf("%v %q", r.err, r.body)
	}
}

// TestExpiredDownloadTokensSwept: the revocation sweep also deletes
// expired download tokens.
func TestExpiredDownloadTokensSwept(t *testing.T) {
	e, _, _, info, _ := downloadSetup(t, master.Config{RevokeCheck: 20 * time.Millisecond})
	ctx := testCtx(t)
	uiTok, err := auth.Verify(ctx, e.st, e.ui, store.TokenUI)
	if err != nil {
		t.Fatal(err)
	}
	hash := auth.Hash("ferry_dl_" + strings.Repeat("C", 43))
	if err := e.st.CreateDownloadTokens(ctx, []store.DownloadToken{{ID: "old", Hash: hash, SessionID: info.ID,
		ArtifactID: "art_one", OwnerID: uiTok.ID, ExpiresAt: time.Now().Add(-time.Second)}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(wait)
	for {
		_, err := e.st.DownloadTokenByHash(ctx, hash)
		if errors.Is(err, store.ErrNotFound) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the expired token is still stored: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
