package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/store"
)

// --- uploads ---

func upload(id, sessionID, owner string, data []byte, expires time.Duration) store.Upload {
	return store.Upload{
		ID: id, SessionID: sessionID, OwnerID: owner, FileName: id + ".png", MimeType: "image/png",
		Size: int64(len(data)), Data: data, CreatedAt: at(0), ExpiresAt: at(expires),
	}
}

func sameUpload(t *testing.T, got, want store.Upload, withData bool) {
	t.Helper()
	if !withData {
		want.Data = nil
	}
	if got.ID != want.ID || got.SessionID != want.SessionID || got.OwnerID != want.OwnerID || got.FileName != want.FileName ||
		got.MimeType != want.MimeType || got.Size != want.Size || !bytes.Equal(got.Data, want.Data) || (got.Data == nil) != (want.Data == nil) ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.ExpiresAt.Equal(want.ExpiresAt) {
		t.Fatalf("upload = %+v\nwant %+v", got, want)
	}
}

// testUploads: an upload comes back whole (and without its content from
// UploadInfo); unknown sessions and owners, taken IDs and bad input are
// refused with nothing stored; revoking the owner or sweeping expired
// uploads removes exactly those.
func testUploads(t *testing.T, s store.Store) {
	c := ctx(t)
	newSession(t, s, "s1", "m1")
	uiToken(t, s, "u1")
	uiToken(t, s, "u2")
	content := bytes.Repeat([]byte{0, 1, 2, 0xff}, 1000)
	a := upload("upl_a", "s1", "u1", content, time.Hour)
	mustNil(t, s.PutUpload(c, a, store.UploadQuota{}), "PutUpload")
	got, err := s.Upload(c, "upl_a")
	mustNil(t, err, "Upload")
	sameUpload(t, got, a, true)
	got, err = s.UploadInfo(c, "upl_a")
	mustNil(t, err, "UploadInfo")
	sameUpload(t, got, a, false)
	empty := upload("upl_empty", "s1", "u2", []byte{}, time.Minute)
	mustNil(t, s.PutUpload(c, empty, store.UploadQuota{}), "PutUpload empty")
	got, err = s.Upload(c, "upl_empty")
	mustNil(t, err, "Upload empty")
	sameUpload(t, got, empty, true)

	for name, tc := range map[string]struct {
		u    store.Upload
		want error
	}{
		"unknown session": {upload("upl_n1", "nope", "u1", content, time.Hour), store.ErrNotFound},
		"unknown owner":   {upload("upl_n2", "s1", "ghost", content, time.Hour), store.ErrNotFound},
		"taken ID":        {upload("upl_a", "s1", "u2", []byte("x"), time.Hour), store.ErrExists},
	} {
		mustIs(t, s.PutUpload(c, tc.u, store.UploadQuota{}), tc.want, "PutUpload with "+name)
		if got, err := s.UploadInfo(c, tc.u.ID); err == nil && got.OwnerID == tc.u.OwnerID && got.SessionID == tc.u.SessionID && tc.u.ID != "upl_a" {
			t.Fatalf("a refused upload (%s) was stored", name)
		}
	}
	if got, _ := s.Upload(c, "upl_a"); !bytes.Equal(got.Data, content) || got.OwnerID != "u1" {
		t.Fatal("a refused upload under a taken ID changed the stored one")
	}
	_, err = s.Upload(c, "upl_nope")
	mustIs(t, err, store.ErrNotFound, "Upload unknown")
	_, err = s.UploadInfo(c, "upl_nope")
	mustIs(t, err, store.ErrNotFound, "UploadInfo unknown")

	// Revoking the owner deletes its uploads, and only those.
	mustNil(t, s.PutUpload(c, upload("upl_b", "s1", "u2", []byte("b"), 2*time.Hour), store.UploadQuota{}), "PutUpload b")
	mustNil(t, s.RevokeToken(c, "u1"), "RevokeToken owner")
	_, err = s.UploadInfo(c, "upl_a")
	mustIs(t, err, store.ErrNotFound, "an upload whose owner was revoked")

	// The sweep deletes what expired at or before now, nothing else.
	n, err := s.DeleteExpiredUploads(c, at(time.Minute))
	mustNil(t, err, "DeleteExpiredUploads")
	if n != 1 {
		t.Fatalf("DeleteExpiredUploads = %d, want 1 (upl_empty)", n)
	}
	_, err = s.UploadInfo(c, "upl_empty")
	mustIs(t, err, store.ErrNotFound, "an expired upload after the sweep")
	if _, err := s.UploadInfo(c, "upl_b"); err != nil {
		t.Fatalf("a live upload went with the sweep: %v", err)
	}
	mustNil(t, s.DeleteUpload(c, "upl_b"), "DeleteUpload")
	mustIs(t, s.DeleteUpload(c, "upl_b"), store.ErrNotFound, "DeleteUpload twice")

	// Bad input is refused before anything is stored.
	for name, u := range map[string]store.Upload{
		"no ID":         upload("", "s1", "u2", content, time.Hour),
		"no expiry":     {ID: "upl_x", SessionID: "s1", OwnerID: "u2", FileName: "x", MimeType: "text/plain", Size: 1, Data: []byte("x")},
		"size mismatch": {ID: "upl_y", SessionID: "s1", OwnerID: "u2", FileName: "x", MimeType: "text/plain", Size: 9, Data: []byte("x"), ExpiresAt: at(time.Hour)},
		"no name":       {ID: "upl_z", SessionID: "s1", OwnerID: "u2", MimeType: "text/plain", Size: 1, Data: []byte("x"), ExpiresAt: at(time.Hour)},
	} {
		if err := s.PutUpload(c, u, store.UploadQuota{}); err == nil {
			t.Fatalf("PutUpload with %s was accepted", name)
		}
		if _, err := s.UploadInfo(c, u.ID); u.ID != "" && err == nil {
			t.Fatalf("PutUpload with %s stored it", name)
		}
	}
}

// testUploadQuota: a session's live uploads stay within the quota, also
// when many are put at once; expired uploads do not count, nor do other
// sessions'.
func testUploadQuota(t *testing.T, s store.Store) {
	c := ctx(t)
	newSession(t, s, "s1", "m1")
	newSession(t, s, "s2", "m1")
	uiToken(t, s, "u1")
	q := store.UploadQuota{Count: 3, Bytes: 100}
	old := upload("upl_old", "s1", "u1", make([]byte, 90), 0)
	old.CreatedAt, old.ExpiresAt = at(-time.Hour), at(-time.Minute)
	mustNil(t, s.PutUpload(c, old, q), "PutUpload of an upload that has expired by now")

	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		oks int
	)
	for i := range 8 {
		wg.Go(func() {
			err := s.PutUpload(c, upload(fmt.Sprintf("upl_c%d", i), "s1", "u1", make([]byte, 10), time.Hour), q)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				oks++
			case !errors.Is(err, store.ErrQuota):
				t.Errorf("PutUpload %d: %v, want nil or ErrQuota", i, err)
			}
		})
	}
	wg.Wait()
	if oks != 3 {
		t.Fatalf("%d of 8 concurrent uploads were stored under a quota of 3", oks)
	}
	// Bytes: another session has its own budget.
	mustNil(t, s.PutUpload(c, upload("upl_big", "s2", "u1", make([]byte, 100), time.Hour), q), "PutUpload at the byte quota")
	mustIs(t, s.PutUpload(c, upload("upl_over", "s2", "u1", []byte("x"), time.Hour), q), store.ErrQuota, "PutUpload past the byte quota")
	_, err := s.UploadInfo(c, "upl_over")
	mustIs(t, err, store.ErrNotFound, "an upload refused by the quota")
}

// testSecret: the first secret stored under a name is the one every
// caller gets, also when many ask at once; names are independent.
func testSecret(t *testing.T, s store.Store) {
	c := ctx(t)
	got := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			v, err := s.Secret(c, "grant-key", []byte(fmt.Sprintf("fresh-%d", i)))
			if err != nil {
				t.Errorf("Secret %d: %v", i, err)
			}
			got[i] = v
		})
	}
	wg.Wait()
	for i, v := range got {
		if !bytes.Equal(v, got[0]) || !bytes.HasPrefix(v, []byte("fresh-")) {
			t.Fatalf("Secret %d = %q, want the one stored first %q", i, v, got[0])
		}
	}
	other, err := s.Secret(c, "other", []byte("x"))
	mustNil(t, err, "Secret other")
	if string(other) != "x" {
		t.Fatalf("Secret of another name = %q", other)
	}
	if _, err := s.Secret(c, "empty", nil); err == nil {
		t.Fatal("Secret with no fresh value was accepted")
	}
}
