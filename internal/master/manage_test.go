package master_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/broker"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// manage sends a ui.session.rename/archive/delete for sessionID.
func manage(ui *peer, sessionID, typ string, payload any) *protocol.Message {
	ui.t.Helper()
	m := protocol.New(typ, payload)
	m.SessionID = sessionID
	return ui.send(m)
}

// nextChange reads ui's next master.session.changed that is not a status
// change (those come whenever a session's writer sends one).
func nextChange(ui *peer) *protocol.Message {
	ui.t.Helper()
	for {
		if m := ui.next(protocol.TypeSessionChanged); !isStatus(m) {
			return m
		}
	}
}

// changed reads the master.session.changed that answers req.
func changed(ui *peer, req *protocol.Message, want string) protocol.SessionInfo {
	ui.t.Helper()
	m := nextChange(ui)
	p := m.Payload.(*protocol.SessionChanged)
	if m.ParentID != req.MessageID || m.SessionID != req.SessionID || p.Change != want || p.Session.ID != req.SessionID {
		ui.t.Fatalf("%s: master.session.changed %s (parent %s, session %s), want %s answering %s", ui.name, describe(m), m.ParentID, m.SessionID, want, req.MessageID)
	}
	return p.Session
}

// told reads the master.session.changed another UI is told (no parent).
func told(ui *peer, sessionID, want string) protocol.SessionInfo {
	ui.t.Helper()
	m := nextChange(ui)
	p := m.Payload.(*protocol.SessionChanged)
	if m.ParentID != "" || m.SessionID != sessionID || p.Change != want || p.Session.ID != sessionID {
		ui.t.Fatalf("%s: told %s (parent %q), want %s of %s", ui.name, describe(m), m.ParentID, want, sessionID)
	}
	return p.Session
}

// find lists the sessions ui may see with a query and the archived filter.
func find(ui *peer, query string, archived bool) []string {
	ui.t.Helper()
	req := ui.send(protocol.New(protocol.TypeSessionsList, &protocol.SessionsList{Query: query, Archived: archived}))
	m := ui.next(protocol.TypeSessions)
	if m.ParentID != req.MessageID {
		ui.t.Fatalf("master.sessions answers %s", m.ParentID)
	}
	ids := []string{}
	for _, s := range m.Payload.(*protocol.Sessions).Sessions {
		if s.Archived != archived {
			ui.t.Fatalf("listed %+v with archived=%v", s, archived)
		}
		ids = append(ids, s.ID)
	}
	return ids
}

// finishTurn runs one turn: prompt, start, final answer.
func finishTurn(t *testing.T, ui *peer, c *fakeClient, sessionID, promptText, answer string) {
	t.Helper()
	req := prompt(ui, c, sessionID, promptText)
	turnStart(c, req, "turn-"+req.MessageID[:8])
	done := c.emit(sessionID, protocol.TypeTextDone, &protocol.TextDone{TurnID: "turn-" + req.MessageID[:8], Text: answer, StopReason: protocol.StopEndTurn})
	c.waitAck(done.MessageID)
}

// TestSessionRenameArchiveFind: a rename is trimmed and told to the other
// UIs; an archived session leaves the default list, is found with the
// archived filter, and refuses prompts until unarchived; a search finds
// sessions by title and by the text of prompts and final answers.
func TestSessionRenameArchiveFind(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("ui")
	other := e.dialUI("other")
	c := e.connectClient(testCaps("m1"), ui)
	waitMachine(other, "m1", true)
	s1, _ := startSession(ui, c)
	s2, _ := startSession(ui, c)

	// Rename: trimmed, answered, told to the other UI, kept by the store.
	req := manage(ui, s1.ID, protocol.TypeSessionRename, &protocol.SessionRename{Title: "  Fix the Über login \t"})
	if got := changed(ui, req, protocol.ChangeRenamed); got.Title != "Fix the Über login" {
		t.Fatalf("renamed to %q", got.Title)
	}
	if got := told(other, s1.ID, protocol.ChangeRenamed); got.Title != "Fix the Über login" {
		t.Fatalf("the other UI was told %q", got.Title)
	}
	// Bad titles change nothing.
	for _, bad := range []string{"a\u0007b", "two\nlines", strings.Repeat("x", protocol.MaxTitleRunes+1), "rtl\u202eexe"} {
		r := manage(ui, s1.ID, protocol.TypeSessionRename, &protocol.SessionRename{Title: bad})
		ui.expectError(r.MessageID, protocol.CodeInvalidValue, "payload.title")
	}
	// Malformed messages are refused at decoding, naming the field.
	for _, c := range []struct{ raw, field, code string }{
		{`{"type":"ui.session.archive","message_id":"` + protocol.NewID() + `","session_id":"` + s1.ID + `","payload":{}}`, "payload.archived", protocol.CodeMissingField},
		{`{"type":"ui.session.archive","message_id":"` + protocol.NewID() + `","session_id":"` + s1.ID + `","payload":{"archived":"yes"}}`, "payload.archived", protocol.CodeWrongType},
		{`{"type":"ui.session.delete","message_id":"` + protocol.NewID() + `","payload":{}}`, "session_id", protocol.CodeMissingField},
		{`{"type":"ui.session.rename","message_id":"` + protocol.NewID() + `","session_id":"` + s1.ID + `","payload":{"title":null}}`, "payload.title", protocol.CodeMissingField},
	} {
		ui.sendRaw([]byte(c.raw))
		m := ui.next(protocol.TypeError)
		if pe := m.Payload.(*protocol.Error); pe.Code != c.code || pe.Field != c.field {
			t.Fatalf("%s: got %+v, want %s on %s", c.raw, pe, c.code, c.field)
		}
	}
	if row, _ := e.st.Session(testCtx(t), s1.ID); row.Title != "Fix the Über login" || row.Archived {
		t.Fatalf("after refused messages: title %q archived %v", row.Title, row.Archived)
	}

	// Search by title (case-insensitive) and by content.
	finishTurn(t, ui, c, s2.ID, "Please refactor the WIDGET factory", "Done: the Gadget builder replaces it.")
	for q, want := range map[string][]string{
		"über":        {s1.ID},
		"ÜBER LOGIN":  {s1.ID},
		"widget":      {s2.ID},
		"gadget":      {s2.ID},
		"prompt_text": {},
		"stop_reason": {},
		"%":           {},
		"nothing":     {},
	} {
		if got := find(ui, q, false); !slices.Equal(got, want) {
			t.Errorf("search %q = %v, want %v", q, got, want)
		}
	}

	// Archive: out of the default list, in the archived one, no prompts.
	req = manage(ui, s1.ID, protocol.TypeSessionArchive, &protocol.SessionArchive{Archived: true})
	if got := changed(ui, req, protocol.ChangeArchived); !got.Archived {
		t.Fatalf("archived answer %+v", got)
	}
	told(other, s1.ID, protocol.ChangeArchived)
	if got := find(ui, "", false); !slices.Equal(got, []string{s2.ID}) {
		t.Fatalf("default list %v, want [s2]", got)
	}
	if got := find(ui, "", true); !slices.Equal(got, []string{s1.ID}) {
		t.Fatalf("archived list %v, want [s1]", got)
	}
	if got := find(ui, "über", true); !slices.Equal(got, []string{s1.ID}) {
		t.Fatalf("archived search %v, want [s1]", got)
	}
	p := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{Segments: []protocol.PromptSegment{{Kind: protocol.SegmentText, Text: "hi"}}})
	p.SessionID = s1.ID
	ui.send(p)
	ui.expectError(p.MessageID, protocol.CodeArchived, "session_id")
	if evs := storedEvents(t, e.st, s1.ID, protocol.TypePromptRequest); len(evs) != 0 {
		t.Fatalf("a prompt to an archived session was stored: %d", len(evs))
	}
	// Still readable.
	if sub := subscribe(ui, s1.ID, 0, ""); sub.Epoch != s1.Epoch {
		t.Fatalf("subscribe to an archived session: %+v", sub)
	}
	events(ui, 1, 0)
	// Unarchive: back in the list, prompts go through.
	req = manage(ui, s1.ID, protocol.TypeSessionArchive, &protocol.SessionArchive{Archived: false})
	if got := changed(ui, req, protocol.ChangeUnarchived); got.Archived {
		t.Fatalf("unarchived answer %+v", got)
	}
	told(other, s1.ID, protocol.ChangeUnarchived)
	prompt(ui, c, s1.ID, "hello again")
	ui.next(protocol.TypePromptRequest) // relayed: ui follows s1
	if got := find(ui, "", false); !slices.Contains(got, s1.ID) {
		t.Fatalf("after unarchive the list is %v", got)
	}

	// The renamed title survives the checkpoints of later events and a
	// restart (the live state's row is not written over it).
	e.restart()
	ui = e.dialUI("ui after restart")
	if got := find(ui, "über", false); !slices.Equal(got, []string{s1.ID}) {
		t.Fatalf("after a restart, search = %v", got)
	}
}

// TestSessionManageScope: a UI whose token does not see the machine
// cannot rename, archive or delete its sessions, and is told nothing of
// them; each is refused exactly as for a session that does not exist,
// and nothing changes.
func TestSessionManageScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	secret, _, err := auth.Issue(testCtx(t), e.st, store.TokenUI, "phone", 0, auth.WithMachines("m2"))
	if err != nil {
		t.Fatal(err)
	}
	ui := e.dialUI("ui")
	scoped := e.dialUIToken(secret, "scoped")
	c := e.connectClient(testCaps("m1"), ui)
	s1, _ := startSession(ui, c)
	for _, msg := range []func() *protocol.Message{
		func() *protocol.Message {
			return protocol.New(protocol.TypeSessionRename, &protocol.SessionRename{Title: "mine"})
		},
		func() *protocol.Message {
			return protocol.New(protocol.TypeSessionArchive, &protocol.SessionArchive{Archived: true})
		},
		func() *protocol.Message { return protocol.New(protocol.TypeSessionDelete, &protocol.SessionDelete{}) },
	} {
		refusedLikeUnknown(t, scoped, msg, s1.ID)
	}
	row, err := e.st.Session(testCtx(t), s1.ID)
	if err != nil || row.Title != "t" || row.Archived {
		t.Fatalf("after refused changes: %+v, %v", row, err)
	}
	// The scoped UI is not told of a change to a session it may not see.
	req := manage(ui, s1.ID, protocol.TypeSessionRename, &protocol.SessionRename{Title: "renamed"})
	changed(ui, req, protocol.ChangeRenamed)
	before, _ := drainSync(scoped)
	for _, m := range before {
		t.Fatalf("the scoped UI got %s %s", m.Type, describe(m))
	}
	if got := find(scoped, "renamed", false); len(got) != 0 {
		t.Fatalf("the scoped UI finds %v", got)
	}
}

// TestSessionDelete: deleting a session removes its history, uploads,
// download links and artifacts; its id is not found afterwards, its links
// and uploads answer 404, other UIs are told, the client's late events
// for it are refused without dropping the client, and another session is
// untouched. A running session is refused.
func TestSessionDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("ui")
	other := e.dialUI("other")
	c := e.connectClient(downloadCaps("m1"), ui)
	waitMachine(other, "m1", true)
	gone, _ := startSession(ui, c)
	kept, _ := startSession(ui, c)

	// What hangs on each session: an upload granted to a prompt, a turn,
	// an artifact with a download link.
	type held struct {
		uploadURL, downloadURL string
	}
	hold := map[string]held{}
	for _, s := range []protocol.SessionInfo{gone, kept} {
		a := e.upload(s.ID, e.ui, "shot.png", string(testPNG))
		if a.status != http.StatusCreated {
			t.Fatalf("upload: HTTP %d %+v", a.status, a.err)
		}
		ui.send(promptWith(s.ID, protocol.ContextFile{FileURL: "ferry-upload:" + a.ok.UploadID, FileName: "shot.png"}))
		req := c.next(protocol.TypePromptRequest)
		id, grant, _ := protocol.ParseUploadURL(req.Payload.(*protocol.PromptRequest).ContextFiles[0].FileURL)
		turnStart(c, req, "turn-1")
		c.waitAck(c.emit(s.ID, protocol.TypeArtifact, testArtifact("turn-1", "art_one", "out/a.csv")).MessageID)
		c.waitAck(c.emit(s.ID, protocol.TypeTextDone, &protocol.TextDone{TurnID: "turn-1", Text: "ok"}).MessageID)
		l := listArtifacts(ui, s.ID, &protocol.ArtifactsList{}).Payload.(*protocol.Artifacts).Artifacts[0]
		hold[s.ID] = held{uploadURL: "/v1/uploads/" + id + "?grant=" + grant, downloadURL: l.DownloadURL}
	}
	status := func(path string, h http.Header) int {
		resp, err := e.httpGet(testCtx(t), path, h)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if got := status(hold[gone.ID].uploadURL, nil); got != http.StatusOK {
		t.Fatalf("the upload before the delete: HTTP %d", got)
	}
	keptEvents := len(storedEvents(t, e.st, kept.ID, ""))
	subscribe(other, gone.ID, 0, "")
	events(other, int(mustSession(t, e.st, gone.ID).LastSeq), 0)

	// A running session is refused with busy, and stays.
	req := prompt(ui, c, kept.ID, "long job")
	turnStart(c, req, "turn-2")
	c.waitAck(c.emit(kept.ID, protocol.TypeTextDelta, &protocol.TextDelta{TurnID: "turn-2", Delta: "working"}).MessageID)
	d := manage(ui, kept.ID, protocol.TypeSessionDelete, &protocol.SessionDelete{})
	ui.expectError(d.MessageID, protocol.CodeBusy, "session_id")
	mustSession(t, e.st, kept.ID)
	c.waitAck(c.emit(kept.ID, protocol.TypeTextDone, &protocol.TextDone{TurnID: "turn-2", Text: "done"}).MessageID)
	keptEvents += 4 // prompt, start, delta, done

	// Delete.
	d = manage(ui, gone.ID, protocol.TypeSessionDelete, &protocol.SessionDelete{})
	changed(ui, d, protocol.ChangeDeleted)
	// The other UI is told; the client's late event for the session
	// reaches no one, and is refused.
	told(other, gone.ID, protocol.ChangeDeleted)
	late := c.emit(gone.ID, protocol.TypeTextDelta, &protocol.TextDelta{TurnID: "turn-1", Delta: "late"})
	c.expectError(late.MessageID, protocol.CodeNotFound, "session_id")
	c.waitAck(late.MessageID)
	before, _ := drainSync(other)
	for _, m := range before {
		t.Fatalf("after the delete the other UI got %s %s", m.Type, describe(m))
	}

	// Gone: the row, the events, the interactions, the artifacts, the
	// download links and the uploads.
	if _, err := e.st.Session(testCtx(t), gone.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the deleted session's row: %v", err)
	}
	if evs, _ := e.st.Events(testCtx(t), gone.ID, 0, 0); len(evs) != 0 {
		t.Fatalf("the deleted session keeps %d events", len(evs))
	}
	if _, err := e.st.Artifact(testCtx(t), gone.ID, "art_one"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the deleted session's artifact: %v", err)
	}
	if got := status(hold[gone.ID].downloadURL, bearer(e.ui)); got != http.StatusNotFound {
		t.Fatalf("the deleted session's download link: HTTP %d, want 404", got)
	}
	if got := status(hold[gone.ID].uploadURL, nil); got != http.StatusNotFound {
		t.Fatalf("the deleted session's upload: HTTP %d, want 404", got)
	}
	if n := e.countUploads(); n != 1 {
		t.Fatalf("%d uploads stored, want the other session's 1", n)
	}
	for _, msg := range []*protocol.Message{
		protocol.New(protocol.TypeSessionSubscribe, &protocol.SessionSubscribe{}),
		protocol.New(protocol.TypeSessionRename, &protocol.SessionRename{Title: "x"}),
		protocol.New(protocol.TypeSessionDelete, &protocol.SessionDelete{}),
		protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{Segments: []protocol.PromptSegment{{Kind: protocol.SegmentText, Text: "hi"}}}),
	} {
		msg.SessionID = gone.ID
		ui.send(msg)
		ui.expectError(msg.MessageID, protocol.CodeNotFound, "session_id")
	}
	if got := find(ui, "", false); !slices.Equal(got, []string{kept.ID}) {
		t.Fatalf("list after the delete: %v", got)
	}

	// The other session is untouched.
	if got := len(storedEvents(t, e.st, kept.ID, "")); got != keptEvents {
		t.Fatalf("the other session has %d events, want %d", got, keptEvents)
	}
	if got := status(hold[kept.ID].uploadURL, nil); got != http.StatusOK {
		t.Fatalf("the other session's upload: HTTP %d", got)
	}
	if _, err := e.st.Artifact(testCtx(t), kept.ID, "art_one"); err != nil {
		t.Fatalf("the other session's artifact: %v", err)
	}
	res := e.download(testCtx(t), hold[kept.ID].downloadURL, bearer(e.ui))
	read, id := c.answerRead(3)
	if read.SessionID != kept.ID {
		t.Fatalf("the other session's download reads %s", read.SessionID)
	}
	c.next(protocol.TypeArtifactRange)
	c.sendChunk(id, 0, []byte("a,b"))
	c.end(kept.ID, id, nil)
	select {
	case r := <-res:
		if r.err != nil || r.resp.StatusCode != http.StatusOK || string(r.body) != "a,b" {
			t.Fatalf("the other session's download: %v HTTP %v %q", r.err, r.resp, r.body)
		}
	case <-time.After(wait):
		t.Fatal("the other session's download did not finish")
	}
}

func mustSession(t *testing.T, st store.Store, id string) store.Session {
	t.Helper()
	row, err := st.Session(testCtx(t), id)
	if err != nil {
		t.Fatalf("session %s: %v", id, err)
	}
	return row
}

// TestSessionChangesReachOtherNodes: two master nodes share the store and
// the broker. A rename on one reaches a UI of the other at once and the
// other node's live state (its snapshot says the new title); a delete
// reaches it too, and the other node forgets the session. A status change
// (a session opened on node 1) reaches node 2's UI the same way.
func TestSessionChangesReachOtherNodes(t *testing.T) {
	t.Parallel()
	br := broker.NewMemory()
	t.Cleanup(func() { _ = br.Close() })
	e := newEnv(t, master.Config{Broker: br})
	url2 := e.secondNode(master.Config{Broker: br})
	ui := e.dialUI("node 1")
	c := e.connectClient(testCaps("m1"), ui)
	s, _ := startSession(ui, c)
	far, _, _, err := dial(t, url2, bearer(e.ui))
	if err != nil {
		t.Fatal(err)
	}
	far.name, far.skip, far.skipStatus = "node 2", []string{protocol.TypeMachineStatus}, true
	far.sync()
	subscribe(far, s.ID, 0, "") // node 2 loads the session's live state
	events(far, 1, 0)

	req := manage(ui, s.ID, protocol.TypeSessionRename, &protocol.SessionRename{Title: "from node 1"})
	changed(ui, req, protocol.ChangeRenamed)
	if got := told(far, s.ID, protocol.ChangeRenamed); got.Title != "from node 1" {
		t.Fatalf("node 2's UI was told %q", got.Title)
	}
	// A snapshot from node 2 (another epoch forces one) has the new title.
	if sub := subscribe(far, s.ID, 5, "another-epoch"); sub.Snapshot == nil || sub.Snapshot.Session.Title != "from node 1" {
		t.Fatalf("node 2's snapshot after the rename: %+v", sub.Snapshot)
	}

	d := manage(ui, s.ID, protocol.TypeSessionDelete, &protocol.SessionDelete{})
	changed(ui, d, protocol.ChangeDeleted)
	told(far, s.ID, protocol.ChangeDeleted)
	again := protocol.New(protocol.TypeSessionSubscribe, &protocol.SessionSubscribe{})
	again.SessionID = s.ID
	far.send(again)
	far.expectError(again.MessageID, protocol.CodeNotFound, "session_id")

	// A status change goes the same way: node 2's UI, which follows no
	// session, sees a session opened on node 1.
	s2, _ := startSession(ui, c)
	if got := nextStatus(t, far, s2.ID); got.State != protocol.SessionIdle {
		t.Fatalf("node 2's UI was told status %s of a new session", got.State)
	}
}
