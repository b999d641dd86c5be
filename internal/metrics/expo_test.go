package metrics

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestExpositionExact: the writer's page is the text format 0.0.4 to the
// byte (families sorted, HELP escaped, label values escaped, cumulative
// buckets with +Inf, an empty vector left off), and Prometheus' own parser
// reads back the values and the escaped label value.
func TestExpositionExact(t *testing.T) {
	t.Parallel()
	odd := "a\"b\\c\nd" // a quote, a backslash, a newline
	c, g, h := &counter{}, &gauge{}, newHistogram([]float64{0.5, 1})
	errs, empty := newVec[counter]("op"), newVec[counter]("op")
	c.add(3)
	g.add(-5)
	g.add(2)
	for _, v := range []float64{0.25, 0.5, 0.75, 3} {
		h.observe(v)
	}
	errs.with(odd).inc()
	errs.with("b").add(2)
	errs.with(odd).inc()
	page := appendFamilies(nil, []family{
		{"x_total", "Counts \\ things\nover lines.", "counter", c},
		{"w_seconds", "A histogram.", "histogram", h},
		{"y_errors_total", "By op.", "counter", errs},
		{"z", "A gauge.", "gauge", g},
		{"v_empty_total", "Nothing yet.", "counter", empty},
	})
	want := `# HELP w_seconds A histogram.
# TYPE w_seconds histogram
w_seconds_bucket{le="0.5"} 2
w_seconds_bucket{le="1"} 3
w_seconds_bucket{le="+Inf"} 4
w_seconds_sum 4.5
w_seconds_count 4
# HELP x_total Counts \\ things\nover lines.
# TYPE x_total counter
x_total 3
# HELP y_errors_total By op.
# TYPE y_errors_total counter
y_errors_total{op="a\"b\\c\nd"} 2
y_errors_total{op="b"} 2
# HELP z A gauge.
# TYPE z gauge
z -3
`
	if string(page) != want {
		t.Fatalf("page:\n%s\nwant:\n%s", page, want)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(page))
	if err != nil {
		t.Fatalf("Prometheus' parser refuses the page: %v", err)
	}
	if got := fams["x_total"].GetHelp(); got != "Counts \\ things\nover lines." {
		t.Errorf("help read back as %q", got)
	}
	var found bool
	for _, m := range fams["y_errors_total"].GetMetric() {
		if m.GetLabel()[0].GetValue() == odd {
			found = m.GetCounter().GetValue() == 2
		}
	}
	if !found {
		t.Errorf("the label value %q did not read back with its count: %v", odd, fams["y_errors_total"])
	}
	hist := fams["w_seconds"].GetMetric()[0].GetHistogram()
	if hist.GetSampleCount() != 4 || hist.GetSampleSum() != 4.5 || len(hist.GetBucket()) != 3 ||
		hist.GetBucket()[0].GetCumulativeCount() != 2 || hist.GetBucket()[1].GetCumulativeCount() != 3 ||
		!math.IsInf(hist.GetBucket()[2].GetUpperBound(), 1) || hist.GetBucket()[2].GetCumulativeCount() != 4 {
		t.Errorf("histogram read back as %v", hist)
	}
}

// TestFloats: values are spelled as client_golang spelled them.
func TestFloats(t *testing.T) {
	t.Parallel()
	for v, want := range map[float64]string{
		0.0005: "0.0005", 1: "1", 1e6: "1e+06", -3: "-3", math.Inf(1): "+Inf", math.Inf(-1): "-Inf", math.NaN(): "NaN",
	} {
		if got := string(appendFloat(nil, v)); got != want {
			t.Errorf("appendFloat(%v) = %q, want %q", v, got, want)
		}
	}
}

// TestScrapeFailsWhole: when the process series cannot be read the scrape
// fails with 500, without the cause, and counts in
// promhttp_metric_handler_errors_total{cause="gathering"}, as promhttp's
// HTTPErrorOnError did.
func TestScrapeFailsWhole(t *testing.T) {
	// Not parallel: it swaps readProcess.
	m := New()
	readProcess = func() ([]family, error) { return nil, errors.New("/proc/self/stat: secret detail") }
	defer func() { readProcess = processFamilies }()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusInternalServerError || bytes.Contains(rec.Body.Bytes(), []byte("secret")) {
		t.Fatalf("HTTP %d %q, want 500 without the cause", rec.Code, rec.Body)
	}
	readProcess = processFamilies
	rec = httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if !bytes.Contains(rec.Body.Bytes(), []byte("promhttp_metric_handler_errors_total{cause=\"gathering\"} 1\n")) {
		t.Fatalf("the failed scrape was not counted:\n%s", rec.Body)
	}
}

// TestConcurrentObservations: observations from several goroutines while
// the page is written lose nothing: the counts add up once they stop, and
// every page on the way is one Prometheus reads (run it with -race too).
func TestConcurrentObservations(t *testing.T) {
	t.Parallel()
	m := New()
	const workers, each = 4, 5000
	done := make(chan struct{})
	for range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range each {
				m.Relayed(time.Duration(i%3) * time.Millisecond)
				m.Stored(1)
				m.WriterQueued(1)
				m.WriterQueued(-1)
				m.storeErr.with(fmt.Sprint("op", i%7)).inc()
			}
		}()
	}
	for n := 0; n < workers; {
		select {
		case <-done:
			n++
		default:
			page, err := m.page()
			if err != nil {
				t.Fatal(err)
			}
			p := expfmt.NewTextParser(model.UTF8Validation)
			if _, err := p.TextToMetricFamilies(bytes.NewReader(page)); err != nil {
				t.Fatalf("a page written during observations: %v", err)
			}
		}
	}
	page, err := m.page()
	if err != nil {
		t.Fatal(err)
	}
	var upToMs int // observations of 0 and 1 ms, within the 0.001 bucket
	for i := range each {
		if i%3 < 2 {
			upToMs++
		}
	}
	for _, line := range []string{
		fmt.Sprintf("ferry_relay_latency_seconds_count %d\n", workers*each),
		fmt.Sprintf("ferry_relay_latency_seconds_bucket{le=\"+Inf\"} %d\n", workers*each),
		fmt.Sprintf("ferry_events_stored_total %d\n", workers*each),
		"ferry_writer_queue_depth 0\n",
		fmt.Sprintf("ferry_relay_latency_seconds_bucket{le=\"0.001\"} %d\n", workers*upToMs),
	} {
		if !bytes.Contains(page, []byte(line)) {
			t.Errorf("the page lacks %q", line)
		}
	}
}
