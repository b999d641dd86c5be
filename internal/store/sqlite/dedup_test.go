package sqlite_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/sqlite"
)

func ev(id string) store.Event {
	return store.Event{MessageID: id, Type: "agent.text.delta", Data: []byte(`{"type":"agent.text.delta","message_id":"` + id + `","payload":{"text":"x"}}`)}
}

func appendIDs(t *testing.T, s *sqlite.Store, sid string, ids ...string) []store.Event {
	t.Helper()
	evs := make([]store.Event, len(ids))
	for i, id := range ids {
		evs[i] = ev(id)
	}
	got, err := s.AppendEvents(t.Context(), sid, evs)
	if err != nil {
		t.Fatalf("AppendEvents(%s, %v): %v", sid, ids, err)
	}
	return got
}

// TestDedupAfterReopen: a duplicate is found after a restart, when the
// cache is empty and the session is read again.
func TestDedupAfterReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ferry.db")
	s := openAt(t, path)
	if err := s.CreateSession(t.Context(), store.Session{ID: "s", MachineID: "m", Epoch: "e"}); err != nil {
		t.Fatal(err)
	}
	appendIDs(t, s, "s", "a", "b", "c")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path)
	if n, _ := sqlite.CachedIDs(s); n != 0 {
		t.Fatalf("a fresh store caches %d IDs, want 0", n)
	}
	got := appendIDs(t, s, "s", "b", "d")
	if !got[0].Duplicate || got[0].Seq != 2 || got[1].Duplicate || got[1].Seq != 4 {
		t.Fatalf("b, d after a reopen = %+v, want b a duplicate of 2, d stored at 4", got)
	}
}

// TestDedupCacheBounded: past its bound the cache forgets the least
// recently appended sessions, and a forgotten session's duplicates are
// still found (it is read again).
func TestDedupCacheBounded(t *testing.T) {
	defer sqlite.SetMaxCachedIDs(8)()
	s := openAt(t, filepath.Join(t.TempDir(), "ferry.db"))
	for i := range 5 {
		sid := fmt.Sprintf("s%d", i)
		if err := s.CreateSession(t.Context(), store.Session{ID: sid, MachineID: "m", Epoch: "e"}); err != nil {
			t.Fatal(err)
		}
		appendIDs(t, s, sid, sid+"-a", sid+"-b", sid+"-c")
		if n, _ := sqlite.CachedIDs(s); n > 8 {
			t.Fatalf("after session %d the cache holds %d IDs, over its bound of 8", i, n)
		}
	}
	if _, sessions := sqlite.CachedIDs(s); sessions != 2 {
		t.Fatalf("the cache holds %d sessions, want the 2 most recent", sessions)
	}
	for i := range 5 {
		sid := fmt.Sprintf("s%d", i)
		got := appendIDs(t, s, sid, sid+"-b")
		if !got[0].Duplicate || got[0].Seq != 2 {
			t.Fatalf("%s-b sent again = %+v, want a duplicate of seq 2", sid, got[0])
		}
	}
	// One session bigger than the bound stays whole while it is used.
	if err := s.CreateSession(t.Context(), store.Session{ID: "big", MachineID: "m", Epoch: "e"}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 20 {
		ids = append(ids, fmt.Sprintf("big-%d", i))
	}
	appendIDs(t, s, "big", ids...)
	if n, sessions := sqlite.CachedIDs(s); n != 20 || sessions != 1 {
		t.Fatalf("after a 20-event session the cache holds %d IDs of %d sessions, want 20 of 1", n, sessions)
	}
	if got := appendIDs(t, s, "big", "big-0"); !got[0].Duplicate || got[0].Seq != 1 {
		t.Fatalf("big-0 sent again = %+v, want a duplicate of seq 1", got[0])
	}
}

// TestDedupCacheFollowsTrim: trimmed events leave the cache, so it holds
// at most the retained events.
func TestDedupCacheFollowsTrim(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "ferry.db"))
	if err := s.CreateSession(t.Context(), store.Session{ID: "s", MachineID: "m", Epoch: "e"}); err != nil {
		t.Fatal(err)
	}
	for round := range 50 {
		var ids []string
		for i := range 40 {
			ids = append(ids, fmt.Sprintf("r%d-%d", round, i))
		}
		appendIDs(t, s, "s", ids...)
		if err := s.Trim(t.Context(), "s", 100); err != nil {
			t.Fatal(err)
		}
		if n, _ := sqlite.CachedIDs(s); n > 100 {
			t.Fatalf("round %d: the cache holds %d IDs of a session trimmed to 100", round, n)
		}
	}
	if got := appendIDs(t, s, "s", "r49-39", "r0-0"); !got[0].Duplicate || got[1].Duplicate || got[1].Seq != 2001 {
		t.Fatalf("a retained and a trimmed ID sent again = %+v, want a duplicate and a new event at 2001", got)
	}
}
