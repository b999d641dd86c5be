package storetest

import (
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/store"
)

// testEventsQuiet: a quiet event (bookkeeping: a session reopened, its
// agent's commands) moves LastSeq but not UpdatedAt, so that opening a
// session does not reorder the lists; any other event in the batch does.
func testEventsQuiet(t *testing.T, s store.Store) {
	c := ctx(t)
	orig := newSession(t, s, "s1", "m1")
	quiet := event("q1")
	quiet.Quiet = true
	appendOK(t, s, "s1", quiet)
	got, err := s.Session(c, "s1")
	mustNil(t, err, "Session")
	if got.LastSeq != 1 || !got.UpdatedAt.Equal(orig.UpdatedAt) {
		t.Fatalf("after a quiet event: last seq %d updated %v; want 1 and %v (unmoved)", got.LastSeq, got.UpdatedAt, orig.UpdatedAt)
	}
	quiet2 := event("q2")
	quiet2.Quiet = true
	appendOK(t, s, "s1", quiet2, event("loud"))
	got, _ = s.Session(c, "s1")
	if got.LastSeq != 3 || !got.UpdatedAt.After(orig.UpdatedAt.Add(time.Hour)) {
		t.Fatalf("after a batch with an activity event: last seq %d updated %v; want 3 and now", got.LastSeq, got.UpdatedAt)
	}
}

// testSessionTitleSource: the first prompt titles an untitled session
// (once), an agent's title replaces an automatic one, and a person's title
// is never replaced by an automatic one; each records its source.
func testSessionTitleSource(t *testing.T, s store.Store) {
	c := ctx(t)
	mustNil(t, s.CreateSession(c, store.Session{ID: "s1", MachineID: "m1", Epoch: "e"}), "CreateSession")
	check := func(what, title, source string, prompted bool) {
		t.Helper()
		got, err := s.Session(c, "s1")
		mustNil(t, err, "Session")
		if got.Title != title || got.TitleSource != source || got.Prompted != prompted {
			t.Fatalf("%s: title %q (%q) prompted %v; want %q (%q) prompted %v", what, got.Title, got.TitleSource, got.Prompted, title, source, prompted)
		}
	}
	check("new", "", "", false)
	set, err := s.MarkPrompted(c, "s1", "Fix the login")
	mustNil(t, err, "MarkPrompted")
	if !set {
		t.Fatalf("MarkPrompted of an untitled session did not title it")
	}
	check("first prompt", "Fix the login", store.TitlePrompt, true)
	if set, _ := s.MarkPrompted(c, "s1", "Second prompt"); set {
		t.Fatalf("a second prompt retitled the session")
	}
	check("second prompt", "Fix the login", store.TitlePrompt, true)
	if set, err := s.AgentTitleSession(c, "s1", "Login fix"); err != nil || !set {
		t.Fatalf("AgentTitleSession over a prompt's title = %v, %v; want set", set, err)
	}
	check("agent", "Login fix", store.TitleAgent, true)
	mustNil(t, s.RenameSession(c, "s1", "Mine"), "RenameSession")
	check("rename", "Mine", store.TitleUser, true)
	if set, err := s.AgentTitleSession(c, "s1", "Agent's"); err != nil || set {
		t.Fatalf("AgentTitleSession over a person's title = %v, %v; want refused", set, err)
	}
	check("agent after rename", "Mine", store.TitleUser, true)
	// A person who clears the title asks for the automatic label.
	mustNil(t, s.RenameSession(c, "s1", ""), "RenameSession empty")
	check("cleared", "", "", true)
	// A session created with a person's title keeps it.
	mustNil(t, s.CreateSession(c, store.Session{ID: "s2", MachineID: "m1", Epoch: "e", Title: "Named", TitleSource: store.TitleUser}), "CreateSession titled")
	if set, _ := s.MarkPrompted(c, "s2", "prompt"); set {
		t.Fatalf("the first prompt replaced a person's title")
	}
	if got, _ := s.Session(c, "s2"); got.Title != "Named" || got.TitleSource != store.TitleUser || !got.Prompted {
		t.Fatalf("titled session after its first prompt: %+v", got)
	}
	_, err = s.MarkPrompted(c, "missing", "x")
	mustIs(t, err, store.ErrNotFound, "MarkPrompted missing")
	_, err = s.AgentTitleSession(c, "missing", "x")
	mustIs(t, err, store.ErrNotFound, "AgentTitleSession missing")
}

// testSessionUnprompted: UnpromptedSessions lists the idle, untitled,
// unarchived sessions never prompted and created at or before a time, and
// DeleteUnprompted deletes one only while it is so.
func testSessionUnprompted(t *testing.T, s store.Store) {
	c := ctx(t)
	for _, x := range []store.Session{
		{ID: "old", CreatedAt: at(0)},
		{ID: "new", CreatedAt: at(2 * time.Hour)},
		{ID: "named", CreatedAt: at(0), Title: "Named", TitleSource: store.TitleUser},
		{ID: "archived", CreatedAt: at(0), Archived: true},
		{ID: "prompted", CreatedAt: at(0)},
		{ID: "running", CreatedAt: at(0), State: "running"},
	} {
		x.MachineID, x.Epoch = "m1", "e"
		mustNil(t, s.CreateSession(c, x), "CreateSession "+x.ID)
	}
	if _, err := s.MarkPrompted(c, "prompted", "p"); err != nil {
		t.Fatal(err)
	}
	list, err := s.UnpromptedSessions(c, at(time.Hour), 10)
	mustNil(t, err, "UnpromptedSessions")
	if len(list) != 1 || list[0].ID != "old" {
		t.Fatalf("UnpromptedSessions = %+v, want old only", list)
	}
	for _, id := range []string{"named", "archived", "prompted", "running"} {
		mustIs(t, s.DeleteUnprompted(c, id), store.ErrExists, "DeleteUnprompted "+id)
		if _, err := s.Session(c, id); err != nil {
			t.Fatalf("DeleteUnprompted refused %s but it is gone: %v", id, err)
		}
	}
	mustNil(t, s.DeleteUnprompted(c, "old"), "DeleteUnprompted old")
	_, err = s.Session(c, "old")
	mustIs(t, err, store.ErrNotFound, "Session old after DeleteUnprompted")
	mustIs(t, s.DeleteUnprompted(c, "old"), store.ErrNotFound, "DeleteUnprompted again")
}
