package storetest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/ferry-dev/ferry/internal/store"
)

// BenchmarkAppend measures AppendEvents of 1 KB events in batches of
// batch into one session of s, reporting ns/event; with tail set, a second
// goroutine reads every new event back after each append (as a replay to
// a resuming UI would), to show the cost of appending while reading.
func BenchmarkAppend(b *testing.B, s store.Store, batch int, tail bool) {
	ctx := context.Background()
	sid := fmt.Sprintf("bench-%d-%v", batch, tail)
	if err := s.CreateSession(ctx, store.Session{ID: sid, MachineID: "m", Epoch: "e"}); err != nil {
		b.Fatal(err)
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
			id := fmt.Sprintf("%s-%012d", sid, n)
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
