package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/store"
)

// testLeaseOnce: of many holders racing for a free lease exactly one gets
// it, again and again; its holder renews it, the others are refused while
// it lasts, and releasing it frees it at once.
func testLeaseOnce(t *testing.T, s store.Store) {
	c := ctx(t)
	const holders = 8
	for round := range 20 {
		name := "jobs-" + string(rune('a'+round))
		won := make([]bool, holders)
		var wg sync.WaitGroup
		for i := range holders {
			wg.Go(func() {
				held, err := s.AcquireLease(c, name, "node-"+string(rune('0'+i)), time.Hour)
				if err != nil {
					t.Errorf("AcquireLease %d: %v", i, err)
				}
				won[i] = held
			})
		}
		wg.Wait()
		winner := -1
		for i, w := range won {
			if w {
				if winner >= 0 {
					t.Fatalf("round %d: holders %d and %d both got the lease", round, winner, i)
				}
				winner = i
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: nobody got a free lease", round)
		}
		me, other := "node-"+string(rune('0'+winner)), "node-"+string(rune('0'+(winner+1)%holders))
		held, err := s.AcquireLease(c, name, me, time.Hour)
		mustNil(t, err, "renew")
		if !held {
			t.Fatalf("round %d: the holder could not renew its lease", round)
		}
		held, err = s.AcquireLease(c, name, other, time.Hour)
		mustNil(t, err, "acquire a held lease")
		if held {
			t.Fatalf("round %d: another holder took a lease that has not expired", round)
		}
		mustNil(t, s.ReleaseLease(c, name, other), "release by a non-holder")
		held, err = s.AcquireLease(c, name, other, time.Hour)
		mustNil(t, err, "acquire after a non-holder's release")
		if held {
			t.Fatalf("round %d: a non-holder's release freed the lease", round)
		}
		mustNil(t, s.ReleaseLease(c, name, me), "release")
		held, err = s.AcquireLease(c, name, other, time.Hour)
		mustNil(t, err, "acquire a released lease")
		if !held {
			t.Fatalf("round %d: a released lease could not be taken", round)
		}
	}
	if _, err := s.AcquireLease(c, "", "x", time.Hour); err == nil {
		t.Fatal("AcquireLease with no name was accepted")
	}
	if _, err := s.AcquireLease(c, "x", "", time.Hour); err == nil {
		t.Fatal("AcquireLease with no holder was accepted")
	}
	if _, err := s.AcquireLease(c, "x", "y", 0); err == nil {
		t.Fatal("AcquireLease with no ttl was accepted")
	}
}

// testLeaseExpiry: a lease its holder stopped renewing goes to the next
// holder once its ttl ran out, and the old holder no longer has it.
func testLeaseExpiry(t *testing.T, s store.Store) {
	c := ctx(t)
	const ttl = time.Second // far longer than two statements take
	held, err := s.AcquireLease(c, "sweep", "a", ttl)
	mustNil(t, err, "acquire")
	if !held {
		t.Fatal("a free lease could not be taken")
	}
	if held, _ := s.AcquireLease(c, "sweep", "b", time.Hour); held {
		t.Fatal("another holder took the lease before it expired")
	}
	time.Sleep(ttl + 100*time.Millisecond) // a does not renew
	held, err = s.AcquireLease(c, "sweep", "b", time.Hour)
	mustNil(t, err, "acquire an expired lease")
	if !held {
		t.Fatal("an expired lease was not handed over")
	}
	if held, _ := s.AcquireLease(c, "sweep", "a", ttl); held {
		t.Fatal("the old holder took back a lease that had been handed over")
	}
	// Names are independent.
	if held, _ := s.AcquireLease(c, "other", "a", time.Hour); !held {
		t.Fatal("a lease of another name was refused")
	}
}
