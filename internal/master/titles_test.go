package master_test

import (
	"slices"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/protocol"
)

// startUntitled starts a session with no title, as the UI's new-session
// button does.
func startUntitled(ui *peer, c *fakeClient) protocol.SessionInfo {
	ui.t.Helper()
	req := ui.send(protocol.New(protocol.TypeSessionStart, &protocol.SessionStart{
		MachineID: c.caps.Machine.ID, WorkspaceID: "ws1", Adapter: "echo",
	}))
	open := c.next(protocol.TypeSessionOpen)
	opened := protocol.New(protocol.TypeSessionOpened, &protocol.SessionOpened{Adapter: "echo", Mode: protocol.ModeDefault})
	opened.SessionID, opened.ParentID = open.SessionID, open.MessageID
	c.emitMsg(opened)
	for {
		ans, err := ui.read()
		if err != nil {
			ui.t.Fatal(err)
		}
		if ans.Type == protocol.TypeSessionAnswer && ans.ParentID == req.MessageID {
			info := ans.Payload.(*protocol.SessionAnswer).Session
			if info.Title != "" || info.TitleSource != "" {
				ui.t.Fatalf("a session started without a title has %q (%q)", info.Title, info.TitleSource)
			}
			return info
		}
	}
}

// list returns ui.sessions.list's answer (query "" for none).
func list(ui *peer, query string) []protocol.SessionInfo {
	ui.t.Helper()
	req := ui.send(protocol.New(protocol.TypeSessionsList, &protocol.SessionsList{Query: query}))
	for {
		m, err := ui.read()
		if err != nil {
			ui.t.Fatalf("%s: read: %v", ui.name, err)
		}
		if m.Type == protocol.TypeSessions && m.ParentID == req.MessageID {
			return m.Payload.(*protocol.Sessions).Sessions
		}
	}
}

func infoOf(t *testing.T, l []protocol.SessionInfo, id string) protocol.SessionInfo {
	t.Helper()
	i := slices.IndexFunc(l, func(s protocol.SessionInfo) bool { return s.ID == id })
	if i < 0 {
		t.Fatalf("the list lacks %s", id)
	}
	return l[i]
}

// TestSessionTitledFromFirstPrompt: an untitled session is titled by the
// master from its first prompt at once (cleaned, one line), told to every
// UI as a rename with title_source prompt, kept across a restart; later
// prompts do not retitle it, and a person's title is never replaced.
func TestSessionTitledFromFirstPrompt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("ui")
	other := e.dialUI("other")
	c := e.connectClient(testCaps("m1"), ui)
	waitMachine(other, "m1", true)
	s1 := startUntitled(ui, c)

	finishTurn(t, ui, c, s1.ID, "  # Fix the **login** bug\u200b in `auth.go`\nand then the rest", "Done.")
	want := "Fix the login bug in auth.go"
	if got := told(other, s1.ID, protocol.ChangeRenamed); got.Title != want || got.TitleSource != protocol.MatchPrompt {
		t.Fatalf("the other UI was told %q (%q), want %q (prompt)", got.Title, got.TitleSource, want)
	}
	finishTurn(t, ui, c, s1.ID, "Now something else entirely", "Ok.")
	if got := infoOf(t, list(ui, ""), s1.ID); got.Title != want || got.TitleSource != "prompt" {
		t.Fatalf("after a second prompt the list says %q (%q), want %q", got.Title, got.TitleSource, want)
	}

	// A person's title stands: set at start, or by a rename before the
	// first prompt.
	s2, _ := startSession(ui, c) // titled "t" by the person
	s3 := startUntitled(ui, c)
	req := manage(ui, s3.ID, protocol.TypeSessionRename, &protocol.SessionRename{Title: "Mine"})
	changed(ui, req, protocol.ChangeRenamed)
	finishTurn(t, ui, c, s2.ID, "Please title me", "No.")
	finishTurn(t, ui, c, s3.ID, "Please title me", "No.")

	e.restart()
	ui = e.dialUI("ui2")
	l := list(ui, "")
	for _, w := range []struct{ id, title, source string }{
		{s1.ID, want, "prompt"}, {s2.ID, "t", "user"}, {s3.ID, "Mine", "user"},
	} {
		if got := infoOf(t, l, w.id); got.Title != w.title || got.TitleSource != w.source {
			t.Errorf("after a restart %s is %q (%q), want %q (%q)", w.id, got.Title, got.TitleSource, w.title, w.source)
		}
	}
}

// TestOpeningIsNotActivity: opening a session (subscribing, and the
// control message that reopens it on a client that restarted) does not
// move its updated_at nor its place in the list; a turn does.
func TestOpeningIsNotActivity(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("ui")
	c := e.connectClient(testCaps("m1"), ui)
	s1, _ := startSession(ui, c)
	s2, _ := startSession(ui, c)
	finishTurn(t, ui, c, s1.ID, "one", "1")
	finishTurn(t, ui, c, s2.ID, "two", "2")
	time.Sleep(1100 * time.Millisecond) // past the store's one-second step
	before := list(ui, "")
	if before[0].ID != s2.ID || before[1].ID != s1.ID {
		t.Fatalf("order before: %s, %s", before[0].ID, before[1].ID)
	}

	// The client restarted: the first control message for s1 on its new
	// connection opens the session there again.
	c.reconnect(ui)
	c.skip = append(c.skip, protocol.TypeFileSearch)
	subscribe(ui, s1.ID, 0, "")
	search := protocol.New(protocol.TypeFileSearch, &protocol.FileSearch{QueryID: protocol.NewID(), Query: "a"})
	search.SessionID = s1.ID
	ui.send(search)
	open := c.next(protocol.TypeSessionOpen)
	opened := protocol.New(protocol.TypeSessionOpened, &protocol.SessionOpened{Adapter: "echo", Mode: protocol.ModeDefault})
	opened.SessionID, opened.ParentID = s1.ID, open.MessageID
	c.emitMsg(opened)
	cmds := c.emit(s1.ID, protocol.TypeCommands, &protocol.AgentCommands{Commands: []protocol.AgentCommand{{Name: "review", Description: "Review"}}})
	c.waitAck(cmds.MessageID)
	again := protocol.New(protocol.TypeSessionSubscribe, &protocol.SessionSubscribe{})
	again.SessionID = s1.ID
	ui.send(again) // and once more, reading its history
	for m, err := ui.read(); err != nil || m.Type != protocol.TypeSubscribed; m, err = ui.read() {
		if err != nil {
			t.Fatal(err)
		}
	}

	after := list(ui, "")
	if after[0].ID != s2.ID || after[1].ID != s1.ID {
		t.Fatalf("opening s1 moved it to the top: order %s, %s", after[0].ID, after[1].ID)
	}
	if b, a := infoOf(t, before, s1.ID), infoOf(t, after, s1.ID); a.UpdatedAt != b.UpdatedAt {
		t.Fatalf("opening s1 moved its updated_at from %s to %s", b.UpdatedAt, a.UpdatedAt)
	}
	row, err := e.st.Session(testCtx(t), s1.ID)
	if err != nil || row.LastSeq <= infoOf(t, before, s1.ID).LastSeq {
		t.Fatalf("the reopen was not stored: %+v %v", row, err)
	}

	// A turn is activity.
	finishTurn(t, ui, c, s1.ID, "three", "3")
	if l := list(ui, ""); l[0].ID != s1.ID {
		t.Fatalf("a turn in s1 left it at %s", l[0].ID)
	}
}

// TestSessionsListPreviewAndMatch: the list gives each session a one-line
// preview of its last message and, for a search, why it matched, with the
// match's place in the snippet in UTF-16 units.
func TestSessionsListPreviewAndMatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("ui")
	c := e.connectClient(testCaps("m1"), ui)
	s1 := startUntitled(ui, c)
	s2 := startUntitled(ui, c)
	s3 := startUntitled(ui, c)
	req := manage(ui, s3.ID, protocol.TypeSessionRename, &protocol.SessionRename{Title: "Widget docs"})
	changed(ui, req, protocol.ChangeRenamed)
	finishTurn(t, ui, c, s1.ID, "Please rename the 🐞 Widget class\nin pkg/shapes", "I renamed it to **Gadget**.\n\n- done")
	finishTurn(t, ui, c, s2.ID, "Say hi", "")

	l := list(ui, "")
	for _, w := range []struct{ id, preview string }{
		{s1.ID, "I renamed it to Gadget. done"}, {s2.ID, "Say hi"}, {s3.ID, ""},
	} {
		if got := infoOf(t, l, w.id); got.Preview != w.preview || got.Match != nil {
			t.Errorf("%s: preview %q match %+v, want %q and no match", w.id, got.Preview, got.Match, w.preview)
		}
	}
	for _, w := range []struct {
		query, id, field, snippet string
		start, end                int
	}{
		{"widget", s1.ID, "title", "Please rename the 🐞 Widget class", 21, 27}, // 🐞 is two UTF-16 units
		{"SHAPES", s1.ID, "prompt", "Please rename the 🐞 Widget class in pkg/shapes", 41, 47},
		{"GADGET", s1.ID, "answer", "I renamed it to Gadget. done", 16, 22},
		{"widget", s3.ID, "title", "Widget docs", 0, 6},
	} {
		got := infoOf(t, list(ui, w.query), w.id)
		m := got.Match
		if m == nil || m.Field != w.field || m.Snippet != w.snippet || len(m.Ranges) != 1 || m.Ranges[0] != (protocol.MatchRange{Start: w.start, End: w.end}) {
			t.Errorf("search %q, %s: match %+v, want %s %q [%d,%d)", w.query, w.id, m, w.field, w.snippet, w.start, w.end)
		}
	}
}

// TestEmptySessionsNotKept: a UI leaving a session it never used deletes
// it with ui.session.delete if_empty, which keeps a session that was
// prompted, named, or is open in another UI; the jobs sweep deletes the
// sessions never prompted nor named past Config.EmptySessionAge, but not
// one a UI has open, nor, for Config.ReopenGrace after a restart, one
// created before it (its UI is still reconnecting).
func TestEmptySessionsNotKept(t *testing.T) {
	t.Parallel()
	const grace = 3 * time.Second
	e := newEnv(t, master.Config{RevokeCheck: 50 * time.Millisecond, EmptySessionAge: -1, ReopenGrace: grace})
	ui := e.dialUI("ui")
	other := e.dialUI("other")
	c := e.connectClient(testCaps("m1"), ui)
	waitMachine(other, "m1", true)
	empty := startUntitled(ui, c)
	used := startUntitled(ui, c)
	named, _ := startSession(ui, c)
	watched := startUntitled(ui, c)
	pending := startUntitled(ui, c) // open in no UI: swept after the grace
	finishTurn(t, ui, c, used.ID, "hello", "hi")
	other.skip = append(other.skip, protocol.TypeSessionChanged)
	subscribe(other, watched.ID, 0, "")

	for _, id := range []string{used.ID, named.ID, watched.ID} {
		req := manage(ui, id, protocol.TypeSessionDelete, &protocol.SessionDelete{IfEmpty: true})
		for m, err := ui.read(); ; m, err = ui.read() {
			if err != nil {
				t.Fatal(err)
			}
			if m.ParentID == req.MessageID {
				if p, ok := m.Payload.(*protocol.Error); !ok || p.Code != protocol.CodeBusy || p.Field != "payload.if_empty" {
					t.Fatalf("delete if_empty of %s: %s %s, want busy", id, m.Type, describe(m))
				}
				break
			}
		}
	}
	req := manage(ui, empty.ID, protocol.TypeSessionDelete, &protocol.SessionDelete{IfEmpty: true})
	for m, err := ui.read(); ; m, err = ui.read() {
		if err != nil {
			t.Fatal(err)
		}
		if m.ParentID == req.MessageID {
			if p, ok := m.Payload.(*protocol.SessionChanged); !ok || p.Change != protocol.ChangeDeleted {
				t.Fatalf("delete if_empty of an empty session: %s %s", m.Type, describe(m))
			}
			break
		}
	}
	ids := []string{}
	for _, s := range list(ui, "") {
		ids = append(ids, s.ID)
	}
	if slices.Contains(ids, empty.ID) || len(ids) != 4 {
		t.Fatalf("after the deletes the list is %v; want used, named, watched and pending", ids)
	}

	// The sweep: a master that keeps empty sessions a second only (long
	// enough for a start to be answered first). Until the grace ends it
	// deletes only what was created since it started.
	e.cfg.EmptySessionAge = time.Second
	e.restart()
	restarted := time.Now()
	ui = e.dialUI("ui2")
	other = e.dialUI("other2")
	other.skip = append(other.skip, protocol.TypeSessionChanged, protocol.TypeMachineStatus)
	c.reconnect(ui)
	subscribe(other, watched.ID, 0, "")
	swept := func(id string) []string {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			ids := []string{}
			for _, s := range list(ui, "") {
				ids = append(ids, s.ID)
			}
			if !slices.Contains(ids, id) {
				return ids
			}
			if time.Now().After(deadline) {
				t.Fatalf("the sweep did not delete the session left empty: %v", ids)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	ids = swept(startUntitled(ui, c).ID)
	if time.Since(restarted) < grace {
		for _, id := range []string{used.ID, named.ID, watched.ID, pending.ID} {
			if !slices.Contains(ids, id) {
				t.Errorf("within the grace the sweep deleted %s; list %v", id, ids)
			}
		}
	}
	time.Sleep(time.Until(restarted.Add(grace)))
	ids = swept(startUntitled(ui, c).ID)
	for _, id := range []string{used.ID, named.ID, watched.ID} {
		if !slices.Contains(ids, id) {
			t.Errorf("the sweep deleted %s (prompted, named or open); list %v", id, ids)
		}
	}
	if slices.Contains(ids, pending.ID) {
		t.Errorf("after the grace the sweep kept %s, open in no UI; list %v", pending.ID, ids)
	}
}

// TestAgentTitle: a title the agent made (agent.title) replaces the
// prompt's, is told to every UI as a rename with title_source agent and
// does not move updated_at; after a person's rename it changes nothing.
func TestAgentTitle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("ui")
	other := e.dialUI("other")
	c := e.connectClient(testCaps("m1"), ui)
	waitMachine(other, "m1", true)
	s := startUntitled(ui, c)
	finishTurn(t, ui, c, s.ID, "fix the login bug please", "done")
	if got := told(other, s.ID, protocol.ChangeRenamed); got.TitleSource != "prompt" {
		t.Fatalf("first prompt: %+v", got)
	}
	before := infoOf(t, list(other, ""), s.ID)
	time.Sleep(1100 * time.Millisecond)
	at := c.emit(s.ID, protocol.TypeAgentTitle, &protocol.AgentTitle{Title: "Login bug fix"})
	c.waitAck(at.MessageID)
	if got := told(other, s.ID, protocol.ChangeRenamed); got.Title != "Login bug fix" || got.TitleSource != "agent" {
		t.Fatalf("agent title told as %q (%q)", got.Title, got.TitleSource)
	}
	if after := infoOf(t, list(other, ""), s.ID); after.UpdatedAt != before.UpdatedAt || after.Title != "Login bug fix" {
		t.Fatalf("after agent.title: %q updated %s (was %s)", after.Title, after.UpdatedAt, before.UpdatedAt)
	}
	req := manage(ui, s.ID, protocol.TypeSessionRename, &protocol.SessionRename{Title: "Mine"})
	for m, err := ui.read(); ; m, err = ui.read() {
		if err != nil {
			t.Fatal(err)
		}
		if m.ParentID == req.MessageID {
			break
		}
	}
	at = c.emit(s.ID, protocol.TypeAgentTitle, &protocol.AgentTitle{Title: "Agent again"})
	c.waitAck(at.MessageID)
	if got := infoOf(t, list(other, ""), s.ID); got.Title != "Mine" || got.TitleSource != "user" {
		t.Fatalf("an agent title after a rename: %q (%q)", got.Title, got.TitleSource)
	}
}
