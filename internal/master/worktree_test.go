package master_test

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/protocol"
)

// isolatedCaps announce a git workspace (ws1) and a plain one (ws2), and
// the control.worktree.* messages.
func isolatedCaps(machineID string) *protocol.Capabilities {
	caps := testCaps(machineID)
	caps.Workspaces = []protocol.Workspace{
		{ID: "ws1", Name: "proj", Path: "/home/me/proj", Git: true, Branch: "main"},
		{ID: "ws2", Name: "notes", Path: "/home/me/notes"},
	}
	caps.Messages = append(caps.Messages, protocol.TypeWorktreeDiff, protocol.TypeWorktreeStatus, protocol.TypeWorktreePropose,
		protocol.TypeWorktreeShip, protocol.TypeWorktreeUpdate, protocol.TypeWorktreeAbortUpdate, protocol.TypeWorktreeTest, protocol.TypeWorktreeRemove)
	return caps
}

func isolatedWorktree(unshipped bool) protocol.Worktree {
	return protocol.Worktree{Name: "fix-it", Branch: "ferry/fix-it", Base: "main", Group: "g1", Files: 2, Added: 5,
		Uncommitted: unshipped, Unshipped: unshipped, Setup: protocol.SetupOK}
}

// TestIsolatedSessionsOnMaster: the isolation goes to the client with the
// title, a refused isolated open leaves no session, session.opened's and
// session.worktree.status's worktree reach SessionInfo (lists, status
// changes), control.worktree.* are routed both ways, every re-open sends
// the worktree's name, and a delete is refused while unshipped
// (unshipped_changes) or offline (machine_offline), else removes the
// worktree on the client first; an archive too, with delete_branch.
func TestIsolatedSessionsOnMaster(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("ui")
	c := e.connectClient(isolatedCaps("m1"), ui)
	start := func(ws string) *protocol.Message {
		return ui.send(protocol.New(protocol.TypeSessionStart, &protocol.SessionStart{MachineID: "m1", WorkspaceID: ws, Adapter: "echo",
			Title: "Fix it", Isolation: &protocol.Isolation{Group: "g1"}}))
	}

	// Not a git workspace: refused before anything is made.
	req := start("ws2")
	ui.expectError(req.MessageID, protocol.CodeNotGitRepository, "payload.isolation")
	if l := list(ui, ""); len(l) != 0 {
		t.Fatalf("sessions after a refused start: %+v", l)
	}

	// The client refuses (a taken name): no session is left.
	req = start("ws1")
	open := c.next(protocol.TypeSessionOpen)
	p := open.Payload.(*protocol.SessionOpen)
	if p.Isolation == nil || p.Isolation.Group != "g1" || p.Title != "Fix it" {
		t.Fatalf("control.session.open %+v", p)
	}
	c.send(protocol.ErrorMessage(open.MessageID, open.SessionID, &protocol.Error{Code: protocol.CodeBranchExists, Message: "taken"}))
	ui.expectError(req.MessageID, protocol.CodeBranchExists, "")
	if l := list(ui, ""); len(l) != 0 {
		t.Fatalf("sessions after a refused isolated open: %+v", l)
	}

	// Opened: the worktree is in master.session and the lists.
	start("ws1")
	open = c.next(protocol.TypeSessionOpen)
	w := isolatedWorktree(true)
	opened := protocol.New(protocol.TypeSessionOpened, &protocol.SessionOpened{Adapter: "echo", Mode: protocol.ModeDefault, Worktree: &w})
	opened.SessionID, opened.ParentID = open.SessionID, open.MessageID
	c.emitMsg(opened)
	info := ui.next(protocol.TypeSessionAnswer).Payload.(*protocol.SessionAnswer).Session
	if info.Worktree == nil || info.Worktree.Name != "fix-it" || !info.Worktree.Unshipped {
		t.Fatalf("master.session worktree %+v", info.Worktree)
	}
	sid := info.ID

	// A status from the client changes the session for the lists.
	w.Files, w.Added, w.Behind = 3, 9, 1
	c.waitAck(c.emit(sid, protocol.TypeWorktreeState, &protocol.WorktreeState{Worktree: w}).MessageID)
	deadline := time.Now().Add(5 * time.Second)
	for {
		l := list(ui, "")
		if len(l) == 1 && l[0].Worktree != nil && l[0].Worktree.Files == 3 && l[0].Worktree.Behind == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the list's worktree %+v", l)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// control.worktree.diff goes to the client; its answer to the UI only.
	diff := manage(ui, sid, protocol.TypeWorktreeDiff, &protocol.WorktreeDiffRequest{})
	got := c.next(protocol.TypeWorktreeDiff)
	ans := got.Reply(protocol.TypeWorktreeDiffAnswer, &protocol.WorktreeDiff{Files: []protocol.BranchFileDiff{{Path: "a.go", Status: "modified", Added: 1}}, Counts: w})
	c.send(ans)
	if m := ui.next(protocol.TypeWorktreeDiffAnswer); m.ParentID != diff.MessageID || len(m.Payload.(*protocol.WorktreeDiff).Files) != 1 {
		t.Fatalf("diff answer %s", describe(m))
	}
	// A UI may not remove a worktree itself.
	rm := manage(ui, sid, protocol.TypeWorktreeRemove, &protocol.WorktreeRemove{})
	ui.expectError(rm.MessageID, protocol.CodeWrongDirection, "")

	// Unshipped: delete refused without discard, the session kept.
	d := manage(ui, sid, protocol.TypeSessionDelete, &protocol.SessionDelete{})
	ui.expectError(d.MessageID, protocol.CodeUnshippedChanges, "payload.discard")
	a := manage(ui, sid, protocol.TypeSessionArchive, &protocol.SessionArchive{Archived: true})
	ui.expectError(a.MessageID, protocol.CodeUnshippedChanges, "payload.discard")

	// Offline: refused, the session kept.
	_ = c.ws.CloseNow()
	waitMachine(ui, "m1", false)
	d = manage(ui, sid, protocol.TypeSessionDelete, &protocol.SessionDelete{Discard: true})
	ui.expectError(d.MessageID, protocol.CodeMachineOffline, "session_id")
	if l := list(ui, ""); len(l) != 1 {
		t.Fatalf("sessions after a refused delete: %d", len(l))
	}

	// Back: delete with discard re-opens the session with its worktree's
	// name, then removes the worktree (keeping the branch), then deletes.
	c.reconnect(ui)
	d = manage(ui, sid, protocol.TypeSessionDelete, &protocol.SessionDelete{Discard: true})
	reopen := c.next(protocol.TypeSessionOpen).Payload.(*protocol.SessionOpen)
	if iso := reopen.Isolation; iso == nil || iso.Name != "fix-it" || iso.Base != "main" || iso.Group != "g1" {
		t.Fatalf("re-open isolation %+v", iso)
	}
	rmMsg := c.next(protocol.TypeWorktreeRemove)
	if !rmMsg.Payload.(*protocol.WorktreeRemove).KeepBranch {
		t.Fatal("a delete without delete_branch removed the branch")
	}
	c.send(rmMsg.Reply(protocol.TypeWorktreeRemoved, &protocol.WorktreeRemoved{Branch: "ferry/fix-it", BranchKept: true}))
	changed(ui, d, protocol.ChangeDeleted)
	if l := list(ui, ""); len(l) != 0 {
		t.Fatalf("sessions after the delete: %d", len(l))
	}

	// Archive of a shipped session with delete_branch.
	start("ws1")
	open = c.next(protocol.TypeSessionOpen)
	w = isolatedWorktree(false)
	opened = protocol.New(protocol.TypeSessionOpened, &protocol.SessionOpened{Adapter: "echo", Mode: protocol.ModeDefault, Worktree: &w})
	opened.SessionID, opened.ParentID = open.SessionID, open.MessageID
	c.emitMsg(opened)
	sid = ui.next(protocol.TypeSessionAnswer).SessionID
	a = manage(ui, sid, protocol.TypeSessionArchive, &protocol.SessionArchive{Archived: true, DeleteBranch: true})
	rmMsg = c.next(protocol.TypeWorktreeRemove)
	if rmMsg.Payload.(*protocol.WorktreeRemove).KeepBranch {
		t.Fatal("delete_branch kept the branch")
	}
	c.send(rmMsg.Reply(protocol.TypeWorktreeRemoved, &protocol.WorktreeRemoved{Branch: "ferry/fix-it"}))
	if s := changed(ui, a, protocol.ChangeArchived); s.Worktree == nil || !s.Worktree.Missing {
		t.Fatalf("archived session's worktree %+v", s.Worktree)
	}
	if l := find(ui, "", true); !slices.Contains(l, sid) {
		t.Fatalf("archived list %v", l)
	}
	// Unarchived, it is readable, but nothing that needs the worktree
	// goes to the client (which would make one again).
	un := manage(ui, sid, protocol.TypeSessionArchive, &protocol.SessionArchive{})
	changed(ui, un, protocol.ChangeUnarchived)
	pr := manage(ui, sid, protocol.TypeUIPrompt, &protocol.UIPrompt{Segments: []protocol.PromptSegment{{Kind: protocol.SegmentText, Text: "go on"}}})
	ui.expectError(pr.MessageID, protocol.CodeWorktreeMissing, "session_id")
	st := manage(ui, sid, protocol.TypeWorktreeStatus, &protocol.WorktreeStatusRequest{})
	ui.expectError(st.MessageID, protocol.CodeWorktreeMissing, "session_id")
	subscribe(ui, sid, 0, "")

	// An untitled isolated session left unused (if_empty): deleted, and
	// its worktree and branch removed on the client.
	ui.send(protocol.New(protocol.TypeSessionStart, &protocol.SessionStart{MachineID: "m1", WorkspaceID: "ws1", Adapter: "echo",
		Isolation: &protocol.Isolation{}}))
	open = c.next(protocol.TypeSessionOpen)
	w = isolatedWorktree(true) // setup made files: uncommitted, yet nothing of an agent's
	opened = protocol.New(protocol.TypeSessionOpened, &protocol.SessionOpened{Adapter: "echo", Mode: protocol.ModeDefault, Worktree: &w})
	opened.SessionID, opened.ParentID = open.SessionID, open.MessageID
	c.emitMsg(opened)
	ui.skip = append(ui.skip, protocol.TypeSessionOpened) // the replay of the subscription above
	sid = ui.next(protocol.TypeSessionAnswer).SessionID
	d = manage(ui, sid, protocol.TypeSessionDelete, &protocol.SessionDelete{IfEmpty: true})
	changed(ui, d, protocol.ChangeDeleted)
	rmMsg = c.next(protocol.TypeWorktreeRemove)
	if rmMsg.SessionID != sid || rmMsg.Payload.(*protocol.WorktreeRemove).KeepBranch {
		t.Fatalf("an empty session's worktree removal: %s", describe(rmMsg))
	}
	c.send(rmMsg.Reply(protocol.TypeWorktreeRemoved, &protocol.WorktreeRemoved{Branch: "ferry/fix-it"}))
}

// TestSessionUsageTotals: SessionInfo.usage sums each ended turn's last
// agent.usage (a turn reports its usage so far, so only the last counts),
// in master.session.changed and in the lists, and survives a restart.
func TestSessionUsageTotals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("ui")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	for i, u := range [][2]protocol.Usage{
		{{InputTokens: 100, OutputTokens: 10, CostUSD: 0.01}, {InputTokens: 300, OutputTokens: 30, CostUSD: 0.03}},
		{{InputTokens: 50, OutputTokens: 5}, {InputTokens: 200, OutputTokens: 20, CacheReadTokens: 7, CostUSD: 0.02}},
	} {
		turn := fmt.Sprintf("turn-%d", i)
		req := prompt(ui, c, info.ID, "go")
		turnStart(c, req, turn)
		for _, x := range u {
			x.TurnID = turn
			c.waitAck(c.emit(info.ID, protocol.TypeUsage, &x).MessageID)
		}
		c.waitAck(c.emit(info.ID, protocol.TypeTextDone, &protocol.TextDone{TurnID: turn, StopReason: protocol.StopEndTurn}).MessageID)
	}
	want := protocol.UsageTotals{Turns: 2, InputTokens: 500, OutputTokens: 50, CacheReadTokens: 7, CostUSD: 0.05}
	check := func(what string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			l := list(ui, "")
			if len(l) == 1 && l[0].Usage != nil && l[0].Usage.Turns == want.Turns && l[0].Usage.InputTokens == want.InputTokens &&
				l[0].Usage.OutputTokens == want.OutputTokens && l[0].Usage.CacheReadTokens == want.CacheReadTokens &&
				math.Abs(l[0].Usage.CostUSD-want.CostUSD) < 1e-9 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: usage %+v, want %+v", what, l[0].Usage, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	check("listed")
	e.restart()
	ui = e.dialUI("ui2")
	check("after a restart")
}
