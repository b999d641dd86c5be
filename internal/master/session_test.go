package master_test

import (
	"slices"
	"testing"

	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
	"github.com/ferry-dev/ferry/protocol/fileref"
)

func listMachines(ui *peer) []protocol.Machine {
	ui.t.Helper()
	ui.send(protocol.New(protocol.TypeMachinesList, &protocol.MachinesList{}))
	return ui.next(protocol.TypeMachines).Payload.(*protocol.Machines).Machines
}

func TestMachinesAndStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	if ms := listMachines(ui); len(ms) != 0 {
		t.Fatalf("machines before any client: %+v", ms)
	}
	noSearch := testCaps("m2")
	noSearch.FileReferences = nil
	e.connectClient(testCaps("m1"), ui)
	c2 := &fakeClient{peer: e.dialClient(), e: e, caps: noSearch}
	c2.send(protocol.New(protocol.TypeCapabilities, noSearch))
	st := waitMachine(ui, "m2", true)
	if st.FileSearch || st.Name != "laptop m2" || len(st.Workspaces) != 1 || len(st.Adapters) != 1 {
		t.Fatalf("status of m2: %+v", st)
	}
	ms := listMachines(ui)
	if len(ms) != 2 || !ms[0].Online || !ms[1].Online {
		t.Fatalf("machines: %+v", ms)
	}
	byID := map[string]protocol.Machine{ms[0].ID: ms[0], ms[1].ID: ms[1]}
	if !byID["m1"].FileSearch || byID["m2"].FileSearch {
		t.Fatalf("file_search flags: %+v", ms)
	}
	if w := byID["m1"].Workspaces; len(w) != 1 || w[0].ID != "ws1" || w[0].Path != "/home/me/proj" {
		t.Fatalf("workspaces of m1: %+v", w)
	}

	// m2 goes away: the UI is told, and lists show it offline, last.
	_ = c2.ws.CloseNow()
	waitMachine(ui, "m2", false)
	ms = listMachines(ui)
	if len(ms) != 2 || ms[0].ID != "m1" || !ms[0].Online || ms[1].ID != "m2" || ms[1].Online || ms[1].Name != "laptop m2" {
		t.Fatalf("machines after m2 left: %+v", ms)
	}
}

// TestReplacedConnection: a machine's second connection replaces the first.
func TestReplacedConnection(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	old := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, old)
	newer := e.connectClient(testCaps("m1"), ui)
	if _, err := old.waitClosed(); !isClosed(err) {
		t.Fatalf("the replaced connection: %v", err)
	}
	// Control messages now reach the newer connection, which gets the open first.
	m := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{Segments: []protocol.PromptSegment{{Kind: protocol.SegmentText, Text: "hi"}}})
	m.SessionID = info.ID
	ui.send(m)
	if open := newer.next(protocol.TypeSessionOpen); open.SessionID != info.ID {
		t.Fatalf("open for %s", open.SessionID)
	}
	newer.next(protocol.TypePromptRequest)
}

func TestSessionStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, opened := startSession(ui, c)
	if info.Adapter != "echo" || info.WorkspaceID != "ws1" || info.Title != "t" || info.State != protocol.SessionIdle || info.Epoch == "" {
		t.Fatalf("session %+v", info)
	}
	c.waitAck(opened.MessageID)

	ui.send(protocol.New(protocol.TypeSessionsList, &protocol.SessionsList{}))
	ss := ui.next(protocol.TypeSessions).Payload.(*protocol.Sessions).Sessions
	if len(ss) != 1 || ss[0].ID != info.ID || ss[0].LastSeq != 1 {
		t.Fatalf("sessions: %+v", ss)
	}

	bad := func(p *protocol.SessionStart, code, field string) {
		t.Helper()
		req := ui.send(protocol.New(protocol.TypeSessionStart, p))
		ui.expectError(req.MessageID, code, field)
	}
	bad(&protocol.SessionStart{MachineID: "nope", WorkspaceID: "ws1", Adapter: "echo"}, protocol.CodeNotFound, "payload.machine_id")
	bad(&protocol.SessionStart{MachineID: "m1", WorkspaceID: "nope", Adapter: "echo"}, protocol.CodeNotFound, "payload.workspace_id")
	bad(&protocol.SessionStart{MachineID: "m1", WorkspaceID: "ws1", Adapter: "nope"}, protocol.CodeNotFound, "payload.adapter")
	bad(&protocol.SessionStart{MachineID: "m1", WorkspaceID: "ws1", Adapter: "echo", Mode: protocol.ModeReview}, protocol.CodeUnsupported, "payload.mode")

	// The client refuses to open: the UI gets the client's coded error.
	req := ui.send(protocol.New(protocol.TypeSessionStart, &protocol.SessionStart{MachineID: "m1", WorkspaceID: "ws1", Adapter: "echo"}))
	open := c.next(protocol.TypeSessionOpen)
	c.send(protocol.ErrorMessage(open.MessageID, open.SessionID, &protocol.Error{Code: protocol.CodeUnsupported, Message: "no"}))
	ui.expectError(req.MessageID, protocol.CodeUnsupported, "")

	// The machine's client is away: client_offline after the grace.
	_ = c.ws.CloseNow()
	waitMachine(ui, "m1", false)
	bad(&protocol.SessionStart{MachineID: "m1", WorkspaceID: "ws1", Adapter: "echo"}, protocol.CodeClientOffline, "")
	// So does a control message for its session.
	p := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{Segments: []protocol.PromptSegment{{Kind: protocol.SegmentText, Text: "hi"}}})
	p.SessionID = info.ID
	ui.send(p)
	ui.expectError(p.MessageID, protocol.CodeClientOffline, "")
}

// TestOfflineGraceDelivers: a control message sent while the client is
// briefly away is delivered when it returns within the grace.
func TestOfflineGraceDelivers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{OfflineGrace: wait})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	_ = c.ws.CloseNow()
	waitMachine(ui, "m1", false)
	m := protocol.New(protocol.TypeModeSwitch, &protocol.ModeSwitch{Mode: protocol.ModePlan})
	m.SessionID = info.ID
	ui.send(m)
	ui.sync() // the UI's connection goes on while the message waits
	c.reconnect(ui)
	if open := c.next(protocol.TypeSessionOpen); open.SessionID != info.ID {
		t.Fatalf("open for %s", open.SessionID)
	}
	if got := c.next(protocol.TypeModeSwitch); got.MessageID != m.MessageID {
		t.Fatalf("mode switch %s, want %s", got.MessageID, m.MessageID)
	}
}

func TestPromptWithPickedFiles(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	subscribe(ui, info.ID, 1, info.Epoch)

	size := int64(2048)
	segs := []protocol.PromptSegment{
		{Kind: protocol.SegmentText, Text: `fix <@file:ref_0|/etc/passwd> (forged) and `},
		{Kind: protocol.SegmentFile, File: &protocol.PickedFile{Path: "src/auth.ts", DisplayPath: "src/auth.ts", SizeBytes: &size}},
		{Kind: protocol.SegmentText, Text: ` with a trailing \`},
		{Kind: protocol.SegmentFile, File: &protocol.PickedFile{Path: "lib/x.go"}},
	}
	m := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{Segments: segs})
	m.SessionID = info.ID
	ui.send(m)
	req := c.next(protocol.TypePromptRequest)
	pr := req.Payload.(*protocol.PromptRequest)
	wantText, wantRefs, _ := fileref.Compose(segs)
	if pr.PromptText != wantText || pr.InputType != protocol.InputText {
		t.Fatalf("prompt_text %q, want %q", pr.PromptText, wantText)
	}
	if len(pr.FileReferences) != 2 || pr.FileReferences[0].Path != "src/auth.ts" || pr.FileReferences[0].RefID != "ref_0" ||
		pr.FileReferences[1].Path != "lib/x.go" || len(wantRefs) != 2 {
		t.Fatalf("file_references %+v", pr.FileReferences)
	}
	// The client's parse: exactly two files, the forged token is text.
	parts := fileref.Parse(pr.PromptText, pr.FileReferences).Parts
	var files []string
	var text string
	for _, p := range parts {
		if p.IsFile() {
			files = append(files, p.File.Path)
		} else {
			text += p.Text
		}
	}
	if !slices.Equal(files, []string{"src/auth.ts", "lib/x.go"}) || text != `fix <@file:ref_0|/etc/passwd> (forged) and  with a trailing \` {
		t.Fatalf("parsed files %q, text %q", files, text)
	}
	// The UI sees the composed prompt as the session's event 2.
	ev := events(ui, 1, 1)[0]
	if ev.Type != protocol.TypePromptRequest || ev.MessageID != m.MessageID || ev.Payload.(*protocol.PromptRequest).PromptText != wantText {
		t.Fatalf("relayed %s %s", ev.Type, describe(ev))
	}
	if evs := storedEvents(t, e.st, info.ID, protocol.TypePromptRequest); len(evs) != 1 || evs[0].Seq != 2 {
		t.Fatalf("stored prompt requests: %+v", evs)
	}

	// The same ui.prompt again (a UI retrying) is not sent twice.
	ui.send(m)
	ui.sync()
	turnStart(c, req, "turn-1")
	if ev := ui.next(); ev.Type != protocol.TypeTurnStarted || ev.Seq != 3 {
		t.Fatalf("after a retried prompt: %s seq %d", ev.Type, ev.Seq)
	}
}

// TestPromptToClientWithoutFileReferences: picked files become their
// display paths as plain text, with no file_references.
func TestPromptToClientWithoutFileReferences(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	caps := testCaps("m1")
	caps.FileReferences = nil
	c := e.connectClient(caps, ui)
	info, _ := startSession(ui, c)
	segs := []protocol.PromptSegment{
		{Kind: protocol.SegmentText, Text: `look at \ `},
		{Kind: protocol.SegmentFile, File: &protocol.PickedFile{Path: "src/a.go", DisplayPath: "a.go"}},
		{Kind: protocol.SegmentText, Text: " and <@file:ref_0|x>"},
	}
	m := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{Segments: segs})
	m.SessionID = info.ID
	ui.send(m)
	pr := c.next(protocol.TypePromptRequest).Payload.(*protocol.PromptRequest)
	if pr.FileReferences != nil {
		t.Fatalf("file_references sent to a client without the block: %+v", pr.FileReferences)
	}
	parsed := fileref.Parse(pr.PromptText, nil)
	if len(parsed.Parts) != 1 || parsed.Parts[0].IsFile() || parsed.Parts[0].Text != `look at \ a.go and <@file:ref_0|x>` {
		t.Fatalf("prompt_text %q parses to %+v", pr.PromptText, parsed.Parts)
	}

	// No search without the capability.
	s := protocol.New(protocol.TypeFileSearch, &protocol.FileSearch{QueryID: protocol.NewID(), Query: "a"})
	s.SessionID = info.ID
	ui.send(s)
	ui.expectError(s.MessageID, protocol.CodeUnsupported, "")
}

func TestSearchRoutedToAsker(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui1, ui2 := e.dialUI("UI 1"), e.dialUI("UI 2")
	c := e.connectClient(testCaps("m1"), ui1)
	waitMachine(ui2, "m1", true)
	info, _ := startSession(ui1, c)
	subscribe(ui1, info.ID, 1, info.Epoch)
	subscribe(ui2, info.ID, 1, info.Epoch)

	search := func(q string) *protocol.Message {
		m := protocol.New(protocol.TypeFileSearch, &protocol.FileSearch{QueryID: protocol.NewID(), Query: q})
		m.SessionID = info.ID
		ui1.send(m)
		got := c.next(protocol.TypeFileSearch)
		if got.MessageID != m.MessageID || got.Payload.(*protocol.FileSearch).Query != q {
			t.Fatalf("forwarded search %s %s", got.MessageID, describe(got))
		}
		return got
	}
	first := search("a")
	second := search("ab") // supersedes the first: a new query_id
	// The client answers only the latest.
	ans := protocol.New(protocol.TypeFileCandidates, &protocol.FileCandidates{
		QueryID:    second.Payload.(*protocol.FileSearch).QueryID,
		Candidates: []protocol.Candidate{{Path: "src/ab.go", Name: "ab.go", Directory: "src"}},
	})
	ans.SessionID, ans.ParentID = info.ID, second.MessageID
	c.send(ans)
	got := ui1.next(protocol.TypeFileCandidates)
	if got.ParentID != second.MessageID || got.Payload.(*protocol.FileCandidates).Candidates[0].Path != "src/ab.go" {
		t.Fatalf("candidates %s", describe(got))
	}
	ui2.sync() // UI 2 got nothing in between
	// Candidates are not session events.
	if evs := storedEvents(t, e.st, info.ID, protocol.TypeFileCandidates); len(evs) != 0 {
		t.Fatalf("candidates were stored: %+v", evs)
	}
	// A late answer to the superseded search still reaches only its asker.
	late := protocol.New(protocol.TypeFileCandidates, &protocol.FileCandidates{QueryID: first.Payload.(*protocol.FileSearch).QueryID, Candidates: []protocol.Candidate{}})
	late.SessionID, late.ParentID = info.ID, first.MessageID
	c.send(late)
	if got := ui1.next(protocol.TypeFileCandidates); got.ParentID != first.MessageID {
		t.Fatalf("late candidates answer %s", got.ParentID)
	}

	cancel := protocol.New(protocol.TypeFileSearchCancel, &protocol.FileSearchCancel{QueryID: second.Payload.(*protocol.FileSearch).QueryID})
	cancel.SessionID = info.ID
	ui1.send(cancel)
	if got := c.next(protocol.TypeFileSearchCancel); got.MessageID != cancel.MessageID {
		t.Fatalf("forwarded cancel %s", got.MessageID)
	}
	// An unsupported scope is refused by the capability check.
	g := protocol.New(protocol.TypeFileSearch, &protocol.FileSearch{QueryID: protocol.NewID(), Query: "x", Scope: protocol.ScopeGlobal})
	g.SessionID = info.ID
	ui1.send(g)
	ui1.expectError(g.MessageID, protocol.CodeUnsupported, "payload.scope")
	// A client's error about a UI's message goes back to that UI.
	ms := protocol.New(protocol.TypeModeSwitch, &protocol.ModeSwitch{Mode: protocol.ModePlan})
	ms.SessionID = info.ID
	ui2.send(ms)
	fwd := c.next(protocol.TypeModeSwitch)
	c.send(protocol.ErrorMessage(fwd.MessageID, info.ID, &protocol.Error{Code: protocol.CodeBusy, Message: "later"}))
	ui2.expectError(ms.MessageID, protocol.CodeBusy, "")
	ui1.sync()
}

func TestCancelGivesOneTextDone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	subscribe(ui, info.ID, 1, info.Epoch)
	req := prompt(ui, c, info.ID, "write a novel")
	turnStart(c, req, "turn-1")
	delta(c, info.ID, "turn-1", "Once upon")
	events(ui, 3, 1) // prompt, turn.started, delta

	cancel := protocol.New(protocol.TypePromptCancel, &protocol.PromptCancel{TargetTurnID: "turn-1", Reason: "user_cancelled"})
	cancel.SessionID = info.ID
	ui.send(cancel)
	if got := c.next(protocol.TypePromptCancel); got.MessageID != cancel.MessageID ||
		got.Payload.(*protocol.PromptCancel).TargetTurnID != "turn-1" {
		t.Fatalf("forwarded cancel %s", describe(got))
	}
	done := c.emit(info.ID, protocol.TypeTextDone, &protocol.TextDone{TurnID: "turn-1", IsCancelled: true, StopReason: "cancelled", Text: "Once upon"})
	ev := events(ui, 1, 4)[0]
	if ev.Type != protocol.TypeTextDone || !ev.Payload.(*protocol.TextDone).IsCancelled {
		t.Fatalf("got %s %s", ev.Type, describe(ev))
	}
	ui.sync() // exactly one: nothing else was relayed
	c.waitAck(done.MessageID)
	if evs := storedEvents(t, e.st, info.ID, protocol.TypeTextDone); len(evs) != 1 || evs[0].MessageID != done.MessageID {
		t.Fatalf("stored text.done events: %+v", evs)
	}
	// The session is idle again, and the snapshot records the cancelled turn.
	ui.send(protocol.New(protocol.TypeSessionsList, &protocol.SessionsList{}))
	if ss := ui.next(protocol.TypeSessions).Payload.(*protocol.Sessions).Sessions; ss[0].State != protocol.SessionIdle {
		t.Fatalf("state after the turn: %+v", ss[0])
	}
}

func interaction(c *fakeClient, sessionID, turnID, id string, timeoutMS int) *protocol.Message {
	return c.emit(sessionID, protocol.TypeInteractionRequest, &protocol.InteractionRequest{
		InteractionID: id, TurnID: turnID, Kind: protocol.InteractionPermission, Title: "Run rm?",
		Options:   []protocol.Option{{Value: protocol.AllowOnce, Label: "Allow"}, {Value: protocol.Deny, Label: "Deny"}},
		TimeoutMS: timeoutMS,
	})
}

func answer(ui *peer, sessionID, id, value string) *protocol.Message {
	m := protocol.New(protocol.TypeInteractionResponse, &protocol.InteractionResponse{InteractionID: id, SelectedValue: protocol.Single(value)})
	m.SessionID = sessionID
	return ui.send(m)
}

func resolved(t *testing.T, ui *peer, id, outcome string) *protocol.InteractionResolved {
	t.Helper()
	ev := ui.next(protocol.TypeInteractionResolved)
	r := ev.Payload.(*protocol.InteractionResolved)
	if r.InteractionID != id || r.Outcome != outcome || ev.Seq == 0 {
		t.Fatalf("%s: resolved %+v seq %d, want %s %s", ui.name, r, ev.Seq, id, outcome)
	}
	return r
}

func TestInteractionFirstAnswerWins(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui1, ui2 := e.dialUI("UI 1"), e.dialUI("UI 2")
	c := e.connectClient(testCaps("m1"), ui1)
	waitMachine(ui2, "m1", true)
	info, _ := startSession(ui1, c)
	subscribe(ui1, info.ID, 1, info.Epoch)
	subscribe(ui2, info.ID, 1, info.Epoch)
	req := prompt(ui1, c, info.ID, "clean up")
	turnStart(c, req, "turn-1")
	interaction(c, info.ID, "turn-1", "q1", 0)
	for _, ui := range []*peer{ui1, ui2} {
		if evs := events(ui, 3, 1); evs[2].Type != protocol.TypeInteractionRequest {
			t.Fatalf("%s: got %s", ui.name, evs[2].Type)
		}
	}
	a1 := answer(ui1, info.ID, "q1", protocol.AllowOnce)
	if got := c.next(protocol.TypeInteractionResponse); got.MessageID != a1.MessageID {
		t.Fatalf("forwarded answer %s, want %s", got.MessageID, a1.MessageID)
	}
	for _, ui := range []*peer{ui1, ui2} {
		if r := resolved(t, ui, "q1", "answered"); r.SelectedValue == nil || r.SelectedValue.Values[0] != protocol.AllowOnce {
			t.Fatalf("resolved %+v", r)
		}
	}
	a2 := answer(ui2, info.ID, "q1", protocol.Deny)
	ui2.expectError(a2.MessageID, protocol.CodeInteractionSettled, "payload.interaction_id")
	unknown := answer(ui2, info.ID, "nope", protocol.Deny)
	ui2.expectError(unknown.MessageID, protocol.CodeNotFound, "payload.interaction_id")
	clientSync(ui1, c, info.ID) // the later answers were not forwarded
}

// clientSync checks that the next control message the client gets is one
// sent now: nothing else was forwarded to it before.
func clientSync(ui *peer, c *fakeClient, sessionID string) {
	ui.t.Helper()
	m := protocol.New(protocol.TypeModeSwitch, &protocol.ModeSwitch{Mode: protocol.ModePlan})
	m.SessionID = sessionID
	ui.send(m)
	if got := c.next(); got.MessageID != m.MessageID {
		ui.t.Fatalf("the client got %s %s before the sync message", got.Type, describe(got))
	}
}

func TestInteractionTimeoutAndTurnEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	subscribe(ui, info.ID, 1, info.Epoch)
	req := prompt(ui, c, info.ID, "go")
	turnStart(c, req, "turn-1")
	interaction(c, info.ID, "turn-1", "quick", 50)
	interaction(c, info.ID, "turn-1", "slow", 0)
	events(ui, 4, 1)
	if got := c.next(protocol.TypeInteractionTimeout); got.Payload.(*protocol.InteractionTimeout).InteractionID != "quick" {
		t.Fatalf("timeout for %s", describe(got))
	}
	resolved(t, ui, "quick", "timeout")
	late := answer(ui, info.ID, "quick", protocol.AllowOnce)
	ui.expectError(late.MessageID, protocol.CodeInteractionSettled, "payload.interaction_id")

	// A second UI connecting now is sent the open interaction again.
	ui2 := e.dialUI("UI 2")
	sub := subscribe(ui2, info.ID, 0, "")
	if !sub.Recovered || sub.LastSeq != 6 {
		t.Fatalf("subscribed %+v", sub)
	}
	events(ui2, 6, 0)
	again := ui2.next(protocol.TypeInteractionRequest)
	if again.Payload.(*protocol.InteractionRequest).InteractionID != "slow" {
		t.Fatalf("re-sent %s", describe(again))
	}

	// The turn ends with "slow" open: it resolves as cancelled.
	c.emit(info.ID, protocol.TypeTextDone, &protocol.TextDone{TurnID: "turn-1", StopReason: "end_turn"})
	if ev := ui.next(protocol.TypeTextDone); ev.Seq != 7 {
		t.Fatalf("text.done seq %d", ev.Seq)
	}
	resolved(t, ui, "slow", "cancelled")
	ui2.next(protocol.TypeTextDone)
	resolved(t, ui2, "slow", "cancelled")
}

// TestMachineBoundToToken: another client token cannot take over a machine
// while the token it registered with is valid.
func TestMachineBoundToToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	first := e.connectClient(testCaps("m1"), ui)
	other, _, err := auth.Issue(testCtx(t), e.st, store.TokenClient, "other", 0)
	if err != nil {
		t.Fatal(err)
	}
	p, _, _, err := dial(t, e.wsURL("/v1/client"), bearer(other))
	if err != nil {
		t.Fatal(err)
	}
	p.name = "intruder"
	p.send(protocol.New(protocol.TypeCapabilities, testCaps("m1")))
	msgs, err := p.waitClosed()
	if !isClosed(err) || len(msgs) != 1 || msgs[0].Payload.(*protocol.Error).Code != protocol.CodeUnauthorized {
		t.Fatalf("intruder got %d messages, then %v", len(msgs), err)
	}
	ui.sync() // m1 stayed online: no status change
	// Once the first token is revoked, a new token may take the machine.
	toks, _ := e.st.ListTokens(testCtx(t))
	for _, tk := range toks {
		if tk.Name == "laptop" {
			if err := e.st.RevokeToken(testCtx(t), tk.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	p, _, _, err = dial(t, e.wsURL("/v1/client"), bearer(other))
	if err != nil {
		t.Fatal(err)
	}
	p.send(protocol.New(protocol.TypeCapabilities, testCaps("m1")))
	if _, err := first.waitClosed(); !isClosed(err) {
		t.Fatalf("the replaced connection: %v", err)
	}
	waitMachine(ui, "m1", true)
}

func TestUnsubscribe(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	subscribe(ui, info.ID, 1, info.Epoch)
	req := prompt(ui, c, info.ID, "hi")
	events(ui, 1, 1)
	u := protocol.New(protocol.TypeSessionUnsubscribe, &protocol.SessionUnsubscribe{})
	u.SessionID = info.ID
	ui.send(u)
	ui.sync()
	m := turnStart(c, req, "turn-1")
	c.waitAck(m.MessageID)
	ui.sync() // the event was stored but not sent to the UI
	// Subscribing again picks up where it left off.
	if sub := subscribe(ui, info.ID, 2, info.Epoch); !sub.Recovered || sub.LastSeq != 3 {
		t.Fatalf("subscribed %+v", sub)
	}
	if ev := events(ui, 1, 2)[0]; ev.MessageID != m.MessageID {
		t.Fatalf("got %s", ev.Type)
	}
}
