package storetest

import (
	"bytes"
	"errors"
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

// testPushSubscriptions: a subscription comes back whole; its owner
// subscribing the same endpoint again replaces it; deleting checks the owner; revoking the
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

	// The same browser subscribing again under its owner (new keys, a new
	// label) replaces it.
	again := pushSub("https://push.example/a", "u1", 3*time.Second)
	again.Auth, again.Label = bytes.Repeat([]byte{9}, 16), "phone again"
	mustNil(t, s.PutPushSubscription(c, again, 0), "PutPushSubscription again")
	subs, err = s.PushSubscriptions(c, at(time.Minute))
	mustNil(t, err, "PushSubscriptions")
	if i := slices.IndexFunc(subs, func(p store.PushSubscription) bool { return p.Endpoint == again.Endpoint }); i < 0 ||
		subs[i].OwnerID != "u1" || !bytes.Equal(subs[i].Auth, again.Auth) || subs[i].Label != "phone again" || len(subs) != 3 {
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
	if got := pushEndpoints(t, s, at(time.Minute)); !slices.Equal(got, []string{"https://push.example/old", "https://push.example/a", "https://push.example/d"}) {
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

// testPushSubscriptionOwner (issue 31, item 1.3): a subscription keeps its
// owner. Another token subscribing the same endpoint gets ErrExists and
// changes nothing (keys, label, owner), so the owner can still delete it;
// of tokens racing for a new endpoint one wins and only it may write it
// again; once the owner has expired (at the new subscription's time) the
// endpoint is free for another token.
func testPushSubscriptionOwner(t *testing.T, s store.Store) {
	c := ctx(t)
	uiToken(t, s, "u1")
	uiToken(t, s, "u2")
	mustNil(t, s.CreateToken(c, store.Token{ID: "old", Kind: store.TokenUI, Hash: hash("ui-old"), CreatedAt: at(0), ExpiresAt: at(time.Hour)}), "CreateToken old")

	mine := pushSub("https://push.example/mine", "u1", 0)
	mustNil(t, s.PutPushSubscription(c, mine, 0), "PutPushSubscription by u1")
	theirs := pushSub("https://push.example/mine", "u2", time.Second)
	theirs.P256dh[1], theirs.Auth, theirs.Label = 99, bytes.Repeat([]byte{5}, 16), "not yours"
	mustIs(t, s.PutPushSubscription(c, theirs, 0), store.ErrExists, "PutPushSubscription of u1's endpoint by u2")
	mustIs(t, s.PutPushSubscription(c, theirs, 5), store.ErrExists, "PutPushSubscription of u1's endpoint by u2, bounded")
	subs, err := s.PushSubscriptions(c, at(time.Minute))
	mustNil(t, err, "PushSubscriptions")
	if len(subs) != 1 || subs[0].OwnerID != "u1" || !bytes.Equal(subs[0].P256dh, mine.P256dh) || !bytes.Equal(subs[0].Auth, mine.Auth) ||
		subs[0].Label != mine.Label || !subs[0].CreatedAt.Equal(mine.CreatedAt) {
		t.Fatalf("after another token's subscription: %+v, want u1's unchanged", subs)
	}
	mustIs(t, s.DeletePushSubscription(c, mine.Endpoint, "u2"), store.ErrNotFound, "DeletePushSubscription by u2")
	mustNil(t, s.DeletePushSubscription(c, mine.Endpoint, "u1"), "DeletePushSubscription by its owner")

	// Racing for a new endpoint: one owner wins, and only it writes.
	var wg sync.WaitGroup
	var won [2]atomic.Int32
	owners := [2]string{"u1", "u2"}
	for i := range 8 {
		wg.Go(func() {
			err := s.PutPushSubscription(c, pushSub("https://push.example/raced", owners[i%2], time.Duration(i)*time.Second), 0)
			switch {
			case err == nil:
				won[i%2].Add(1)
			case !errors.Is(err, store.ErrExists):
				t.Errorf("racing subscription %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	subs, err = s.PushSubscriptions(c, at(time.Minute))
	mustNil(t, err, "PushSubscriptions")
	if a, b := won[0].Load(), won[1].Load(); len(subs) != 1 || a > 0 && b > 0 || a+b == 0 ||
		a > 0 && subs[0].OwnerID != "u1" || b > 0 && subs[0].OwnerID != "u2" {
		t.Fatalf("racing for one endpoint: u1 won %d, u2 won %d; stored %+v", a, b, subs)
	}

	// An expired owner holds nothing: its endpoint is free after expiry.
	mustNil(t, s.PutPushSubscription(c, pushSub("https://push.example/dead", "old", 0), 0), "PutPushSubscription by old")
	mustIs(t, s.PutPushSubscription(c, pushSub("https://push.example/dead", "u2", 30*time.Minute), 0), store.ErrExists,
		"PutPushSubscription of a live owner's endpoint")
	mustNil(t, s.PutPushSubscription(c, pushSub("https://push.example/dead", "u2", 2*time.Hour), 0),
		"PutPushSubscription of an expired owner's endpoint")
	subs, err = s.PushSubscriptions(c, at(3*time.Hour))
	mustNil(t, err, "PushSubscriptions")
	if i := slices.IndexFunc(subs, func(p store.PushSubscription) bool { return p.Endpoint == "https://push.example/dead" }); i < 0 || subs[i].OwnerID != "u2" {
		t.Fatalf("after taking over an expired owner's endpoint: %+v", subs)
	}
}
