package acpagent_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/builtin"
	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/client"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/llm/provider"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/sqlite"
	"github.com/ferry-dev/ferry/protocol"
)

// remote is a real master on loopback with a real client (ferry's agent on
// the scripted model) serving one workspace, as ferry acp --master sees it.
type remote struct {
	url, uiToken, workspace string
}

// editor starts ferry acp --master url (the master's own, or a proxy's)
// with the master's ui token in a file, and args.
func (r *remote) editor(t *testing.T, url string, args ...string) *editor {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(r.uiToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return newEditor(t, r.workspace, t.TempDir(), append([]string{"--master", url, "--token-file", tokenFile}, args...)...)
}

func startRemote(t *testing.T, m *model) *remote {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ferry.db"))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := master.New(ctx, master.Config{Store: st, Retention: 1000})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: ms.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	r := &remote{url: "http://" + ln.Addr().String(), workspace: workspace(t)}
	if r.uiToken, _, err = auth.Issue(ctx, st, store.TokenUI, "test ui", 0); err != nil {
		t.Fatal(err)
	}
	secret, _, err := auth.Issue(ctx, st, store.TokenClient, "test client", 0)
	if err != nil {
		t.Fatal(err)
	}
	ad := builtin.New(builtin.Config{
		Getenv:   func(k string) string { return map[string]string{"ANTHROPIC_API_KEY": "test-key"}[k] },
		Provider: provider.Config{Provider: "anthropic", Model: "test-model", BaseURL: m.srv.BaseURL(fake.Anthropic)},
	})
	c, err := client.New(client.Config{MasterURL: r.url, Token: secret, Workspaces: []string{r.workspace},
		StateDir: filepath.Join(t.TempDir(), "client"), MachineName: "far-machine", Adapters: []adapter.Adapter{ad},
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = c.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = c.Close()
		sctx, scancel := context.WithTimeout(context.Background(), wait)
		defer scancel()
		_ = ms.Shutdown(sctx)
		_ = srv.Shutdown(sctx)
		_ = st.Close()
	})
	return r
}

// uiPeer is a web UI's WebSocket to the master.
type uiPeer struct {
	t    *testing.T
	conn *websocket.Conn
	in   chan *protocol.Message
}

func (r *remote) ui(t *testing.T) *uiPeer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.url, "http")+"/v1/ui", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + r.uiToken}}})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadLimit(protocol.MaxMessageBytes)
	u := &uiPeer{t: t, conn: conn, in: make(chan *protocol.Message, 10000)}
	go func() {
		for {
			_, data, err := conn.Read(context.Background())
			if err != nil {
				return
			}
			if m, err := protocol.DecodeRelayed(data); err == nil {
				u.in <- m
			}
		}
	}()
	t.Cleanup(func() { _ = conn.Close(websocket.StatusNormalClosure, "") })
	return u
}

func (u *uiPeer) send(m *protocol.Message) {
	u.t.Helper()
	data, err := protocol.Encode(m)
	if err != nil {
		u.t.Fatal(err)
	}
	if err := u.conn.Write(context.Background(), websocket.MessageText, data); err != nil {
		u.t.Fatal(err)
	}
}

// until reads the UI's messages until stop says so.
func (u *uiPeer) until(what string, stop func(*protocol.Message) bool) {
	u.t.Helper()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case m := <-u.in:
			if stop(m) {
				return
			}
		case <-timer.C:
			u.t.Fatalf("the UI saw no %s within %s", what, wait)
		}
	}
}

// An editor (ferry acp --master) and a web UI share one session: the
// editor's prompt shows in the UI, the UI answers its permission and the
// editor sees it resolved, and a prompt from the UI streams to the editor.
func TestMasterSharedWithAUI(t *testing.T) {
	m := newModel(t)
	r := startRemote(t, m)
	e := r.editor(t, r.url, "--machine", "far-machine")
	e.initialize(acp.ClientCapabilities{})
	s := e.newSession(r.workspace)
	sid := string(s.SessionId)

	u := r.ui(t)
	sub := protocol.New(protocol.TypeSessionSubscribe, &protocol.SessionSubscribe{})
	sub.SessionID = sid
	u.send(sub)

	// The editor's prompt; the editor leaves the permission open and the
	// UI answers it.
	m.srv.Script(read("greet.txt"), edit("greet.txt", "world", "ferry"), say("Edited."))
	done := make(chan error, 1)
	go func() {
		r, err := e.prompt(s.SessionId, "Edit greet.txt from the editor")
		if err == nil && r.StopReason != acp.StopReasonEndTurn {
			err = &acp.RequestError{Message: "ended " + string(r.StopReason)}
		}
		done <- err
	}()
	sawPrompt := false
	u.until("the permission request", func(msg *protocol.Message) bool {
		switch p := msg.Payload.(type) {
		case *protocol.PromptRequest:
			sawPrompt = sawPrompt || strings.Contains(p.PromptText, "Edit greet.txt from the editor")
		case *protocol.InteractionRequest:
			// Wait until the editor was asked too: the UI's answer must
			// withdraw an open question.
			e.waitFor("the editor's question", func([]acp.SessionNotification) bool {
				return len(e.asked) > 0 // waitFor holds e.mu
			})
			a := protocol.New(protocol.TypeInteractionResponse, &protocol.InteractionResponse{
				InteractionID: p.InteractionID, SelectedValue: protocol.Single(protocol.AllowOnce)})
			a.SessionID = sid
			u.send(a)
			return true
		}
		return false
	})
	if !sawPrompt {
		t.Error("the UI never saw the editor's prompt")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the editor's prompt: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("the editor's turn never ended")
	}
	e.mu.Lock()
	withdrawn := e.withdrawn
	e.mu.Unlock()
	if withdrawn != 1 {
		t.Errorf("the editor's question was withdrawn %d times, want 1", withdrawn)
	}
	if b, _ := os.ReadFile(filepath.Join(r.workspace, "greet.txt")); string(b) != "hello ferry\n" {
		t.Errorf("greet.txt holds %q after the UI allowed the edit", b)
	}
	_, finals := toolCalls(e.updates)
	q := e.asked[0].ToolCall.ToolCallId
	if f := finals[q]; f == nil || *f.Status != acp.ToolCallStatusCompleted {
		t.Errorf("the edit the UI allowed ends %+v in the editor", f)
	}

	// A prompt from the UI (the phone) reaches the editor.
	m.srv.Script(say("Answered the phone."))
	pr := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{Segments: []protocol.PromptSegment{{Kind: protocol.SegmentText, Text: "Hello from the phone"}}})
	pr.SessionID = sid
	u.send(pr)
	e.waitFor("the phone's prompt and its answer", func(us []acp.SessionNotification) bool {
		var user, agent string
		for _, n := range us {
			if c := n.Update.UserMessageChunk; c != nil && c.Content.Text != nil {
				user += c.Content.Text.Text
			}
			if c := n.Update.AgentMessageChunk; c != nil && c.Content.Text != nil {
				agent += c.Content.Text.Text
			}
		}
		return strings.Contains(user, "Hello from the phone") && strings.Contains(agent, "Answered the phone.")
	})
}

// With --master the session's agent runs elsewhere: ferry acp answers
// what --deny and --allow decide itself, and asks the editor the rest.
func TestMasterRulesAnsweredByTheFace(t *testing.T) {
	m := newModel(t)
	r := startRemote(t, m)
	e := r.editor(t, r.url, "--deny", "Edit(greet.txt)", "--allow", "Write")
	e.setAnswer(choose(acp.PermissionOptionKindAllowOnce))
	e.initialize(acp.ClientCapabilities{})
	s := e.newSession(r.workspace)
	m.srv.Script(read("greet.txt"), edit("greet.txt", "world", "ferry"),
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Write", Input: map[string]any{"file_path": "new.txt", "content": "x\n"}}}}, say("Done."))
	e.mustPrompt(s.SessionId, "Edit and write", acp.StopReasonEndTurn)
	if b, _ := os.ReadFile(filepath.Join(r.workspace, "greet.txt")); string(b) != "hello world\n" {
		t.Errorf("greet.txt holds %q despite --deny", b)
	}
	if b, _ := os.ReadFile(filepath.Join(r.workspace, "new.txt")); string(b) != "x\n" {
		t.Errorf("new.txt holds %q despite --allow Write", b)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.asked) != 0 {
		t.Errorf("the editor was asked %d times; the rules decide both calls", len(e.asked))
	}
}

// cutProxy forwards TCP connections to a master; cut drops the ones open
// now, as a Wi-Fi change or a master's restart does, and new ones go on
// being forwarded unless the proxy is held down.
type cutProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	down  bool // new connections are closed at once
}

// hold keeps the master out of reach (down) or lets it be reached again.
func (p *cutProxy) hold(down bool) {
	p.mu.Lock()
	p.down = down
	p.mu.Unlock()
}

// sessionBehindProxy starts a master, a proxy in front of it that can cut
// its connections, and an editor on ferry acp --master through the proxy
// with a session open in the master's workspace.
func sessionBehindProxy(t *testing.T) (*model, *remote, *cutProxy, *editor, acp.NewSessionResponse) {
	t.Helper()
	m := newModel(t)
	r := startRemote(t, m)
	p := newCutProxy(t, strings.TrimPrefix(r.url, "http://"))
	e := r.editor(t, p.url())
	e.initialize(acp.ClientCapabilities{})
	return m, r, p, e, e.newSession(r.workspace)
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			down := p.down
			p.mu.Unlock()
			if down {
				_ = c.Close()
				continue
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
			go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); p.cut() })
	return p
}

func (p *cutProxy) url() string { return "http://" + p.ln.Addr().String() }

// cut closes every connection open now; it returns how many.
func (p *cutProxy) cut() int {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	return len(conns) / 2
}

// When the connection to the master drops mid-turn, ferry acp --master
// dials it again and follows the session on from the last event it
// handled: the turn ends as it would have, every piece of the answer
// reaches the editor once, and the next prompt runs.
func TestMasterReconnectsMidTurn(t *testing.T) {
	m, _, p, e, s := sessionBehindProxy(t)

	pieces := []string{"one ", "two ", "three ", "four ", "five."}
	m.srv.Script(read("greet.txt"), fake.Reply{Text: pieces, Delay: 300 * time.Millisecond})
	done := make(chan error, 1)
	go func() {
		r, err := e.prompt(s.SessionId, "Read greet.txt, then count")
		if err == nil && r.StopReason != acp.StopReasonEndTurn {
			err = &acp.RequestError{Message: "ended " + string(r.StopReason)}
		}
		done <- err
	}()
	e.waitFor("the Read call finished", func(us []acp.SessionNotification) bool {
		_, finals := toolCalls(us)
		return len(finals) == 1
	})
	if n := p.cut(); n == 0 {
		t.Fatal("no connection to cut")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the turn across the dropped connection: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("the turn never ended in the editor")
	}
	if agent, _ := e.text(s.SessionId); agent != strings.Join(pieces, "") {
		t.Errorf("the editor's answer %q, want %q: pieces lost or shown twice", agent, strings.Join(pieces, ""))
	}
	e.mu.Lock()
	starts, _ := toolCalls(e.updates)
	e.mu.Unlock()
	if len(starts) != 1 {
		t.Errorf("the Read call was shown %d times, want once", len(starts))
	}

	m.srv.Script(say("Still here."))
	e.mustPrompt(s.SessionId, "Are you there?", acp.StopReasonEndTurn)
	if agent, _ := e.text(s.SessionId); !strings.HasSuffix(agent, "Still here.") {
		t.Errorf("the answer after reconnecting: %q", agent)
	}
}

// An answer the editor gives while the connection to the master is down
// is sent once it is up again: the edit it allowed is made.
func TestMasterAnswerWhileReconnecting(t *testing.T) {
	m, r, p, e, s := sessionBehindProxy(t)
	allow := choose(acp.PermissionOptionKindAllowOnce)
	cuts := 0
	e.setAnswer(func(q acp.RequestPermissionRequest) acp.RequestPermissionResponse {
		cuts += p.cut()
		time.Sleep(200 * time.Millisecond) // the face sees the connection drop first
		return allow(q)
	})
	m.srv.Script(read("greet.txt"), edit("greet.txt", "world", "ferry"), say("Edited."))
	e.mustPrompt(s.SessionId, "Edit greet.txt", acp.StopReasonEndTurn)
	if cuts == 0 {
		t.Fatal("no connection was cut while the editor answered")
	}
	if b, _ := os.ReadFile(filepath.Join(r.workspace, "greet.txt")); string(b) != "hello ferry\n" {
		t.Errorf("greet.txt holds %q: the answer given while reconnecting was lost", b)
	}
}

// A prompt the editor sends while the connection to the master is down
// waits for it to be up again and then runs, rather than failing; one it
// cancels while it waits is withdrawn unsent.
func TestMasterPromptWhileReconnecting(t *testing.T) {
	m, _, p, e, s := sessionBehindProxy(t)

	p.hold(true)
	if n := p.cut(); n == 0 {
		t.Fatal("no connection to cut")
	}
	time.Sleep(300 * time.Millisecond) // the face sees the connection drop

	withdrawn := make(chan error, 1)
	go func() {
		r, err := e.prompt(s.SessionId, "Never mind this one")
		if err == nil && r.StopReason != acp.StopReasonCancelled {
			err = &acp.RequestError{Message: "ended " + string(r.StopReason)}
		}
		withdrawn <- err
	}()
	time.Sleep(300 * time.Millisecond)
	if err := e.conn.Cancel(e.ctx(), acp.CancelNotification{SessionId: s.SessionId}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-withdrawn:
		if err != nil {
			t.Fatalf("the prompt cancelled while waiting: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the prompt cancelled while waiting did not end within 2 s")
	}

	m.srv.Script(say("Back again."))
	done := make(chan error, 1)
	go func() {
		r, err := e.prompt(s.SessionId, "Are you there?")
		if err == nil && r.StopReason != acp.StopReasonEndTurn {
			err = &acp.RequestError{Message: "ended " + string(r.StopReason)}
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the prompt ended while the master was out of reach: %v", err)
	case <-time.After(time.Second):
	}
	p.hold(false)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the prompt sent while reconnecting: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("the prompt never ended once the master was back")
	}
	if agent, _ := e.text(s.SessionId); agent != "Back again." {
		t.Errorf("the answers after reconnecting: %q, want only the second prompt's", agent)
	}
	if n := len(m.srv.ModelRequests()); n != 1 {
		t.Errorf("the model was called %d times, want once: the withdrawn prompt ran", n)
	}
}
