package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/echo"
	"github.com/ferry-dev/ferry/internal/search"
	"github.com/ferry-dev/ferry/internal/search/index"
	"github.com/ferry-dev/ferry/protocol"
	"github.com/ferry-dev/ferry/protocol/fileref"
)

func TestRegistration(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	e := m.start(t)
	fc, caps := m.accept(ctx)
	_ = fc
	if got := <-m.auth; got != "Bearer "+m.token {
		t.Errorf("Authorization %q", got)
	}
	select {
	case <-e.c.Connected():
	case <-ctx.Done():
		t.Fatal("Connected not closed")
	}

	real, _ := filepath.EvalSymlinks(e.ws)
	sum := sha256.Sum256([]byte(real))
	if caps.ProtocolVersion != protocol.Version || caps.Client.Name != "ferry" || caps.Client.Version == "" {
		t.Errorf("client %+v version %d", caps.Client, caps.ProtocolVersion)
	}
	if caps.Machine == nil || caps.Machine.Name != "test-machine" || caps.Machine.ID == "" {
		t.Fatalf("machine %+v", caps.Machine)
	}
	if len(caps.Workspaces) != 1 || caps.Workspaces[0] != (protocol.Workspace{ID: hex.EncodeToString(sum[:])[:12], Name: "proj", Path: real}) {
		t.Errorf("workspaces %+v", caps.Workspaces)
	}
	if len(caps.Adapters) != 1 || caps.Adapters[0].ID != "echo" {
		t.Errorf("adapters %+v", caps.Adapters)
	}
	for _, typ := range []string{protocol.TypeSessionOpen, protocol.TypePromptRequest, protocol.TypePromptCancel, protocol.TypeInteractionResponse,
		protocol.TypeInteractionTimeout, protocol.TypeModeSwitch, protocol.TypeSessionCompact, protocol.TypeFileSearch, protocol.TypeFileSearchCancel} {
		if !slices.Contains(caps.Messages, typ) {
			t.Errorf("messages lack %s", typ)
		}
	}
	fr := caps.FileReferences
	if fr == nil || !fr.Search || fr.MaxResultsCap != 50 || fr.PositionEncoding != "utf-16" || fr.TokenSyntaxVersion != protocol.TokenSyntaxVersion ||
		strings.Join(fr.SearchScopes, ",") != "workspace,project,global" {
		t.Errorf("file_references %+v", fr)
	}
	// The machine id is kept, private, and survives a restart.
	fi, err := os.Stat(filepath.Join(e.stateDir, "machine-id"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("machine-id: %v %v", fi, err)
	}
	e.stop()
	e2 := m.startOn(t, e.ws, e.stateDir)
	_, caps2 := m.accept(ctx)
	if caps2.Machine.ID != caps.Machine.ID || caps2.Workspaces[0].ID != caps.Workspaces[0].ID {
		t.Errorf("after restart: machine %s workspace %s", caps2.Machine.ID, caps2.Workspaces[0].ID)
	}
	// A second client may not share the state directory.
	if _, err := New(m.config(t, e.ws, e.stateDir)); err == nil {
		t.Error("two clients on one state directory")
	}
	_ = e2
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	m := newFakeMaster(t)
	ws := newWorkspace(t)
	for name, mut := range map[string]func(*Config){
		"no token":          func(c *Config) { c.Token = "" },
		"bad url":           func(c *Config) { c.MasterURL = "ftp://x" },
		"no workspace":      func(c *Config) { c.Workspaces = nil },
		"missing workspace": func(c *Config) { c.Workspaces = []string{filepath.Join(ws, "nope")} },
		"file workspace":    func(c *Config) { c.Workspaces = []string{filepath.Join(ws, "main.go")} },
		"twice":             func(c *Config) { c.Workspaces = []string{ws, ws + "/."} },
		"dup adapters":      func(c *Config) { c.Adapters = []adapter.Adapter{echo.New(), echo.New()} },
		"no adapters":       func(c *Config) { c.Adapters = nil },
		"long machine name": func(c *Config) { c.MachineName = strings.Repeat("m", 300) },
		"bidi machine name": func(c *Config) { c.MachineName = "laptop\u202epot" },
		"zero-width name":   func(c *Config) { c.MachineName = "lap\u200btop" },
		"negative timeout":  func(c *Config) { c.PermissionTimeout = -time.Second },
		"timeout too long":  func(c *Config) { c.PermissionTimeout = 8 * 24 * time.Hour },
		"timeout under 1ms": func(c *Config) { c.PermissionTimeout = time.Microsecond },
	} {
		cfg := m.config(t, ws, t.TempDir())
		mut(&cfg)
		if c, err := New(cfg); err == nil {
			_ = c.Close()
			t.Errorf("%s: New accepted it", name)
		}
	}
}

// TestWorkspaceNameVisible: a workspace whose folder name holds an
// invisible character is still served, its name shown with U+FFFD where
// the character was (the master refuses hidden characters in names).
func TestWorkspaceNameVisible(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	ws := filepath.Join(t.TempDir(), "pro\u200bj\u202e")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	m.startOn(t, ws, t.TempDir())
	_, caps := m.accept(ctx)
	if len(caps.Workspaces) != 1 || caps.Workspaces[0].Name != "pro\ufffdj\ufffd" {
		t.Fatalf("workspaces %+v", caps.Workspaces)
	}
	if e := protocol.CheckName("name", caps.Workspaces[0].Name); e != nil {
		t.Fatal(e)
	}
}

func TestClientURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://h:1":             "ws://h:1/v1/client",
		"https://h/base/":        "wss://h/base/v1/client",
		"ws://h/v1/client":       "ws://h/v1/client",
		"wss://h:443/x?q=1#frag": "wss://h:443/x/v1/client",
	} {
		if got, err := clientURL(in); err != nil || got != want {
			t.Errorf("clientURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestUnauthorized(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	cfg := m.config(t, newWorkspace(t), t.TempDir())
	cfg.Token = "ferry_client_wrong"
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if err := c.Run(ctx); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("Run = %v, want ErrUnauthorized", err)
	}
}

func TestReconnect(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	e := m.start(t)
	fc, _ := m.accept(ctx)
	// The master is down for a while: the client keeps trying.
	m.reject.Store(true)
	fc.drop()
	waitFor(ctx, t, "Connected to reset", func() bool {
		select {
		case <-e.c.Connected():
			return false
		default:
			return true
		}
	})
	m.reject.Store(false)
	fc2, caps := m.accept(ctx)
	if caps.Machine == nil {
		t.Fatal("no machine on reconnect")
	}
	<-e.c.Connected()
	// The new connection works.
	e.open(ctx, fc2, "s1", "echo")
}

func TestDeadPeer(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	m.deaf.Store(true)
	m.start(t, func(c *Config) { c.PingInterval = 20 * time.Millisecond })
	m.accept(ctx)
	// The first master never answers pings: the client gives up on it and
	// comes back on a new connection.
	m.accept(ctx)
}

// TestOutboxAcrossDisconnect: a turn keeps running while the master is
// away; what it produced arrives after the reconnect, in order, with the
// unacknowledged earlier messages re-sent under their ids.
func TestOutboxAcrossDisconnect(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	g := newGate(3)
	e := m.start(t, withAdapters(g))
	fc, _ := m.accept(ctx)
	opened := e.open(ctx, fc, "s1", "gate")
	fc.ack(opened.MessageID)
	waitFor(ctx, t, "the ack", func() bool { return e.c.Pending() == 0 })

	fc.send(prompt("s1", "go"))
	started := fc.expect(ctx, protocol.TypeTurnStarted)
	first := fc.expect(ctx, protocol.TypeTextDelta)

	m.reject.Store(true)
	fc.drop()
	close(g.release) // the turn goes on while the master is away
	// turn.started, "a", " b", " c", " d", text.done
	waitFor(ctx, t, "the turn's events in the outbox", func() bool { return e.c.Pending() == 6 })
	m.reject.Store(false)

	fc2, _ := m.accept(ctx)
	msgs := fc2.until(ctx, isType(protocol.TypeTextDone))
	var got []string
	for _, msg := range msgs {
		got = append(got, msg.Type)
		if msg.Type == protocol.TypeTextDelta {
			got[len(got)-1] += ":" + msg.Payload.(*protocol.TextDelta).Delta
		}
	}
	want := []string{"agent.turn.started", "agent.text.delta:a", "agent.text.delta: b", "agent.text.delta: c", "agent.text.delta: d", "agent.text.done"}
	if !slices.Equal(got, want) {
		t.Fatalf("after reconnect %q, want %q", got, want)
	}
	if msgs[0].MessageID != started.MessageID || msgs[1].MessageID != first.MessageID {
		t.Error("re-sent messages changed their ids")
	}
	if d := msgs[5].Payload.(*protocol.TextDone); d.Text != "a b c d" || d.IsCancelled || d.StopReason != "end_turn" {
		t.Errorf("text.done %+v", d)
	}
	fc2.ack(msgs[5].MessageID)
	waitFor(ctx, t, "the ack", func() bool { return e.c.Pending() == 0 })
}

// TestOutboxAcrossRestart: a new client on the same state directory
// re-sends what was not acknowledged, and only that.
func TestOutboxAcrossRestart(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	e := m.start(t)
	fc, _ := m.accept(ctx)
	e.open(ctx, fc, "s1", "echo")
	fc.send(prompt("s1", "one two three"))
	msgs := fc.until(ctx, isType(protocol.TypeTextDone))
	// Ack through the second delta: the rest stays.
	var deltas []*protocol.Message
	for _, msg := range msgs {
		if msg.Type == protocol.TypeTextDelta {
			deltas = append(deltas, msg)
		}
	}
	fc.ack(deltas[1].MessageID)
	rest := msgs[slices.Index(msgs, deltas[1])+1:]
	waitFor(ctx, t, "the ack", func() bool { return e.c.Pending() == len(rest) })
	e.stop()

	m.startOn(t, e.ws, e.stateDir)
	fc2, _ := m.accept(ctx)
	for i, want := range rest {
		got := fc2.next(ctx)
		if got.MessageID != want.MessageID || got.Type != want.Type {
			t.Fatalf("re-sent #%d: %s %s, want %s %s", i, got.Type, got.MessageID, want.Type, want.MessageID)
		}
	}
	// Nothing else was kept: a new open is the next thing on the wire.
	fc2.send(control("s2", protocol.TypeSessionOpen, &protocol.SessionOpen{WorkspaceID: "nope", Adapter: "echo"}))
	if got := fc2.next(ctx); got.Type != protocol.TypeError {
		t.Fatalf("after the re-sent messages: %s", got.Type)
	}
}

// TestBackpressure: with the outbox full, Emit blocks; an ack lets it go
// on, and nothing is dropped.
func TestBackpressure(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	g := newGate(5)
	close(g.release)
	e := m.start(t, withAdapters(g), func(c *Config) { c.OutboxLimit = 3 })
	fc, _ := m.accept(ctx)
	opened := e.open(ctx, fc, "s1", "gate")
	fc.send(prompt("s1", "go"))
	// session.opened, turn.started, "a": full. The next Emit waits.
	fc.expect(ctx, protocol.TypeTurnStarted)
	a := fc.expect(ctx, protocol.TypeTextDelta)
	waitFor(ctx, t, "an Emit blocked on the full outbox", func() bool {
		return e.c.Pending() == 3 && g.emitting.Load() == 2 && g.emitted.Load() == 1
	})
	_ = opened
	m.autoAck.Store(true)
	fc.ack(a.MessageID)
	msgs := fc.until(ctx, isType(protocol.TypeTextDone))
	var text strings.Builder
	text.WriteString("a")
	for _, msg := range msgs[:len(msgs)-1] {
		text.WriteString(msg.Payload.(*protocol.TextDelta).Delta)
	}
	if text.String() != "a b c d e f" || msgs[len(msgs)-1].Payload.(*protocol.TextDone).Text != "a b c d e f" {
		t.Errorf("streamed %q, done %+v", text.String(), msgs[len(msgs)-1].Payload)
	}
}

func TestSessionOpen(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	g := newGate(0)
	e := m.start(t, withAdapters(echo.New(echo.WithDelay(0)), g))
	fc, _ := m.accept(ctx)
	wsID := e.c.Workspaces()[0].ID

	first := e.open(ctx, fc, "s1", "gate")
	if p := first.Payload.(*protocol.SessionOpened); p.Adapter != "gate" || p.Mode != "default" {
		t.Errorf("opened %+v", p)
	}
	again := e.open(ctx, fc, "s1", "gate")
	if again.MessageID == first.MessageID || g.opens.Load() != 1 {
		t.Errorf("repeat open: %d adapter sessions", g.opens.Load())
	}
	for _, tc := range []struct {
		open  *protocol.SessionOpen
		code  string
		field string
	}{
		{&protocol.SessionOpen{WorkspaceID: "nope", Adapter: "echo"}, protocol.CodeNotFound, "payload.workspace_id"},
		{&protocol.SessionOpen{WorkspaceID: wsID, Adapter: "nope"}, protocol.CodeNotFound, "payload.adapter"},
		{&protocol.SessionOpen{WorkspaceID: wsID, Adapter: "gate", Mode: "plan"}, protocol.CodeUnsupported, "payload.mode"},
	} {
		msg := control("s-new", protocol.TypeSessionOpen, tc.open)
		fc.send(msg)
		if got := fc.errorFor(ctx, msg.MessageID); got.Code != tc.code || got.Field != tc.field {
			t.Errorf("%+v: %+v", tc.open, got)
		}
	}
	// A repeat open naming another adapter is refused; the session stays.
	msg := control("s1", protocol.TypeSessionOpen, &protocol.SessionOpen{WorkspaceID: wsID, Adapter: "echo"})
	fc.send(msg)
	if got := fc.errorFor(ctx, msg.MessageID); got.Code != protocol.CodeInvalidValue || got.Field != "payload.adapter" {
		t.Errorf("repeat open with another adapter: %+v", got)
	}
	// Control messages for a session never opened.
	for _, c := range []*protocol.Message{
		prompt("s-new", "hi"),
		control("s-new", protocol.TypePromptCancel, &protocol.PromptCancel{TargetTurnID: "t"}),
		control("s-new", protocol.TypeModeSwitch, &protocol.ModeSwitch{Mode: "plan"}),
		control("s-new", protocol.TypeFileSearch, &protocol.FileSearch{QueryID: protocol.NewID()}),
	} {
		fc.send(c)
		if got := fc.errorFor(ctx, c.MessageID); got.Code != protocol.CodeNotFound || got.Field != "session_id" {
			t.Errorf("%s on an unknown session: %+v", c.Type, got)
		}
	}
}

func TestPromptTurn(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	e := m.start(t)
	fc, _ := m.accept(ctx)
	e.open(ctx, fc, "s1", "echo")

	text, refs, err := fileref.Compose([]protocol.PromptSegment{
		{Kind: protocol.SegmentText, Text: "read "},
		{Kind: protocol.SegmentFile, File: &protocol.PickedFile{Path: "internal/x/x.go", DisplayPath: "x.go"}},
		{Kind: protocol.SegmentText, Text: " and <@file:ref_0|typed>"},
	})
	if err != nil {
		t.Fatal(err)
	}
	req := prompt("s1", text, refs...)
	fc.send(req)
	msgs := fc.until(ctx, isType(protocol.TypeTextDone))
	st := msgs[0]
	if st.Type != protocol.TypeTurnStarted || st.ParentID != req.MessageID || st.SessionID != "s1" {
		t.Fatalf("first %s parent %s", st.Type, st.ParentID)
	}
	sp := st.Payload.(*protocol.TurnStarted)
	if sp.InputType != "text" || sp.Mode != "default" || sp.Adapter != "echo" || sp.TurnID == "" {
		t.Errorf("turn.started %+v", sp)
	}
	var streamed strings.Builder
	for _, msg := range msgs[1 : len(msgs)-1] {
		d := msg.Payload.(*protocol.TextDelta)
		if msg.Type != protocol.TypeTextDelta || d.TurnID != sp.TurnID {
			t.Fatalf("%s %+v", msg.Type, msg.Payload)
		}
		streamed.WriteString(d.Delta)
	}
	want := "echo: read x.go and <@file:ref_0|typed>"
	done := msgs[len(msgs)-1].Payload.(*protocol.TextDone)
	if streamed.String() != want || done.Text != want || done.TurnID != sp.TurnID || done.IsCancelled || done.StopReason != "end_turn" {
		t.Errorf("streamed %q, done %+v; want %q", streamed.String(), done, want)
	}

	// A failing turn: agent.error (generic), then stop_reason error.
	fc.send(prompt("s1", "fail: please"))
	msgs = fc.until(ctx, isType(protocol.TypeTextDone))
	types := make([]string, len(msgs))
	for i, msg := range msgs {
		types[i] = msg.Type
	}
	if !slices.Equal(types, []string{"agent.turn.started", "agent.error", "agent.text.done"}) {
		t.Fatalf("failing turn: %v", types)
	}
	if ae := msgs[1].Payload.(*protocol.AgentError); ae.Code != "agent_failed" || strings.Contains(ae.Message, "asked to fail") {
		t.Errorf("agent.error %+v leaks or lacks its code", ae)
	}
	if d := msgs[2].Payload.(*protocol.TextDone); d.StopReason != "error" || d.IsCancelled {
		t.Errorf("done %+v", d)
	}

	// A tool turn reads the referenced file inside the workspace.
	text, refs, _ = fileref.Compose([]protocol.PromptSegment{
		{Kind: protocol.SegmentText, Text: "tool: "},
		{Kind: protocol.SegmentFile, File: &protocol.PickedFile{Path: "main.go"}},
	})
	fc.send(prompt("s1", text, refs...))
	msgs = fc.until(ctx, isType(protocol.TypeTextDone))
	if msgs[1].Type != protocol.TypeToolStarted || msgs[2].Type != protocol.TypeToolFinished {
		t.Fatalf("tool turn: %s %s", msgs[1].Type, msgs[2].Type)
	}
	if fin := msgs[2].Payload.(*protocol.ToolFinished); fin.Status != "ok" || !strings.Contains(fin.Output, "read 13 bytes") {
		t.Errorf("tool.finished %+v", fin)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	// Words an hour apart: only a cancel ends the turn in time.
	e := m.start(t, withAdapters(echo.New(echo.WithDelay(time.Hour))))
	fc, _ := m.accept(ctx)
	e.open(ctx, fc, "s1", "echo")
	fc.send(prompt("s1", "a b c d"))
	turnID := fc.expect(ctx, protocol.TypeTurnStarted).Payload.(*protocol.TurnStarted).TurnID
	fc.expect(ctx, protocol.TypeTextDelta)

	// A cancel of another turn changes nothing; the right one ends it.
	fc.send(control("s1", protocol.TypePromptCancel, &protocol.PromptCancel{TargetTurnID: "other"}))
	fc.send(control("s1", protocol.TypePromptCancel, &protocol.PromptCancel{TargetTurnID: turnID, Reason: "user_cancelled"}))
	done := fc.expect(ctx, protocol.TypeTextDone).Payload.(*protocol.TextDone)
	if done.TurnID != turnID || !done.IsCancelled || done.StopReason != "cancelled" || done.Text != "echo:" {
		t.Errorf("done %+v", done)
	}
	// A late second cancel is ignored, and the session takes the next
	// prompt: nothing of the first turn comes in between.
	fc.send(control("s1", protocol.TypePromptCancel, &protocol.PromptCancel{TargetTurnID: turnID}))
	fc.send(prompt("s1", "x"))
	st := fc.expect(ctx, protocol.TypeTurnStarted)
	turn2 := st.Payload.(*protocol.TurnStarted).TurnID
	fc.expect(ctx, protocol.TypeTextDelta)
	fc.send(control("s1", protocol.TypePromptCancel, &protocol.PromptCancel{TargetTurnID: turn2}))
	if d := fc.expect(ctx, protocol.TypeTextDone).Payload.(*protocol.TextDone); d.TurnID != turn2 || !d.IsCancelled {
		t.Errorf("second turn done %+v", d)
	}
}

func TestBusy(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	g := newGate(1)
	e := m.start(t, withAdapters(g))
	fc, _ := m.accept(ctx)
	e.open(ctx, fc, "s1", "gate")
	fc.send(prompt("s1", "first"))
	fc.expect(ctx, protocol.TypeTurnStarted)
	fc.expect(ctx, protocol.TypeTextDelta)
	second := prompt("s1", "second")
	fc.send(second)
	if got := fc.errorFor(ctx, second.MessageID); got.Code != protocol.CodeBusy {
		t.Errorf("second prompt: %+v", got)
	}
	compact := control("s1", protocol.TypeSessionCompact, &protocol.SessionCompact{})
	fc.send(compact)
	if got := fc.errorFor(ctx, compact.MessageID); got.Code != protocol.CodeBusy {
		t.Errorf("compact during a turn: %+v", got)
	}
	close(g.release)
	fc.expect(ctx, protocol.TypeTextDelta)
	fc.expect(ctx, protocol.TypeTextDone)
	fc.send(prompt("s1", "third"))
	fc.expect(ctx, protocol.TypeTurnStarted)
}

// TestPromptRefsFallBack: a file reference the client cannot resolve
// inside the workspace roots (lexically, through a symlink, an unknown
// workspace, a path leaving the workspace it names) does not refuse the
// prompt: §16.3 has its token passed to the agent as its display path,
// as text, and the file is not handed over. A reference to another
// workspace of the client (scope global: a path relative to the workspace
// workspace_id names) reaches the agent as that file's absolute path, and
// one in the session's workspace as it came.
func TestPromptRefsFallBack(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	other := newWorkspace(t)
	outside := t.TempDir()
	e := m.start(t, withAdapters(labelAdapter{}), func(c *Config) { c.Workspaces = append(c.Workspaces, other) })
	if err := os.Symlink(outside, filepath.Join(e.ws, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(other, "escape")); err != nil {
		t.Fatal(err)
	}
	fc, caps := m.accept(ctx)
	e.open(ctx, fc, "s1", "labels")
	realOther, _ := filepath.EvalSymlinks(other)
	otherID := caps.Workspaces[1].ID

	ref := func(path, wsID string) protocol.FileReference {
		return protocol.FileReference{RefID: "ref_0", Path: path, Name: filepath.Base(path), WorkspaceRelativePath: path, WorkspaceID: wsID}
	}
	// answer sends "see <@file:ref_0|shown> now" and returns what the
	// agent was given (its [File: …] labels, or the display path).
	answer := func(r protocol.FileReference) string {
		t.Helper()
		req := prompt("s1", "see <@file:ref_0|shown> now", r)
		fc.send(req)
		msgs := fc.until(ctx, func(m *protocol.Message) bool {
			return m.Type == protocol.TypeTextDone || m.Type == protocol.TypeError && m.ParentID == req.MessageID
		})
		if msgs[0].Type != protocol.TypeTurnStarted {
			return fmt.Sprintf("%s %+v", msgs[0].Type, msgs[0].Payload)
		}
		return msgs[len(msgs)-1].Payload.(*protocol.TextDone).Text
	}
	fellBack := 0
	for _, bad := range []protocol.FileReference{
		ref("../../etc/passwd", ""), ref("/etc/passwd", ""), ref("escape/secret", ""), ref("internal/../../x", ""), ref(outside, ""),
		ref("main.go", "no-such-workspace"), ref("../../etc/passwd", otherID), ref("escape/secret", otherID),
		ref(filepath.Join(e.ws, "main.go"), otherID), // another workspace's reference is relative to it
		{RefID: "ref_0", Path: "main.go", Name: "main.go", WorkspaceRelativePath: "../../etc/passwd"},
	} {
		if got := answer(bad); got != "see shown now" {
			t.Errorf("%+v: the agent got %q, want the display path as text", bad, got)
			continue
		}
		fellBack++
	}
	t.Logf("%d references outside the roots fell back to their display path", fellBack)
	for r, want := range map[*protocol.FileReference]string{
		ptr(ref("main.go", "")):                           "main.go",
		ptr(ref("internal/x/x.go", "")):                   "internal/x/x.go",
		ptr(ref("not/yet/there.go", "")):                  "not/yet/there.go",
		ptr(ref("main.go", caps.Workspaces[0].ID)):        "main.go",
		ptr(ref("internal/x/x.go", otherID)):              filepath.Join(realOther, "internal/x/x.go"),
		ptr(ref(filepath.Join(realOther, "main.go"), "")): filepath.Join(realOther, "main.go"), // absolute, from an older UI
	} {
		if got := answer(*r); got != "see [File: "+want+"] now" {
			t.Errorf("%+v: the agent got %q, want the file as %s", *r, got, want)
		}
	}
}

// TestGlobalCandidatesResolveBack: every candidate of a scope global
// search, picked and composed into a prompt as the UI and the master do,
// reaches the agent as the very file the search offered (not the file of
// the same relative path in the session's workspace).
func TestGlobalCandidatesResolveBack(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	other := newWorkspace(t) // the same three files as the session's workspace
	e := m.startWith(t, newWorkspace(t), t.TempDir(), func(c *Client) {
		if err := c.WaitIndexed(ctx); err != nil {
			t.Fatal(err)
		}
	}, withAdapters(labelAdapter{}), func(c *Config) { c.Workspaces = append(c.Workspaces, other) })
	fc, caps := m.accept(ctx)
	e.open(ctx, fc, "s1", "labels")
	roots := map[string]string{}
	for _, w := range caps.Workspaces {
		roots[w.ID] = w.Path
	}

	q := control("s1", protocol.TypeFileSearch, &protocol.FileSearch{QueryID: protocol.NewID(), Query: "", Scope: protocol.ScopeGlobal})
	fc.send(q)
	cands := fc.expect(ctx, protocol.TypeFileCandidates).Payload.(*protocol.FileCandidates).Candidates
	if len(cands) != 6 {
		t.Fatalf("global candidates %+v, want the 3 files of each workspace", cands)
	}
	for _, c := range cands {
		root, ok := roots[c.WorkspaceID]
		if !ok || filepath.IsAbs(c.Path) {
			t.Fatalf("candidate %+v: want a relative path and a workspace_id of the client", c)
		}
		text, refs, err := fileref.Compose([]protocol.PromptSegment{
			{Kind: protocol.SegmentText, Text: "see "},
			{Kind: protocol.SegmentFile, File: &protocol.PickedFile{Path: c.Path, DisplayPath: c.Path, WorkspaceID: c.WorkspaceID}},
		})
		if err != nil {
			t.Fatal(err)
		}
		req := control("s1", protocol.TypePromptRequest, &protocol.PromptRequest{PromptText: text, InputType: protocol.InputText, FileReferences: refs})
		fc.send(req)
		msgs := fc.until(ctx, isType(protocol.TypeTextDone))
		got, _ := strings.CutPrefix(msgs[len(msgs)-1].Payload.(*protocol.TextDone).Text, "see [File: ")
		got, _ = strings.CutSuffix(got, "]")
		if !filepath.IsAbs(got) {
			got = filepath.Join(e.ws, got)
		}
		want, err := os.Stat(filepath.Join(root, c.Path))
		if err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(got); err != nil || !os.SameFile(fi, want) {
			t.Errorf("candidate %s in %s reached the agent as %q, another file", c.Path, c.WorkspaceID, got)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// labelAdapter answers a prompt with the text its agent would get in the
// generic-LLM style (fileref.Prompt.Labels): each resolved file as
// "[File: path]", each token that fell back as its display path.
type labelAdapter struct{}

func (labelAdapter) Capability() protocol.AdapterCapability {
	return protocol.AdapterCapability{ID: "labels", Name: "Labels", Modes: []string{protocol.ModeDefault},
		InputTypes: []string{protocol.InputText}, FileTokens: "label"}
}

func (labelAdapter) Open(context.Context, adapter.SessionConfig) (adapter.Session, error) {
	return labelSession{}, nil
}

type labelSession struct{}

func (labelSession) Run(ctx context.Context, turn adapter.Turn, emit adapter.Emit) (adapter.Result, error) {
	text := turn.Prompt.Labels()
	if err := emit(ctx, protocol.TypeTextDelta, &protocol.TextDelta{TurnID: turn.ID, Delta: text}); err != nil {
		return adapter.Result{}, err
	}
	return adapter.Result{Text: text, StopReason: "end_turn"}, nil
}

func (labelSession) Answer(string, *protocol.InteractionResponse) error {
	return adapter.ErrUnknownInteraction
}
func (labelSession) SetMode(string, json.RawMessage) error { return nil }
func (labelSession) Compact(context.Context, *protocol.SessionCompact) (*protocol.CompactionDone, error) {
	return &protocol.CompactionDone{}, nil
}
func (labelSession) Close() error { return nil }

func TestInteraction(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	e := m.start(t)
	fc, _ := m.accept(ctx)
	e.open(ctx, fc, "s1", "echo")

	ask := func() *protocol.InteractionRequest {
		fc.send(prompt("s1", "ask: may I"))
		turnID := fc.expect(ctx, protocol.TypeTurnStarted).Payload.(*protocol.TurnStarted).TurnID
		req := fc.expect(ctx, protocol.TypeInteractionRequest).Payload.(*protocol.InteractionRequest)
		if req.TurnID != turnID || req.Kind != "permission" {
			t.Fatalf("interaction %+v", req)
		}
		return req
	}
	req := ask()
	unknown := control("s1", protocol.TypeInteractionResponse, &protocol.InteractionResponse{InteractionID: "nope", SelectedValue: protocol.Single("allow_once")})
	fc.send(unknown)
	if got := fc.errorFor(ctx, unknown.MessageID); got.Code != protocol.CodeNotFound || got.Field != "payload.interaction_id" {
		t.Errorf("unknown interaction: %+v", got)
	}
	fc.send(control("s1", protocol.TypeInteractionResponse, &protocol.InteractionResponse{InteractionID: req.InteractionID, SelectedValue: protocol.Single("allow_once")}))
	msgs := fc.until(ctx, isType(protocol.TypeTextDone))
	if d := msgs[len(msgs)-1].Payload.(*protocol.TextDone); d.Text != "allowed" {
		t.Errorf("answered: %+v", d)
	}

	req = ask()
	fc.send(control("s1", protocol.TypeInteractionTimeout, &protocol.InteractionTimeout{InteractionID: req.InteractionID}))
	msgs = fc.until(ctx, isType(protocol.TypeTextDone))
	if d := msgs[len(msgs)-1].Payload.(*protocol.TextDone); d.Text != "denied" {
		t.Errorf("timed out: %+v", d)
	}
	// A late timeout for a settled interaction gets no answer: the next
	// thing on the wire is the answer to the next message.
	fc.send(control("s1", protocol.TypeInteractionTimeout, &protocol.InteractionTimeout{InteractionID: req.InteractionID}))
	compact := control("s1", protocol.TypeSessionCompact, &protocol.SessionCompact{})
	fc.send(compact)
	if got := fc.next(ctx); got.Type != protocol.TypeCompactionDone || got.ParentID != compact.MessageID {
		t.Errorf("after a late timeout: %s %+v", got.Type, got.Payload)
	}
}

func TestModeSwitchAndCompact(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	e := m.start(t)
	fc, _ := m.accept(ctx)
	e.open(ctx, fc, "s1", "echo")

	sw := control("s1", protocol.TypeModeSwitch, &protocol.ModeSwitch{Mode: "plan"})
	fc.send(sw)
	got := fc.expect(ctx, protocol.TypeModeChanged)
	if got.ParentID != sw.MessageID || got.Payload.(*protocol.ModeChanged).Mode != "plan" {
		t.Errorf("mode.changed %+v", got)
	}
	text, refs, _ := fileref.Compose([]protocol.PromptSegment{
		{Kind: protocol.SegmentText, Text: "tool:write "},
		{Kind: protocol.SegmentFile, File: &protocol.PickedFile{Path: "main.go"}},
	})
	fc.send(prompt("s1", text, refs...))
	msgs := fc.until(ctx, isType(protocol.TypeTextDone))
	if st := msgs[0].Payload.(*protocol.TurnStarted); st.Mode != "plan" {
		t.Errorf("turn.started in mode %s", st.Mode)
	}
	if fin := msgs[2].Payload.(*protocol.ToolFinished); fin.Status != "denied" {
		t.Errorf("write in plan mode: %+v", fin)
	}

	// The session saw "tool:write main.go" (2 words) and its echo (3).
	half := 0.5
	cp := control("s1", protocol.TypeSessionCompact, &protocol.SessionCompact{TargetTokenRatio: &half})
	fc.send(cp)
	got = fc.expect(ctx, protocol.TypeCompactionDone)
	// Echo does not measure its ratio: the client fills it from the counts.
	if cd := got.Payload.(*protocol.CompactionDone); got.ParentID != cp.MessageID || cd.TokensBefore != 5 || cd.TokensAfter != 2 ||
		cd.AchievedRatio == nil || *cd.AchievedRatio != 0.4 {
		t.Errorf("compaction.done %+v %+v", got, cd)
	}
}

// TestFileSearch: newest query wins, cancel silences a search, and errors
// are coded. A project-scope search is held in the project index's opening
// until it is superseded or cancelled, so the order is deterministic.
func TestFileSearch(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(repo, "proj")
	if err := os.Rename(newWorkspace(t), ws); err != nil {
		t.Fatal(err)
	}
	held := make(chan struct{}, 8)
	e := m.startWith(t, ws, t.TempDir(), func(c *Client) {
		if err := c.WaitIndexed(ctx); err != nil {
			t.Fatal(err)
		}
		var sws []*search.Workspace
		for _, w := range c.workspaces {
			sws = append(sws, &search.Workspace{Name: w.ID, Root: w.Path, Index: w.ix})
		}
		_ = c.svc.Close()
		c.svc = search.NewService(sws, func(ctx context.Context, _ string) (*index.Index, error) {
			held <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		})
	})
	fc, _ := m.accept(ctx)
	e.open(ctx, fc, "s1", "echo")

	search := func(query, scope string) *protocol.Message {
		msg := control("s1", protocol.TypeFileSearch, &protocol.FileSearch{QueryID: protocol.NewID(), Query: query, Scope: scope})
		fc.send(msg)
		return msg
	}
	q1 := search("main", "project")
	<-held
	q2 := search("xgo", "workspace")
	got := fc.expect(ctx, protocol.TypeFileCandidates)
	fcands := got.Payload.(*protocol.FileCandidates)
	if got.ParentID != q2.MessageID || fcands.QueryID != q2.Payload.(*protocol.FileSearch).QueryID {
		t.Fatalf("answer to %s, want the newest query %s (the superseded one was %s)", got.ParentID, q2.MessageID, q1.MessageID)
	}
	if len(fcands.Candidates) == 0 || fcands.Candidates[0].Path != "internal/x/x.go" {
		t.Errorf("candidates %+v", fcands.Candidates)
	}

	q3 := search("main", "project")
	<-held
	fc.send(control("s1", protocol.TypeFileSearchCancel, &protocol.FileSearchCancel{QueryID: q3.Payload.(*protocol.FileSearch).QueryID}))
	q4 := search("", "workspace")
	got = fc.expect(ctx, protocol.TypeFileCandidates)
	if got.ParentID != q4.MessageID || len(got.Payload.(*protocol.FileCandidates).Candidates) != 3 {
		t.Fatalf("after cancel: answer to %s with %+v", got.ParentID, got.Payload)
	}
	// A bad filter is a coded error answering the search.
	bad := control("s1", protocol.TypeFileSearch, &protocol.FileSearch{QueryID: protocol.NewID(), Query: "x",
		Filters: &protocol.SearchFilters{ExcludePatterns: []string{"["}}})
	fc.send(bad)
	if got := fc.errorFor(ctx, bad.MessageID); got.Code != protocol.CodeInvalidValue || got.Field != "payload.filters.exclude_patterns[0]" {
		t.Errorf("bad filter: %+v", got)
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	e := m.start(t)
	fc, _ := m.accept(ctx)
	e.open(ctx, fc, "s1", "echo")

	id := protocol.NewID()
	for _, tc := range []struct {
		name   string
		typ    websocket.MessageType
		data   string
		code   string
		field  string
		parent string
	}{
		{"not json", websocket.MessageText, "{nope", protocol.CodeMalformedJSON, "", ""},
		{"array", websocket.MessageText, "[1]", protocol.CodeMalformedJSON, "", ""},
		{"binary", websocket.MessageBinary, `{"type":"master.ack"}`, protocol.CodeMalformedJSON, "", ""},
		{"unknown type", websocket.MessageText, `{"type":"control.nope","message_id":"` + id + `","payload":{}}`, protocol.CodeUnknownType, "type", id},
		{"wrong direction", websocket.MessageText, `{"type":"agent.text.done","message_id":"` + id + `","session_id":"s1","payload":{"turn_id":"t","is_cancelled":false}}`, protocol.CodeWrongDirection, "type", id},
		{"ui message", websocket.MessageText, `{"type":"ui.machines.list","message_id":"` + id + `","payload":{}}`, protocol.CodeWrongDirection, "type", id},
		{"no session", websocket.MessageText, `{"type":"control.prompt.request","message_id":"` + id + `","payload":{"prompt_text":"x"}}`, protocol.CodeMissingField, "session_id", id},
		{"bad enum", websocket.MessageText, `{"type":"control.mode.switch","message_id":"` + id + `","session_id":"s1","payload":{"mode":"yolo"}}`, protocol.CodeInvalidValue, "payload.mode", id},
		{"master to ui", websocket.MessageText, `{"type":"master.machines","message_id":"` + id + `","parent_id":"` + id + `","payload":{"machines":[]}}`, protocol.CodeUnsupported, "type", id},
	} {
		fc.sendRaw(tc.typ, []byte(tc.data))
		got := fc.expect(ctx, protocol.TypeError)
		p := got.Payload.(*protocol.Error)
		if p.Code != tc.code || p.Field != tc.field || got.ParentID != tc.parent {
			t.Errorf("%s: error %+v parent %q", tc.name, p, got.ParentID)
		}
	}
	// The connection is still up and works.
	fc.send(prompt("s1", "still here"))
	msgs := fc.until(ctx, isType(protocol.TypeTextDone))
	if d := msgs[len(msgs)-1].Payload.(*protocol.TextDone); d.Text != "echo: still here" {
		t.Errorf("done %+v", d)
	}
	m.noConn()
}

// TestCloseEndsRunningTurn: Close (ferry stopping to restart) cancels a
// running turn, whose end is kept and delivered by the next client. It
// says why, not a bare "cancelled": an agent.error saying ferry restarted
// during the turn, then agent.text.done with stop_reason error.
func TestCloseEndsRunningTurn(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	g := newGate(1)
	e := m.start(t, withAdapters(g))
	fc, _ := m.accept(ctx)
	e.open(ctx, fc, "s1", "gate")
	fc.send(prompt("s1", "go"))
	fc.expect(ctx, protocol.TypeTurnStarted)
	fc.expect(ctx, protocol.TypeTextDelta)
	e.stop()

	m.startOn(t, e.ws, e.stateDir, withAdapters(newGate(0)))
	fc2, _ := m.accept(ctx)
	msgs := fc2.until(ctx, isType(protocol.TypeTextDone))
	if d := msgs[len(msgs)-1].Payload.(*protocol.TextDone); d.IsCancelled || d.StopReason != "error" {
		t.Errorf("done %+v; want stop_reason error, not cancelled", d)
	}
	var reason *protocol.AgentError
	for _, msg := range msgs {
		if ae, ok := msg.Payload.(*protocol.AgentError); ok {
			reason = ae
		}
	}
	if reason == nil || reason.Code != CodeRestarted || reason.Message != RestartedMessage {
		t.Errorf("the turn's agent.error %+v; want code %q: %q", reason, CodeRestarted, RestartedMessage)
	}
}

// TestUserCancelStaysCancelled: a turn the user cancels while the client
// runs ends as cancelled, with no restart reason.
func TestUserCancelStaysCancelled(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	g := newGate(1)
	e := m.start(t, withAdapters(g))
	fc, _ := m.accept(ctx)
	e.open(ctx, fc, "s1", "gate")
	fc.send(prompt("s1", "go"))
	started := fc.expect(ctx, protocol.TypeTurnStarted).Payload.(*protocol.TurnStarted)
	fc.expect(ctx, protocol.TypeTextDelta)
	fc.send(control("s1", protocol.TypePromptCancel, &protocol.PromptCancel{TargetTurnID: started.TurnID}))
	msgs := fc.until(ctx, isType(protocol.TypeTextDone))
	if d := msgs[len(msgs)-1].Payload.(*protocol.TextDone); !d.IsCancelled || d.StopReason != "cancelled" {
		t.Errorf("done %+v", d)
	}
	for _, msg := range msgs {
		if msg.Type == protocol.TypeAgentError {
			t.Errorf("a user's cancel got an agent.error: %+v", msg.Payload)
		}
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	lo, hi := 10*time.Millisecond, 80*time.Millisecond
	for n := range 40 {
		ceil := min(hi, lo<<min(n, 31))
		for range 50 {
			if d := backoff(lo, hi, n); d < ceil/2 || d > ceil {
				t.Fatalf("backoff(%d) = %v, outside [%v, %v]", n, d, ceil/2, ceil)
			}
		}
	}
}

var _ adapter.Adapter = (*gateAdapter)(nil)
