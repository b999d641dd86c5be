package acp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/protocol"
)

// These tests drive a real ACP agent from npm, claude-code-acp, against the
// fake Anthropic server. claude-code-acp reads and writes files through the
// client's fs methods when the client offers them, so its Read and Write
// tools land in ferry's fs/read_text_file and fs/write_text_file.

// realAgent returns the agent's command, or skips naming the install step.
func realAgent(t *testing.T) string {
	t.Helper()
	return adaptertest.Binary(t, "FERRY_TEST_ACP_AGENT", "a claude-code-acp binary: npm install @zed-industries/claude-code-acp@0.16.2 (then node_modules/.bin/claude-code-acp)")
}

// realSession opens a claude-code-acp session on a fresh workspace whose
// model calls go to a fake Anthropic server; the test routes its replies.
func realSession(t *testing.T) (*session, *fake.Server, string) {
	t.Helper()
	a, srv := realAdapter(t)
	ws := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := a.Open(ctx, adapter.SessionConfig{SessionID: protocol.NewID(), Workspace: protocol.Workspace{ID: "w", Name: "w", Path: ws}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s.(*session), srv, s.(*session).ws
}

// realAdapter is the adapter of claude-code-acp talking to a new fake
// Anthropic server.
func realAdapter(t *testing.T) (*Adapter, *fake.Server) {
	t.Helper()
	bin := realAgent(t)
	srv := fake.New(t)
	logs := &adaptertest.LogBuffer{}
	a, err := New(Config{
		Command: []string{bin},
		Env: []string{
			"ANTHROPIC_BASE_URL=" + srv.URL(), "ANTHROPIC_API_KEY=sk-ant-fake",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1",
			"IS_SANDBOX=1", // Claude Code refuses to run as root otherwise (CI runs as root)
			"HOME=" + t.TempDir(),
		},
		Logger: logs.Logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("adapter log:\n%s", logs.String())
		}
	})
	return a, srv
}

// toolResultText returns the text of the tool_result for id the model got.
func toolResultText(srv *fake.Server, id string) string {
	for _, r := range srv.ModelRequests() {
		if t := requestToolResult(r, id); t != "" {
			return t
		}
	}
	return ""
}

// requestToolResult returns the text of r's tool_result for id.
func requestToolResult(r fake.Request, id string) string {
	for _, m := range r.Messages() {
		blocks, _ := m["content"].([]any)
		for _, b := range blocks {
			bm, _ := b.(map[string]any)
			if bm["type"] == "tool_result" && bm["tool_use_id"] == id {
				raw, _ := json.Marshal(bm["content"])
				return string(raw)
			}
		}
	}
	return ""
}

// A picked file is read by the real agent through ferry's fs/read_text_file.
func TestRealAgentReadsPickedFile(t *testing.T) {
	t.Parallel()
	s, srv, ws := realSession(t)
	file := filepath.Join(ws, "notes.txt")
	if err := os.WriteFile(file, []byte("the secret word is pelican\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv.Route(func(r fake.Request) (fake.Reply, bool) {
		switch {
		case len(r.ToolNames()) == 0:
			return fake.Reply{Text: []string{"side"}}, true
		case requestToolResult(r, "toolu_read1") == "":
			return fake.Reply{Text: []string{"Reading."}, Usage: llm.Usage{InputTokens: 100, OutputTokens: 10},
				ToolCalls: []fake.ToolCall{{ID: "toolu_read1", Name: "mcp__acp__Read", Input: map[string]any{"file_path": file}}}}, true
		}
		return fake.Reply{Text: []string{"The word is ", "pelican."}, Usage: llm.Usage{InputTokens: 120, OutputTokens: 5}}, true
	})
	refs := []protocol.FileReference{{RefID: "ref_0", Path: "notes.txt", Name: "notes.txt", WorkspaceRelativePath: "notes.txt"}}
	rec, res, err := run(t, s, turn("what is the secret word in <@file:ref_0|notes.txt>?", refs...))
	if err != nil || res.StopReason != "end_turn" || !strings.Contains(res.Text, "The word is pelican.") {
		t.Fatalf("Run = %+v, %v (events %v)", res, err, rec.Types())
	}
	if !strings.Contains(toolResultText(srv, "toolu_read1"), "pelican") {
		t.Fatal("the file's content did not reach the model")
	}
	if _, ok := s.env.State.Lookup(file); !ok {
		t.Fatal("the agent did not read the file through ferry's fs/read_text_file")
	}
	var started, finished bool
	for _, e := range rec.Events() {
		switch p := e.Payload.(type) {
		case *protocol.ToolStarted:
			started = started || p.ToolUseID == "toolu_read1" && p.ToolName == "Read"
		case *protocol.ToolFinished:
			finished = finished || p.ToolUseID == "toolu_read1" && p.Status == protocol.ToolOK
		}
	}
	if !started || !finished {
		t.Errorf("tool events = %v", rec.Types())
	}
	// The prompt the model saw names the picked file.
	first := srv.ModelRequests()
	var sawFile bool
	for _, r := range first {
		for _, m := range r.Messages() {
			raw, _ := json.Marshal(m["content"])
			sawFile = sawFile || strings.Contains(string(raw), "notes.txt")
		}
	}
	if !sawFile {
		t.Error("the model's prompt does not mention the picked file")
	}
}

// A permission request of the real agent is answered through ferry: allow
// writes the file through fs/write_text_file, deny does not.
func TestRealAgentPermissionThroughFerry(t *testing.T) {
	t.Parallel()
	s, srv, ws := realSession(t)
	for _, tc := range []struct {
		name, answer string
		written      bool
	}{
		{"allowed.txt", protocol.AllowOnce, true},
		{"denied.txt", protocol.Deny, false},
	} {
		t.Run(tc.answer, func(t *testing.T) {
			target := filepath.Join(ws, tc.name)
			callID := "toolu_write_" + strings.TrimSuffix(tc.name, ".txt")
			srv.Route(func(r fake.Request) (fake.Reply, bool) {
				switch {
				case len(r.ToolNames()) == 0:
					return fake.Reply{Text: []string{"side"}}, true
				case requestToolResult(r, callID) == "":
					return fake.Reply{Text: []string{"Writing."},
						ToolCalls: []fake.ToolCall{{ID: callID, Name: "mcp__acp__Write", Input: map[string]any{"file_path": target, "content": "hello from the agent\n"}}}}, true
				}
				return fake.Reply{Text: []string{"Done."}}, true
			})
			rec := newRecorder()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			type out struct {
				res adapter.Result
				err error
			}
			done := make(chan out, 1)
			go func() { res, err := s.Run(ctx, turn("write the file"), rec.emit); done <- out{res, err} }()
			ir := rec.ask(t)
			var values []string
			for _, o := range ir.Options {
				values = append(values, o.Value)
			}
			if ir.Kind != protocol.InteractionPermission || ir.ToolUseID != callID || !strings.Contains(strings.Join(values, ","), tc.answer) {
				t.Fatalf("interaction = %+v", ir)
			}
			if err := s.Answer(ir.InteractionID, &protocol.InteractionResponse{InteractionID: ir.InteractionID, SelectedValue: protocol.Single(tc.answer)}); err != nil {
				t.Fatal(err)
			}
			var o out
			select {
			case o = <-done:
			case <-ctx.Done():
				t.Fatal("the turn did not end")
			}
			if o.err != nil || o.res.StopReason != "end_turn" {
				t.Fatalf("Run = %+v, %v", o.res, o.err)
			}
			b, err := os.ReadFile(target)
			if tc.written && (err != nil || string(b) != "hello from the agent\n") {
				t.Fatalf("%s = %q, %v", tc.name, b, err)
			}
			if !tc.written && !os.IsNotExist(err) {
				t.Fatalf("%s was written after a deny", tc.name)
			}
		})
	}
}

// Cancel with a permission request open: the real agent gets session/cancel
// and the cancelled outcome, the session goes on, and Close leaves none of
// the agent's processes (node and the Claude Code CLI it runs).
func TestRealAgentCancelAndClose(t *testing.T) {
	t.Parallel()
	s, srv, ws := realSession(t)
	target := filepath.Join(ws, "never.txt")
	srv.Route(func(r fake.Request) (fake.Reply, bool) {
		switch {
		case len(r.ToolNames()) == 0:
			return fake.Reply{Text: []string{"side"}}, true
		case requestToolResult(r, "toolu_cancel") == "":
			return fake.Reply{Text: []string{"Writing."},
				ToolCalls: []fake.ToolCall{{ID: "toolu_cancel", Name: "mcp__acp__Write", Input: map[string]any{"file_path": target, "content": "x"}}}}, true
		}
		return fake.Reply{Text: []string{"Stopped."}}, true
	})
	rec := newRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan adapter.Result, 1)
	go func() { res, _ := s.Run(ctx, turn("write it"), rec.emit); done <- res }()
	ir := rec.ask(t)
	cancel()
	select {
	case res := <-done:
		if res.StopReason != "cancelled" {
			t.Fatalf("Run = %+v", res)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after cancel")
	}
	if err := s.Answer(ir.InteractionID, &protocol.InteractionResponse{SelectedValue: protocol.Single(protocol.AllowOnce)}); err == nil {
		t.Fatal("the cancelled interaction could still be answered")
	}
	srv.Route(func(r fake.Request) (fake.Reply, bool) { return fake.Reply{Text: []string{"Still here."}}, true })
	_, res, err := run(t, s, turn("are you there?"))
	if err != nil || !strings.Contains(res.Text, "Still here.") {
		t.Fatalf("Run after cancel = %+v, %v", res, err)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatal("the cancelled write happened")
	}
	pgid := s.c.cmd.Process.Pid
	if n := len(groupMembers(pgid)); n < 2 { // node and the CLI it runs at least
		t.Fatalf("the agent's group has %d processes before Close", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	deadline, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	for len(groupMembers(pgid)) > 0 {
		if deadline.Err() != nil {
			t.Fatalf("after Close the agent's group still has %v", groupMembers(pgid))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// groupMembers lists the live (non-zombie) processes of process group pgid.
func groupMembers(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		// fields after the name: state, ppid, pgrp, …
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			out = append(out, pid)
		}
	}
	return out
}

// A prompt's denied_tools hold for the real agent: its reads of a denied
// file, directly or through a symbolic link, come back refused, and its
// write through a linked folder a rule denies is rejected without asking
// the user.
func TestRealAgentDeniedToolsThroughFerry(t *testing.T) {
	t.Parallel()
	s, srv, ws := realSession(t)
	writeFile(t, ws, "secret.txt", "the secret word is pelican\n")
	writeFile(t, ws, "protected/keep.txt", "keep me\n")
	if err := os.Symlink("secret.txt", filepath.Join(ws, "link_to_secret")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("protected", filepath.Join(ws, "plink")); err != nil {
		t.Fatal(err)
	}
	calls := []fake.ToolCall{
		{ID: "toolu_read_secret", Name: "mcp__acp__Read", Input: map[string]any{"file_path": filepath.Join(ws, "secret.txt")}},
		{ID: "toolu_read_link", Name: "mcp__acp__Read", Input: map[string]any{"file_path": filepath.Join(ws, "link_to_secret")}},
		{ID: "toolu_write_plink", Name: "mcp__acp__Write", Input: map[string]any{"file_path": filepath.Join(ws, "plink", "keep.txt"), "content": "gone\n"}},
	}
	srv.Route(func(r fake.Request) (fake.Reply, bool) {
		if len(r.ToolNames()) == 0 {
			return fake.Reply{Text: []string{"side"}}, true
		}
		for _, c := range calls {
			if requestToolResult(r, c.ID) == "" {
				return fake.Reply{Text: []string{"Trying."}, ToolCalls: []fake.ToolCall{c}}, true
			}
		}
		return fake.Reply{Text: []string{"Done."}}, true
	})
	o := &protocol.ConfigOverrides{DeniedTools: []string{"Read(secret.txt)", "Edit(protected/**)"}}
	rec := newRecorder()
	go func() { // no interaction should come; if one does, reject it
		for ir := range rec.Asks {
			_ = s.Answer(ir.InteractionID, nil)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := s.Run(ctx, withOverrides("read the secret", o), rec.emit)
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Run = %+v, %v (events %v)", res, err, rec.Types())
	}
	for _, e := range rec.Events() {
		if ir, ok := e.Payload.(*protocol.InteractionRequest); ok {
			t.Errorf("the user was asked: %+v", ir)
		}
	}
	// The reads reach the model refused, and the secret never does.
	for _, c := range calls[:2] {
		if got := toolResultText(srv, c.ID); !strings.Contains(got, "permission rule") || strings.Contains(got, "pelican") {
			t.Errorf("%s: tool result %s, want a refusal by a permission rule", c.ID, got)
		}
	}
	// The write is rejected (Claude Code then ends the turn).
	var rejected bool
	for _, e := range rec.Events() {
		if f, ok := e.Payload.(*protocol.ToolFinished); ok && f.ToolUseID == "toolu_write_plink" {
			rejected = f.Status == protocol.ToolError
		}
	}
	if !rejected {
		t.Errorf("the write was not rejected: events %v", rec.Types())
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "protected", "keep.txt")); string(b) != "keep me\n" {
		t.Errorf("protected/keep.txt = %q", b)
	}
}

// An edit the real agent makes (its Edit tool: fs/read_text_file, then
// fs/write_text_file, inside a tool call of kind edit that completes with
// the file as location) is handed over once, as agent.artifact whose size
// is the file's on disk, when the session has artifacts on.
func TestRealAgentEditIsAnArtifact(t *testing.T) {
	t.Parallel()
	a, srv := realAdapter(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opened, err := a.Open(ctx, adapter.SessionConfig{SessionID: protocol.NewID(), Workspace: protocol.Workspace{ID: "w", Name: "w", Path: t.TempDir()}, Artifacts: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = opened.Close() })
	s := opened.(*session)
	target := filepath.Join(s.ws, "doc", "notes.md")
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, []byte("# Notes\n\ncolour: red\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const callID = "toolu_edit1"
	srv.Route(func(r fake.Request) (fake.Reply, bool) {
		switch {
		case len(r.ToolNames()) == 0:
			return fake.Reply{Text: []string{"side"}}, true
		case requestToolResult(r, callID) == "":
			return fake.Reply{Text: []string{"Editing."}, ToolCalls: []fake.ToolCall{{ID: callID, Name: "mcp__acp__Edit",
				Input: map[string]any{"file_path": target, "old_string": "colour: red", "new_string": "colour: a much longer shade of blue"}}}}, true
		}
		return fake.Reply{Text: []string{"Done."}}, true
	})
	rec := newRecorder()
	type out struct {
		res adapter.Result
		err error
	}
	tn := turn("change the colour")
	done := make(chan out, 1)
	go func() { res, err := s.Run(ctx, tn, rec.emit); done <- out{res, err} }()
	ir := rec.ask(t)
	if err := s.Answer(ir.InteractionID, &protocol.InteractionResponse{InteractionID: ir.InteractionID, SelectedValue: protocol.Single(protocol.AllowOnce)}); err != nil {
		t.Fatal(err)
	}
	var o out
	select {
	case o = <-done:
	case <-ctx.Done():
		t.Fatal("the turn did not end")
	}
	if o.err != nil || o.res.StopReason != "end_turn" {
		t.Fatalf("Run = %+v, %v (events %v)", o.res, o.err, rec.Types())
	}
	b, err := os.ReadFile(target)
	if err != nil || !strings.Contains(string(b), "a much longer shade of blue") {
		t.Fatalf("notes.md = %q, %v", b, err)
	}
	events := rec.OfType(protocol.TypeArtifact)
	if len(events) != 1 || len(o.res.Artifacts) != 1 {
		t.Fatalf("%d agent.artifact, %d in the result, want 1 (events %v)", len(events), len(o.res.Artifacts), rec.Types())
	}
	ev := events[0].(*protocol.Artifact)
	if ev.TurnID != tn.ID || ev.ToolUseID != callID || ev.Path != "doc/notes.md" || ev.FileName != "notes.md" || ev.Size != int64(len(b)) {
		t.Fatalf("agent.artifact = %+v, file has %d bytes", ev, len(b))
	}
	if f := o.res.Artifacts[0]; f.Path() != ev.Path || f.Size() != ev.Size || f.ToolUseID() != callID {
		t.Fatalf("Result.Artifacts[0] = %+v", f.ToMessage())
	}
}

// TestRealAgentCapabilities: the real claude-code-acp's session reports
// what it offers once it answered initialize and session/new: its plan
// mode, and images and embedded context (so PDFs); every mode it reports
// switches.
func TestRealAgentCapabilities(t *testing.T) {
	t.Parallel()
	a, _ := realAdapter(t)
	var l capsLog
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := a.Open(ctx, adapter.SessionConfig{SessionID: protocol.NewID(), Workspace: protocol.Workspace{ID: "w", Name: "w", Path: t.TempDir()},
		Mode: protocol.ModeDefault, Capabilities: l.report})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	c := l.last(t)
	if !slices.Contains(c.Modes, protocol.ModePlan) || !slices.Contains(c.Attachments, protocol.AttachImage) || !slices.Contains(c.Attachments, protocol.AttachPDF) {
		t.Fatalf("claude-code-acp reported %+v, want plan mode and image and PDF attachments", c)
	}
	for _, m := range append(slices.Clone(c.Modes), protocol.ModeDefault) {
		if err := s.SetMode(m, nil); err != nil {
			t.Errorf("SetMode(%s), a reported mode: %v", m, err)
		}
	}
}
