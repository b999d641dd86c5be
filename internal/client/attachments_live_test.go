package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/sqlite"
	"github.com/ferry-dev/ferry/protocol"
)

// TestUploadReachesTheAgent runs the whole path with every real part: a
// master on a real SQLite file behind loopback HTTP, this client connected
// to it over a real WebSocket, and a UI (a WebSocket with a UI token) that
// uploads a PNG over HTTP and prompts with it. The adapter's turn gets
// the exact bytes.
func TestUploadReachesTheAgent(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "master.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	m, err := master.New(ctx, master.Config{Store: st, PingInterval: time.Minute, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = m.Shutdown(sctx)
		srv.Close()
	})
	clientSecret, _, err := auth.Issue(ctx, st, store.TokenClient, "laptop", 0)
	if err != nil {
		t.Fatal(err)
	}
	uiSecret, _, err := auth.Issue(ctx, st, store.TokenUI, "browser", time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	rec := &recAdapter{}
	c, err := New(Config{MasterURL: srv.URL, Token: clientSecret, Workspaces: []string{newWorkspace(t)}, StateDir: t.TempDir(),
		Adapters: []adapter.Adapter{rec}, Logger: discardLogger(), MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- c.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		<-ran
		_ = c.Close()
	})
	select {
	case <-c.Connected():
	case <-ctx.Done():
		t.Fatal("the client did not connect")
	}

	ws, wsResp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/v1/ui",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + uiSecret}}})
	if wsResp != nil && wsResp.Body != nil {
		_ = wsResp.Body.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(-1)
	send := func(msg *protocol.Message) {
		b, err := protocol.Encode(msg)
		if err != nil {
			t.Fatal(err)
		}
		if err := ws.Write(ctx, websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
	}
	until := func(ok func(*protocol.Message) bool) *protocol.Message {
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			msg, err := protocol.Decode(b)
			if err != nil {
				t.Fatalf("decode %s: %v", b, err)
			}
			if ok(msg) {
				return msg
			}
		}
	}
	// The master may not have taken the client's capabilities yet: ask
	// again while it does not know the machine.
	var ans *protocol.Message
	for {
		start := protocol.New(protocol.TypeSessionStart, &protocol.SessionStart{MachineID: c.Machine().ID, WorkspaceID: c.Workspaces()[0].ID, Adapter: "rec", Title: "t"})
		send(start)
		ans = until(func(msg *protocol.Message) bool { return msg.ParentID == start.MessageID })
		if pe, ok := ans.Payload.(*protocol.Error); !ok || pe.Field != "payload.machine_id" || ctx.Err() != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ans.Type != protocol.TypeSessionAnswer {
		t.Fatalf("session start answered %s %+v", ans.Type, ans.Payload)
	}
	sessionID := ans.SessionID
	sub := protocol.New(protocol.TypeSessionSubscribe, &protocol.SessionSubscribe{})
	sub.SessionID = sessionID
	send(sub)
	until(func(msg *protocol.Message) bool {
		return msg.ParentID == sub.MessageID && msg.Type == protocol.TypeSubscribed
	})

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "shot.png")
	_, _ = fw.Write(attachPNG)
	_ = mw.Close()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/sessions/"+sessionID+"/uploads", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+uiSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var up struct {
		UploadID string `json:"upload_id"`
	}
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &up) != nil {
		t.Fatalf("upload: HTTP %d %s", resp.StatusCode, raw)
	}

	p := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{
		Segments:     []protocol.PromptSegment{{Kind: protocol.SegmentText, Text: "what is this?"}},
		ContextFiles: []protocol.ContextFile{{FileURL: "ferry-upload:" + up.UploadID, FileName: "shot.png"}},
	})
	p.SessionID = sessionID
	send(p)
	done := until(func(msg *protocol.Message) bool {
		return msg.Type == protocol.TypeTextDone || msg.Type == protocol.TypeError && msg.ParentID == p.MessageID
	})
	if done.Type != protocol.TypeTextDone {
		t.Fatalf("the prompt was answered %s %+v", done.Type, done.Payload)
	}
	runs := rec.runs()
	if len(runs) != 1 || len(runs[0]) != 1 || !bytes.Equal(runs[0][0].Data, attachPNG) || runs[0][0].MediaType != "image/png" || runs[0][0].Name != "shot.png" {
		t.Fatalf("the agent got %+v", runs)
	}
}
