package storetest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/store"
)

// --- artifacts and download tokens ---

func artifact(sessionID, id string, created time.Duration) store.Artifact {
	return store.Artifact{
		SessionID: sessionID, ID: id, TurnID: "turn-1", Path: "out/" + id + ".csv", FileName: id + ".csv",
		Size: 1234, MimeType: "text/csv", ToolUseID: "toolu_" + id, CreatedAt: at(created),
	}
}

func artifactIDs(as []store.Artifact) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.ID
	}
	return out
}

// testArtifacts: registration is idempotent for the same artifact, refuses
// another one under a taken ID, is scoped per session, and lists the
// newest in registration order.
func testArtifacts(t *testing.T, s store.Store) {
	c := ctx(t)
	newSession(t, s, "s1", "m1")
	newSession(t, s, "s2", "m1")
	mustIs(t, s.PutArtifact(c, artifact("nope", "a1", 0)), store.ErrNotFound, "PutArtifact in an unknown session")

	// Registration order, not ID or time order, is the listing order.
	want := []store.Artifact{artifact("s1", "c", 3*time.Second), artifact("s1", "a", time.Second), artifact("s1", "b", 2*time.Second)}
	for _, a := range want {
		mustNil(t, s.PutArtifact(c, a), "PutArtifact "+a.ID)
	}
	got, err := s.Artifacts(c, "s1", 0)
	mustNil(t, err, "Artifacts")
	if !slices.Equal(got, want) {
		t.Fatalf("Artifacts = %+v\nwant %+v", got, want)
	}
	got, err = s.Artifacts(c, "s1", 2)
	mustNil(t, err, "Artifacts limit 2")
	if ids := artifactIDs(got); !slices.Equal(ids, []string{"a", "b"}) {
		t.Fatalf("Artifacts limit 2 = %v, want the newest two in order [a b]", ids)
	}

	// The same artifact again (a re-sent event) changes nothing.
	again := artifact("s1", "a", time.Hour)
	mustNil(t, s.PutArtifact(c, again), "PutArtifact the same artifact again")
	one, err := s.Artifact(c, "s1", "a")
	mustNil(t, err, "Artifact")
	if one != want[1] {
		t.Fatalf("Artifact after a repeat = %+v, want the first registration %+v", one, want[1])
	}
	// Another file under a taken ID is refused, whatever field differs.
	for name, change := range map[string]func(*store.Artifact){
		"path": func(a *store.Artifact) { a.Path = "elsewhere.csv" },
		"size": func(a *store.Artifact) { a.Size++ },
		"turn": func(a *store.Artifact) { a.TurnID = "turn-2" },
	} {
		other := artifact("s1", "a", 0)
		change(&other)
		mustIs(t, s.PutArtifact(c, other), store.ErrExists, "PutArtifact a different "+name+" under a taken ID")
	}
	if one, _ := s.Artifact(c, "s1", "a"); one != want[1] {
		t.Fatalf("a refused registration changed the artifact: %+v", one)
	}
	// IDs are per session.
	mustNil(t, s.PutArtifact(c, artifact("s2", "a", 0)), "PutArtifact the same ID in another session")
	got, err = s.Artifacts(c, "s2", 0)
	mustNil(t, err, "Artifacts s2")
	if ids := artifactIDs(got); !slices.Equal(ids, []string{"a"}) {
		t.Fatalf("Artifacts s2 = %v", ids)
	}
	_, err = s.Artifact(c, "s1", "zzz")
	mustIs(t, err, store.ErrNotFound, "Artifact unknown")
	_, err = s.Artifact(c, "nope", "a")
	mustIs(t, err, store.ErrNotFound, "Artifact in an unknown session")
	_, err = s.Artifacts(c, "nope", 0)
	mustIs(t, err, store.ErrNotFound, "Artifacts of an unknown session")
	newSession(t, s, "empty", "m1")
	if got, err := s.Artifacts(c, "empty", 0); err != nil || len(got) != 0 {
		t.Fatalf("Artifacts of a session without any = %v, %v", got, err)
	}
}

// testArtifactsConcurrentPut: the same artifact registered from many
// goroutines at once (a re-sent event racing the first) succeeds for all
// and is stored once.
func testArtifactsConcurrentPut(t *testing.T, s store.Store) {
	c := ctx(t)
	newSession(t, s, "s1", "m1")
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Go(func() { errs[i] = s.PutArtifact(c, artifact("s1", "same", 0)) })
	}
	wg.Wait()
	for i, err := range errs {
		mustNil(t, err, fmt.Sprintf("PutArtifact %d", i))
	}
	got, err := s.Artifacts(c, "s1", 0)
	mustNil(t, err, "Artifacts")
	if len(got) != 1 {
		t.Fatalf("one artifact registered concurrently is listed %d times", len(got))
	}
}

func downloadToken(id, sessionID, artifactID, owner string, expires time.Duration) store.DownloadToken {
	return store.DownloadToken{
		ID: id, Hash: hash("dl-" + id), SessionID: sessionID, ArtifactID: artifactID, OwnerID: owner,
		CreatedAt: at(0), ExpiresAt: at(expires),
	}
}

func uiToken(t *testing.T, s store.Store, id string) {
	t.Helper()
	mustNil(t, s.CreateToken(ctx(t), store.Token{ID: id, Kind: store.TokenUI, Hash: hash("ui-" + id), CreatedAt: at(0)}), "CreateToken "+id)
}

func sameDownload(a, b store.DownloadToken) bool {
	return a.ID == b.ID && bytes.Equal(a.Hash, b.Hash) && a.SessionID == b.SessionID && a.ArtifactID == b.ArtifactID &&
		a.OwnerID == b.OwnerID && a.CreatedAt.Equal(b.CreatedAt) && a.ExpiresAt.Equal(b.ExpiresAt)
}

// testDownloadTokens: tokens come back by hash, expired or not; a batch is
// all or none; unknown owners and artifacts are refused; revoking a token,
// its owner or sweeping expired ones removes exactly those.
func testDownloadTokens(t *testing.T, s store.Store) {
	c := ctx(t)
	newSession(t, s, "s1", "m1")
	mustNil(t, s.PutArtifact(c, artifact("s1", "a1", 0)), "PutArtifact")
	mustNil(t, s.PutArtifact(c, artifact("s1", "a2", 0)), "PutArtifact")
	uiToken(t, s, "u1")
	uiToken(t, s, "u2")
	mustNil(t, s.CreateDownloadTokens(c, nil), "CreateDownloadTokens of none")

	live := []store.DownloadToken{
		downloadToken("d1", "s1", "a1", "u1", time.Hour),
		downloadToken("d2", "s1", "a2", "u1", time.Hour),
		downloadToken("d3", "s1", "a1", "u2", time.Hour),
		downloadToken("old", "s1", "a1", "u2", time.Minute),
	}
	mustNil(t, s.CreateDownloadTokens(c, live), "CreateDownloadTokens")
	for _, want := range live {
		got, err := s.DownloadTokenByHash(c, want.Hash)
		mustNil(t, err, "DownloadTokenByHash "+want.ID)
		if !sameDownload(got, want) {
			t.Fatalf("DownloadTokenByHash(%s) = %+v, want %+v", want.ID, got, want)
		}
	}
	_, err := s.DownloadTokenByHash(c, hash("forged"))
	mustIs(t, err, store.ErrNotFound, "DownloadTokenByHash of an unknown secret")

	// All or none: one bad token keeps the whole batch out.
	bad := map[string]struct {
		batch []store.DownloadToken
		want  error
	}{
		"unknown owner":    {[]store.DownloadToken{downloadToken("n1", "s1", "a1", "u1", time.Hour), downloadToken("n2", "s1", "a1", "ghost", time.Hour)}, store.ErrNotFound},
		"unknown artifact": {[]store.DownloadToken{downloadToken("n3", "s1", "a1", "u1", time.Hour), downloadToken("n4", "s1", "nope", "u1", time.Hour)}, store.ErrNotFound},
		"unknown session":  {[]store.DownloadToken{downloadToken("n5", "nope", "a1", "u1", time.Hour)}, store.ErrNotFound},
		"taken ID":         {[]store.DownloadToken{downloadToken("n6", "s1", "a1", "u1", time.Hour), {ID: "d1", Hash: hash("fresh"), SessionID: "s1", ArtifactID: "a1", OwnerID: "u1", ExpiresAt: at(time.Hour)}}, store.ErrExists},
		"taken hash":       {[]store.DownloadToken{{ID: "n7", Hash: live[0].Hash, SessionID: "s1", ArtifactID: "a1", OwnerID: "u1", ExpiresAt: at(time.Hour)}}, store.ErrExists},
	}
	for name, tc := range bad {
		mustIs(t, s.CreateDownloadTokens(c, tc.batch), tc.want, "CreateDownloadTokens with "+name)
		for _, tk := range tc.batch {
			if got, err := s.DownloadTokenByHash(c, tk.Hash); err == nil && got.ID == tk.ID && !slices.ContainsFunc(live, func(l store.DownloadToken) bool { return l.ID == tk.ID }) {
				t.Fatalf("a refused batch (%s) stored %s", name, tk.ID)
			}
		}
	}

	mustNil(t, s.RevokeDownloadToken(c, "d2"), "RevokeDownloadToken")
	_, err = s.DownloadTokenByHash(c, live[1].Hash)
	mustIs(t, err, store.ErrNotFound, "a revoked download token")
	mustIs(t, s.RevokeDownloadToken(c, "d2"), store.ErrNotFound, "RevokeDownloadToken twice")

	// Revoking the owner revokes its download tokens, and only those.
	mustNil(t, s.RevokeToken(c, "u1"), "RevokeToken owner")
	_, err = s.DownloadTokenByHash(c, live[0].Hash)
	mustIs(t, err, store.ErrNotFound, "a download token whose owner was revoked")
	if _, err := s.DownloadTokenByHash(c, live[2].Hash); err != nil {
		t.Fatalf("another owner's download token went with u1: %v", err)
	}

	// The sweep deletes what expired at or before now, nothing else.
	n, err := s.DeleteExpiredDownloadTokens(c, at(time.Minute))
	mustNil(t, err, "DeleteExpiredDownloadTokens")
	if n != 1 {
		t.Fatalf("DeleteExpiredDownloadTokens deleted %d, want 1 (old)", n)
	}
	_, err = s.DownloadTokenByHash(c, live[3].Hash)
	mustIs(t, err, store.ErrNotFound, "an expired download token after the sweep")
	if _, err := s.DownloadTokenByHash(c, live[2].Hash); err != nil {
		t.Fatalf("the sweep deleted a live download token: %v", err)
	}
}

// testDownloadTokensTrim: TrimDownloadTokens keeps an owner's newest keep
// download tokens (by creation time), deletes the rest, touches no other
// owner's, and says how many went.
func testDownloadTokensTrim(t *testing.T, s store.Store) {
	c := ctx(t)
	newSession(t, s, "s1", "m1")
	mustNil(t, s.PutArtifact(c, artifact("s1", "a1", 0)), "PutArtifact")
	uiToken(t, s, "u1")
	uiToken(t, s, "u2")
	var mine []store.DownloadToken
	for i := range 5 {
		tk := downloadToken(fmt.Sprintf("m%d", i), "s1", "a1", "u1", time.Hour)
		tk.CreatedAt = at(time.Duration(i) * time.Minute)
		mine = append(mine, tk)
	}
	theirs := []store.DownloadToken{downloadToken("o1", "s1", "a1", "u2", time.Hour), downloadToken("o2", "s1", "a1", "u2", time.Hour)}
	mustNil(t, s.CreateDownloadTokens(c, append(slices.Clone(mine), theirs...)), "CreateDownloadTokens")
	live := func(ts []store.DownloadToken) []string {
		var ids []string
		for _, tk := range ts {
			if _, err := s.DownloadTokenByHash(c, tk.Hash); err == nil {
				ids = append(ids, tk.ID)
			}
		}
		return ids
	}
	n, err := s.TrimDownloadTokens(c, "u1", 3)
	mustNil(t, err, "TrimDownloadTokens")
	if n != 2 || !slices.Equal(live(mine), []string{"m2", "m3", "m4"}) {
		t.Fatalf("TrimDownloadTokens(u1, 3) deleted %d and kept %v, want 2 deleted and m2-m4 kept", n, live(mine))
	}
	if n, err := s.TrimDownloadTokens(c, "u1", 3); err != nil || n != 0 {
		t.Fatalf("TrimDownloadTokens again = %d, %v; want 0", n, err)
	}
	if got := live(theirs); len(got) != 2 {
		t.Fatalf("another owner's tokens went with u1's trim: %v left", got)
	}
	if n, err := s.TrimDownloadTokens(c, "u1", 0); err != nil || n != 3 || len(live(mine)) != 0 {
		t.Fatalf("TrimDownloadTokens(u1, 0) = %d, %v, %v left; want all 3 gone", n, err, live(mine))
	}
	if n, err := s.TrimDownloadTokens(c, "nobody", 1); err != nil || n != 0 {
		t.Fatalf("TrimDownloadTokens of an owner with none = %d, %v", n, err)
	}
}

// persistArtifacts writes what checkArtifactsPersisted expects after a
// reopen.
func persistArtifacts(t *testing.T, s store.Store) {
	c := ctx(t)
	mustNil(t, s.PutArtifact(c, artifact("s1", "a1", 0)), "PutArtifact")
	uiToken(t, s, "owner")
	mustNil(t, s.CreateDownloadTokens(c, []store.DownloadToken{downloadToken("d1", "s1", "a1", "owner", time.Hour)}), "CreateDownloadTokens")
}

func checkArtifactsPersisted(t *testing.T, s store.Store) {
	c := ctx(t)
	if got, err := s.Artifact(c, "s1", "a1"); err != nil || got != artifact("s1", "a1", 0) {
		t.Fatalf("artifact after reopen = %+v, %v", got, err)
	}
	want := downloadToken("d1", "s1", "a1", "owner", time.Hour)
	if got, err := s.DownloadTokenByHash(c, want.Hash); err != nil || !sameDownload(got, want) {
		t.Fatalf("download token after reopen = %+v, %v", got, err)
	}
}

// artifactCalls are the new methods for the cancelled-context test.
func artifactCalls(c context.Context, s store.Store) map[string]func() error {
	return map[string]func() error{
		"PutArtifact": func() error { return s.PutArtifact(c, artifact("s1", "x", 0)) },
		"Artifact":    func() error { _, err := s.Artifact(c, "s1", "x"); return err },
		"Artifacts":   func() error { _, err := s.Artifacts(c, "s1", 0); return err },
		"CreateDownloadTokens": func() error {
			return s.CreateDownloadTokens(c, []store.DownloadToken{downloadToken("x", "s1", "x", "u", time.Hour)})
		},
		"DownloadTokenByHash":         func() error { _, err := s.DownloadTokenByHash(c, hash("x")); return err },
		"RevokeDownloadToken":         func() error { return s.RevokeDownloadToken(c, "x") },
		"DeleteExpiredDownloadTokens": func() error { _, err := s.DeleteExpiredDownloadTokens(c, at(0)); return err },
		"TrimDownloadTokens":          func() error { _, err := s.TrimDownloadTokens(c, "u", 1); return err },
	}
}

// badArtifactInput lists refused arguments of the new methods: name, a
// word the error must mention, the error.
func badArtifactInput(c context.Context, s store.Store) [][3]any {
	noHash := downloadToken("t", "s1", "a", "u", time.Hour)
	noHash.Hash = []byte("short")
	noExpiry := downloadToken("t", "s1", "a", "u", 0)
	noExpiry.ExpiresAt = time.Time{}
	negative := artifact("s1", "neg", 0)
	negative.Size = -1
	_, errGet := s.Artifact(c, "s1", "")
	_, errList := s.Artifacts(c, "", 0)
	_, errHash := s.DownloadTokenByHash(c, []byte("x"))
	_, errTrimOwner := s.TrimDownloadTokens(c, "", 1)
	_, errTrimKeep := s.TrimDownloadTokens(c, "u", -1)
	return [][3]any{
		{"PutArtifact empty ID", "artifact ID", s.PutArtifact(c, store.Artifact{SessionID: "s1", Path: "p", FileName: "p"})},
		{"PutArtifact empty path", "path", s.PutArtifact(c, store.Artifact{SessionID: "s1", ID: "a", FileName: "p"})},
		{"PutArtifact empty file name", "file name", s.PutArtifact(c, store.Artifact{SessionID: "s1", ID: "a", Path: "p"})},
		{"PutArtifact negative size", "negative size", s.PutArtifact(c, negative)},
		{"Artifact empty ID", "artifact ID", errGet},
		{"Artifacts empty session", "session ID", errList},
		{"CreateDownloadTokens bad hash", "hash", s.CreateDownloadTokens(c, []store.DownloadToken{noHash})},
		{"CreateDownloadTokens no expiry", "expir", s.CreateDownloadTokens(c, []store.DownloadToken{noExpiry})},
		{"CreateDownloadTokens empty owner", "owner token ID", s.CreateDownloadTokens(c, []store.DownloadToken{{ID: "t", Hash: hash("t"), SessionID: "s1", ArtifactID: "a", ExpiresAt: at(time.Hour)}})},
		{"DownloadTokenByHash bad hash", "hash", errHash},
		{"RevokeDownloadToken empty ID", "download token ID", s.RevokeDownloadToken(c, "")},
		{"TrimDownloadTokens empty owner", "owner token ID", errTrimOwner},
		{"TrimDownloadTokens negative keep", "keep", errTrimKeep},
	}
}
