package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/store"
)

// wireEvent is a stored event as the master keeps it: the whole wire
// message, payload included.
func wireEvent(id, typ string, payload map[string]any) store.Event {
	b, err := json.Marshal(map[string]any{"type": typ, "message_id": id, "session_id": "x", "payload": payload})
	if err != nil {
		panic(err)
	}
	return store.Event{MessageID: id, Type: typ, Data: b, CreatedAt: at(time.Minute)}
}

func findIDs(t *testing.T, s store.Store, f store.SessionFilter) []string {
	t.Helper()
	list, err := s.FindSessions(ctx(t), f)
	mustNil(t, err, fmt.Sprintf("FindSessions(%+v)", f))
	out := []string{}
	for _, ss := range list {
		out = append(out, ss.ID)
	}
	return out
}

// testSessionRenameArchive: RenameSession and ArchiveSession change their
// one column, a later UpdateSession (a checkpoint of an older row) undoes
// neither, and a missing session is ErrNotFound.
func testSessionRenameArchive(t *testing.T, s store.Store) {
	c := ctx(t)
	orig := newSession(t, s, "s1", "m1")
	mustNil(t, s.RenameSession(c, "s1", "Fix the Über login"), "RenameSession")
	mustNil(t, s.ArchiveSession(c, "s1", true), "ArchiveSession")
	got, err := s.Session(c, "s1")
	mustNil(t, err, "Session")
	if got.Title != "Fix the Über login" || !got.Archived {
		t.Fatalf("after rename and archive: title %q archived %v", got.Title, got.Archived)
	}
	if !got.UpdatedAt.Equal(orig.UpdatedAt) {
		t.Fatalf("rename/archive moved UpdatedAt to %v (was %v)", got.UpdatedAt, orig.UpdatedAt)
	}
	stale := orig // the master's copy from before the rename
	stale.State, stale.UpdatedAt = "running", at(time.Hour)
	mustNil(t, s.UpdateSession(c, stale), "UpdateSession")
	got, _ = s.Session(c, "s1")
	if got.Title != "Fix the Über login" || !got.Archived || got.State != "running" {
		t.Fatalf("UpdateSession of an older row: title %q archived %v state %q; want the rename and archive kept", got.Title, got.Archived, got.State)
	}
	mustNil(t, s.ArchiveSession(c, "s1", false), "unarchive")
	mustNil(t, s.RenameSession(c, "s1", ""), "rename to empty")
	if got, _ := s.Session(c, "s1"); got.Title != "" || got.Archived {
		t.Fatalf("after unarchive and empty rename: title %q archived %v", got.Title, got.Archived)
	}
	mustIs(t, s.RenameSession(c, "missing", "x"), store.ErrNotFound, "RenameSession missing")
	mustIs(t, s.ArchiveSession(c, "missing", true), store.ErrNotFound, "ArchiveSession missing")
	created := store.Session{ID: "s2", MachineID: "m1", Epoch: "e", Archived: true}
	mustNil(t, s.CreateSession(c, created), "CreateSession archived")
	if got, _ := s.Session(c, "s2"); !got.Archived {
		t.Fatalf("a session created archived reads back not archived")
	}
}

// testSessionFind: the archived filter, the machine filter, and the query
// matching title, prompt text and final answers only.
func testSessionFind(t *testing.T, s store.Store) {
	c := ctx(t)
	// updated order (newest first): e, d, c, b, a
	for i, x := range []struct{ id, machine, title string }{
		{"a", "m1", "Deploy script"}, {"b", "m1", ""}, {"c", "m2", "ÜBER refactor"}, {"d", "m1", "100% done_ok"}, {"e", "m2", ""},
	} {
		ss := store.Session{ID: x.id, MachineID: x.machine, Title: x.title, Epoch: "e", CreatedAt: at(0), UpdatedAt: at(time.Duration(i) * time.Minute)}
		mustNil(t, s.CreateSession(c, ss), "CreateSession "+x.id)
	}
	appendOK(t, s, "b",
		wireEvent("b1", "control.prompt.request", map[string]any{"prompt_text": "Please rename the Widget class", "input_type": "text"}),
		wireEvent("b2", "agent.text.delta", map[string]any{"turn_id": "t1", "delta": "streamedonly", "channel": "text"}),
		wireEvent("b3", "agent.text.done", map[string]any{"turn_id": "t1", "text": "I renamed it to Gadget.", "is_cancelled": false}))
	appendOK(t, s, "e",
		wireEvent("e1", "agent.tool.started", map[string]any{"turn_id": "t1", "tool_use_id": "u1", "tool_name": "Read", "input": map[string]any{"file_path": "secret_widget.go"}}))
	mustNil(t, s.ArchiveSession(c, "a", true), "ArchiveSession a")
	// The appends moved b and e to the top: e, b, d, c, (a archived).
	for _, tc := range []struct {
		f    store.SessionFilter
		want []string
	}{
		{store.SessionFilter{}, []string{"e", "b", "d", "c"}},
		{store.SessionFilter{Archived: true}, []string{"a"}},
		{store.SessionFilter{MachineID: "m1"}, []string{"b", "d"}},
		{store.SessionFilter{Limit: 2}, []string{"e", "b"}},
		{store.SessionFilter{Query: "über"}, []string{"c"}},      // title, Unicode case folded
		{store.SessionFilter{Query: "WIDGET"}, []string{"b"}},    // prompt text, not e's tool input
		{store.SessionFilter{Query: "gadget"}, []string{"b"}},    // final answer
		{store.SessionFilter{Query: "streamedonly"}, []string{}}, // deltas are not searched
		{store.SessionFilter{Query: "prompt_text"}, []string{}},  // nor JSON keys
		{store.SessionFilter{Query: "payload"}, []string{}},
		{store.SessionFilter{Query: "agent.text"}, []string{}}, // nor types
		{store.SessionFilter{Query: "%"}, []string{"d"}},       // wildcards are literal
		{store.SessionFilter{Query: "0% d"}, []string{"d"}},
		{store.SessionFilter{Query: "e_o"}, []string{"d"}},
		{store.SessionFilter{Query: "_"}, []string{"d"}},
		{store.SessionFilter{Query: "deploy"}, []string{}}, // archived
		{store.SessionFilter{Query: "deploy", Archived: true}, []string{"a"}},
		{store.SessionFilter{Query: "r", MachineID: "m2"}, []string{"c"}},
		{store.SessionFilter{Query: "e", Limit: 1}, []string{"b"}},
	} {
		if got := findIDs(t, s, tc.f); !slices.Equal(got, tc.want) {
			t.Errorf("FindSessions(%+v) = %v, want %v", tc.f, got, tc.want)
		}
	}
	_, err := s.FindSessions(c, store.SessionFilter{Query: strings.Repeat("x", 10000)})
	if err == nil {
		t.Fatalf("FindSessions with a 10000-byte query: no error")
	}
	if errors.Is(err, store.ErrNotFound) {
		t.Fatalf("FindSessions with a long query: %v, want an invalid-input error", err)
	}
}

// testSessionDelete: deleting a session takes its events, interactions,
// artifacts, download tokens and uploads, and nothing of another session.
func testSessionDelete(t *testing.T, s store.Store) {
	c := ctx(t)
	uiToken(t, s, "ui1")
	for _, id := range []string{"gone", "kept"} {
		newSession(t, s, id, "m1")
		appendOK(t, s, id, event(id+"-e1"), event(id+"-e2"))
		mustNil(t, s.OpenInteraction(c, interaction(id, "i1", 0)), "OpenInteraction "+id)
		mustNil(t, s.PutArtifact(c, artifact(id, "a1", 0)), "PutArtifact "+id)
		mustNil(t, s.CreateDownloadTokens(c, []store.DownloadToken{downloadToken("dl-"+id, id, "a1", "ui1", time.Hour)}), "CreateDownloadTokens "+id)
		mustNil(t, s.PutUpload(c, upload("upl_"+id, id, "ui1", []byte("png "+id), time.Hour), store.UploadQuota{}), "PutUpload "+id)
	}
	mustNil(t, s.DeleteSession(c, "gone"), "DeleteSession")
	_, err := s.Session(c, "gone")
	mustIs(t, err, store.ErrNotFound, "Session after delete")
	if _, err := s.AppendEvents(c, "gone", []store.Event{event("gone-e3")}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("AppendEvents to a deleted session = %v, want ErrNotFound", err)
	}
	if evs, err := s.Events(c, "gone", 0, 0); err == nil && len(evs) > 0 {
		t.Fatalf("a deleted session still has %d events", len(evs))
	}
	if _, err := s.Interaction(c, "gone", "i1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Interaction of a deleted session = %v, want ErrNotFound", err)
	}
	if _, err := s.Artifact(c, "gone", "a1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Artifact of a deleted session = %v, want ErrNotFound", err)
	}
	if _, err := s.DownloadTokenByHash(c, hash("dl-dl-gone")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("download token of a deleted session = %v, want ErrNotFound", err)
	}
	if _, err := s.Upload(c, "upl_gone"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("upload of a deleted session = %v, want ErrNotFound", err)
	}
	// The other session keeps all of it.
	if got := allEvents(t, s, "kept"); len(got) != 2 {
		t.Fatalf("the other session has %d events, want 2", len(got))
	}
	if _, err := s.Interaction(c, "kept", "i1"); err != nil {
		t.Fatalf("the other session's interaction: %v", err)
	}
	if _, err := s.Artifact(c, "kept", "a1"); err != nil {
		t.Fatalf("the other session's artifact: %v", err)
	}
	if _, err := s.DownloadTokenByHash(c, hash("dl-dl-kept")); err != nil {
		t.Fatalf("the other session's download token: %v", err)
	}
	if u, err := s.Upload(c, "upl_kept"); err != nil || string(u.Data) != "png kept" {
		t.Fatalf("the other session's upload: %q, %v", u.Data, err)
	}
	mustIs(t, s.DeleteSession(c, "gone"), store.ErrNotFound, "DeleteSession again")
	mustIs(t, s.DeleteSession(c, "missing"), store.ErrNotFound, "DeleteSession missing")
}
