// Package metrics exports a master node's measurements in Prometheus' text
// exposition format 0.0.4, from a registry of its own per Metrics value, so
// that tests can run several nodes in one process and nothing else in the
// binary reaches the endpoint. It writes the format itself (expo.go): the
// Prometheus client library's package init cost every ferry process about
// 4 ms of start-up for this one page (issue 37). Beside ferry's series it
// serves the Go runtime (go_*) and process (process_*) series Prometheus
// users know, under client_golang's names, read at scrape time.
//
// Metrics implements master.Metrics (the hub's seam: connections, sessions,
// machines, relay latency, batches, queues, drops, resumes), and wraps the
// store and the broker the master uses (Store, Broker) to count their
// failures by operation. Handler serves the page; it is unauthenticated, so
// the listener that serves it must stay private (docs/scale.md,
// docs/security.md). The series are listed in docs/scale.md's metrics
// table, which a test keeps equal to the registered ones.
package metrics

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ferry-dev/ferry/internal/broker"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// Metrics is one node's set of series. Create it with New.
type Metrics struct {
	fams []family // ferry's series and the handler's own

	conns     *vec[gauge, *gauge]
	sessions  gauge
	machines  gauge
	relay     *histogram
	stored    counter
	batch     *histogram
	writerQ   gauge
	connQ     *histogram
	slow      counter
	resumes   counter
	storeErr  *vec[counter, *counter]
	brokerErr *vec[counter, *counter]
	// handlerErr is promhttp's promhttp_metric_handler_errors_total, kept
	// for dashboards that watch it.
	handlerErr *vec[counter, *counter]
}

var _ master.Metrics = (*Metrics)(nil)

// New makes the series on a registry of their own.
func New() *Metrics {
	m := &Metrics{
		conns:      newVec[gauge]("role"),
		relay:      newHistogram([]float64{.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1}),
		batch:      newHistogram(exponential(1, 2, 9)),
		connQ:      newHistogram(exponential(1, 4, 6)),
		storeErr:   newVec[counter]("op"),
		brokerErr:  newVec[counter]("op"),
		handlerErr: newVec[counter]("cause"),
	}
	m.fams = []family{
		{"ferry_connections", "WebSocket connections open on this node, by role (ui, client).", "gauge", m.conns},
		{"ferry_sessions_loaded", "Sessions whose state this node holds in memory.", "gauge", &m.sessions},
		{"ferry_machines_online", "Machines whose client connection is on this node.", "gauge", &m.machines},
		{"ferry_relay_latency_seconds", "From a client's event read off its socket to its publication on the broker, after it was stored.", "histogram", m.relay},
		{"ferry_events_stored_total", "Events written to the store (re-sent duplicates included).", "counter", &m.stored},
		{"ferry_store_batch_size", "Events per store write of a session's writer.", "histogram", m.batch},
		{"ferry_writer_queue_depth", "Events waiting in all session writers of this node.", "gauge", &m.writerQ},
		{"ferry_conn_queue_depth", "Frames a connection's writer found queued each time it woke.", "histogram", m.connQ},
		{"ferry_slow_consumer_drops_total", "Connections dropped because their outbound queue was full.", "counter", &m.slow},
		{"ferry_ui_resumes_total", "UI subscriptions resumed from a seq with a replay from the store.", "counter", &m.resumes},
		{"ferry_store_errors_total", "Store calls that failed, by operation (not found, exists, quota and cancelled calls are not failures).", "counter", m.storeErr},
		{"ferry_broker_errors_total", "Broker calls that failed, by operation (publish, subscribe).", "counter", m.brokerErr},
		{"promhttp_metric_handler_errors_total", "Total number of internal errors encountered by the promhttp metric handler.", "counter", m.handlerErr},
	}
	// Both roles and both causes from the start, so a scrape shows 0
	// rather than nothing.
	m.conns.with(protocol.RoleUI.String())
	m.conns.with(protocol.RoleClient.String())
	m.handlerErr.with("encoding")
	m.handlerErr.with("gathering")
	return m
}

// readProcess reads the process series; a test makes it fail.
var readProcess = processFamilies

// page is the exposition: ferry's series, then the runtime's and the
// process', read now.
func (m *Metrics) page() ([]byte, error) {
	proc, err := readProcess()
	if err != nil {
		return nil, err
	}
	fams := append(append(append(make([]family, 0, len(m.fams)+40), m.fams...), goFamilies()...), proc...)
	return appendFamilies(make([]byte, 0, 8<<10), fams), nil
}

// Handler serves the series in the text exposition format, gzipped when
// the scraper accepts it, to any method, as promhttp.HandlerFor did. A
// scrape whose runtime or process series cannot be read fails with 500
// (promhttp's HTTPErrorOnError), without the cause, which counts in
// promhttp_metric_handler_errors_total{cause="gathering"}.
func (m *Metrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, err := m.page()
		if err != nil {
			m.handlerErr.with("gathering").inc()
			http.Error(w, "An error has occurred while serving metrics.", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", contentType)
		var out io.Writer = w
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			defer func() {
				if gz.Close() != nil {
					m.handlerErr.with("encoding").inc()
				}
			}()
			out = gz
		}
		if _, err := out.Write(page); err != nil {
			m.handlerErr.with("encoding").inc()
		}
	})
}

// acceptsGzip reports whether an Accept-Encoding header accepts gzip: it is
// listed without q=0.
func acceptsGzip(h string) bool {
	for e := range strings.SplitSeq(h, ",") {
		name, params, _ := strings.Cut(e, ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") {
			q, ok := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q=")
			return !ok || strings.Trim(q, "0.") != ""
		}
	}
	return false
}

// Connections implements master.Metrics.
func (m *Metrics) Connections(role protocol.Role, n int) {
	m.conns.with(role.String()).set(int64(n))
}

// SessionsLoaded implements master.Metrics.
func (m *Metrics) SessionsLoaded(n int) { m.sessions.set(int64(n)) }

// MachinesOnline implements master.Metrics.
func (m *Metrics) MachinesOnline(n int) { m.machines.set(int64(n)) }

// Relayed implements master.Metrics.
func (m *Metrics) Relayed(d time.Duration) { m.relay.observe(d.Seconds()) }

// Stored implements master.Metrics.
func (m *Metrics) Stored(n int) {
	if n > 0 {
		m.stored.add(uint64(n))
	}
	m.batch.observe(float64(n))
}

// WriterQueued implements master.Metrics.
func (m *Metrics) WriterQueued(delta int) { m.writerQ.add(int64(delta)) }

// ConnQueue implements master.Metrics.
func (m *Metrics) ConnQueue(depth int) { m.connQ.observe(float64(depth)) }

// SlowConsumer implements master.Metrics.
func (m *Metrics) SlowConsumer() { m.slow.inc() }

// UIResumed implements master.Metrics.
func (m *Metrics) UIResumed() { m.resumes.inc() }

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
		s.m.storeErr.with(op).inc()
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
		b.m.brokerErr.with("publish").inc()
	}
	return err
}

func (b countingBroker) Subscribe(topic string, deliver func(data []byte)) (func(), error) {
	unsub, err := b.Broker.Subscribe(topic, deliver)
	if err != nil {
		b.m.brokerErr.with("subscribe").inc()
	}
	return unsub, err
}

// Connected implements broker.Connectivity.
func (b countingBroker) Connected() bool { return broker.Connected(b.Broker) }
