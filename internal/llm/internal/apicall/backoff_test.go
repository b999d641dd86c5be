package apicall

import (
	"testing"
	"time"
)

func TestBackoffBounds(t *testing.T) {
	for _, c := range []struct {
		attempt int
		maxWait time.Duration
		lo, hi  time.Duration
	}{
		{0, 30 * time.Second, 375 * time.Millisecond, 500 * time.Millisecond},
		{1, 30 * time.Second, 750 * time.Millisecond, time.Second},
		{3, 30 * time.Second, 3 * time.Second, 4 * time.Second},
		{4, 30 * time.Second, 6 * time.Second, 8 * time.Second},
		{60, 30 * time.Second, 6 * time.Second, 8 * time.Second},
		{2, time.Second, 750 * time.Millisecond, time.Second},
	} {
		for range 100 {
			if d := backoff(c.attempt, c.maxWait); d < c.lo || d > c.hi {
				t.Fatalf("backoff(%d, %v) = %v, want in [%v, %v]", c.attempt, c.maxWait, d, c.lo, c.hi)
			}
		}
	}
}
