package metrics_test

import (
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/metrics"
)

// BenchmarkEventHooks is what the hub's hooks cost one relayed event
// (queued, taken, stored in a batch of one, relayed, written out), in
// parallel as the session writers and connection writers call them.
func BenchmarkEventHooks(b *testing.B) {
	m := metrics.New()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.WriterQueued(1)
			m.WriterQueued(-1)
			m.Stored(1)
			m.Relayed(700 * time.Microsecond)
			m.ConnQueue(1)
		}
	})
}
