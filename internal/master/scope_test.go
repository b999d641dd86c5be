package master_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// dialUIToken connects a UI with its own bearer token.
func (e *env) dialUIToken(secret, name string) *peer {
	e.t.Helper()
	p, _, _, err := dial(e.t, e.wsURL("/v1/ui"), bearer(secret))
	if err != nil {
		e.t.Fatalf("dial %s: %v", name, err)
	}
	p.name = name
	p.skip, p.skipStatus = []string{protocol.TypeMachineStatus}, true
	p.sync()
	return p
}

// drainSync asks for the machines and returns every message read before the
// answer, and the machines the answer lists.
func drainSync(p *peer) ([]*protocol.Message, []protocol.Machine) {
	p.t.Helper()
	req := p.send(protocol.New(protocol.TypeMachinesList, &protocol.MachinesList{}))
	var before []*protocol.Message
	for {
		m, err := p.read()
		if err != nil {
			p.t.Fatalf("%s: read: %v", p.name, err)
		}
		if m.Type == protocol.TypeMachines && m.ParentID == req.MessageID {
			return before, m.Payload.(*protocol.Machines).Machines
		}
		before = append(before, m)
	}
}

func machineIDs(ms []protocol.Machine) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	slices.Sort(out)
	return out
}

// listSessions returns the IDs of the sessions ui lists, in order.
func listSessions(ui *peer, machineID string, limit *int) []string {
	ui.t.Helper()
	req := ui.send(protocol.New(protocol.TypeSessionsList, &protocol.SessionsList{MachineID: machineID, Limit: limit}))
	m := ui.next(protocol.TypeSessions)
	if m.ParentID != req.MessageID {
		ui.t.Fatalf("%s: master.sessions answers %s", ui.name, m.ParentID)
	}
	var ids []string
	for _, s := range m.Payload.(*protocol.Sessions).Sessions {
		ids = append(ids, s.ID)
	}
	return ids
}

// refusedLikeUnknown sends msg for sessionID, then the same for a session
// that does not exist, and checks both get the very same not_found: a UI
// cannot tell a session it may not see from one that does not exist.
func refusedLikeUnknown(t *testing.T, ui *peer, msg func() *protocol.Message, sessionID string) {
	t.Helper()
	got := map[string]*protocol.Error{}
	for _, id := range []string{sessionID, protocol.NewID()} {
		m := msg()
		m.SessionID = id
		ui.send(m)
		ans := ui.next(protocol.TypeError)
		if ans.ParentID != m.MessageID || ans.SessionID != id {
			t.Fatalf("%s: %s answered with %s/%s, want %s/%s", ui.name, m.Type, ans.ParentID, ans.SessionID, m.MessageID, id)
		}
		got[id] = ans.Payload.(*protocol.Error)
	}
	hidden := got[sessionID]
	if hidden.Code != protocol.CodeNotFound || hidden.Field != "session_id" {
		t.Fatalf("%s: %s for a hidden session: %+v, want not_found on session_id", ui.name, msg().Type, hidden)
	}
	for id, e := range got {
		if id != sessionID && *e != *hidden {
			t.Fatalf("%s: %s: hidden session answered %+v, unknown one %+v", ui.name, msg().Type, hidden, e)
		}
	}
}

// TestMachineScope: a UI token limited to machine m1 sees and acts on m1
// and its sessions only; everything about m2 is filtered out or answered
// exactly as if it did not exist. An unscoped UI sees both.
func TestMachineScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	scopedSecret, _, err := auth.Issue(testCtx(t), e.st, store.TokenUI, "phone", 0, auth.WithMachines("m1"))
	if err != nil {
		t.Fatal(err)
	}
	all := e.dialUI("unscoped UI")
	scoped := e.dialUIToken(scopedSecret, "scoped UI")
	c1 := e.connectClient(testCaps("m1"), all)
	// Read up to m1's status before m2 exists: whatever the scoped UI reads
	// after it and before the answer below comes from m2's arrival.
	if got := waitMachine(scoped, "m1", true); got.ID != "m1" {
		t.Fatalf("status %+v", got)
	}
	c2 := e.connectClient(testCaps("m2"), all)

	// Status broadcasts and the machine list.
	before, machines := drainSync(scoped)
	for _, m := range before {
		t.Fatalf("scoped UI got %s %s", m.Type, describe(m))
	}
	if got := machineIDs(machines); !slices.Equal(got, []string{"m1"}) {
		t.Fatalf("scoped UI lists machines %v, want [m1]", got)
	}
	if _, machines := drainSync(all); !slices.Equal(machineIDs(machines), []string{"m1", "m2"}) {
		t.Fatalf("unscoped UI lists machines %v, want [m1 m2]", machineIDs(machines))
	}

	// Starting a session: m2 is, for the scoped UI, a machine that does not exist.
	var startErrs []*protocol.Error
	for _, machine := range []string{"m2", "m9"} {
		req := scoped.send(protocol.New(protocol.TypeSessionStart, &protocol.SessionStart{MachineID: machine, WorkspaceID: "ws1", Adapter: "echo"}))
		startErrs = append(startErrs, scoped.expectError(req.MessageID, protocol.CodeNotFound, "payload.machine_id"))
	}
	if *startErrs[0] != *startErrs[1] {
		t.Fatalf("start on a hidden machine %+v, on an unknown one %+v", startErrs[0], startErrs[1])
	}
	s1, _ := startSession(all, c1)
	s2, _ := startSession(all, c2)
	s3, _ := startSession(scoped, c1)

	// Lists: the scoped UI's leave m2's session out, whatever the filter.
	if got := listSessions(all, "", nil); !sameSet(got, []string{s1.ID, s2.ID, s3.ID}) {
		t.Fatalf("unscoped UI lists %v", got)
	}
	if got := listSessions(scoped, "", nil); !sameSet(got, []string{s1.ID, s3.ID}) {
		t.Fatalf("scoped UI lists %v, want %s and %s", got, s1.ID, s3.ID)
	}
	if got := listSessions(scoped, "m1", nil); !sameSet(got, []string{s1.ID, s3.ID}) {
		t.Fatalf("scoped UI lists on m1 %v", got)
	}
	if got := listSessions(scoped, "m2", nil); len(got) != 0 {
		t.Fatalf("scoped UI lists on m2 %v, want nothing", got)
	}
	if got := listSessions(all, "m2", nil); !slices.Equal(got, []string{s2.ID}) {
		t.Fatalf("unscoped UI lists on m2 %v", got)
	}
	one := 1
	if got, newest := listSessions(scoped, "", &one), listSessions(scoped, "", nil)[0]; !slices.Equal(got, []string{newest}) {
		t.Fatalf("scoped UI lists with limit 1: %v, want the newest visible, %s", got, newest)
	}

	// Subscribe.
	refusedLikeUnknown(t, scoped, func() *protocol.Message {
		return protocol.New(protocol.TypeSessionSubscribe, &protocol.SessionSubscribe{})
	}, s2.ID)
	subscribe(all, s2.ID, 1, s2.Epoch)
	subscribe(scoped, s1.ID, 1, s1.Epoch)

	// Prompt: refused for the scoped UI, nothing reaches m2's client; the
	// unscoped UI's prompt is the first thing it gets.
	refusedLikeUnknown(t, scoped, func() *protocol.Message {
		return protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{Segments: []protocol.PromptSegment{{Kind: protocol.SegmentText, Text: "rm -rf"}}})
	}, s2.ID)
	req := prompt(all, c2, s2.ID, "hello")
	turnStart(c2, req, "turn-1")
	interaction(c2, s2.ID, "turn-1", "q1", 0)
	events(all, 3, 1) // prompt, turn.started, interaction.request

	// Interaction response and search: refused for the scoped UI; the
	// interaction is still open for the unscoped UI's answer.
	refusedLikeUnknown(t, scoped, func() *protocol.Message {
		return protocol.New(protocol.TypeInteractionResponse, &protocol.InteractionResponse{InteractionID: "q1", SelectedValue: protocol.Single(protocol.AllowOnce)})
	}, s2.ID)
	refusedLikeUnknown(t, scoped, func() *protocol.Message {
		return protocol.New(protocol.TypeFileSearch, &protocol.FileSearch{QueryID: protocol.NewID(), Query: "secret"})
	}, s2.ID)
	refusedLikeUnknown(t, scoped, func() *protocol.Message {
		return protocol.New(protocol.TypePromptCancel, &protocol.PromptCancel{TargetTurnID: "turn-1", Reason: "user_cancelled"})
	}, s2.ID)
	a := answer(all, s2.ID, "q1", protocol.Deny)
	if got := c2.next(protocol.TypeInteractionResponse); got.MessageID != a.MessageID {
		t.Fatalf("m2's client got answer %s, want the unscoped UI's %s", got.MessageID, a.MessageID)
	}
	resolved(t, all, "q1", "answered")
	search := protocol.New(protocol.TypeFileSearch, &protocol.FileSearch{QueryID: protocol.NewID(), Query: "a"})
	search.SessionID = s2.ID
	all.send(search)
	if got := c2.next(protocol.TypeFileSearch); got.MessageID != search.MessageID {
		t.Fatalf("m2's client got search %s, want the unscoped UI's %s", got.MessageID, search.MessageID)
	}

	// The scoped UI may still do all of it on m1.
	prompt(scoped, c1, s1.ID, "hi")
	events(scoped, 1, 1)
	ss := protocol.New(protocol.TypeFileSearch, &protocol.FileSearch{QueryID: protocol.NewID(), Query: "b"})
	ss.SessionID = s1.ID
	scoped.send(ss)
	if got := c1.next(protocol.TypeFileSearch); got.MessageID != ss.MessageID {
		t.Fatalf("m1's client got search %s, want %s", got.MessageID, ss.MessageID)
	}

	// Nothing of m2 reached the scoped UI on the way: no relayed event, no
	// status.
	c2.send(protocol.New(protocol.TypeCapabilities, c2.caps)) // a status broadcast about m2
	c2.emit(s2.ID, protocol.TypeTextDone, &protocol.TextDone{TurnID: "turn-1", StopReason: "end_turn"})
	all.next(protocol.TypeTextDone)
	before, _ = drainSync(scoped)
	for _, m := range before {
		if m.SessionID == s2.ID {
			t.Fatalf("scoped UI got %s of m2's session", m.Type)
		}
		if st, ok := m.Payload.(*protocol.MachineStatus); ok && st.Machine.ID != "m1" {
			t.Fatalf("scoped UI got the status of %s", st.Machine.ID)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestLoginKeepsMachineScope: the UI token a scoped login URL turns into
// sees only the login token's machines.
func TestLoginKeepsMachineScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	all := e.dialUI("unscoped UI")
	e.connectClient(testCaps("m1"), all)
	e.connectClient(testCaps("m2"), all)

	b := e.login(auth.WithMachines("m2"))
	p := e.mustDialBrowserNoSync(b)
	p.name = "logged-in UI"
	if _, machines := drainSync(p); !slices.Equal(machineIDs(machines), []string{"m2"}) {
		t.Fatalf("the logged-in UI lists machines %v, want [m2]", machineIDs(machines))
	}
}

// TestScopedSessionListMerges: a UI limited to several machines lists
// their sessions as the store would list them all, newest first, the limit
// applying to the merged list.
func TestScopedSessionListMerges(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	secret, _, err := auth.Issue(testCtx(t), e.st, store.TokenUI, "two machines", 0, auth.WithMachines("m1", "m3"))
	if err != nil {
		t.Fatal(err)
	}
	// Sessions on three machines, updated at interleaved times.
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var want []string // the visible ones, newest first
	for i, machine := range []string{"m1", "m2", "m3", "m1", "m3", "m2", "m3", "m1"} {
		id := fmt.Sprintf("s%d-%s", i, machine)
		at := base.Add(time.Duration(i) * time.Minute)
		if err := e.st.CreateSession(testCtx(t), store.Session{ID: id, MachineID: machine, WorkspaceID: "ws1", Adapter: "echo",
			Mode: protocol.ModeDefault, State: protocol.SessionIdle, Epoch: "e", CreatedAt: at, UpdatedAt: at}); err != nil {
			t.Fatal(err)
		}
		if machine != "m2" {
			want = append([]string{id}, want...)
		}
	}
	ui := e.dialUIToken(secret, "scoped UI")
	if got := listSessions(ui, "", nil); !slices.Equal(got, want) {
		t.Fatalf("scoped list %v, want %v", got, want)
	}
	for _, limit := range []int{1, 3, 5} {
		if got := listSessions(ui, "", &limit); !slices.Equal(got, want[:limit]) {
			t.Fatalf("scoped list with limit %d: %v, want %v", limit, got, want[:limit])
		}
	}
	if got := listSessions(ui, "m2", nil); len(got) != 0 {
		t.Fatalf("scoped list on m2: %v", got)
	}
}
