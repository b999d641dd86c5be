package upload_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/master/upload"
	"github.com/ferry-dev/ferry/internal/master/upload/uploadtest"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/sqlite"
	"github.com/ferry-dev/ferry/protocol"
)

// receiver is a Service on a real SQLite store behind a real HTTP server,
// whose uploader (UI token) is the X-Owner header; it returns the URL that
// uploads to session s1.
func receiver(t *testing.T, cfg upload.Config) string {
	t.Helper()
	st := sessionStore(t, "u1", "u2", "u3")
	cfg.Store, cfg.Key = st, bytes.Repeat([]byte("k"), 32)
	svc, err := upload.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.SetPathValue("session_id", "s1")
		svc.Receive(w, r, store.Token{ID: r.Header.Get("X-Owner"), Kind: store.TokenUI})
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1/sessions/s1/uploads"
}

// sessionStore is a real SQLite store holding session s1 and a UI token
// of each of the ids.
func sessionStore(t *testing.T, ids ...string) *sqlite.Store {
	t.Helper()
	ctx := t.Context()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ferry.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if err := st.CreateSession(ctx, store.Session{ID: "s1", MachineID: "m1", WorkspaceID: "w", Adapter: "echo", Mode: "default", State: "idle", Epoch: "e"}); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if err := st.CreateToken(ctx, store.Token{ID: id, Kind: store.TokenUI, Hash: bytes.Repeat([]byte{byte(i + 1)}, 32)}); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func owner(id string) http.Header { return http.Header{"X-Owner": {id}} }

// TestStalledUploadsCannotLockOut (issue 31, item 1.2): uploads that send
// a 1 MB Content-Length and then trickle hold their slots only until the
// minimum rate fails them (408); one uploader cannot take more than its
// share of the slots, and an upload that finds none is answered 503 busy
// with Retry-After within the slot wait, never left hanging. A body that
// keeps the rate but never ends is cut at the whole-body deadline, and a
// slow body that keeps the rate and ends in time is stored. Afterwards
// every slot is free again.
func TestStalledUploadsCannotLockOut(t *testing.T) {
	t.Parallel()
	const (
		slotWait = 300 * time.Millisecond
		window   = 2 * time.Second
	)
	target := receiver(t, upload.Config{MaxReceiving: 2, MaxReceivingPerOwner: 1, SlotWait: slotWait,
		RateWindow: window, MinRate: 1000, BodyTimeout: 4 * time.Second})

	// u1 and u2 each stall one upload (a byte every 200 ms: 5 B/s, under
	// 1,000 B/s); they hold both slots.
	stall1 := uploadtest.Slow(t, target, owner("u1"), 1, 200*time.Millisecond, 0)
	time.Sleep(100 * time.Millisecond)
	stall2 := uploadtest.Slow(t, target, owner("u2"), 1, 200*time.Millisecond, 0)
	time.Sleep(100 * time.Millisecond)

	// u3's upload: the global bound. u1's second: its own.
	if a := uploadtest.Quick(t, target, owner("u3")); a.Status != http.StatusServiceUnavailable || a.Code != protocol.CodeBusy || a.RetryAfter == "" ||
		!strings.Contains(a.Msg, "the master") || a.After > slotWait+time.Second {
		t.Errorf("u3's upload while both slots are held: %+v, want 503 busy with Retry-After within the slot wait", a)
	}
	a := uploadtest.Wait(t, uploadtest.Slow(t, target, owner("u1"), 1, 200*time.Millisecond, 0), 40*time.Second, "u1's second upload")
	if a.Status != http.StatusServiceUnavailable || a.Code != protocol.CodeBusy || a.RetryAfter == "" || !strings.Contains(a.Msg, "this login") ||
		a.After > slotWait+time.Second {
		t.Errorf("u1's second upload while its first holds a slot: %+v, want 503 busy with Retry-After within the slot wait", a)
	}

	// The stalled ones are cut by the rate, within a window or two.
	for i, ch := range []<-chan uploadtest.Answer{stall1, stall2} {
		a := uploadtest.Wait(t, ch, 40*time.Second, "a stalled upload")
		if a.Status != http.StatusRequestTimeout || a.Code != protocol.CodeInvalidValue || !strings.Contains(a.Msg, "slower than") ||
			a.After > 2*window+time.Second {
			t.Errorf("stalled upload %d: %+v, want 408 after about %v", i+1, a, window)
		}
	}
	if a := uploadtest.Quick(t, target, owner("u3")); a.Status != http.StatusCreated {
		t.Fatalf("u3's upload once the stalled ones were cut: %+v", a)
	}

	// Keeping the rate (800 bytes every 300 ms) but never ending: cut at
	// the whole-body deadline. Keeping it and ending in time: stored.
	endless := uploadtest.Slow(t, target, owner("u1"), 800, 300*time.Millisecond, 0)
	done := uploadtest.Wait(t, uploadtest.Slow(t, target, owner("u2"), 800, 300*time.Millisecond, 4000), 40*time.Second, "a slow upload that ends")
	if done.Status != http.StatusCreated {
		t.Errorf("a slow upload that keeps the rate and ends: %+v, want 201", done)
	}
	a = uploadtest.Wait(t, endless, 40*time.Second, "an endless upload")
	if a.Status != http.StatusRequestTimeout || !strings.Contains(a.Msg, "longer than 4s") || a.After < 4*time.Second || a.After > 7*time.Second {
		t.Errorf("an upload that keeps the rate for ever: %+v, want 408 at the 4 s deadline", a)
	}

	// Every slot is free again: both uploaders get one at once.
	for _, id := range []string{"u1", "u2"} {
		if a := uploadtest.Quick(t, target, owner(id)); a.Status != http.StatusCreated || a.After > slotWait {
			t.Errorf("%s's upload at the end: %+v", id, a)
		}
	}
}
