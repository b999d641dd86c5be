package metrics

// A small writer of Prometheus' text exposition format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/) with the
// few metric types ferry uses, in place of client_golang, whose package
// init (default collectors, procfs, protobuf) every ferry process paid at
// start-up for one page served by ferry serve alone (issue 37).
//
// The hot path is lock-free: counters and gauges are one atomic integer
// (every ferry series counts whole things), a histogram observation is a
// linear search of its few bounds, one atomic add and a CAS loop on the sum.
// A vector takes a read lock to find its child. Everything else, sorting
// included, happens at scrape time.

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// contentType is the text format's, as client_golang served it.
const contentType = "text/plain; version=0.0.4; charset=utf-8"

// metric appends its sample lines, named name, with the label pairs
// labels (name, value, name, value…) before any of its own.
type metric interface {
	appendSamples(b []byte, name string, labels []string) []byte
}

// family is one metric family: a HELP and a TYPE line and its samples. A
// family without samples (an empty vector) is left off the page, as
// client_golang did.
type family struct {
	name, help, typ string
	m               metric
}

// appendFamilies writes fams sorted by name.
func appendFamilies(b []byte, fams []family) []byte {
	slices.SortFunc(fams, func(x, y family) int { return strings.Compare(x.name, y.name) })
	for _, f := range fams {
		start := len(b)
		b = append(b, "# HELP "...)
		b = append(b, f.name...)
		b = append(b, ' ')
		b = appendEscaped(b, f.help, false)
		b = append(b, "\n# TYPE "...)
		b = append(b, f.name...)
		b = append(b, ' ')
		b = append(b, f.typ...)
		b = append(b, '\n')
		mark := len(b)
		if b = f.m.appendSamples(b, f.name, nil); len(b) == mark {
			b = b[:start]
		}
	}
	return b
}

// appendSample writes one line: name{labels} value.
func appendSample(b []byte, name string, labels []string, v float64) []byte {
	b = append(b, name...)
	if len(labels) > 0 {
		b = append(b, '{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, labels[i]...)
			b = append(b, `="`...)
			b = appendEscaped(b, labels[i+1], true)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = appendFloat(b, v)
	return append(b, '\n')
}

// appendEscaped escapes a HELP text (backslash, newline) or a label value
// (and the double quote), as the format requires.
func appendEscaped(b []byte, s string, quote bool) []byte {
	for i := range len(s) {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendFloat writes v as client_golang did: Go's shortest 'g' form, and
// +Inf, -Inf, NaN spelled as the format spells them.
func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// counter counts whole things.
type counter struct{ v atomic.Uint64 }

func (c *counter) inc()         { c.v.Add(1) }
func (c *counter) add(n uint64) { c.v.Add(n) }

func (c *counter) appendSamples(b []byte, name string, labels []string) []byte {
	return appendSample(b, name, labels, float64(c.v.Load()))
}

// gauge is a whole number that goes up and down.
type gauge struct{ v atomic.Int64 }

func (g *gauge) set(n int64) { g.v.Store(n) }
func (g *gauge) add(n int64) { g.v.Add(n) }

func (g *gauge) appendSamples(b []byte, name string, labels []string) []byte {
	return appendSample(b, name, labels, float64(g.v.Load()))
}

// histogram counts observations in fixed buckets. Counts are kept per
// bucket and made cumulative at scrape time, so _count always equals the
// +Inf bucket; _sum, updated apart, may lag a concurrent observation by
// one, as client_golang's could not.
type histogram struct {
	upper  []float64       // bucket bounds, ascending, +Inf implied
	counts []atomic.Uint64 // per bucket, the last one +Inf's
	sum    atomic.Uint64   // float64 bits
}

func newHistogram(upper []float64) *histogram {
	if !slices.IsSorted(upper) {
		panic("metrics: histogram bounds not ascending")
	}
	return &histogram{upper: upper, counts: make([]atomic.Uint64, len(upper)+1)}
}

func (h *histogram) observe(v float64) {
	// A linear search: ferry's histograms have at most a dozen bounds and
	// most observations land in the first few.
	i := 0
	for i < len(h.upper) && v > h.upper[i] {
		i++
	}
	h.counts[i].Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

func (h *histogram) appendSamples(b []byte, name string, labels []string) []byte {
	le := append(slices.Clip(labels), "le", "")
	var cum uint64
	for i := range h.counts {
		cum += h.counts[i].Load()
		bound := math.Inf(1)
		if i < len(h.upper) {
			bound = h.upper[i]
		}
		le[len(le)-1] = string(appendFloat(nil, bound))
		b = appendSample(b, name+"_bucket", le, float64(cum))
	}
	b = appendSample(b, name+"_sum", labels, math.Float64frombits(h.sum.Load()))
	return appendSample(b, name+"_count", labels, float64(cum))
}

// exponential is client_golang's ExponentialBuckets: n bounds from start,
// each factor times the one before.
func exponential(start, factor float64, n int) []float64 {
	b := make([]float64, n)
	for i := range b {
		b[i] = start
		start *= factor
	}
	return b
}

// vec is a family of children told apart by one label's value, made on
// first use.
type vec[T any, P interface {
	*T
	metric
}] struct {
	label string
	mu    sync.RWMutex
	m     map[string]P
}

func newVec[T any, P interface {
	*T
	metric
}](label string) *vec[T, P] {
	return &vec[T, P]{label: label, m: map[string]P{}}
}

// with is the child for the label value v.
func (x *vec[T, P]) with(v string) P {
	x.mu.RLock()
	c := x.m[v]
	x.mu.RUnlock()
	if c != nil {
		return c
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if c = x.m[v]; c == nil {
		c = P(new(T))
		x.m[v] = c
	}
	return c
}

func (x *vec[T, P]) appendSamples(b []byte, name string, labels []string) []byte {
	x.mu.RLock()
	keys := make([]string, 0, len(x.m))
	for k := range x.m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	children := make([]P, len(keys))
	for i, k := range keys {
		children[i] = x.m[k]
	}
	x.mu.RUnlock()
	l := append(slices.Clip(labels), x.label, "")
	for i, c := range children {
		l[len(l)-1] = keys[i]
		b = c.appendSamples(b, name, l)
	}
	return b
}

// value is a sample read at scrape time (the runtime and process series).
type value struct {
	labels []string
	v      float64
}

func (s value) appendSamples(b []byte, name string, labels []string) []byte {
	return appendSample(b, name, append(slices.Clip(labels), s.labels...), s.v)
}
