package master

import (
	"testing"
	"time"
)

// The writer groups a fast stream's events into fewer commits, but never
// holds a lone event (a prompt, an answer) or a slow stream's, and never
// one batch longer than groupLinger.
func TestLingerForGroupsOnlyFastStreams(t *testing.T) {
	now := time.Now()
	queue := func(n int, at time.Time) []*pending {
		q := make([]*pending, n)
		for i := range q {
			q[i] = &pending{queued: at}
		}
		return q
	}
	cases := []struct {
		name       string
		lastQueued time.Time
		gap        time.Duration
		queue      []*pending
		min, max   time.Duration
	}{
		{"first event of a session", time.Time{}, 0, queue(1, now), 0, 0},
		{"a slow stream (1,000 events/s)", now, time.Millisecond, queue(1, now), 0, 0},
		{"a fast stream (5,000 events/s), one queued", now, 200 * time.Microsecond, queue(1, now), groupLinger / 2, groupLinger},
		{"a fast stream, a full group", now, 200 * time.Microsecond, queue(groupTarget, now), 0, 0},
		{"a fast stream, waited long enough", now, 200 * time.Microsecond, queue(2, now.Add(-2*groupLinger)), 0, 0},
	}
	for _, c := range cases {
		s := &session{lastQueued: c.lastQueued, gap: c.gap, queue: c.queue}
		got := max(s.lingerFor(len(c.queue)), 0)
		if got < c.min || got > c.max {
			t.Errorf("%s: lingerFor = %v, want %v..%v", c.name, got, c.min, c.max)
		}
	}
}
