package metrics

// The Go runtime's series under client_golang's names and help texts (its
// default Go collector), read at scrape time: the memstats ones from
// runtime/metrics, which does not stop the world as runtime.ReadMemStats
// does.

import (
	"runtime"
	"runtime/debug"
	rm "runtime/metrics"
	"slices"
	"time"
)

// memSeries are the go_memstats_* and go_* series that are a sum of
// runtime/metrics values (client_golang's memStatsFromRM).
var memSeries = []struct {
	name, help, typ string
	from            []string
}{
	{"go_memstats_alloc_bytes", "Number of bytes allocated in heap and currently in use. Equals to /memory/classes/heap/objects:bytes.", "gauge",
		[]string{"/memory/classes/heap/objects:bytes"}},
	{"go_memstats_alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already. Equals to /gc/heap/allocs:bytes.", "counter",
		[]string{"/gc/heap/allocs:bytes"}},
	{"go_memstats_sys_bytes", "Number of bytes obtained from system. Equals to /memory/classes/total:byte.", "gauge",
		[]string{"/memory/classes/total:bytes"}},
	{"go_memstats_mallocs_total", "Total number of heap objects allocated, both live and gc-ed. Semantically a counter version for go_memstats_heap_objects gauge. Equals to /gc/heap/allocs:objects + /gc/heap/tiny/allocs:objects.", "counter",
		[]string{"/gc/heap/allocs:objects", "/gc/heap/tiny/allocs:objects"}},
	{"go_memstats_frees_total", "Total number of heap objects frees. Equals to /gc/heap/frees:objects + /gc/heap/tiny/allocs:objects.", "counter",
		[]string{"/gc/heap/frees:objects", "/gc/heap/tiny/allocs:objects"}},
	{"go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use, same as go_memstats_alloc_bytes. Equals to /memory/classes/heap/objects:bytes.", "gauge",
		[]string{"/memory/classes/heap/objects:bytes"}},
	{"go_memstats_heap_sys_bytes", "Number of heap bytes obtained from system. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes + /memory/classes/heap/released:bytes + /memory/classes/heap/free:bytes.", "gauge",
		[]string{"/memory/classes/heap/objects:bytes", "/memory/classes/heap/unused:bytes", "/memory/classes/heap/released:bytes", "/memory/classes/heap/free:bytes"}},
	{"go_memstats_heap_idle_bytes", "Number of heap bytes waiting to be used. Equals to /memory/classes/heap/released:bytes + /memory/classes/heap/free:bytes.", "gauge",
		[]string{"/memory/classes/heap/released:bytes", "/memory/classes/heap/free:bytes"}},
	{"go_memstats_heap_inuse_bytes", "Number of heap bytes that are in use. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes", "gauge",
		[]string{"/memory/classes/heap/objects:bytes", "/memory/classes/heap/unused:bytes"}},
	{"go_memstats_heap_released_bytes", "Number of heap bytes released to OS. Equals to /memory/classes/heap/released:bytes.", "gauge",
		[]string{"/memory/classes/heap/released:bytes"}},
	{"go_memstats_heap_objects", "Number of currently allocated objects. Equals to /gc/heap/objects:objects.", "gauge",
		[]string{"/gc/heap/objects:objects"}},
	{"go_memstats_stack_inuse_bytes", "Number of bytes obtained from system for stack allocator in non-CGO environments. Equals to /memory/classes/heap/stacks:bytes.", "gauge",
		[]string{"/memory/classes/heap/stacks:bytes"}},
	{"go_memstats_stack_sys_bytes", "Number of bytes obtained from system for stack allocator. Equals to /memory/classes/heap/stacks:bytes + /memory/classes/os-stacks:bytes.", "gauge",
		[]string{"/memory/classes/heap/stacks:bytes", "/memory/classes/os-stacks:bytes"}},
	{"go_memstats_mspan_inuse_bytes", "Number of bytes in use by mspan structures. Equals to /memory/classes/metadata/mspan/inuse:bytes.", "gauge",
		[]string{"/memory/classes/metadata/mspan/inuse:bytes"}},
	{"go_memstats_mspan_sys_bytes", "Number of bytes used for mspan structures obtained from system. Equals to /memory/classes/metadata/mspan/inuse:bytes + /memory/classes/metadata/mspan/free:bytes.", "gauge",
		[]string{"/memory/classes/metadata/mspan/inuse:bytes", "/memory/classes/metadata/mspan/free:bytes"}},
	{"go_memstats_mcache_inuse_bytes", "Number of bytes in use by mcache structures. Equals to /memory/classes/metadata/mcache/inuse:bytes.", "gauge",
		[]string{"/memory/classes/metadata/mcache/inuse:bytes"}},
	{"go_memstats_mcache_sys_bytes", "Number of bytes used for mcache structures obtained from system. Equals to /memory/classes/metadata/mcache/inuse:bytes + /memory/classes/metadata/mcache/free:bytes.", "gauge",
		[]string{"/memory/classes/metadata/mcache/inuse:bytes", "/memory/classes/metadata/mcache/free:bytes"}},
	{"go_memstats_buck_hash_sys_bytes", "Number of bytes used by the profiling bucket hash table. Equals to /memory/classes/profiling/buckets:bytes.", "gauge",
		[]string{"/memory/classes/profiling/buckets:bytes"}},
	{"go_memstats_gc_sys_bytes", "Number of bytes used for garbage collection system metadata. Equals to /memory/classes/metadata/other:bytes.", "gauge",
		[]string{"/memory/classes/metadata/other:bytes"}},
	{"go_memstats_other_sys_bytes", "Number of bytes used for other system allocations. Equals to /memory/classes/other:bytes.", "gauge",
		[]string{"/memory/classes/other:bytes"}},
	{"go_memstats_next_gc_bytes", "Number of heap bytes when next garbage collection will take place. Equals to /gc/heap/goal:bytes.", "gauge",
		[]string{"/gc/heap/goal:bytes"}},
	{"go_gc_gogc_percent", "Heap size target percentage configured by the user, otherwise 100. This value is set by the GOGC environment variable, and the runtime/debug.SetGCPercent function. Sourced from /gc/gogc:percent.", "gauge",
		[]string{"/gc/gogc:percent"}},
	{"go_gc_gomemlimit_bytes", "Go runtime memory limit configured by the user, otherwise math.MaxInt64. This value is set by the GOMEMLIMIT environment variable, and the runtime/debug.SetMemoryLimit function. Sourced from /gc/gomemlimit:bytes.", "gauge",
		[]string{"/gc/gomemlimit:bytes"}},
	{"go_sched_gomaxprocs_threads", "The current runtime.GOMAXPROCS setting, or the number of operating system threads that can execute user-level Go code simultaneously. Sourced from /sched/gomaxprocs:threads.", "gauge",
		[]string{"/sched/gomaxprocs:threads"}},
}

// goFamilies reads the Go runtime's series.
func goFamilies() []family {
	idx := map[string]int{}
	var samples []rm.Sample
	for _, s := range memSeries {
		for _, n := range s.from {
			if _, ok := idx[n]; !ok {
				idx[n] = len(samples)
				samples = append(samples, rm.Sample{Name: n})
			}
		}
	}
	rm.Read(samples)
	fams := make([]family, 0, len(memSeries)+5)
next:
	for _, s := range memSeries {
		var v float64
		for _, n := range s.from {
			smp := samples[idx[n]]
			if smp.Value.Kind() != rm.KindUint64 {
				continue next // not in this Go version: left off
			}
			v += float64(smp.Value.Uint64())
		}
		fams = append(fams, family{s.name, s.help, s.typ, value{v: v}})
	}

	var gc debug.GCStats
	gc.PauseQuantiles = make([]time.Duration, 5)
	debug.ReadGCStats(&gc)
	threads, _ := runtime.ThreadCreateProfile(nil)
	var lastGC float64 // 0 before the first GC, not the zero time's overflow
	if !gc.LastGC.IsZero() {
		lastGC = float64(gc.LastGC.UnixNano()) / 1e9
	}
	return append(fams,
		family{"go_goroutines", "Number of goroutines that currently exist.", "gauge", value{v: float64(runtime.NumGoroutine())}},
		family{"go_threads", "Number of OS threads created.", "gauge", value{v: float64(threads)}},
		family{"go_info", "Information about the Go environment.", "gauge", value{labels: []string{"version", runtime.Version()}, v: 1}},
		family{"go_memstats_last_gc_time_seconds", "Number of seconds since 1970 of last garbage collection.", "gauge",
			value{v: lastGC}},
		family{"go_gc_duration_seconds", "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.", "summary",
			gcSummary(gc)},
	)
}

// gcSummary is client_golang's go_gc_duration_seconds: the pause
// quantiles 0, .25, .5, .75 and 1, their total and the number of GCs.
type gcSummary debug.GCStats

func (s gcSummary) appendSamples(b []byte, name string, labels []string) []byte {
	q := append(slices.Clip(labels), "quantile", "")
	for i, p := range s.PauseQuantiles {
		q[len(q)-1] = string(appendFloat(nil, float64(i)/float64(len(s.PauseQuantiles)-1)))
		b = appendSample(b, name, q, p.Seconds())
	}
	b = appendSample(b, name+"_sum", labels, s.PauseTotal.Seconds())
	return appendSample(b, name+"_count", labels, float64(s.NumGC))
}
