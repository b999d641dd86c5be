package storetest

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/store"
)

// Schema lets the migration tests reach a backend's database behind the
// store's back. Each test calls the backend's function once for a fresh,
// empty database.
type Schema struct {
	// Open opens a store on the database; the test closes it.
	Open func(ctx context.Context) (store.Store, error)
	// Exec runs statements on the database directly, failing the test on
	// an error.
	Exec func(t *testing.T, query string)
	// Now is the SQL of a stored time ("now()", "0").
	Now string
	// Bytes is the SQL literal of the bytes written in hex.
	Bytes func(hex string) string
	// MigrationsTable creates schema_migrations as the first version did.
	MigrationsTable string
	// ForeignKeys is put before statements that rely on foreign keys
	// being enforced on Exec's connection ("" where they always are).
	ForeignKeys string
}

// RefusesNewerSchema checks that Open refuses a database that a newer
// program migrated further than this one knows.
func RefusesNewerSchema(t *testing.T, sc Schema) {
	s, err := sc.Open(t.Context())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	sc.Exec(t, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'future', "+sc.Now+")")
	s, err = sc.Open(t.Context())
	if err == nil {
		_ = s.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Open of a database from a newer schema = %v, want a refusal", err)
	}
}

// UpgradeKeepsTokens opens a database as the first schema version
// (migrations/0001_init.sql of the running test's package) left it, with
// a token in it: the token's machine scope (migration 2) comes back empty,
// that is every machine.
func UpgradeKeepsTokens(t *testing.T, sc Schema) {
	v1, err := os.ReadFile(filepath.Join("migrations", "0001_init.sql"))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		string(v1),
		sc.MigrationsTable,
		"INSERT INTO schema_migrations VALUES (1, 'init', " + sc.Now + ")",
		"INSERT INTO tokens (id, kind, name, hash, created_at) VALUES ('old', 'ui', 'browser', " +
			sc.Bytes(strings.Repeat("ab", 32)) + ", " + sc.Now + ")",
	} {
		sc.Exec(t, q)
	}
	s, err := sc.Open(t.Context())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer func() { _ = s.Close() }()
	toks, err := s.ListTokens(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(toks) != 1 || toks[0].ID != "old" || len(toks[0].Machines) != 0 {
		t.Fatalf("tokens after the upgrade = %+v, want the old token with no machine scope", toks)
	}
}

// UploadsGoWithTheirSession deletes a session behind the store's back (the
// store has no call for it yet; a future one will delete the row): its
// uploads go with it, another session's stay.
func UploadsGoWithTheirSession(t *testing.T, sc Schema) {
	s, err := sc.Open(t.Context())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer func() { _ = s.Close() }()
	c := ctx(t)
	newSession(t, s, "s1", "m1")
	newSession(t, s, "s2", "m1")
	uiToken(t, s, "u1")
	mustNil(t, s.PutUpload(c, upload("upl_1", "s1", "u1", []byte("one"), time.Hour), store.UploadQuota{}), "PutUpload 1")
	mustNil(t, s.PutUpload(c, upload("upl_2", "s2", "u1", []byte("two"), time.Hour), store.UploadQuota{}), "PutUpload 2")
	sc.Exec(t, sc.ForeignKeys+"DELETE FROM sessions WHERE id = 's1'")
	_, err = s.UploadInfo(c, "upl_1")
	mustIs(t, err, store.ErrNotFound, "an upload of a deleted session")
	if _, err := s.UploadInfo(c, "upl_2"); err != nil {
		t.Fatalf("another session's upload went too: %v", err)
	}
}

// UpgradeKeepsSnapshots opens a database as the first schema version left
// it, with a session and its snapshot in the sessions row: the snapshot
// moves to its own table (migration 9) and reads back the same.
func UpgradeKeepsSnapshots(t *testing.T, sc Schema) {
	v1, err := os.ReadFile(filepath.Join("migrations", "0001_init.sql"))
	if err != nil {
		t.Fatal(err)
	}
	snap := `{"state":"running","text":"` + strings.Repeat("z", 8000) + `"}`
	for _, q := range []string{
		string(v1),
		sc.MigrationsTable,
		"INSERT INTO schema_migrations VALUES (1, 'init', " + sc.Now + ")",
		"INSERT INTO sessions (id, machine_id, workspace_id, adapter, title, mode, state, epoch, created_at, updated_at, last_seq, snapshot) " +
			"VALUES ('with', 'm1', 'w', 'claude', 'T', 'default', 'idle', 'e1', " + sc.Now + ", " + sc.Now + ", 3, " +
			sc.Bytes(hex.EncodeToString([]byte(snap))) + ")",
		"INSERT INTO sessions (id, machine_id, workspace_id, adapter, title, mode, state, epoch, created_at, updated_at, last_seq) " +
			"VALUES ('without', 'm1', 'w', 'claude', 'T', 'default', 'idle', 'e1', " + sc.Now + ", " + sc.Now + ", 0)",
	} {
		sc.Exec(t, q)
	}
	s, err := sc.Open(t.Context())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer func() { _ = s.Close() }()
	got, err := s.Session(t.Context(), "with")
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Snapshot) != snap || got.LastSeq != 3 {
		t.Fatalf("after the upgrade: snapshot %.40q… (%d bytes), last seq %d; want the old snapshot and 3", got.Snapshot, len(got.Snapshot), got.LastSeq)
	}
	if got, err := s.Session(t.Context(), "without"); err != nil || got.Snapshot != nil {
		t.Fatalf("a session without a snapshot after the upgrade: %+v, %v", got.Snapshot, err)
	}
}

// UpgradeKeepsEvents opens a database with events stored by the first
// schema version: migration 15 (message IDs per session) keeps every
// event, and duplicates are still found in the session that holds them.
func UpgradeKeepsEvents(t *testing.T, sc Schema) {
	v1, err := os.ReadFile(filepath.Join("migrations", "0001_init.sql"))
	if err != nil {
		t.Fatal(err)
	}
	qs := []string{
		string(v1),
		sc.MigrationsTable,
		"INSERT INTO schema_migrations VALUES (1, 'init', " + sc.Now + ")",
	}
	for _, sid := range []string{"s1", "s2"} {
		qs = append(qs, "INSERT INTO sessions (id, machine_id, workspace_id, adapter, title, mode, state, epoch, created_at, updated_at, last_seq) "+
			"VALUES ('"+sid+"', 'm1', 'w', 'claude', 'T', 'default', 'idle', 'e1', "+sc.Now+", "+sc.Now+", 0)")
	}
	stored := map[string][]string{"s1": {"a", "b", "c"}, "s2": {"d"}}
	for sid, ids := range stored {
		for i, id := range ids {
			qs = append(qs, fmt.Sprintf("INSERT INTO events (session_id, seq, message_id, type, data, created_at) VALUES ('%s', %d, '%s', 'agent.text.delta', %s, %s)",
				sid, i+1, id, sc.Bytes(hex.EncodeToString(event(id).Data)), sc.Now))
		}
		qs = append(qs, fmt.Sprintf("UPDATE sessions SET last_seq = %d WHERE id = '%s'", len(ids), sid))
	}
	for _, q := range qs {
		sc.Exec(t, q)
	}
	s, err := sc.Open(t.Context())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer func() { _ = s.Close() }()
	for sid, ids := range stored {
		evs, err := s.Events(t.Context(), sid, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, ev := range evs {
			got = append(got, ev.MessageID)
			if ev.Seq != uint64(i+1) || string(ev.Data) != string(event(ev.MessageID).Data) {
				t.Fatalf("%s's event %d after the upgrade: seq %d, data %q", sid, i, ev.Seq, ev.Data)
			}
		}
		if !slices.Equal(got, ids) {
			t.Fatalf("%s's events after the upgrade = %v, want %v", sid, got, ids)
		}
	}
	got, err := s.AppendEvents(t.Context(), "s1", []store.Event{event("b"), event("d")})
	if err != nil {
		t.Fatal(err)
	}
	if !got[0].Duplicate || got[0].Seq != 2 || got[1].Duplicate || got[1].Seq != 4 {
		t.Fatalf("b and s2's d appended to s1 after the upgrade = %+v, want b a duplicate of 2 and d stored at 4", got)
	}
}
