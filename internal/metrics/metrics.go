// Package metrics exports a master node's measurements to Prometheus
// (github.com/prometheus/client_golang) on a registry of its own, never
// the process-wide default, so that nothing else registered in the binary
// leaks onto the endpoint and tests can run several nodes in one process.
//
// Metrics implements master.Metrics (the hub's seam: connections, sessions,
// machines, relay latency, batches, queues, drops, resumes), and wraps the
// store and the broker the master uses (Store, Broker) to count their
// failures by operation. Handler serves the text exposition format; it is
// unauthenticated, so the listener that serves it must stay private
// (docs/scale.md, docs/security.md). The series are listed in
// docs/scale.md's metrics table, which a test keeps equal to the
// registered ones.
package metrics

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ferry-dev/ferry/internal/broker"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// Metrics is one node's set of series. Create it with New.
type Metrics struct {
	reg *prometheus.Registry

	conns     *prometheus.GaugeVec
	sessions  prometheus.Gauge
	machines  prometheus.Gauge
	relay     prometheus.Histogram
	stored    prometheus.Counter
	batch     prometheus.Histogram
	writerQ   prometheus.Gauge
	connQ     prometheus.Histogram
	slow      prometheus.Counter
	resumes   prometheus.Counter
	storeErr  *prometheus.CounterVec
	brokerErr *prometheus.CounterVec
}

var _ master.Metrics = (*Metrics)(nil)

// New registers the series, and the Go runtime and process collectors, on
// a fresh registry.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		conns: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ferry_connections",
			Help: "WebSocket connections open on this node, by role (ui, client)."}, []string{"role"}),
		sessions: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ferry_sessions_loaded",
			Help: "Sessions whose state this node holds in memory."}),
		machines: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ferry_machines_online",
			Help: "Machines whose client connection is on this node."}),
		relay: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ferry_relay_latency_seconds",
			Help:    "From a client's event read off its socket to its publication on the broker, after it was stored.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1}}),
		stored: prometheus.NewCounter(prometheus.CounterOpts{Name: "ferry_events_stored_total",
			Help: "Events written to the store (re-sent duplicates included)."}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ferry_store_batch_size",
			Help: "Events per store write of a session's writer.", Buckets: prometheus.ExponentialBuckets(1, 2, 9)}),
		writerQ: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ferry_writer_queue_depth",
			Help: "Events waiting in all session writers of this node."}),
		connQ: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ferry_conn_queue_depth",
			Help: "Frames a connection's writer found queued each time it woke.", Buckets: prometheus.ExponentialBuckets(1, 4, 6)}),
		slow: prometheus.NewCounter(prometheus.CounterOpts{Name: "ferry_slow_consumer_drops_total",
			Help: "Connections dropped because their outbound queue was full."}),
		resumes: prometheus.NewCounter(prometheus.CounterOpts{Name: "ferry_ui_resumes_total",
			Help: "UI subscriptions resumed from a seq with a replay from the store."}),
		storeErr: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ferry_store_errors_total",
			Help: "Store calls that failed, by operation (not found, exists, quota and cancelled calls are not failures)."}, []string{"op"}),
		brokerErr: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ferry_broker_errors_total",
			Help: "Broker calls that failed, by operation (publish, subscribe)."}, []string{"op"}),
	}
	m.reg.MustRegister(m.conns, m.sessions, m.machines, m.relay, m.stored, m.batch, m.writerQ, m.connQ,
		m.slow, m.resumes, m.storeErr, m.brokerErr,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Both roles from the start, so a scrape shows 0 rather than nothing.
	m.conns.WithLabelValues(protocol.RoleUI.String())
	m.conns.WithLabelValues(protocol.RoleClient.String())
	return m
}

// Registry is the registry the series are on.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the series in Prometheus' exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Connections implements master.Metrics.
func (m *Metrics) Connections(role protocol.Role, n int) {
	m.conns.WithLabelValues(role.String()).Set(float64(n))
}

// SessionsLoaded implements master.Metrics.
func (m *Metrics) SessionsLoaded(n int) { m.sessions.Set(float64(n)) }

// MachinesOnline implements master.Metrics.
func (m *Metrics) MachinesOnline(n int) { m.machines.Set(float64(n)) }

// Relayed implements master.Metrics.
func (m *Metrics) Relayed(d time.Duration) { m.relay.Observe(d.Seconds()) }

// Stored implements master.Metrics.
func (m *Metrics) Stored(n int) {
	m.stored.Add(float64(n))
	m.batch.Observe(float64(n))
}

// WriterQueued implements master.Metrics.
func (m *Metrics) WriterQueued(delta int) { m.writerQ.Add(float64(delta)) }

// ConnQueue implements master.Metrics.
func (m *Metrics) ConnQueue(depth int) { m.connQ.Observe(float64(depth)) }

// SlowConsumer implements master.Metrics.
func (m *Metrics) SlowConsumer() { m.slow.Inc() }

// UIResumed implements master.Metrics.
func (m *Metrics) UIResumed() { m.resumes.Inc() }

// Store wraps s so that its failures count in ferry_store_errors_total,
// with the method's name as op. Answers that are part of the contract
// (ErrNotFound, ErrExists, ErrQuota) and cancelled calls are not failures.
func (m *Metrics) Store(s store.Store) store.Store { return countingStore{Store: s, m: m} }

type countingStore struct {
	store.Store
	m *Metrics
}

func (s countingStore) count(op string, err error) error {
	if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrExists) &&
		!errors.Is(err, store.ErrQuota) && !errors.Is(err, context.Canceled) {
		s.m.storeErr.WithLabelValues(op).Inc()
	}
	return err
}

// Broker wraps b so that its failures count in ferry_broker_errors_total
// (op publish or subscribe; a cancelled publish is not a failure). The
// wrapper keeps b's broker.Connectivity.
func (m *Metrics) Broker(b broker.Broker) broker.Broker { return countingBroker{Broker: b, m: m} }

type countingBroker struct {
	broker.Broker
	m *Metrics
}

var _ broker.Connectivity = countingBroker{}

func (b countingBroker) Publish(ctx context.Context, topic string, data []byte) error {
	err := b.Broker.Publish(ctx, topic, data)
	if err != nil && !errors.Is(err, context.Canceled) {
		b.m.brokerErr.WithLabelValues("publish").Inc()
	}
	return err
}

func (b countingBroker) Subscribe(topic string, deliver func(data []byte)) (func(), error) {
	unsub, err := b.Broker.Subscribe(topic, deliver)
	if err != nil {
		b.m.brokerErr.WithLabelValues("subscribe").Inc()
	}
	return unsub, err
}

// Connected implements broker.Connectivity.
func (b countingBroker) Connected() bool { return broker.Connected(b.Broker) }
