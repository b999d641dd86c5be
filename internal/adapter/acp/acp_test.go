package acp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/acp/acppeer"
	"github.com/ferry-dev/ferry/protocol"
)

// These tests run the adapter against a real process: the test binary
// re-executed as the scripted ACP peer (acppeer), so the stdio, process
// group and JSON-RPC paths are the real ones.

type step = acppeer.Step

func intp(i int) *int { return &i }

func TestNewNeedsACommand(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{}); err == nil {
		t.Fatal("New without a command succeeded")
	}
	a, err := New(Config{Command: []string{"/opt/agents/gemini", "--experimental-acp"}})
	if err != nil {
		t.Fatal(err)
	}
	c := a.Capability()
	if c.ID != "acp:gemini" || a.ID() != "acp:gemini" || !c.Cancel || c.FileTokens != "file_list" {
		t.Fatalf("capability = %+v", c)
	}
}

func TestOpenMissingCommandIsCoded(t *testing.T) {
	t.Parallel()
	a, err := New(Config{Command: []string{filepath.Join(t.TempDir(), "no-such-agent")}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Open(context.Background(), adapter.SessionConfig{SessionID: "s", Workspace: protocol.Workspace{ID: "w", Name: "w", Path: t.TempDir()}})
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Code != protocol.CodeNotFound || strings.Contains(pe.Message, t.TempDir()) {
		t.Fatalf("Open = %v, want a coded not_found naming only the command's base name", err)
	}
}

// A normal turn: the handshake, the prompt's blocks, and every update
// mapped to events in order.
func TestPromptStreamsUpdatesInOrder(t *testing.T) {
	t.Parallel()
	p := newPeer(t, acppeer.Script{Turns: [][]step{{
		{Update: map[string]any{"sessionUpdate": "agent_thought_chunk", "content": map[string]any{"type": "text", "text": "hmm"}}},
		{Text: "Reading "},
		{Update: map[string]any{"sessionUpdate": "tool_call", "toolCallId": "call_1", "title": "Read notes.txt", "kind": "read", "status": "pending", "rawInput": map[string]any{"path": "notes.txt"}}},
		{Update: map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": "completed",
			"content": []any{map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": "pelican"}}}}},
		{Update: map[string]any{"sessionUpdate": "tool_call", "toolCallId": "call_2", "title": "Edit a.go", "kind": "edit", "status": "in_progress"}},
		{Update: map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "call_2", "status": "completed",
			"content": []any{map[string]any{"type": "diff", "path": "a.go", "oldText": "x\n", "newText": "y\n"}}}},
		{Update: map[string]any{"sessionUpdate": "plan", "entries": []any{
			map[string]any{"content": "read", "status": "completed", "priority": "high"},
			map[string]any{"content": "answer", "status": "pending", "priority": "low"}}}},
		{Update: map[string]any{"sessionUpdate": "some_future_update", "x": 1}},
		{Text: "done."},
		{Respond: map[string]any{"stopReason": "end_turn", "usage": map[string]any{"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}}},
	}}})
	if err := os.WriteFile(filepath.Join(p.ws, "notes.txt"), []byte("pelican\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := p.open(t, "")
	refs := []protocol.FileReference{
		{RefID: "ref_0", Path: "notes.txt", Name: "notes.txt", WorkspaceRelativePath: "notes.txt", MimeType: "text/plain"},
		{RefID: "ref_1", Path: "bad\npath", Name: "bad", WorkspaceRelativePath: "bad\npath"},
		{RefID: "ref_2", Path: "dir with space/ü.txt", Name: "ü.txt", WorkspaceRelativePath: "dir with space/ü.txt"},
	}
	rec, res, err := run(t, s, turn("read <@file:ref_0|notes.txt> and <@file:ref_1|bad> and <@file:ref_2|ü.txt>", refs...))
	if err != nil || res.StopReason != "end_turn" || res.Text != "Reading done." {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	want := []string{
		protocol.TypeTextDelta,    // thought
		protocol.TypeTextDelta,    // Reading
		protocol.TypeToolStarted,  // call_1
		protocol.TypeToolUpdated,  // its title
		protocol.TypeToolFinished, // call_1
		protocol.TypeToolStarted,  // call_2
		protocol.TypeToolUpdated,
		protocol.TypeToolFinished,
		protocol.TypeToolStarted, // plan
		protocol.TypeToolFinished,
		protocol.TypeTextDelta, // done.
		protocol.TypeUsage,
	}
	if got := rec.Types(); !reflect.DeepEqual(got, want) {
		t.Fatalf("events = %v\nwant     %v", got, want)
	}
	ev := rec.Events()
	if d := ev[0].Payload.(*protocol.TextDelta); d.Channel != "thinking" || d.Delta != "hmm" {
		t.Errorf("thought = %+v", d)
	}
	if st := ev[2].Payload.(*protocol.ToolStarted); st.ToolUseID != "call_1" || st.ToolName != "Read" || string(st.Input) != `{"path":"notes.txt"}` {
		t.Errorf("tool started = %+v", st)
	}
	if up := ev[3].Payload.(*protocol.ToolUpdated); up.Status != "Read notes.txt" {
		t.Errorf("tool updated = %+v", up)
	}
	if fin := ev[4].Payload.(*protocol.ToolFinished); fin.Status != protocol.ToolOK || fin.Output != "pelican" {
		t.Errorf("tool finished = %+v", fin)
	}
	if fin := ev[7].Payload.(*protocol.ToolFinished); fin.Diff == nil || fin.Diff.Path != "a.go" || len(fin.Diff.Hunks) != 1 || fin.ToolName != "Edit" {
		t.Errorf("edit finished = %+v", fin)
	}
	if fin := ev[9].Payload.(*protocol.ToolFinished); fin.ToolName != "Plan" || fin.Output != "- [x] read\n- [ ] answer\n" {
		t.Errorf("plan = %+v", fin)
	}
	if u := ev[11].Payload.(*protocol.Usage); u.InputTokens != 10 || u.OutputTokens != 5 {
		t.Errorf("usage = %+v", u)
	}
	for _, e := range ev { // everything the adapter emits must be valid on the wire
		m := protocol.New(e.Type, e.Payload)
		m.SessionID = "s"
		if _, err := protocol.Encode(m); err != nil {
			t.Errorf("%s does not encode: %v", e.Type, err)
		}
	}

	// What the peer got: the handshake and the prompt's blocks.
	init := p.receivedMethod(t, "initialize")[0]
	caps, _ := init["clientCapabilities"].(map[string]any)
	fs, _ := caps["fs"].(map[string]any)
	if init["protocolVersion"] != float64(1) || fs["readTextFile"] != true || fs["writeTextFile"] != true {
		t.Errorf("initialize = %v", init)
	}
	ns := p.receivedMethod(t, "session/new")[0]
	if ns["cwd"] != s.ws || !reflect.DeepEqual(ns["mcpServers"], []any{}) {
		t.Errorf("session/new = %v", ns)
	}
	pr := p.receivedMethod(t, "session/prompt")[0]
	blocks, _ := pr["prompt"].([]any)
	if pr["sessionId"] != acppeer.SessionID || len(blocks) != 3 {
		t.Fatalf("session/prompt = %v", pr)
	}
	text := blocks[0].(map[string]any)
	if text["type"] != "text" || text["text"] != "read notes.txt and bad and dir with space/ü.txt" {
		t.Errorf("text block = %v (the unconvertible token must be its display path)", text)
	}
	link := blocks[1].(map[string]any)
	if link["type"] != "resource_link" || link["uri"] != "file://"+filepath.Join(s.ws, "notes.txt") || link["name"] != "notes.txt" || link["mimeType"] != "text/plain" {
		t.Errorf("resource link = %v", link)
	}
	if l := blocks[2].(map[string]any); l["uri"] != "file://"+filepath.ToSlash(s.ws)+"/dir%20with%20space/%C3%BC.txt" {
		t.Errorf("escaped resource link = %v", l)
	}
}

// A permission request is asked with the agent's options; the answer goes
// back as the chosen optionId; a timeout picks the reject option.
func TestPermissionAnswers(t *testing.T) {
	t.Parallel()
	ask := step{Request: &acppeer.Request{Method: "session/request_permission", Echo: true, Params: map[string]any{
		"sessionId": acppeer.SessionID,
		"toolCall":  map[string]any{"toolCallId": "call_9", "title": "Write out.txt", "kind": "edit", "rawInput": map[string]any{"file_path": "out.txt"}},
		"options": []any{
			map[string]any{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
			map[string]any{"optionId": "always", "name": "Always allow", "kind": "allow_always"},
			map[string]any{"optionId": "no", "name": "Reject", "kind": "reject_once"},
		},
	}}}
	p := newPeer(t, acppeer.Script{Turns: [][]step{{ask}, {ask}, {ask}}})
	s := p.open(t, "")
	for _, tc := range []struct {
		name   string
		answer *protocol.InteractionResponse
		want   string
	}{
		{"allow", &protocol.InteractionResponse{SelectedValue: protocol.Single(protocol.AllowOnce)}, `"optionId":"yes"`},
		{"deny", &protocol.InteractionResponse{SelectedValue: protocol.Single(protocol.Deny)}, `"optionId":"no"`},
		{"timeout", nil, `"optionId":"no"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan struct{})
			var (
				rec *recorder
				res adapter.Result
				err error
			)
			rec = newRecorder()
			go func() {
				defer close(done)
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				res, err = s.Run(ctx, turn("go"), rec.emit)
			}()
			ir := rec.ask(t)
			if ir.Kind != protocol.InteractionPermission || ir.Title != "Write out.txt" || ir.ToolUseID != "call_9" || ir.ToolName != "Edit" || len(ir.Options) != 3 ||
				ir.Options[0].Value != protocol.AllowOnce || ir.Options[1].Value != protocol.AllowAlways || ir.Options[2].Value != protocol.Deny || ir.Options[0].Label != "Allow" {
				t.Fatalf("interaction = %+v", ir)
			}
			if tc.answer != nil {
				if err := s.Answer(ir.InteractionID, &protocol.InteractionResponse{SelectedValue: protocol.Single("maybe")}); !errors.Is(err, protocol.ErrInvalidValue) {
					t.Fatalf("Answer with a value not offered = %v", err)
				}
			}
			if err := s.Answer(ir.InteractionID, tc.answer); err != nil {
				t.Fatal(err)
			}
			if err := s.Answer(ir.InteractionID, tc.answer); !errors.Is(err, adapter.ErrUnknownInteraction) {
				t.Fatalf("second Answer = %v", err)
			}
			<-done
			if err != nil || res.StopReason != "end_turn" || !strings.Contains(res.Text, tc.want) || !strings.Contains(res.Text, `"outcome":"selected"`) {
				t.Fatalf("Run = %+v, %v; want the peer to echo %s", res, err, tc.want)
			}
		})
	}
}

// Cancel: session/cancel, every pending permission request answered
// cancelled, the turn ends cancelled; the session goes on.
func TestCancelAnswersPendingPermissions(t *testing.T) {
	t.Parallel()
	askOpts := []any{map[string]any{"optionId": "ok", "name": "Allow", "kind": "allow_once"}, map[string]any{"optionId": "no", "name": "Reject", "kind": "reject_once"}}
	p := newPeer(t, acppeer.Script{Turns: [][]step{
		{
			{AskAsync: map[string]any{"toolCall": map[string]any{"toolCallId": "a", "title": "A", "kind": "execute", "rawInput": map[string]any{"command": "make"}}, "options": askOpts}},
			{AskAsync: map[string]any{"toolCall": map[string]any{"toolCallId": "b", "title": "B", "kind": "edit"}, "options": askOpts}},
			{WaitCancel: true},
			{WaitResponses: 2},
			{Respond: map[string]any{"stopReason": "cancelled"}},
		},
		{{Text: "next"}},
	}})
	s := p.open(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := newRecorder()
	type out struct {
		res adapter.Result
		err error
	}
	done := make(chan out, 1)
	go func() { res, err := s.Run(ctx, turn("go"), rec.emit); done <- out{res, err} }()
	a, b := rec.ask(t), rec.ask(t)
	cancel()
	var o out
	select {
	case o = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if o.res.StopReason != "cancelled" || !errors.Is(o.err, context.Canceled) {
		t.Fatalf("Run = %+v, %v", o.res, o.err)
	}
	for _, ir := range []*protocol.InteractionRequest{a, b} {
		if err := s.Answer(ir.InteractionID, &protocol.InteractionResponse{SelectedValue: protocol.Single(protocol.AllowOnce)}); !errors.Is(err, adapter.ErrUnknownInteraction) {
			t.Errorf("Answer after cancel = %v", err)
		}
	}
	// The next turn waits for the cancelled prompt's response, so the peer
	// has received everything by the time it ends.
	rec2, res, err := run(t, s, turn("again"))
	if err != nil || res.Text != "next" || rec2.Text("") != "next" {
		t.Fatalf("next Run = %+v, %v (events %v)", res, err, rec2.Types())
	}
	if n := len(p.receivedMethod(t, "session/cancel")); n != 1 {
		t.Errorf("%d session/cancel notifications, want 1", n)
	}
	var cancelled int
	for _, r := range p.responses(t) {
		res, _ := r["result"].(map[string]any)
		if oc, _ := res["outcome"].(map[string]any); oc["outcome"] == "cancelled" {
			cancelled++
		}
	}
	if cancelled != 2 {
		t.Errorf("%d permission requests answered cancelled, want 2; peer got %v", cancelled, p.responses(t))
	}
}

// An agent that never answers a cancelled prompt is killed; the session
// then reports that the agent stopped.
func TestCancelKillsUnresponsiveAgent(t *testing.T) {
	t.Parallel()
	p := newPeer(t, acppeer.Script{Turns: [][]step{{{Text: "working"}, {Hang: true}}}})
	p.a.killAfter = 10 * time.Millisecond
	s := p.open(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	rec := newRecorder()
	go func() { // cancel once the agent is at work
		for len(rec.Events()) == 0 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	res, err := s.Run(ctx, turn("go"), rec.emit)
	if res.StopReason != "cancelled" || !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	select {
	case <-s.dead:
	case <-time.After(30 * time.Second):
		t.Fatal("the unresponsive agent was not killed")
	}
	rec2, res, err := run(t, s, turn("again"))
	if err != nil || res.StopReason != "error" {
		t.Fatalf("Run after the kill = %+v, %v", res, err)
	}
	if ev := rec2.Events(); len(ev) != 1 || ev[0].Payload.(*protocol.AgentError).Code != protocol.AgentCodeAgentExited {
		t.Fatalf("events after the kill = %v", rec2.Types())
	}
}

// Modes: set_mode to the agent's mode of the same name, enforced on ferry's
// side; a mode the agent lacks is refused with a coded error.
func TestSetMode(t *testing.T) {
	t.Parallel()
	writeReq := step{Request: &acppeer.Request{Method: "fs/write_text_file", Echo: true, Params: map[string]any{"sessionId": acppeer.SessionID, "path": "new.txt", "content": "x"}}}
	editAsk := step{Request: &acppeer.Request{Method: "session/request_permission", Echo: true, Params: map[string]any{"sessionId": acppeer.SessionID,
		"toolCall": map[string]any{"toolCallId": "c", "title": "Edit", "kind": "edit"},
		"options":  []any{map[string]any{"optionId": "ok", "name": "Allow", "kind": "allow_once"}, map[string]any{"optionId": "no", "name": "Reject", "kind": "reject_once"}}}}}
	modes := map[string]any{"modes": map[string]any{"currentModeId": "code", "availableModes": []any{
		map[string]any{"id": "code", "name": "Code"}, map[string]any{"id": "architect", "name": "Plan"}}}}
	leave := step{Update: map[string]any{"sessionUpdate": "current_mode_update", "currentModeId": "code"}}
	exitPlan := step{Request: &acppeer.Request{Method: "session/request_permission", Params: map[string]any{"sessionId": acppeer.SessionID,
		"toolCall": map[string]any{"toolCallId": "x", "title": "Ready to code?", "kind": "switch_mode"},
		"options":  []any{map[string]any{"optionId": "code", "name": "Yes", "kind": "allow_always"}, map[string]any{"optionId": "plan", "name": "No", "kind": "reject_once"}}}}}
	p := newPeer(t, acppeer.Script{Session: modes, Turns: [][]step{
		{writeReq, editAsk},
		{leave, writeReq},           // the agent leaves plan mode on its own: ferry does not follow
		{exitPlan, leave, writeReq}, // the user allowed it: ferry follows
	}})
	s := p.open(t, protocol.ModePlan) // the open switches at once
	rec, res, err := run(t, s, turn("write"))
	if err != nil || !strings.Contains(res.Text, `"code":15`) || !strings.Contains(res.Text, `"optionId":"no"`) {
		t.Fatalf("plan mode turn = %+v, %v (write and edit permission must be refused)", res, err)
	}
	if len(rec.Asks) != 0 {
		t.Error("an edit was asked about in plan mode")
	}
	if _, err := os.Stat(filepath.Join(p.ws, "new.txt")); !os.IsNotExist(err) {
		t.Fatal("a file was written in plan mode")
	}
	var pe *protocol.Error
	if err := s.SetMode(protocol.ModeReview, nil); !errors.As(err, &pe) || pe.Code != protocol.CodeUnsupported {
		t.Fatalf("SetMode(review) = %v, want unsupported", err)
	}
	rec, res, err = run(t, s, turn("write anyway"))
	if err != nil || !strings.Contains(res.Text, `"code":15`) || len(rec.Events()) != 1 {
		t.Fatalf("turn after the agent left plan mode by itself = %+v, %v, %v", res, err, rec.Types())
	}
	// The agent asks to leave plan mode, the user allows: ferry follows.
	rec = newRecorder()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err = s.Run(ctx, turn("write again"), rec.emit)
		done <- err
	}()
	ir := rec.ask(t)
	if ir.ToolName != "SwitchMode" {
		t.Fatalf("interaction = %+v", ir)
	}
	if err := s.Answer(ir.InteractionID, &protocol.InteractionResponse{SelectedValue: protocol.Single(protocol.AllowAlways)}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || !strings.Contains(res.Text, "fs/write_text_file => {}") {
		t.Fatalf("turn after the allowed switch = %+v, %v", res, err)
	}
	var changed bool
	for _, e := range rec.Events() {
		if mc, ok := e.Payload.(*protocol.ModeChanged); ok && mc.Mode == protocol.ModeDefault {
			changed = true
		}
	}
	if !changed {
		t.Fatalf("no agent.mode.changed default in %v", rec.Types())
	}
	if err := s.SetMode(protocol.ModePlan, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMode(protocol.ModeDefault, nil); err != nil {
		t.Fatal(err)
	}
	var ids []any
	for _, m := range p.receivedMethod(t, "session/set_mode") {
		ids = append(ids, m["modeId"])
	}
	if !reflect.DeepEqual(ids, []any{"architect", "architect", "code"}) {
		t.Fatalf("set_mode ids = %v", ids)
	}

	// An agent without modes, and one whose set_mode fails.
	p2 := newPeer(t, acppeer.Script{})
	if err := p2.open(t, "").SetMode(protocol.ModePlan, nil); !errors.As(err, &pe) || pe.Code != protocol.CodeUnsupported {
		t.Fatalf("SetMode without modes = %v", err)
	}
	_, err = p2.a.Open(context.Background(), adapter.SessionConfig{SessionID: "s", Workspace: protocol.Workspace{ID: "w", Name: "w", Path: p2.ws}, Mode: protocol.ModeReview})
	if !errors.As(err, &pe) || pe.Code != protocol.CodeUnsupported {
		t.Fatalf("Open in a mode the agent lacks = %v", err)
	}
	p3 := newPeer(t, acppeer.Script{Session: modes, SetModeError: true})
	if err := p3.open(t, "").SetMode(protocol.ModePlan, nil); !errors.As(err, &pe) || pe.Code != protocol.CodeUnsupported {
		t.Fatalf("SetMode refused by the agent = %v", err)
	}
}

// fs/read_text_file and fs/write_text_file keep the file tools' contract.
func TestFileSystemMethods(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("top secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := newPeer(t, acppeer.Script{})
	ws := p.ws
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\r\ntwo\r\nthree\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(ws, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(ws, "hard.txt")); err != nil {
		t.Fatal(err)
	}
	abs := func(name string) string { return filepath.Join(ws, name) }
	read := func(path string, line, limit *int) step {
		params := map[string]any{"sessionId": acppeer.SessionID, "path": path}
		if line != nil {
			params["line"] = *line
		}
		if limit != nil {
			params["limit"] = *limit
		}
		return step{Request: &acppeer.Request{Method: "fs/read_text_file", Params: params}}
	}
	write := func(path, content string) step {
		return step{Request: &acppeer.Request{Method: "fs/write_text_file", Params: map[string]any{"sessionId": acppeer.SessionID, "path": path, "content": content}}}
	}
	steps := []step{
		read(abs("a.txt"), intp(2), intp(1)),    // 0: partial
		write(abs("a.txt"), "changed\n"),        // 1: refused, only read in part
		read(abs("a.txt"), nil, nil),            // 2: full
		write(abs("a.txt"), "changed\n"),        // 3: ok
		read(secret, nil, nil),                  // 4: outside
		read(abs("link.txt"), nil, nil),         // 5: symlink out
		write(filepath.Join(outside, "x"), "x"), // 6: outside
		write("../escape.txt", "x"),             // 7: outside, relative
		write(abs("sub/new.txt"), "fresh"),      // 8: new file
		read(abs("missing.txt"), nil, nil),      // 9: not found
		{Request: &acppeer.Request{Method: "fs/read_text_file", Params: map[string]any{"sessionId": "other", "path": abs("a.txt")}}}, // 10
		read(abs("a.txt"), intp(0), nil), // 11: bad line
		read(ws, nil, nil),               // 12: a directory
		{Request: &acppeer.Request{Method: "terminal/create", Params: map[string]any{"sessionId": acppeer.SessionID, "command": "ls"}}}, // 13
		read(abs("hard.txt"), nil, nil),   // 14: a hard link to the secret reads (same as cat)
		write(abs("hard.txt"), "pwned\n"), // 15: but is never written through
	}
	p.setScript(t, acppeer.Script{Turns: [][]step{steps}})
	s := p.open(t, "")
	if _, res, err := run(t, s, turn("files")); err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	resp := p.responses(t)
	if len(resp) != len(steps) {
		t.Fatalf("%d responses, want %d: %v", len(resp), len(steps), resp)
	}
	content := func(i int) string {
		r, _ := resp[i]["result"].(map[string]any)
		c, ok := r["content"].(string)
		if !ok {
			t.Fatalf("response %d = %v, want content", i, resp[i])
		}
		return c
	}
	if c := content(0); c != "two\n" {
		t.Errorf("partial read = %q", c)
	}
	if code, fc := rpcCode(t, resp[1]); code != 2 || fc != 2 {
		t.Errorf("write after a partial read: code %d/%d, want 2", code, fc)
	}
	if c := content(2); c != "one\ntwo\nthree\n" {
		t.Errorf("full read = %q (LF view)", c)
	}
	if _, ok := resp[3]["result"]; !ok {
		t.Errorf("write after a full read = %v", resp[3])
	}
	if b, _ := os.ReadFile(abs("a.txt")); string(b) != "changed\n" {
		t.Errorf("a.txt = %q", b)
	}
	for _, i := range []int{4, 5, 6, 7} {
		if code, fc := rpcCode(t, resp[i]); code != 5 || fc != 5 {
			t.Errorf("response %d: code %d/%d, want 5 (outside)", i, code, fc)
		}
		msg := resp[i]["error"].(map[string]any)["message"].(string)
		if strings.Contains(msg, "top secret") || strings.Contains(msg, os.TempDir()+"/") && i == 5 {
			t.Errorf("response %d leaks: %q", i, msg)
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "top secret\n" {
		t.Error("the file outside was changed")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(ws), "escape.txt")); !os.IsNotExist(err) {
		t.Error("a relative path escaped the workspace")
	}
	if b, _ := os.ReadFile(abs("sub/new.txt")); string(b) != "fresh" {
		t.Errorf("new file = %q", b)
	}
	if code, fc := rpcCode(t, resp[9]); code != rpcNotFound || fc != 4 {
		t.Errorf("missing file: %d/%d", code, fc)
	}
	for _, i := range []int{10, 11} {
		if code, _ := rpcCode(t, resp[i]); code != rpcInvalidParams {
			t.Errorf("response %d: code %d, want invalid params", i, code)
		}
	}
	if code, _ := rpcCode(t, resp[12]); code != 7 {
		t.Errorf("directory: code %d", code)
	}
	if code, fc := rpcCode(t, resp[15]); code != 19 || fc != 19 {
		t.Errorf("write of a hard-linked file: code %d/%d, want 19", code, fc)
	}
	if b, _ := os.ReadFile(secret); string(b) != "top secret\n" {
		t.Error("the file outside was written through a hard link")
	}
	if code, _ := rpcCode(t, resp[13]); code != rpcMethodNotFound {
		t.Errorf("terminal/create: code %d", code)
	}
	for i, r := range resp { // no internal error text, no path outside the agent's own words
		if e, ok := r["error"].(map[string]any); ok {
			if msg := e["message"].(string); strings.Contains(msg, "open ") || strings.Contains(msg, "lstat") || strings.Contains(msg, "openat") {
				t.Errorf("response %d leaks internal error text: %q", i, msg)
			}
		}
	}
}

// A crash mid-turn ends the turn with agent.error and stop reason error;
// the session then says the agent stopped, and a new session works.
func TestAgentCrashMidTurn(t *testing.T) {
	t.Parallel()
	p := newPeer(t, acppeer.Script{Turns: [][]step{{{Text: "partial"}, {Exit: intp(3)}}}})
	s := p.open(t, "")
	rec, res, err := run(t, s, turn("go"))
	if err != nil || res.StopReason != "error" || res.Text != "partial" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	ev := rec.Events()
	if len(ev) != 2 || ev[0].Type != protocol.TypeTextDelta || ev[1].Type != protocol.TypeAgentError {
		t.Fatalf("events = %v", rec.Types())
	}
	if ae := ev[1].Payload.(*protocol.AgentError); ae.Code != protocol.AgentCodeAgentExited || strings.Contains(ae.Message, "exit status") {
		t.Fatalf("agent.error = %+v", ae)
	}
	if _, res, err := run(t, s, turn("again")); err != nil || res.StopReason != "error" {
		t.Fatalf("Run on the dead session = %+v, %v", res, err)
	}
	p.setScript(t, acppeer.Script{Turns: [][]step{{{Text: "back"}}}})
	s2 := p.open(t, "")
	if _, res, err := run(t, s2, turn("go")); err != nil || res.Text != "back" {
		t.Fatalf("Run on a new session = %+v, %v", res, err)
	}
}

// Malformed JSON-RPC lines are logged and skipped; the turn goes on.
func TestMalformedLinesAreSkipped(t *testing.T) {
	t.Parallel()
	p := newPeer(t, acppeer.Script{Turns: [][]step{{
		{Raw: "this is not json"},
		{Raw: `{"jsonrpc":"1.0","method":"session/update","params":{}}`},
		{Raw: `{"jsonrpc":"2.0"}`},
		{Raw: `[{"jsonrpc":"2.0","method":"session/update"}]`},
		{Raw: `{"jsonrpc":"2.0","id":{"x":1},"method":"fs/read_text_file"}`},
		{Raw: `{"jsonrpc":"2.0","id":424242,"result":{}}`},
		{Raw: `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"someone-else","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"foreign"}}}}`},
		{Raw: `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + acppeer.SessionID + `","update":"nonsense"}}`},
		{Raw: `{"jsonrpc":"2.0","id":77,"method":"session/request_permission","params":{"sessionId":"` + acppeer.SessionID + `"}}`},
		{Raw: "\x00\xff\xfe"},
		{Text: "still here"},
	}, {}}})
	s := p.open(t, "")
	rec, res, err := run(t, s, turn("go"))
	if err != nil || res.StopReason != "end_turn" || res.Text != "still here" || rec.Text("") != "still here" {
		t.Fatalf("Run = %+v, %v, events %v", res, err, rec.Types())
	}
	if n := strings.Count(p.logs.String(), "malformed JSON-RPC line"); n != 6 {
		t.Errorf("%d malformed lines logged, want 6:\n%s", n, p.logs.String())
	}
	run(t, s, turn("sync")) // the peer has logged all ferry sent before this prompt
	var answered bool
	for _, r := range p.responses(t) {
		if r["id"] == float64(77) {
			code, _ := rpcCode(t, r)
			answered = code == rpcInvalidParams
		}
	}
	if !answered {
		t.Error("a permission request without options was not answered invalid params")
	}
}

// A 64 MiB line is parsed and streamed in pieces the wire takes.
func TestOversizedLineIsStreamed(t *testing.T) {
	// Not parallel: streaming 64 MiB through a pipe is CPU-bound, and next
	// to other tests it can miss its time bound on a loaded machine.
	if testing.Short() {
		t.Skip("moves 64 MiB")
	}
	const big = 64 << 20
	p := newPeer(t, acppeer.Script{Turns: [][]step{{{BigChunk: big}, {Text: "after"}}}})
	s := p.open(t, "")
	rec, res, err := run(t, s, turn("go"))
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	var total int
	for _, e := range rec.Events() {
		d := e.Payload.(*protocol.TextDelta)
		if len(d.Delta) > maxDelta {
			t.Fatalf("a delta of %d bytes", len(d.Delta))
		}
		total += len(d.Delta)
	}
	if total != big+len("after") || !strings.HasSuffix(rec.Text(""), "xafter") {
		t.Fatalf("streamed %d bytes", total)
	}
	if len(res.Text) > maxResultText+len(truncatedNote) || !strings.HasSuffix(res.Text, truncatedNote) {
		t.Fatalf("result text of %d bytes", len(res.Text))
	}
}

// A line over the limit is skipped without being held; the rest goes on.
func TestLineOverLimitIsSkipped(t *testing.T) {
	t.Parallel()
	p := newPeer(t, acppeer.Script{Turns: [][]step{{{BigChunk: 3 << 20}, {Text: "after"}}}})
	p.a.maxLine = 1 << 20
	s := p.open(t, "")
	rec, res, err := run(t, s, turn("go"))
	if err != nil || res.Text != "after" || rec.Text("") != "after" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if !strings.Contains(p.logs.String(), "skipped a line over the size limit") {
		t.Errorf("the skipped line was not logged:\n%s", p.logs.String())
	}
}

// Updates after the prompt's response belong to no turn: they are dropped,
// not given to the next turn.
func TestUpdatesAfterResponseAreDropped(t *testing.T) {
	t.Parallel()
	p := newPeer(t, acppeer.Script{Turns: [][]step{
		{{Text: "one"}, {Respond: map[string]any{"stopReason": "end_turn"}, Then: []step{
			{Text: "late"},
			{Update: map[string]any{"sessionUpdate": "tool_call", "toolCallId": "late_call", "title": "late", "kind": "read"}},
		}}},
		{{Text: "two"}},
	}})
	s := p.open(t, "")
	rec1, res1, err := run(t, s, turn("first"))
	if err != nil || res1.Text != "one" {
		t.Fatalf("turn 1 = %+v, %v", res1, err)
	}
	rec2, res2, err := run(t, s, turn("second"))
	if err != nil || res2.Text != "two" {
		t.Fatalf("turn 2 = %+v, %v", res2, err)
	}
	if !reflect.DeepEqual(rec1.Types(), []string{protocol.TypeTextDelta}) || !reflect.DeepEqual(rec2.Types(), []string{protocol.TypeTextDelta}) || rec2.Text("") != "two" {
		t.Fatalf("turn 1 events %v, turn 2 events %v (%q)", rec1.Types(), rec2.Types(), rec2.Text(""))
	}
	if n := strings.Count(p.logs.String(), "update outside a turn was dropped"); n != 2 {
		t.Errorf("%d late updates logged, want 2", n)
	}
}

// Close ends the agent's whole process group and every goroutine.
func TestCloseLeavesNoProcesses(t *testing.T) {
	base := runtime.NumGoroutine()
	p := newPeer(t, acppeer.Script{Turns: [][]step{{{SpawnChild: true}}}})
	s := p.open(t, "")
	_, res, err := run(t, s, turn("go"))
	if err != nil || !strings.HasPrefix(res.Text, "child ") {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	child, err := strconv.Atoi(strings.TrimPrefix(res.Text, "child "))
	if err != nil {
		t.Fatal(err)
	}
	agent := s.c.cmd.Process.Pid
	if !alive(child) || !alive(agent) {
		t.Fatal("the processes are not running before Close")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for alive(child) || alive(agent) || runtime.NumGoroutine() > base {
		if ctx.Err() != nil {
			buf := make([]byte, 1<<20)
			t.Fatalf("after Close: child alive %v, agent alive %v, goroutines %d > %d\n%s", alive(child), alive(agent), runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid runs (a zombie waiting for its reaper does not).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) == 0 || f[0] != "Z"
}

// Compact runs the agent's compact command when it offers one.
func TestCompact(t *testing.T) {
	t.Parallel()
	p := newPeer(t, acppeer.Script{Turns: [][]step{
		{{Text: "hi"}},
		{
			{Update: map[string]any{"sessionUpdate": "usage_update", "used": 1000, "size": 200000}},
			{Update: map[string]any{"sessionUpdate": "available_commands_update", "availableCommands": []any{map[string]any{"name": "compact", "description": "compact"}}}},
			{Text: "ok"},
		},
		{
			{Text: "compacting"},
			{Update: map[string]any{"sessionUpdate": "usage_update", "used": 200, "size": 200000}},
		},
	}})
	s := p.open(t, "")
	run(t, s, turn("first"))
	var pe *protocol.Error
	if _, err := s.Compact(context.Background(), &protocol.SessionCompact{}); !errors.As(err, &pe) || pe.Code != protocol.CodeUnsupported {
		t.Fatalf("Compact without a compact command = %v", err)
	}
	run(t, s, turn("second"))
	done, err := s.Compact(context.Background(), &protocol.SessionCompact{Instruction: "keep the API"})
	if err != nil || done.TokensBefore != 1000 || done.TokensAfter != 200 {
		t.Fatalf("Compact = %+v, %v", done, err)
	}
	prompts := p.receivedMethod(t, "session/prompt")
	last, _ := json.Marshal(prompts[len(prompts)-1]["prompt"])
	if !strings.Contains(string(last), `"text":"/compact keep the API"`) {
		t.Fatalf("compact prompt = %s", last)
	}
}

// An error answer to the prompt is a coded agent.error with no agent text.
func TestPromptErrorIsCoded(t *testing.T) {
	t.Parallel()
	p := newPeer(t, acppeer.Script{
		Init: map[string]any{"authMethods": []any{map[string]any{"id": "login", "name": "Log in", "description": "run agent login"}}},
		Turns: [][]step{
			{{RespondError: map[string]any{"code": -32603, "message": "internal: /home/me/.agent/state.db locked"}}},
			{{RespondError: map[string]any{"code": -32000, "message": "auth"}}},
		}})
	s := p.open(t, "")
	for _, want := range []string{protocol.AgentCodeAgentError, protocol.AgentCodeAuthRequired} {
		rec, res, err := run(t, s, turn("go"))
		if err != nil || res.StopReason != "error" {
			t.Fatalf("Run = %+v, %v", res, err)
		}
		ae, ok := rec.Events()[0].Payload.(*protocol.AgentError)
		if !ok || ae.Code != want || strings.Contains(ae.Message, "/home/me") {
			t.Fatalf("agent.error = %+v", rec.Events())
		}
		if want == protocol.AgentCodeAuthRequired && !strings.Contains(ae.Message, "Log in (run agent login)") {
			t.Errorf("auth message = %q", ae.Message)
		}
	}
}

// The mode is checked again when the user answers: a switch to plan mode
// while the prompt was open turns an allow into the reject option.
func TestPermissionModeCheckedAfterAnswer(t *testing.T) {
	t.Parallel()
	editAsk := step{Request: &acppeer.Request{Method: "session/request_permission", Echo: true, Params: map[string]any{"sessionId": acppeer.SessionID,
		"toolCall": map[string]any{"toolCallId": "c", "title": "Edit", "kind": "edit"},
		"options":  []any{map[string]any{"optionId": "ok", "name": "Allow", "kind": "allow_once"}, map[string]any{"optionId": "no", "name": "Reject", "kind": "reject_once"}}}}}
	modes := map[string]any{"modes": map[string]any{"currentModeId": "code", "availableModes": []any{
		map[string]any{"id": "code", "name": "Code"}, map[string]any{"id": "architect", "name": "Plan"}}}}
	p := newPeer(t, acppeer.Script{Session: modes, Turns: [][]step{{editAsk}}})
	s := p.open(t, "")
	rec := newRecorder()
	done := make(chan struct{})
	var (
		res adapter.Result
		err error
	)
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err = s.Run(ctx, turn("edit"), rec.emit)
	}()
	ir := rec.ask(t)
	if err := s.SetMode(protocol.ModePlan, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Answer(ir.InteractionID, &protocol.InteractionResponse{SelectedValue: protocol.Single(protocol.AllowOnce)}); err != nil {
		t.Fatal(err)
	}
	<-done
	if err != nil || !strings.Contains(res.Text, `"optionId":"no"`) || strings.Contains(res.Text, `"optionId":"ok"`) {
		t.Fatalf("Run = %+v, %v; want the reject option after the switch to plan mode", res, err)
	}
}
