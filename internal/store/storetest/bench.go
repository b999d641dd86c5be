package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/store"
)

// BenchmarkAppend measures AppendEvents of 1 KB events in batches of
// batch into one session of s, reporting ns/event; with tail set, a second
// goroutine reads every new event back after each append (as a replay to
// a resuming UI would), to show the cost of appending while reading. With
// snapshot > 0 the session holds a snapshot of that many bytes, as one
// does during a long turn.
func BenchmarkAppend(b *testing.B, s store.Store, batch int, tail bool, snapshot int) {
	ctx := context.Background()
	sid := fmt.Sprintf("bench-%d-%v-%d", batch, tail, snapshot)
	if err := s.CreateSession(ctx, store.Session{ID: sid, MachineID: "m", Epoch: "e"}); err != nil {
		b.Fatal(err)
	}
	if snapshot > 0 {
		ss, err := s.Session(ctx, sid)
		if err != nil {
			b.Fatal(err)
		}
		ss.Snapshot = []byte(`{"text":"` + strings.Repeat("y", snapshot) + `"}`)
		if err := s.UpdateSession(ctx, ss); err != nil {
			b.Fatal(err)
		}
	}
	pad := strings.Repeat("x", 1024-80)
	evs := make([]store.Event, batch)

	var (
		wg       sync.WaitGroup
		stop     = make(chan struct{})
		appended = make(chan struct{}, 1)
		rerr     error
	)
	if tail {
		wg.Go(func() {
			var after uint64
			for {
				select {
				case <-stop:
					return
				case <-appended:
				}
				got, err := s.Events(ctx, sid, after, 0)
				if err != nil {
					rerr = err
					return
				}
				if len(got) > 0 {
					after = got[len(got)-1].Seq
				}
			}
		})
	}

	b.SetBytes(int64(1024 * batch))
	b.ResetTimer()
	n := 0
	for b.Loop() {
		for i := range evs {
			// Random, as the protocol's UUIDv4 message ids are: each lands
			// on its own page of the message_id index.
			id := randomID()
			n++
			evs[i] = store.Event{
				MessageID: id,
				Type:      "agent.text.delta",
				Data:      []byte(`{"type":"agent.text.delta","message_id":"` + id + `","payload":{"text":"` + pad + `"}}`),
			}
		}
		if _, err := s.AppendEvents(ctx, sid, evs); err != nil {
			b.Fatal(err)
		}
		select {
		case appended <- struct{}{}:
		default: // the reader is behind; it reads all that is new
		}
	}
	b.StopTimer()
	close(stop)
	wg.Wait()
	if rerr != nil {
		b.Fatal(rerr)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/event")
}

// BenchmarkSteady measures what a session at its retention costs per event
// (ns/event): s holds retain = 10,000 1 KB events, then batches of batch
// are appended and, every trimEvery events, the oldest beyond retain
// trimmed, as the master does.
func BenchmarkSteady(b *testing.B, s store.Store, batch, trimEvery int) {
	const retain = 10000
	ctx := context.Background()
	sid := fmt.Sprintf("steady-%d-%d", batch, trimEvery)
	if err := s.CreateSession(ctx, store.Session{ID: sid, MachineID: "m", Epoch: "e"}); err != nil {
		b.Fatal(err)
	}
	pad := strings.Repeat("x", 1024-80)
	fill := func(evs []store.Event) {
		for i := range evs {
			id := randomID()
			evs[i] = store.Event{MessageID: id, Type: "agent.text.delta",
				Data: []byte(`{"type":"agent.text.delta","message_id":"` + id + `","payload":{"text":"` + pad + `"}}`)}
		}
	}
	pre := make([]store.Event, 500)
	for range retain / len(pre) {
		fill(pre)
		if _, err := s.AppendEvents(ctx, sid, pre); err != nil {
			b.Fatal(err)
		}
	}
	evs := make([]store.Event, batch)
	untrimmed, n, trims := 0, 0, 0
	var trimTime time.Duration
	b.SetBytes(int64(1024 * batch))
	b.ResetTimer()
	for b.Loop() {
		fill(evs)
		if _, err := s.AppendEvents(ctx, sid, evs); err != nil {
			b.Fatal(err)
		}
		n += batch
		if untrimmed += batch; untrimmed >= trimEvery {
			start := time.Now()
			if err := s.Trim(ctx, sid, retain); err != nil {
				b.Fatal(err)
			}
			trimTime += time.Since(start)
			untrimmed = 0
			trims++
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/event")
	if trims > 0 {
		// How long a Trim holds the writer: the master's next batch waits.
		b.ReportMetric(float64(trimTime.Microseconds())/float64(trims), "us/trim")
	}
}

// Bench runs the store benchmarks on fresh stores from open: appends in
// batches of 1 and 16, alone and while a reader tails them
// (BenchmarkAppend), and the reads the master makes most (Session, Events
// of a 16-event page), with allocations reported.
func Bench(b *testing.B, open func(b *testing.B) store.Store) {
	for _, batch := range []int{1, 3, 16} {
		for _, tail := range []bool{false, true} {
			name := fmt.Sprintf("batch=%d", batch)
			if tail {
				name += ",reading"
			}
			b.Run("Append/"+name, func(b *testing.B) {
				b.ReportAllocs()
				BenchmarkAppend(b, open(b), batch, tail, 0)
			})
		}
	}
	// A long turn's snapshot holds up to 256 KB of its text.
	b.Run("Append/batch=3,snapshot=256KB", func(b *testing.B) {
		b.ReportAllocs()
		BenchmarkAppend(b, open(b), 3, false, 256<<10)
	})
	// The master's steady state in a long session: the default retention
	// of 10,000 events held, batches of 3, a Trim every 32 or 256 events.
	for _, every := range []int{32, 256} {
		b.Run(fmt.Sprintf("Steady/batch=3,trim=%d", every), func(b *testing.B) {
			b.ReportAllocs()
			BenchmarkSteady(b, open(b), 3, every)
		})
	}
	// withSession is a fresh store from open holding session "s".
	withSession := func(b *testing.B) (store.Store, context.Context) {
		s, ctx := open(b), context.Background()
		if err := s.CreateSession(ctx, store.Session{ID: "s", MachineID: "m", Epoch: "e"}); err != nil {
			b.Fatal(err)
		}
		return s, ctx
	}
	b.Run("Session", func(b *testing.B) {
		s, ctx := withSession(b)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Session(ctx, "s"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Events16", func(b *testing.B) {
		s, ctx := withSession(b)
		evs := make([]store.Event, 16)
		for i := range evs {
			evs[i] = store.Event{MessageID: fmt.Sprint("e", i), Type: "t", Data: []byte(`{"n":1}`)}
		}
		if _, err := s.AppendEvents(ctx, "s", evs); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if got, err := s.Events(ctx, "s", 0, 0); err != nil || len(got) != len(evs) {
				b.Fatalf("Events = %d events, %v", len(got), err)
			}
		}
	})
}

// randomID is a UUIDv4 in its text form, as protocol.NewID makes them.
func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
