package storetest

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/store"
)

// --- push subscriptions ---

func pushSub(endpoint, owner string, created time.Duration) store.PushSubscription {
	p256 := append([]byte{4}, bytes.Repeat([]byte{byte(len(endpoint))}, 64)...)
	return store.PushSubscription{Endpoint: endpoint, P256dh: p256, Auth: bytes.Repeat([]byte{7}, 16),
		OwnerID: owner, Label: "phone " + endpoint, CreatedAt: at(created)}
}

func pushEndpoints(t *testing.T, s store.Store, now time.Time) []string {
	t.Helper()
	subs, err := s.PushSubscriptions(ctx(t), now)
	mustNil(t, err, "PushSubscriptions")
	out := make([]string, len(subs))
	for i, p := range subs {
		out[i] = p.Endpoint
	}
	return out
}

// testPushSubscriptions: a subscription comes back whole; subscribing the
// same endpoint again replaces it; deleting checks the owner; revoking the
// owner deletes its subscriptions and an expired owner's are left out;
// bad input and unknown owners store nothing.
func testPushSubscriptions(t *testing.T, s store.Store) {
	c := ctx(t)
	uiToken(t, s, "u1")
	uiToken(t, s, "u2")
	mustNil(t, s.CreateToken(c, store.Token{ID: "old", Kind: store.TokenUI, Hash: hash("ui-old"), CreatedAt: at(0), ExpiresAt: at(time.Hour)}), "CreateToken old")

	a := pushSub("https://push.example/a", "u1", 0)
	mustNil(t, s.PutPushSubscription(c, a, 0), "PutPushSubscription a")
	subs, err := s.PushSubscriptions(c, at(time.Minute))
	mustNil(t, err, "PushSubscriptions")
	if len(subs) != 1 {
		t.Fatalf("PushSubscriptions = %d, want 1", len(subs))
	}
	g := subs[0]
	if g.Endpoint != a.Endpoint || !bytes.Equal(g.P256dh, a.P256dh) || !bytes.Equal(g.Auth, a.Auth) || g.OwnerID != "u1" ||
		g.Label != a.Label || !g.CreatedAt.Equal(a.CreatedAt) {
		t.Fatalf("subscription = %+v\nwant %+v", g, a)
	}
	mustNil(t, s.PutPushSubscription(c, pushSub("https://push.example/b", "u2", time.Second), 0), "PutPushSubscription b")
	mustNil(t, s.PutPushSubscription(c, pushSub("https://push.example/old", "old", 2*time.Second), 0), "PutPushSubscription old")

	// The same browser subscribing again (another token, new keys) replaces it.
	again := pushSub("https://push.example/a", "u2", 3*time.Second)
	again.Auth = bytes.Repeat([]byte{9}, 16)
	mustNil(t, s.PutPushSubscription(c, again, 0), "PutPushSubscription again")
	subs, err = s.PushSubscriptions(c, at(time.Minute))
	mustNil(t, err, "PushSubscriptions")
	if i := slices.IndexFunc(subs, func(p store.PushSubscription) bool { return p.Endpoint == again.Endpoint }); i < 0 ||
		subs[i].OwnerID != "u2" || !bytes.Equal(subs[i].Auth, again.Auth) || len(subs) != 3 {
		t.Fatalf("after subscribing again: %+v", subs)
	}
	if got := pushEndpoints(t, s, at(time.Minute)); !slices.Equal(got, []string{"https://push.example/b", "https://push.example/old", "https://push.example/a"}) {
		t.Fatalf("PushSubscriptions = %v, want oldest first", got)
	}
	// An expired owner's subscriptions are left out.
	if got := pushEndpoints(t, s, at(2*time.Hour)); !slices.Equal(got, []string{"https://push.example/b", "https://push.example/a"}) {
		t.Fatalf("PushSubscriptions after the owner expired = %v", got)
	}

	// Refused: nothing stored.
	bad := map[string]store.PushSubscription{
		"unknown owner": pushSub("https://push.example/x1", "ghost", 0),
		"short key": func() store.PushSubscription {
			p := pushSub("https://push.example/x2", "u1", 0)
			p.P256dh = p.P256dh[:33]
			return p
		}(),
		"long auth": func() store.PushSubscription {
			p := pushSub("https://push.example/x3", "u1", 0)
			p.Auth = make([]byte, 17)
			return p
		}(),
		"no endpoint": pushSub("", "u1", 0),
		"no owner":    pushSub("https://push.example/x4", "", 0),
	}
	for name, p := range bad {
		err := s.PutPushSubscription(c, p, 0)
		if err == nil {
			t.Fatalf("PutPushSubscription with %s = nil, want an error", name)
		}
		if name == "unknown owner" {
			mustIs(t, err, store.ErrNotFound, "PutPushSubscription with "+name)
		}
	}
	if got := pushEndpoints(t, s, at(time.Minute)); len(got) != 3 {
		t.Fatalf("refused subscriptions were stored: %v", got)
	}

	// Delete checks the owner; an empty owner deletes whoever owns it.
	mustIs(t, s.DeletePushSubscription(c, "https://push.example/b", "u1"), store.ErrNotFound, "DeletePushSubscription by another owner")
	mustNil(t, s.DeletePushSubscription(c, "https://push.example/b", "u2"), "DeletePushSubscription by its owner")
	mustIs(t, s.DeletePushSubscription(c, "https://push.example/b", ""), store.ErrNotFound, "DeletePushSubscription twice")
	mustNil(t, s.PutPushSubscription(c, pushSub("https://push.example/c", "u1", 4*time.Second), 0), "PutPushSubscription c")
	mustNil(t, s.DeletePushSubscription(c, "https://push.example/c", ""), "DeletePushSubscription of any owner")

	// Revoking the owner deletes its subscriptions, and only those.
	mustNil(t, s.PutPushSubscription(c, pushSub("https://push.example/d", "u1", 5*time.Second), 0), "PutPushSubscription d")
	mustNil(t, s.RevokeToken(c, "u2"), "RevokeToken u2")
	if got := pushEndpoints(t, s, at(time.Minute)); !slices.Equal(got, []string{"https://push.example/old", "https://push.example/d"}) {
		t.Fatalf("PushSubscriptions after revoking u2 = %v", got)
	}
}

// testPushSubscriptionBound: an owner holds at most max subscriptions; a
// browser subscribing again under the same endpoint is not one more, and
// concurrent subscriptions cannot pass the bound together.
func testPushSubscriptionBound(t *testing.T, s store.Store) {
	c := ctx(t)
	uiToken(t, s, "u1")
	uiToken(t, s, "u2")
	mustNil(t, s.PutPushSubscription(c, pushSub("https://push.example/1", "u1", 0), 2), "first")
	mustNil(t, s.PutPushSubscription(c, pushSub("https://push.example/2", "u1", 0), 2), "second")
	mustIs(t, s.PutPushSubscription(c, pushSub("https://push.example/3", "u1", 0), 2), store.ErrQuota, "third")
	mustNil(t, s.PutPushSubscription(c, pushSub("https://push.example/2", "u1", time.Second), 2), "the second again")
	mustNil(t, s.PutPushSubscription(c, pushSub("https://push.example/4", "u2", 0), 2), "another owner's")
	if got := pushEndpoints(t, s, at(time.Minute)); len(got) != 3 || slices.Contains(got, "https://push.example/3") {
		t.Fatalf("subscriptions %v", got)
	}
	if err := s.PutPushSubscription(c, pushSub("https://push.example/5", "u2", 0), -1); err == nil {
		t.Fatal("a negative bound was accepted")
	}
	var wg sync.WaitGroup
	var won atomic.Int32
	for i := range 8 {
		wg.Go(func() {
			if s.PutPushSubscription(c, pushSub(fmt.Sprintf("https://push.example/c%d", i), "u2", 0), 3) == nil {
				won.Add(1)
			}
		})
	}
	wg.Wait()
	if n := won.Load(); n != 2 {
		t.Fatalf("%d of 8 concurrent subscriptions passed a bound of 3 with 1 held", n)
	}
}
