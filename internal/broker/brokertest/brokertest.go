// Package brokertest is the test suite every broker.Broker implementation
// must pass: it checks the guarantees listed in package broker's doc.
package brokertest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/broker"
)

// wait bounds every wait of the suite; a correct broker delivers in far less.
const wait = 10 * time.Second

// Run runs the suite against brokers made by newBroker (a fresh one per test;
// newBroker registers its own cleanup).
func Run(t *testing.T, newBroker func(t *testing.T) broker.Broker) {
	t.Run("FanOut", func(t *testing.T) { testFanOut(t, newBroker(t)) })
	t.Run("OrderPerTopic", func(t *testing.T) { testOrder(t, newBroker(t)) })
	t.Run("Unsubscribe", func(t *testing.T) { testUnsubscribe(t, newBroker(t)) })
	t.Run("TopicsIsolated", func(t *testing.T) { testIsolated(t, newBroker(t)) })
	t.Run("DeliverMayPublish", func(t *testing.T) { testReentrant(t, newBroker(t)) })
	t.Run("Close", func(t *testing.T) { testClose(t, newBroker(t)) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, newBroker(t)) })
}

// recorder collects what one subscription received.
type recorder struct {
	mu   sync.Mutex
	got  []string
	more chan struct{}
}

func newRecorder() *recorder { return &recorder{more: make(chan struct{}, 1)} }

func (r *recorder) deliver(data []byte) {
	r.mu.Lock()
	r.got = append(r.got, string(data))
	r.mu.Unlock()
	select {
	case r.more <- struct{}{}:
	default:
	}
}

func (r *recorder) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// waitFor waits until the recorder holds n messages and returns them.
func (r *recorder) waitFor(t *testing.T, n int) []string {
	t.Helper()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		if got := r.snapshot(); len(got) >= n {
			return got
		}
		select {
		case <-r.more:
		case <-timer.C:
			t.Fatalf("got %d messages, want %d, after %s", len(r.snapshot()), n, wait)
		}
	}
}

func subscribe(t *testing.T, b broker.Broker, topic string, r *recorder) func() {
	t.Helper()
	unsub, err := b.Subscribe(topic, r.deliver)
	if err != nil {
		t.Fatalf("Subscribe(%q): %v", topic, err)
	}
	t.Cleanup(unsub)
	return unsub
}

func publish(t *testing.T, b broker.Broker, topic, data string) {
	t.Helper()
	if err := b.Publish(context.Background(), topic, []byte(data)); err != nil {
		t.Fatalf("Publish(%q): %v", topic, err)
	}
}

func seqOf(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d messages %q, want %d", what, len(got), clip(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: message %d is %q, want %q (got %q)", what, i, got[i], want[i], clip(got))
		}
	}
}

func clip(s []string) []string {
	if len(s) > 20 {
		return s[:20]
	}
	return s
}

func testFanOut(t *testing.T, b broker.Broker) {
	const subs, msgs = 8, 50
	recs := make([]*recorder, subs)
	for i := range recs {
		recs[i] = newRecorder()
		subscribe(t, b, "fan", recs[i])
	}
	for _, m := range seqOf(msgs) {
		publish(t, b, "fan", m)
	}
	for i, r := range recs {
		equal(t, fmt.Sprintf("subscriber %d", i), r.waitFor(t, msgs), seqOf(msgs))
	}
}

func testOrder(t *testing.T, b broker.Broker) {
	const msgs = 2000
	r := newRecorder()
	subscribe(t, b, "order", r)
	for _, m := range seqOf(msgs) {
		publish(t, b, "order", m)
	}
	equal(t, "subscriber", r.waitFor(t, msgs), seqOf(msgs))
}

func testUnsubscribe(t *testing.T, b broker.Broker) {
	gone, stays := newRecorder(), newRecorder()
	unsub := subscribe(t, b, "u", gone)
	subscribe(t, b, "u", stays)
	publish(t, b, "u", "before")
	gone.waitFor(t, 1)
	unsub()
	unsub() // idempotent
	publish(t, b, "u", "after")
	publish(t, b, "u", "last")
	// stays got both later messages, so the broker delivered them; gone must
	// not have got either.
	equal(t, "still subscribed", stays.waitFor(t, 3), []string{"before", "after", "last"})
	equal(t, "unsubscribed", gone.snapshot(), []string{"before"})

	// The topic works again for a new subscriber.
	again := newRecorder()
	subscribe(t, b, "u", again)
	publish(t, b, "u", "again")
	equal(t, "resubscribed", again.waitFor(t, 1), []string{"again"})
}

func testIsolated(t *testing.T, b broker.Broker) {
	a, c := newRecorder(), newRecorder()
	subscribe(t, b, "a", a)
	subscribe(t, b, "a.b", c)
	publish(t, b, "a.b", "for c")
	publish(t, b, "other", "nobody")
	publish(t, b, "a", "for a")
	equal(t, "topic a", a.waitFor(t, 1), []string{"for a"})
	equal(t, "topic a.b", c.waitFor(t, 1), []string{"for c"})
	// A later message on a proves nothing else arrived in between.
	publish(t, b, "a", "end")
	equal(t, "topic a", a.waitFor(t, 2), []string{"for a", "end"})
}

func testReentrant(t *testing.T, b broker.Broker) {
	out := newRecorder()
	subscribe(t, b, "out", out)
	var (
		mu    sync.Mutex
		unsub func()
	)
	u, err := b.Subscribe("in", func(data []byte) {
		// deliver may publish and unsubscribe (the hub does both).
		if err := b.Publish(context.Background(), "out", append([]byte("echo "), data...)); err != nil {
			t.Errorf("Publish from deliver: %v", err)
		}
		mu.Lock()
		u := unsub
		mu.Unlock()
		u()
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	unsub = u
	mu.Unlock()
	t.Cleanup(u)
	publish(t, b, "in", "1")
	equal(t, "echo", out.waitFor(t, 1), []string{"echo 1"})
	publish(t, b, "in", "2")
	publish(t, b, "out", "end")
	equal(t, "after unsubscribe from deliver", out.waitFor(t, 2), []string{"echo 1", "end"})
}

func testClose(t *testing.T, b broker.Broker) {
	r := newRecorder()
	subscribe(t, b, "c", r)
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := b.Publish(context.Background(), "c", []byte("x")); !errors.Is(err, broker.ErrClosed) {
		t.Fatalf("Publish after Close: %v, want ErrClosed", err)
	}
	if _, err := b.Subscribe("c", r.deliver); !errors.Is(err, broker.ErrClosed) {
		t.Fatalf("Subscribe after Close: %v, want ErrClosed", err)
	}
	if got := r.snapshot(); len(got) != 0 {
		t.Fatalf("delivered after Close: %q", got)
	}
}

// testConcurrent publishes from several goroutines to several topics while
// others subscribe and unsubscribe; run it with -race. Subscribers that stay
// for the whole run must see each publisher's messages complete and in order.
func testConcurrent(t *testing.T, b broker.Broker) {
	const topics, publishers, msgs, churners = 4, 4, 300, 4
	steady := make([]*recorder, topics)
	for i := range steady {
		steady[i] = newRecorder()
		subscribe(t, b, "t"+strconv.Itoa(i), steady[i])
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for c := range churners {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				r := newRecorder()
				unsub, err := b.Subscribe("t"+strconv.Itoa((c+i)%topics), r.deliver)
				if err != nil {
					t.Errorf("Subscribe: %v", err)
					return
				}
				unsub()
			}
		})
	}
	var pubs sync.WaitGroup
	for p := range publishers {
		pubs.Go(func() {
			for i := range msgs {
				for tp := range topics {
					msg := fmt.Sprintf("%d:%d", p, i)
					if err := b.Publish(ctx, "t"+strconv.Itoa(tp), []byte(msg)); err != nil {
						t.Errorf("Publish: %v", err)
						return
					}
				}
			}
		})
	}
	pubs.Wait()
	close(stop)
	wg.Wait()
	for tp, r := range steady {
		got := r.waitFor(t, publishers*msgs)
		if len(got) != publishers*msgs {
			t.Fatalf("topic %d: %d messages, want %d", tp, len(got), publishers*msgs)
		}
		next := make([]int, publishers)
		for _, m := range got {
			var p, i int
			if _, err := fmt.Sscanf(m, "%d:%d", &p, &i); err != nil {
				t.Fatalf("topic %d: bad message %q", tp, m)
			}
			if i != next[p] {
				t.Fatalf("topic %d: publisher %d's message %d arrived when %d was due", tp, p, i, next[p])
			}
			next[p]++
		}
	}
}
