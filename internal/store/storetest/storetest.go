// Package storetest is the one test suite every store.Store implementation
// runs: it checks the guarantees listed in package store (seq numbering
// without gap or reuse under concurrency, message-ID dedup, exactly-once
// token consumption and interaction settling, ErrNotFound/ErrExists,
// ordering, persistence across a reopen, context cancellation) so that
// SQLite and PostgreSQL behave the same. RefusesNewerSchema and
// UpgradeKeepsTokens check a backend's migrations through a Schema, and
// Bench is the one store benchmark both backends run.
package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/store"
)

// Opener opens a fresh, empty store for one test and registers its own
// cleanup (Close, dropping what it created). Close may be called again by
// the test; it must be harmless.
type Opener func(t *testing.T) store.Store

// InteractionGetter returns one interaction, open or settled (now part of
// store.Store: the master sends a settlement again to a client that
// reconnects still waiting on it).
type InteractionGetter interface {
	Interaction(ctx context.Context, sessionID, id string) (store.Interaction, error)
}

// Option configures Run.
type Option func(*config)

type config struct {
	storage func(t *testing.T) Opener
}

// WithReopen enables the persistence test: storage is called once per test
// and returns an Opener that opens the same persistent storage (the same
// file, the same schema) every time it is called.
func WithReopen(storage func(t *testing.T) Opener) Option {
	return func(c *config) { c.storage = storage }
}

// Run runs the shared suite; open gives every subtest its own empty store.
// Subtests run in parallel.
func Run(t *testing.T, open Opener, opts ...Option) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"TokenCreateAndLookup", testTokenCreateAndLookup},
		{"TokenConsumeOnce", testTokenConsumeOnce},
		{"TokenRevokeAndList", testTokenRevokeAndList},
		{"TokenMachineScope", testTokenMachineScope},
		{"TokenDevice", testTokenDevice},
		{"Machines", testMachines},
		{"SessionCreateAndGet", testSessionCreateAndGet},
		{"SessionList", testSessionList},
		{"SessionUpdate", testSessionUpdate},
		{"SessionRenameArchive", testSessionRenameArchive},
		{"SessionFind", testSessionFind},
		{"SessionDelete", testSessionDelete},
		{"SessionTitleSource", testSessionTitleSource},
		{"SessionUnprompted", testSessionUnprompted},
		{"EventsQuiet", testEventsQuiet},
		{"EventsNumbered", testEventsNumbered},
		{"EventsDedup", testEventsDedup},
		{"EventsConcurrentAppend", testEventsConcurrentAppend},
		{"EventsConcurrentCrossSessionDedup", testEventsConcurrentCrossSessionDedup},
		{"EventsAfterAndLimit", testEventsAfterAndLimit},
		{"EventsTrim", testEventsTrim},
		{"EventsDedupAfterTrimAndDelete", testEventsDedupAfterTrimAndDelete},
		{"EventsUnknownSession", testEventsUnknownSession},
		{"Deliveries", testDeliveries},
		{"Interactions", testInteractions},
		{"InteractionSettleOnce", testInteractionSettleOnce},
		{"Artifacts", testArtifacts},
		{"ArtifactsConcurrentPut", testArtifactsConcurrentPut},
		{"DownloadTokens", testDownloadTokens},
		{"DownloadTokensTrim", testDownloadTokensTrim},
		{"Uploads", testUploads},
		{"UploadQuota", testUploadQuota},
		{"Secret", testSecret},
		{"LeaseOnce", testLeaseOnce},
		{"LeaseExpiry", testLeaseExpiry},
		{"PushSubscriptions", testPushSubscriptions},
		{"PushSubscriptionBound", testPushSubscriptionBound},
		{"PushSubscriptionOwner", testPushSubscriptionOwner},
		{"Ping", testPing},
		{"ContextCancelled", testContextCancelled},
		{"BadInput", testBadInput},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
	t.Run("Persistence", func(t *testing.T) {
		t.Parallel()
		if cfg.storage == nil {
			t.Skip("no WithReopen option: this backend cannot be reopened by the suite")
		}
		testPersistence(t, cfg.storage(t))
	})
}

// ctx is a bounded context for one test.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

func hash(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// base is a fixed past instant (whole microseconds, as stores keep) so
// that times compare exactly.
var base = time.Date(2025, 3, 4, 5, 6, 7, 123456000, time.UTC)

func at(d time.Duration) time.Time { return base.Add(d) }

func mustNil(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func mustIs(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want one wrapping %v", what, err, target)
	}
}

func newSession(t *testing.T, s store.Store, id, machine string) store.Session {
	t.Helper()
	ss := store.Session{
		ID: id, MachineID: machine, WorkspaceID: "ws-" + id, Adapter: "echo",
		Title: "title " + id, Mode: "default", State: "idle", Epoch: "epoch-" + id,
		CreatedAt: at(0), UpdatedAt: at(0),
		Snapshot: json.RawMessage(`{"turns": []}`),
	}
	mustNil(t, s.CreateSession(ctx(t), ss), "CreateSession "+id)
	return ss
}

func event(id string) store.Event {
	return store.Event{
		Seq:       12345, // ignored on input
		MessageID: id,
		Type:      "agent.text.delta",
		Data:      []byte(fmt.Sprintf(`{"type": "agent.text.delta", "message_id": %q, "payload": {"text": "x"}}`, id)),
		CreatedAt: at(time.Minute),
	}
}

func events(prefix string, n int) []store.Event {
	out := make([]store.Event, n)
	for i := range out {
		out[i] = event(fmt.Sprintf("%s-%d", prefix, i))
	}
	return out
}

func appendOK(t *testing.T, s store.Store, sessionID string, evs ...store.Event) []store.Event {
	t.Helper()
	got, err := s.AppendEvents(ctx(t), sessionID, evs)
	mustNil(t, err, "AppendEvents")
	if len(got) != len(evs) {
		t.Fatalf("AppendEvents returned %d events for %d", len(got), len(evs))
	}
	for i, ev := range evs {
		if got[i].MessageID != ev.MessageID {
			t.Fatalf("AppendEvents result %d is %s, want %s (input order)", i, got[i].MessageID, ev.MessageID)
		}
	}
	return got
}

func seqs(evs []store.Event) []uint64 {
	out := make([]uint64, len(evs))
	for i, ev := range evs {
		out[i] = ev.Seq
	}
	return out
}

func span(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func allEvents(t *testing.T, s store.Store, sessionID string) []store.Event {
	t.Helper()
	evs, err := s.Events(ctx(t), sessionID, 0, 0)
	mustNil(t, err, "Events")
	return evs
}

// --- tokens ---

func testTokenCreateAndLookup(t *testing.T, s store.Store) {
	c := ctx(t)
	client := store.Token{ID: "t1", Kind: store.TokenClient, Name: "laptop", Hash: hash("a"), CreatedAt: at(0)}
	login := store.Token{ID: "t2", Kind: store.TokenLogin, Name: "login URL", Hash: hash("b"),
		CreatedAt: at(time.Second), ExpiresAt: at(-time.Hour)} // already expired: still found
	mustNil(t, s.CreateToken(c, client), "CreateToken client")
	mustNil(t, s.CreateToken(c, login), "CreateToken login")

	for _, want := range []store.Token{client, login} {
		got, err := s.TokenByHash(c, want.Hash)
		mustNil(t, err, "TokenByHash "+want.ID)
		if got.ID != want.ID || got.Kind != want.Kind || got.Name != want.Name || string(got.Hash) != string(want.Hash) ||
			!got.CreatedAt.Equal(want.CreatedAt) || !got.ExpiresAt.Equal(want.ExpiresAt) {
			t.Fatalf("TokenByHash = %+v, want %+v", got, want)
		}
	}
	if got, _ := s.TokenByHash(c, client.Hash); !got.ExpiresAt.IsZero() {
		t.Fatalf("a token without expiry came back with ExpiresAt %v", got.ExpiresAt)
	}
	_, err := s.TokenByHash(c, hash("nope"))
	mustIs(t, err, store.ErrNotFound, "TokenByHash unknown")

	dupID := client
	dupID.Hash = hash("c")
	mustIs(t, s.CreateToken(c, dupID), store.ErrExists, "CreateToken with a taken ID")
	dupHash := client
	dupHash.ID = "t3"
	mustIs(t, s.CreateToken(c, dupHash), store.ErrExists, "CreateToken with a taken hash")
}

// testTokenDevice: a token's device name comes back from TokenByHash and
// ListTokens; one that is too long or not printable ASCII is refused.
func testTokenDevice(t *testing.T, s store.Store) {
	c := ctx(t)
	ui := store.Token{ID: "ui", Kind: store.TokenUI, Hash: hash("ui"), CreatedAt: at(0), Device: "Chrome on Android"}
	plain := store.Token{ID: "plain", Kind: store.TokenClient, Hash: hash("plain"), CreatedAt: at(time.Second)}
	mustNil(t, s.CreateToken(c, ui), "CreateToken with a device")
	mustNil(t, s.CreateToken(c, plain), "CreateToken without one")
	got, err := s.TokenByHash(c, ui.Hash)
	mustNil(t, err, "TokenByHash")
	if got.Device != ui.Device {
		t.Fatalf("TokenByHash device %q, want %q", got.Device, ui.Device)
	}
	toks, err := s.ListTokens(c)
	mustNil(t, err, "ListTokens")
	if len(toks) != 2 || toks[0].Device != ui.Device || toks[1].Device != "" {
		t.Fatalf("ListTokens = %+v, want devices %q and none", toks, ui.Device)
	}
	for i, bad := range []string{strings.Repeat("x", 65), "Chrome\non Android", "Chrome \u202eon", "caf\u00e9"} {
		tk := store.Token{ID: fmt.Sprintf("bad%d", i), Kind: store.TokenUI, Hash: hash(fmt.Sprintf("bad%d", i)), CreatedAt: at(0), Device: bad}
		if err := s.CreateToken(c, tk); err == nil || !strings.Contains(err.Error(), "device") {
			t.Fatalf("CreateToken with device %q: %v, want an error naming the device", bad, err)
		}
	}
	if toks, _ := s.ListTokens(c); len(toks) != 2 {
		t.Fatalf("%d tokens after refused ones, want 2", len(toks))
	}
}

func testTokenConsumeOnce(t *testing.T, s store.Store) {
	c := ctx(t)
	tok := store.Token{ID: "login", Kind: store.TokenLogin, Hash: hash("once"), CreatedAt: at(0), ExpiresAt: at(time.Hour)}
	mustNil(t, s.CreateToken(c, tok), "CreateToken")

	const n = 20
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = s.ConsumeToken(c, tok.ID)
		})
	}
	close(start)
	wg.Wait()
	winners := 0
	for i, err := range errs {
		switch {
		case err == nil:
			winners++
		case errors.Is(err, store.ErrNotFound):
		default:
			t.Fatalf("ConsumeToken %d: %v", i, err)
		}
	}
	if winners != 1 {
		t.Fatalf("%d of %d concurrent ConsumeToken calls won, want exactly 1", winners, n)
	}
	_, err := s.TokenByHash(c, tok.Hash)
	mustIs(t, err, store.ErrNotFound, "TokenByHash after consume")
	mustIs(t, s.ConsumeToken(c, tok.ID), store.ErrNotFound, "ConsumeToken again")
}

func testTokenRevokeAndList(t *testing.T, s store.Store) {
	c := ctx(t)
	toks, err := s.ListTokens(c)
	mustNil(t, err, "ListTokens empty")
	if len(toks) != 0 {
		t.Fatalf("a new store lists %d tokens", len(toks))
	}
	// Created out of order; c and d share a creation time and keep their
	// insertion order.
	for _, tk := range []store.Token{
		{ID: "b", Kind: store.TokenUI, Hash: hash("b"), CreatedAt: at(2 * time.Second)},
		{ID: "a", Kind: store.TokenClient, Hash: hash("a"), CreatedAt: at(time.Second)},
		{ID: "d", Kind: store.TokenClient, Hash: hash("d"), CreatedAt: at(3 * time.Second)},
		{ID: "c", Kind: store.TokenClient, Hash: hash("c"), CreatedAt: at(3 * time.Second)},
	} {
		mustNil(t, s.CreateToken(c, tk), "CreateToken "+tk.ID)
	}
	ids := func() []string {
		toks, err := s.ListTokens(c)
		mustNil(t, err, "ListTokens")
		var out []string
		for _, tk := range toks {
			out = append(out, tk.ID)
		}
		return out
	}
	if got, want := ids(), []string{"a", "b", "d", "c"}; !slices.Equal(got, want) {
		t.Fatalf("ListTokens = %v, want %v (oldest first)", got, want)
	}
	mustNil(t, s.RevokeToken(c, "b"), "RevokeToken")
	if got, want := ids(), []string{"a", "d", "c"}; !slices.Equal(got, want) {
		t.Fatalf("ListTokens after revoke = %v, want %v", got, want)
	}
	_, err = s.TokenByHash(c, hash("b"))
	mustIs(t, err, store.ErrNotFound, "TokenByHash of a revoked token")
	mustIs(t, s.RevokeToken(c, "b"), store.ErrNotFound, "RevokeToken again")
}

// testTokenMachineScope: a UI or login token's machines come back from
// both lookups, in the order given; no scope (nil or empty) comes back empty.
func testTokenMachineScope(t *testing.T, s store.Store) {
	c := ctx(t)
	toks := []store.Token{
		{ID: "scoped", Kind: store.TokenUI, Name: "phone", Hash: hash("scoped"), CreatedAt: at(0), Machines: []string{"m2", "m1"}},
		{ID: "login", Kind: store.TokenLogin, Hash: hash("login"), CreatedAt: at(time.Second), ExpiresAt: at(time.Hour), Machines: []string{"m1"}},
		{ID: "nil", Kind: store.TokenUI, Hash: hash("nil"), CreatedAt: at(2 * time.Second)},
		{ID: "empty", Kind: store.TokenUI, Hash: hash("empty"), CreatedAt: at(3 * time.Second), Machines: []string{}},
		{ID: "client", Kind: store.TokenClient, Hash: hash("client"), CreatedAt: at(4 * time.Second)},
	}
	for _, tk := range toks {
		mustNil(t, s.CreateToken(c, tk), "CreateToken "+tk.ID)
	}
	same := func(got, want []string) bool { return len(got) == 0 && len(want) == 0 || slices.Equal(got, want) }
	for _, want := range toks {
		got, err := s.TokenByHash(c, want.Hash)
		mustNil(t, err, "TokenByHash "+want.ID)
		if !same(got.Machines, want.Machines) {
			t.Errorf("TokenByHash(%s).Machines = %q, want %q", want.ID, got.Machines, want.Machines)
		}
	}
	list, err := s.ListTokens(c)
	mustNil(t, err, "ListTokens")
	if len(list) != len(toks) {
		t.Fatalf("ListTokens lists %d tokens, want %d", len(list), len(toks))
	}
	for i, got := range list {
		if want := toks[i]; got.ID != want.ID || !same(got.Machines, want.Machines) {
			t.Errorf("ListTokens[%d] = %s %q, want %s %q", i, got.ID, got.Machines, want.ID, want.Machines)
		}
	}
}

// --- machines ---

func testMachines(t *testing.T, s store.Store) {
	c := ctx(t)
	ms, err := s.Machines(c)
	mustNil(t, err, "Machines empty")
	if len(ms) != 0 {
		t.Fatalf("a new store lists %d machines", len(ms))
	}
	caps := json.RawMessage(`{"machine": {"id": "m2"},  "workspaces": [] }`)
	mustNil(t, s.PutMachine(c, store.Machine{ID: "m2", Name: "old", TokenID: "t1", Capabilities: caps, LastSeen: at(0)}), "PutMachine m2")
	mustNil(t, s.PutMachine(c, store.Machine{ID: "m1", Name: "one", TokenID: "t1", LastSeen: at(0)}), "PutMachine m1")
	caps2 := json.RawMessage(`{"machine":{"id":"m2"},"workspaces":[{"id":"w"}]}`)
	replaced := store.Machine{ID: "m2", Name: "new", TokenID: "t2", Capabilities: caps2, LastSeen: at(time.Hour)}
	mustNil(t, s.PutMachine(c, replaced), "PutMachine replace")

	ms, err = s.Machines(c)
	mustNil(t, err, "Machines")
	if len(ms) != 2 || ms[0].ID != "m1" || ms[1].ID != "m2" {
		t.Fatalf("Machines = %+v, want m1 then m2", ms)
	}
	got := ms[1]
	if got.Name != replaced.Name || got.TokenID != replaced.TokenID || string(got.Capabilities) != string(caps2) ||
		!got.LastSeen.Equal(replaced.LastSeen) {
		t.Fatalf("replaced machine = %+v, want %+v", got, replaced)
	}
	if ms[0].Capabilities != nil {
		t.Fatalf("machine stored without capabilities reads back %q", ms[0].Capabilities)
	}
}

// --- sessions ---

func testSessionCreateAndGet(t *testing.T, s store.Store) {
	c := ctx(t)
	want := newSession(t, s, "s1", "m1")
	got, err := s.Session(c, "s1")
	mustNil(t, err, "Session")
	if got.ID != want.ID || got.MachineID != want.MachineID || got.WorkspaceID != want.WorkspaceID ||
		got.Adapter != want.Adapter || got.Title != want.Title || got.Mode != want.Mode || got.State != want.State ||
		got.Epoch != want.Epoch || !got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) ||
		got.LastSeq != 0 || string(got.Snapshot) != string(want.Snapshot) {
		t.Fatalf("Session = %+v, want %+v", got, want)
	}
	dup := want
	dup.Title = "other"
	mustIs(t, s.CreateSession(c, dup), store.ErrExists, "CreateSession with a taken ID")
	if got, _ := s.Session(c, "s1"); got.Title != want.Title {
		t.Fatalf("a refused CreateSession changed the session: title %q", got.Title)
	}

	_, err = s.Session(c, "missing")
	mustIs(t, err, store.ErrNotFound, "Session missing")
	if err == store.ErrNotFound { //nolint:errorlint // checking that it is wrapped, not bare
		t.Fatalf("Session missing returned the bare ErrNotFound; want it wrapped with context")
	}

	// LastSeq given at creation is where numbering continues.
	cont := store.Session{ID: "s2", MachineID: "m1", Epoch: "e2", LastSeq: 41}
	mustNil(t, s.CreateSession(c, cont), "CreateSession with LastSeq")
	got2 := appendOK(t, s, "s2", event("s2-a"))
	if got2[0].Seq != 42 {
		t.Fatalf("first append after LastSeq 41 got seq %d, want 42", got2[0].Seq)
	}
	if got, _ := s.Session(c, "s2"); got.CreatedAt.IsZero() || got.UpdatedAt.IsZero() {
		t.Fatalf("a session created without times has CreatedAt %v, UpdatedAt %v; want them set", got.CreatedAt, got.UpdatedAt)
	}
}

func testSessionList(t *testing.T, s store.Store) {
	c := ctx(t)
	// updated order (newest first): e, c, a, d, b
	for _, x := range []struct {
		id, machine string
		updated     time.Duration
	}{
		{"a", "m1", 3}, {"b", "m2", 1}, {"c", "m1", 4}, {"d", "m2", 2}, {"e", "m1", 5},
	} {
		ss := store.Session{ID: x.id, MachineID: x.machine, Epoch: "e", CreatedAt: at(0), UpdatedAt: at(x.updated * time.Minute)}
		mustNil(t, s.CreateSession(c, ss), "CreateSession "+x.id)
	}
	ids := func(machine string, limit int) []string {
		t.Helper()
		list, err := s.ListSessions(c, machine, limit)
		mustNil(t, err, "ListSessions")
		out := []string{}
		for _, ss := range list {
			if machine != "" && ss.MachineID != machine {
				t.Fatalf("ListSessions(%q) returned a session of %s", machine, ss.MachineID)
			}
			out = append(out, ss.ID)
		}
		return out
	}
	for _, tc := range []struct {
		machine string
		limit   int
		want    []string
	}{
		{"", 0, []string{"e", "c", "a", "d", "b"}},
		{"", 2, []string{"e", "c"}},
		{"m1", 0, []string{"e", "c", "a"}},
		{"m2", 10, []string{"d", "b"}},
		{"m2", 1, []string{"d"}},
		{"nope", 0, []string{}},
	} {
		if got := ids(tc.machine, tc.limit); !slices.Equal(got, tc.want) {
			t.Fatalf("ListSessions(%q, %d) = %v, want %v", tc.machine, tc.limit, got, tc.want)
		}
	}
	// An append makes b the most recently updated.
	appendOK(t, s, "b", event("b-1"))
	if got := ids("", 1); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("after an append to b, ListSessions first = %v, want [b]", got)
	}
}

func testSessionUpdate(t *testing.T, s store.Store) {
	c := ctx(t)
	orig := newSession(t, s, "s1", "m1")
	appendOK(t, s, "s1", event("e1"), event("e2"))
	upd := store.Session{
		ID: "s1", Title: "renamed", Mode: "plan", State: "running", UpdatedAt: at(time.Hour),
		Snapshot: json.RawMessage(`{"turns":[1]}`),
		// Not mutable: must be ignored.
		MachineID: "m9", WorkspaceID: "w9", Adapter: "other", Epoch: "e9", LastSeq: 99, CreatedAt: at(48 * time.Hour),
	}
	mustNil(t, s.UpdateSession(c, upd), "UpdateSession")
	got, err := s.Session(c, "s1")
	mustNil(t, err, "Session")
	if got.Mode != upd.Mode || got.State != upd.State || !got.UpdatedAt.Equal(upd.UpdatedAt) ||
		string(got.Snapshot) != string(upd.Snapshot) {
		t.Fatalf("mutable fields not written: %+v", got)
	}
	// The title is a person's (RenameSession): a checkpoint leaves it.
	if got.Title != orig.Title {
		t.Fatalf("UpdateSession wrote the title %q (was %q)", got.Title, orig.Title)
	}
	if got.MachineID != orig.MachineID || got.WorkspaceID != orig.WorkspaceID || got.Adapter != orig.Adapter ||
		got.Epoch != orig.Epoch || got.LastSeq != 2 || !got.CreatedAt.Equal(orig.CreatedAt) {
		t.Fatalf("UpdateSession changed a field it must not: %+v (was %+v, last seq 2)", got, orig)
	}
	mustIs(t, s.UpdateSession(c, store.Session{ID: "missing", Title: "x"}), store.ErrNotFound, "UpdateSession missing")
}

// --- events ---

func testEventsNumbered(t *testing.T, s store.Store) {
	c := ctx(t)
	newSession(t, s, "s1", "m1")
	var want []store.Event
	for i := range 3 {
		got := appendOK(t, s, "s1", event(fmt.Sprintf("one-%d", i)))
		if got[0].Seq != uint64(i+1) || got[0].Duplicate {
			t.Fatalf("append %d got seq %d duplicate %v, want seq %d", i, got[0].Seq, got[0].Duplicate, i+1)
		}
		want = append(want, got...)
	}
	batch := appendOK(t, s, "s1", events("batch", 4)...)
	if got := seqs(batch); !slices.Equal(got, span(4, 7)) {
		t.Fatalf("batch seqs = %v, want 4..7", got)
	}
	want = append(want, batch...)

	stored := allEvents(t, s, "s1")
	if len(stored) != len(want) {
		t.Fatalf("Events returned %d, want %d", len(stored), len(want))
	}
	for i, ev := range stored {
		w := want[i]
		if ev.Seq != uint64(i+1) || ev.MessageID != w.MessageID || ev.Type != w.Type ||
			string(ev.Data) != string(w.Data) || !ev.CreatedAt.Equal(w.CreatedAt) || ev.Duplicate {
			t.Fatalf("event %d = %+v, want %+v", i, ev, w)
		}
	}
	ss, err := s.Session(c, "s1")
	mustNil(t, err, "Session")
	if ss.LastSeq != 7 {
		t.Fatalf("LastSeq = %d, want 7", ss.LastSeq)
	}
	if !ss.UpdatedAt.After(at(0)) {
		t.Fatalf("UpdatedAt %v did not move past the creation time %v", ss.UpdatedAt, at(0))
	}
	// Within a second UpdatedAt stays: moving it with every batch rewrites
	// the session indexes' entries in each commit.
	appendOK(t, s, "s1", event("within-a-second"))
	again, err := s.Session(c, "s1")
	mustNil(t, err, "Session")
	if step := again.UpdatedAt.Sub(ss.UpdatedAt); again.LastSeq != 8 || step != 0 && step < time.Second {
		t.Fatalf("an append right after moved UpdatedAt by %v (last seq %d); want 0, or a second or more on a slow machine", step, again.LastSeq)
	}
	empty, err := s.AppendEvents(c, "s1", nil)
	mustNil(t, err, "AppendEvents with no events")
	if len(empty) != 0 {
		t.Fatalf("AppendEvents(nil) returned %d events", len(empty))
	}
}

func testEventsDedup(t *testing.T, s store.Store) {
	c := ctx(t)
	newSession(t, s, "s1", "m1")
	newSession(t, s, "s2", "m1")

	got := appendOK(t, s, "s1", event("a"), event("b"), event("a"))
	if got[0].Seq != 1 || got[1].Seq != 2 || got[0].Duplicate || got[1].Duplicate {
		t.Fatalf("first batch = %+v, want a=1, b=2", got)
	}
	if !got[2].Duplicate || got[2].Seq != 1 {
		t.Fatalf("a repeated within a batch = seq %d duplicate %v, want duplicate of seq 1", got[2].Seq, got[2].Duplicate)
	}
	got = appendOK(t, s, "s1", event("c"), event("b"))
	if got[0].Seq != 3 || got[0].Duplicate || !got[1].Duplicate || got[1].Seq != 2 {
		t.Fatalf("second batch = %+v, want c=3 and b a duplicate of seq 2", got)
	}
	before, err := s.Session(c, "s1")
	mustNil(t, err, "Session")
	got = appendOK(t, s, "s1", event("a"), event("c"))
	if !got[0].Duplicate || got[0].Seq != 1 || !got[1].Duplicate || got[1].Seq != 3 {
		t.Fatalf("all-duplicate batch = %+v, want duplicates of 1 and 3", got)
	}
	after, err := s.Session(c, "s1")
	mustNil(t, err, "Session")
	if after.LastSeq != 3 || !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Fatalf("an all-duplicate batch moved the session: last seq %d, updated %v (was %v)", after.LastSeq, after.UpdatedAt, before.UpdatedAt)
	}
	stored := allEvents(t, s, "s1")
	var ids []string
	for _, ev := range stored {
		ids = append(ids, ev.MessageID)
	}
	if !slices.Equal(ids, []string{"a", "b", "c"}) || !slices.Equal(seqs(stored), span(1, 3)) {
		t.Fatalf("stored %v with seqs %v, want a, b, c at 1..3", ids, seqs(stored))
	}

	// Message IDs are per session: in another session the same ID is that
	// session's own event, and s1 is untouched.
	got = appendOK(t, s, "s2", event("b"), event("z"), event("b"))
	if got[0].Duplicate || got[0].Seq != 1 || got[1].Duplicate || got[1].Seq != 2 || !got[2].Duplicate || got[2].Seq != 1 {
		t.Fatalf("b, z, b appended to s2 = %+v, want b=1, z=2, then b a duplicate of 1", got)
	}
	if s2 := allEvents(t, s, "s2"); len(s2) != 2 || s2[0].MessageID != "b" || s2[1].MessageID != "z" {
		t.Fatalf("s2 holds %+v, want b, z", s2)
	}
	if s1 := allEvents(t, s, "s1"); len(s1) != 3 {
		t.Fatalf("s1 holds %d events after s2's appends, want 3", len(s1))
	}
	got = appendOK(t, s, "s1", event("z"))
	if got[0].Duplicate || got[0].Seq != 4 {
		t.Fatalf("s2's z appended to s1 = %+v, want seq 4", got[0])
	}
}

func testEventsConcurrentAppend(t *testing.T, s store.Store) {
	c := ctx(t)
	newSession(t, s, "s1", "m1")
	const (
		writers = 8
		rounds  = 12 // per writer: alternately 1 and 3 events
	)
	results := make([][]store.Event, writers)
	shared := make([]store.Event, writers)
	errs := make([]error, writers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			<-start
			for r := range rounds {
				n := 1 + 2*(r%2)
				evs := events(fmt.Sprintf("w%d-r%d", w, r), n)
				if r == rounds/2 {
					// Every writer also sends the same message once.
					evs = append(evs, event("shared"))
				}
				got, err := s.AppendEvents(c, "s1", evs)
				if err != nil {
					errs[w] = err
					return
				}
				for _, ev := range got {
					if ev.MessageID == "shared" {
						shared[w] = ev
					} else {
						results[w] = append(results[w], ev)
					}
				}
			}
		})
	}
	close(start)
	wg.Wait()
	for w, err := range errs {
		mustNil(t, err, fmt.Sprintf("writer %d", w))
	}

	var all []uint64
	bySeq := map[uint64]string{}
	for _, r := range results {
		for _, ev := range r {
			if ev.Duplicate {
				t.Fatalf("unique message %s reported as a duplicate", ev.MessageID)
			}
			all = append(all, ev.Seq)
			bySeq[ev.Seq] = ev.MessageID
		}
	}
	winners := 0
	var sharedSeq uint64
	for _, ev := range shared {
		if !ev.Duplicate {
			winners++
			sharedSeq = ev.Seq
			all = append(all, ev.Seq)
			bySeq[ev.Seq] = "shared"
		}
	}
	if winners != 1 {
		t.Fatalf("the shared message was stored %d times, want once", winners)
	}
	for w, ev := range shared {
		if ev.Seq != sharedSeq {
			t.Fatalf("writer %d saw the shared message at seq %d, stored at %d", w, ev.Seq, sharedSeq)
		}
	}
	n := uint64(len(all))
	slices.Sort(all)
	if !slices.Equal(all, span(1, n)) {
		t.Fatalf("returned seqs are not exactly 1..%d: %v", n, all)
	}
	stored := allEvents(t, s, "s1")
	if !slices.Equal(seqs(stored), span(1, n)) {
		t.Fatalf("stored seqs are not exactly 1..%d: %v", n, seqs(stored))
	}
	for _, ev := range stored {
		if bySeq[ev.Seq] != ev.MessageID {
			t.Fatalf("seq %d holds %s, but AppendEvents returned it for %s", ev.Seq, ev.MessageID, bySeq[ev.Seq])
		}
	}
	ss, err := s.Session(c, "s1")
	mustNil(t, err, "Session")
	if ss.LastSeq != n {
		t.Fatalf("LastSeq = %d, want %d", ss.LastSeq, n)
	}
}

func testEventsConcurrentCrossSessionDedup(t *testing.T, s store.Store) {
	c := ctx(t)
	newSession(t, s, "s1", "m1")
	newSession(t, s, "s2", "m1")
	const n = 16
	got := make([]store.Event, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			sid := []string{"s1", "s2"}[i%2]
			evs, err := s.AppendEvents(c, sid, []store.Event{event("same")})
			errs[i] = err
			if err == nil {
				got[i] = evs[0]
			}
		})
	}
	close(start)
	wg.Wait()
	stored := map[string]int{}
	for i := range n {
		mustNil(t, errs[i], "AppendEvents")
		if !got[i].Duplicate {
			stored[[]string{"s1", "s2"}[i%2]]++
		}
		if got[i].Seq != 1 {
			t.Fatalf("append %d of one message ID got seq %d, want 1 (stored or duplicate)", i, got[i].Seq)
		}
	}
	for _, sid := range []string{"s1", "s2"} {
		if rows := len(allEvents(t, s, sid)); stored[sid] != 1 || rows != 1 {
			t.Fatalf("one message ID appended concurrently, 8 times to %s: reported stored %d times, %d rows; want 1 and 1", sid, stored[sid], rows)
		}
	}
}

func testEventsAfterAndLimit(t *testing.T, s store.Store) {
	c := ctx(t)
	newSession(t, s, "s1", "m1")
	appendOK(t, s, "s1", events("e", 10)...)
	for _, tc := range []struct {
		after uint64
		limit int
		want  []uint64
	}{
		{0, 0, span(1, 10)},
		{3, 4, span(4, 7)},
		{8, 0, span(9, 10)},
		{8, 100, span(9, 10)},
		{0, 1, span(1, 1)},
		{10, 0, nil},
		{100, 5, nil},
	} {
		evs, err := s.Events(c, "s1", tc.after, tc.limit)
		mustNil(t, err, "Events")
		if got := seqs(evs); !slices.Equal(got, tc.want) {
			t.Fatalf("Events(after %d, limit %d) = %v, want %v", tc.after, tc.limit, got, tc.want)
		}
	}
}

// testEventsDedupAfterTrimAndDelete: dedup covers exactly the retained
// events, through trims and a session deleted and made again.
func testEventsDedupAfterTrimAndDelete(t *testing.T, s store.Store) {
	c := ctx(t)
	newSession(t, s, "s1", "m1")
	appendOK(t, s, "s1", events("e", 10)...)
	mustNil(t, s.Trim(c, "s1", 4), "Trim 4")
	retained := allEvents(t, s, "s1")
	if len(retained) != 4 {
		t.Fatalf("%d events retained, want 4", len(retained))
	}
	trimmed := events("e", 10)[2] // seq 3, trimmed
	got := appendOK(t, s, "s1", event(retained[1].MessageID), trimmed)
	if !got[0].Duplicate || got[0].Seq != retained[1].Seq {
		t.Fatalf("a retained event sent again = %+v, want a duplicate of seq %d", got[0], retained[1].Seq)
	}
	if got[1].Duplicate || got[1].Seq != 11 {
		t.Fatalf("a trimmed event's ID sent again = %+v, want stored at seq 11", got[1])
	}
	mustNil(t, s.DeleteSession(c, "s1"), "DeleteSession")
	newSession(t, s, "s1", "m1")
	got = appendOK(t, s, "s1", event(retained[1].MessageID))
	if got[0].Duplicate || got[0].Seq != 1 {
		t.Fatalf("an event of a deleted session sent to its namesake = %+v, want stored at seq 1", got[0])
	}
}

func testEventsTrim(t *testing.T, s store.Store) {
	c := ctx(t)
	newSession(t, s, "s1", "m1")
	oldest, err := s.OldestSeq(c, "s1")
	mustNil(t, err, "OldestSeq empty")
	if oldest != 0 {
		t.Fatalf("OldestSeq of an empty session = %d, want 0", oldest)
	}
	appendOK(t, s, "s1", events("e", 10)...)
	mustNil(t, s.Trim(c, "s1", 4), "Trim 4")
	oldest, err = s.OldestSeq(c, "s1")
	mustNil(t, err, "OldestSeq")
	if oldest != 7 {
		t.Fatalf("OldestSeq after keeping 4 of 10 = %d, want 7", oldest)
	}
	if got := seqs(allEvents(t, s, "s1")); !slices.Equal(got, span(7, 10)) {
		t.Fatalf("after Trim(4) events = %v, want 7..10", got)
	}
	evs, err := s.Events(c, "s1", 2, 0)
	mustNil(t, err, "Events after a trimmed seq")
	if got := seqs(evs); !slices.Equal(got, span(7, 10)) {
		t.Fatalf("Events(after 2) after the trim = %v, want 7..10 (the master compares with OldestSeq)", got)
	}
	mustNil(t, s.Trim(c, "s1", 100), "Trim 100")
	if got := seqs(allEvents(t, s, "s1")); !slices.Equal(got, span(7, 10)) {
		t.Fatalf("Trim with keep above the count dropped events: %v", got)
	}
	mustNil(t, s.Trim(c, "s1", 0), "Trim 0")
	if got := allEvents(t, s, "s1"); len(got) != 0 {
		t.Fatalf("Trim(0) left %v", seqs(got))
	}
	oldest, err = s.OldestSeq(c, "s1")
	mustNil(t, err, "OldestSeq")
	ss, err := s.Session(c, "s1")
	mustNil(t, err, "Session")
	if oldest != 0 || ss.LastSeq != 10 {
		t.Fatalf("after Trim(0): OldestSeq %d LastSeq %d, want 0 and 10", oldest, ss.LastSeq)
	}
	if got := appendOK(t, s, "s1", event("next")); got[0].Seq != 11 {
		t.Fatalf("append after trimming everything got seq %d, want 11 (seqs are never reused)", got[0].Seq)
	}
	if err := s.Trim(c, "s1", -1); err == nil {
		t.Fatal("Trim with a negative keep succeeded")
	}
}

func testEventsUnknownSession(t *testing.T, s store.Store) {
	c := ctx(t)
	_, err := s.AppendEvents(c, "missing", []store.Event{event("x")})
	mustIs(t, err, store.ErrNotFound, "AppendEvents to a missing session")
	_, err = s.Events(c, "missing", 0, 0)
	mustIs(t, err, store.ErrNotFound, "Events of a missing session")
	_, err = s.OldestSeq(c, "missing")
	mustIs(t, err, store.ErrNotFound, "OldestSeq of a missing session")
	mustIs(t, s.Trim(c, "missing", 1), store.ErrNotFound, "Trim of a missing session")
	_, err = s.OpenInteractions(c, "missing")
	mustIs(t, err, store.ErrNotFound, "OpenInteractions of a missing session")
	// The refused message was not stored anywhere.
	newSession(t, s, "s1", "m1")
	if got := appendOK(t, s, "s1", event("x")); got[0].Duplicate || got[0].Seq != 1 {
		t.Fatalf("a message refused for a missing session is known to the store: %+v", got[0])
	}
}

// --- interactions ---

func interaction(sessionID, id string, created time.Duration) store.Interaction {
	return store.Interaction{
		SessionID: sessionID, ID: id, TurnID: "turn-1",
		Request:   json.RawMessage(fmt.Sprintf(`{"type": "agent.interaction.request", "payload": {"interaction_id": %q}}`, id)),
		CreatedAt: at(created),
	}
}

func getter(t *testing.T, s store.Store) InteractionGetter {
	t.Helper()
	g, ok := s.(InteractionGetter)
	if !ok {
		t.Fatalf("%T does not implement storetest.InteractionGetter", s)
	}
	return g
}

func openIDs(t *testing.T, s store.Store, sessionID string) []string {
	t.Helper()
	ins, err := s.OpenInteractions(ctx(t), sessionID)
	mustNil(t, err, "OpenInteractions")
	out := []string{}
	for _, in := range ins {
		if in.SessionID != sessionID || in.Outcome != "" {
			t.Fatalf("OpenInteractions(%s) returned %+v", sessionID, in)
		}
		out = append(out, in.ID)
	}
	return out
}

func testInteractions(t *testing.T, s store.Store) {
	c := ctx(t)
	newSession(t, s, "s1", "m1")
	newSession(t, s, "s2", "m1")
	if got := openIDs(t, s, "s1"); len(got) != 0 {
		t.Fatalf("a new session has open interactions %v", got)
	}
	// Opened out of creation order; i3 and i4 share a time and keep their
	// opening order.
	for _, in := range []store.Interaction{
		interaction("s1", "i2", 2*time.Second),
		interaction("s1", "i1", time.Second),
		interaction("s1", "i4", 3*time.Second),
		interaction("s1", "i3", 3*time.Second),
		interaction("s2", "i1", 0), // the same ID in another session is another interaction
	} {
		mustNil(t, s.OpenInteraction(c, in), "OpenInteraction "+in.SessionID+"/"+in.ID)
	}
	mustIs(t, s.OpenInteraction(c, interaction("s1", "i1", 0)), store.ErrExists, "OpenInteraction taken")
	mustIs(t, s.OpenInteraction(c, interaction("missing", "i1", 0)), store.ErrNotFound, "OpenInteraction in a missing session")

	ins, err := s.OpenInteractions(c, "s1")
	mustNil(t, err, "OpenInteractions")
	if len(ins) != 4 {
		t.Fatalf("OpenInteractions = %d, want 4", len(ins))
	}
	if w := interaction("s1", "i1", time.Second); ins[0].ID != "i1" || ins[0].TurnID != w.TurnID ||
		string(ins[0].Request) != string(w.Request) || !ins[0].CreatedAt.Equal(w.CreatedAt) || ins[0].Answer != nil {
		t.Fatalf("OpenInteractions[0] = %+v, want %+v", ins[0], w)
	}
	if got := openIDs(t, s, "s1"); !slices.Equal(got, []string{"i1", "i2", "i4", "i3"}) {
		t.Fatalf("OpenInteractions = %v, want i1 i2 i4 i3 (oldest first)", got)
	}

	answer := json.RawMessage(`{"choice": "yes"}`)
	won, err := s.SettleInteraction(c, "s1", "i2", "answered", answer)
	mustNil(t, err, "SettleInteraction")
	if !won {
		t.Fatal("the first SettleInteraction did not win")
	}
	won, err = s.SettleInteraction(c, "s1", "i2", "timeout", nil)
	mustNil(t, err, "SettleInteraction again")
	if won {
		t.Fatal("a second SettleInteraction won")
	}
	got, err := getter(t, s).Interaction(c, "s1", "i2")
	mustNil(t, err, "Interaction")
	if got.Outcome != "answered" || string(got.Answer) != string(answer) {
		t.Fatalf("settled interaction = outcome %q answer %s, want answered %s (the first settle)", got.Outcome, got.Answer, answer)
	}
	won, err = s.SettleInteraction(c, "s1", "i3", "timeout", nil)
	mustNil(t, err, "SettleInteraction timeout")
	if !won {
		t.Fatal("settling i3 did not win")
	}
	if got, _ := getter(t, s).Interaction(c, "s1", "i3"); got.Outcome != "timeout" || got.Answer != nil {
		t.Fatalf("timed-out interaction = %+v", got)
	}
	if got := openIDs(t, s, "s1"); !slices.Equal(got, []string{"i1", "i4"}) {
		t.Fatalf("OpenInteractions after settling i2, i3 = %v, want i1 i4", got)
	}
	if got := openIDs(t, s, "s2"); !slices.Equal(got, []string{"i1"}) {
		t.Fatalf("OpenInteractions(s2) = %v, want i1", got)
	}
	_, err = s.SettleInteraction(c, "s1", "nope", "answered", answer)
	mustIs(t, err, store.ErrNotFound, "SettleInteraction unknown")
	_, err = s.SettleInteraction(c, "missing", "i1", "answered", answer)
	mustIs(t, err, store.ErrNotFound, "SettleInteraction in a missing session")
	_, err = getter(t, s).Interaction(c, "s1", "nope")
	mustIs(t, err, store.ErrNotFound, "Interaction unknown")
	if _, err := s.SettleInteraction(c, "s1", "i1", "ignored", nil); err == nil {
		t.Fatal("SettleInteraction with an unknown outcome succeeded")
	}
	if got := openIDs(t, s, "s1"); !slices.Equal(got, []string{"i1", "i4"}) {
		t.Fatalf("a refused settle changed the open interactions: %v", got)
	}
}

func testInteractionSettleOnce(t *testing.T, s store.Store) {
	c := ctx(t)
	newSession(t, s, "s1", "m1")
	mustNil(t, s.OpenInteraction(c, interaction("s1", "i1", 0)), "OpenInteraction")
	const n = 20
	won := make([]bool, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			won[i], errs[i] = s.SettleInteraction(c, "s1", "i1", "answered", json.RawMessage(fmt.Sprintf(`{"from":%d}`, i)))
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i := range n {
		mustNil(t, errs[i], "SettleInteraction")
		if won[i] {
			if winner >= 0 {
				t.Fatalf("callers %d and %d both won", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("no concurrent SettleInteraction won")
	}
	got, err := getter(t, s).Interaction(c, "s1", "i1")
	mustNil(t, err, "Interaction")
	if want := fmt.Sprintf(`{"from":%d}`, winner); got.Outcome != "answered" || string(got.Answer) != want {
		t.Fatalf("stored outcome %q answer %s, want answered %s (the winner's)", got.Outcome, got.Answer, want)
	}
	if got := openIDs(t, s, "s1"); len(got) != 0 {
		t.Fatalf("settled interaction still open: %v", got)
	}
}

// --- persistence ---

func testPersistence(t *testing.T, open Opener) {
	c := ctx(t)
	s := open(t)
	mustNil(t, s.CreateToken(c, store.Token{ID: "t1", Kind: store.TokenClient, Hash: hash("t1"), CreatedAt: at(0)}), "CreateToken")
	mustNil(t, s.CreateToken(c, store.Token{ID: "t2", Kind: store.TokenLogin, Hash: hash("t2"), CreatedAt: at(0)}), "CreateToken")
	mustNil(t, s.CreateToken(c, store.Token{ID: "t3", Kind: store.TokenUI, Hash: hash("t3"), CreatedAt: at(0), Machines: []string{"m1"}}), "CreateToken")
	mustNil(t, s.ConsumeToken(c, "t2"), "ConsumeToken")
	mustNil(t, s.PutMachine(c, store.Machine{ID: "m1", Name: "box", Capabilities: json.RawMessage(`{"a":1}`), LastSeen: at(0)}), "PutMachine")
	sess := newSession(t, s, "s1", "m1")
	written := appendOK(t, s, "s1", events("e", 5)...)
	mustNil(t, s.Trim(c, "s1", 3), "Trim")
	mustNil(t, s.OpenInteraction(c, interaction("s1", "open", 0)), "OpenInteraction")
	mustNil(t, s.OpenInteraction(c, interaction("s1", "done", 0)), "OpenInteraction")
	if won, err := s.SettleInteraction(c, "s1", "done", "answered", json.RawMessage(`"ok"`)); err != nil || !won {
		t.Fatalf("SettleInteraction = %v, %v", won, err)
	}
	persistArtifacts(t, s)
	mustNil(t, s.Close(), "Close")

	s = open(t)
	checkArtifactsPersisted(t, s)
	if _, err := s.TokenByHash(c, hash("t1")); err != nil {
		t.Fatalf("token lost across reopen: %v", err)
	}
	_, err := s.TokenByHash(c, hash("t2"))
	mustIs(t, err, store.ErrNotFound, "consumed token after reopen")
	if tk, err := s.TokenByHash(c, hash("t3")); err != nil || !slices.Equal(tk.Machines, []string{"m1"}) {
		t.Fatalf("scoped token after reopen: %q, %v", tk.Machines, err)
	}
	ms, err := s.Machines(c)
	mustNil(t, err, "Machines")
	if len(ms) != 1 || ms[0].Name != "box" || string(ms[0].Capabilities) != `{"a":1}` {
		t.Fatalf("machines after reopen = %+v", ms)
	}
	got, err := s.Session(c, "s1")
	mustNil(t, err, "Session after reopen")
	if got.Epoch != sess.Epoch || got.LastSeq != 5 || string(got.Snapshot) != string(sess.Snapshot) {
		t.Fatalf("session after reopen = %+v", got)
	}
	evs := allEvents(t, s, "s1")
	if !slices.Equal(seqs(evs), span(3, 5)) {
		t.Fatalf("events after reopen = %v, want 3..5", seqs(evs))
	}
	for i, ev := range evs {
		if string(ev.Data) != string(written[i+2].Data) {
			t.Fatalf("event %d data changed across reopen", ev.Seq)
		}
	}
	if got := openIDs(t, s, "s1"); !slices.Equal(got, []string{"open"}) {
		t.Fatalf("open interactions after reopen = %v, want [open]", got)
	}
	if won, err := s.SettleInteraction(c, "s1", "done", "answered", nil); err != nil || won {
		t.Fatalf("settling a settled interaction after reopen = %v, %v; want false, nil", won, err)
	}
	// Numbering and dedup continue.
	more := appendOK(t, s, "s1", event("e-4"), event("new"))
	if !more[0].Duplicate || more[0].Seq != 5 || more[1].Duplicate || more[1].Seq != 6 {
		t.Fatalf("append after reopen = %+v, want e-4 a duplicate of 5 and new at 6", more)
	}
	mustNil(t, s.Close(), "Close")
}

// --- context and input ---

// testPing: an open store answers a ping (a cancelled context, in
// testContextCancelled, does not).
func testPing(t *testing.T, s store.Store) {
	mustNil(t, s.Ping(ctx(t)), "Ping")
}

func testContextCancelled(t *testing.T, s store.Store) {
	newSession(t, s, "s1", "m1")
	mustNil(t, s.OpenInteraction(ctx(t), interaction("s1", "i1", 0)), "OpenInteraction")
	c, cancel := context.WithCancel(t.Context())
	cancel()
	calls := map[string]func() error{
		"CreateToken": func() error {
			return s.CreateToken(c, store.Token{ID: "t", Kind: store.TokenUI, Hash: hash("t")})
		},
		"TokenByHash":   func() error { _, err := s.TokenByHash(c, hash("t")); return err },
		"ConsumeToken":  func() error { return s.ConsumeToken(c, "t") },
		"RevokeToken":   func() error { return s.RevokeToken(c, "t") },
		"ListTokens":    func() error { _, err := s.ListTokens(c); return err },
		"PutMachine":    func() error { return s.PutMachine(c, store.Machine{ID: "m"}) },
		"Machines":      func() error { _, err := s.Machines(c); return err },
		"CreateSession": func() error { return s.CreateSession(c, store.Session{ID: "s2", MachineID: "m", Epoch: "e"}) },
		"Session":       func() error { _, err := s.Session(c, "s1"); return err },
		"ListSessions":  func() error { _, err := s.ListSessions(c, "", 0); return err },
		"UpdateSession": func() error { return s.UpdateSession(c, store.Session{ID: "s1"}) },
		"FindSessions": func() error {
			_, err := s.FindSessions(c, store.SessionFilter{Query: "x"})
			return err
		},
		"RenameSession":  func() error { return s.RenameSession(c, "s1", "x") },
		"ArchiveSession": func() error { return s.ArchiveSession(c, "s1", true) },
		"DeleteSession":  func() error { return s.DeleteSession(c, "s1") },
		"AppendEvents":   func() error { _, err := s.AppendEvents(c, "s1", []store.Event{event("x")}); return err },
		"Events":         func() error { _, err := s.Events(c, "s1", 0, 0); return err },
		"OldestSeq":      func() error { _, err := s.OldestSeq(c, "s1"); return err },
		"Trim":           func() error { return s.Trim(c, "s1", 0) },
		"OpenInteraction": func() error {
			return s.OpenInteraction(c, interaction("s1", "i2", 0))
		},
		"SettleInteraction": func() error {
			_, err := s.SettleInteraction(c, "s1", "i1", "answered", nil)
			return err
		},
		"OpenInteractions": func() error { _, err := s.OpenInteractions(c, "s1"); return err },
		"PutPushSubscription": func() error {
			return s.PutPushSubscription(c, pushSub("https://push.example/a", "t", 0), 0)
		},
		"DeletePushSubscription": func() error { return s.DeletePushSubscription(c, "https://push.example/a", "") },
		"PushSubscriptions":      func() error { _, err := s.PushSubscriptions(c, time.Now()); return err },
		"Ping":                   func() error { return s.Ping(c) },
	}
	maps.Copy(calls, artifactCalls(c, s))
	for name, call := range calls {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: got %v, want an error wrapping context.Canceled", name, err)
		}
	}
	// Nothing was written.
	if got := allEvents(t, s, "s1"); len(got) != 0 {
		t.Fatalf("an append with a cancelled context stored %d events", len(got))
	}
	if got := openIDs(t, s, "s1"); !slices.Equal(got, []string{"i1"}) {
		t.Fatalf("a settle with a cancelled context changed the open interactions: %v", got)
	}
}

func testBadInput(t *testing.T, s store.Store) {
	c := ctx(t)
	newSession(t, s, "s1", "m1")
	type badCase struct {
		name, want string // want: in the message
		err        error
	}
	var cases []badCase
	add := func(name, want string, err error) { cases = append(cases, badCase{name, want, err}) }

	add("CreateSession empty ID", "session ID", s.CreateSession(c, store.Session{MachineID: "m", Epoch: "e"}))
	add("CreateSession empty epoch", "epoch", s.CreateSession(c, store.Session{ID: "x", MachineID: "m"}))
	_, err := s.Session(c, "")
	add("Session empty ID", "session ID", err)
	_, err = s.AppendEvents(c, "", []store.Event{event("a")})
	add("AppendEvents empty session ID", "session ID", err)
	_, err = s.AppendEvents(c, "s1", []store.Event{event("ok"), {Type: "t", Data: []byte("{}")}})
	add("AppendEvents empty message ID", "message ID", err)
	_, err = s.AppendEvents(c, "s1", []store.Event{{MessageID: "m", Data: []byte("{}")}})
	add("AppendEvents empty type", "type", err)
	_, err = s.AppendEvents(c, "s1", []store.Event{{MessageID: "m", Type: "t"}})
	add("AppendEvents no data", "data", err)
	_, err = s.Events(c, "", 0, 0)
	add("Events empty session ID", "session ID", err)
	add("CreateToken bad kind", "kind", s.CreateToken(c, store.Token{ID: "t", Kind: "admin", Hash: hash("t")}))
	add("CreateToken bad hash", "hash", s.CreateToken(c, store.Token{ID: "t", Kind: store.TokenUI, Hash: []byte("short")}))
	add("CreateToken client with machines", "machine scope", s.CreateToken(c, store.Token{ID: "t", Kind: store.TokenClient,
		Hash: hash("t"), Machines: []string{"m1"}}))
	add("CreateToken empty machine", "machine 1", s.CreateToken(c, store.Token{ID: "t", Kind: store.TokenUI,
		Hash: hash("t"), Machines: []string{"m1", ""}}))
	add("PutMachine empty ID", "machine ID", s.PutMachine(c, store.Machine{Name: "x"}))
	add("OpenInteraction empty ID", "interaction ID", s.OpenInteraction(c, store.Interaction{SessionID: "s1"}))
	_, err = s.SettleInteraction(c, "s1", "", "answered", nil)
	add("SettleInteraction empty ID", "interaction ID", err)
	add("RenameSession empty ID", "session ID", s.RenameSession(c, "", "x"))
	add("RenameSession long title", "title", s.RenameSession(c, "s1", strings.Repeat("x", 5000)))
	add("RenameSession not UTF-8", "UTF-8", s.RenameSession(c, "s1", "bad \xff"))
	add("ArchiveSession empty ID", "session ID", s.ArchiveSession(c, "", true))
	add("DeleteSession empty ID", "session ID", s.DeleteSession(c, ""))
	_, err = s.FindSessions(c, store.SessionFilter{Query: strings.Repeat("q", 5000)})
	add("FindSessions long query", "query", err)
	_, err = s.FindSessions(c, store.SessionFilter{Query: "bad \xff"})
	add("FindSessions query not UTF-8", "UTF-8", err)
	for _, b := range badArtifactInput(c, s) {
		err, _ := b[2].(error)
		add(b[0].(string), b[1].(string), err)
	}

	for _, tc := range cases {
		if tc.err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: error %q does not mention %q", tc.name, tc.err, tc.want)
		}
		if errors.Is(tc.err, store.ErrNotFound) || errors.Is(tc.err, store.ErrExists) {
			t.Errorf("%s: bad input reported as %v", tc.name, tc.err)
		}
	}
	// None of it was stored.
	if got := allEvents(t, s, "s1"); len(got) != 0 {
		t.Fatalf("a refused batch stored %d events (a batch is all or nothing)", len(got))
	}
	list, err := s.ListSessions(c, "", 0)
	mustNil(t, err, "ListSessions")
	if len(list) != 1 {
		t.Fatalf("refused sessions were stored: %d sessions", len(list))
	}
	if list[0].Title != "title s1" {
		t.Fatalf("a refused rename changed the title to %q", list[0].Title)
	}
}
