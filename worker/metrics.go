package main

import (
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"

	"github.com/outflow/outflow/outbox/promreg"
)

// promHandler is a client.MetricsHandler that exports the Temporal SDK's
// metrics (and the workflows' own, emitted through
// workflow.GetMetricsHandler) to a Prometheus registry. The SDK's tally
// adapter would pull in uber-go/tally; this is the small subset the worker
// needs.
//
// Counters get a "_total" suffix and timers become histograms in seconds
// with a "_seconds" suffix, as Prometheus naming wants. Prometheus fixes a
// metric's label names at its first use; a later use with other tags fills
// missing labels with "" and drops extra ones rather than failing.
type promHandler struct {
	store *promStore
	tags  map[string]string
}

type promStore struct {
	reg prometheus.Registerer

	mu         sync.Mutex
	counters   map[string]*prometheus.CounterVec
	gauges     map[string]*prometheus.GaugeVec
	histograms map[string]*prometheus.HistogramVec
	labels     map[string][]string
}

// newPromHandler returns a handler registering its metrics on reg.
func newPromHandler(reg prometheus.Registerer) client.MetricsHandler {
	return &promHandler{store: &promStore{
		reg:        reg,
		counters:   map[string]*prometheus.CounterVec{},
		gauges:     map[string]*prometheus.GaugeVec{},
		histograms: map[string]*prometheus.HistogramVec{},
		labels:     map[string][]string{},
	}}
}

// WithTags returns a handler whose metrics carry tags in addition to h's.
func (h *promHandler) WithTags(tags map[string]string) client.MetricsHandler {
	merged := make(map[string]string, len(h.tags)+len(tags))
	for k, v := range h.tags {
		merged[k] = v
	}
	for k, v := range tags {
		merged[sanitize(k)] = v
	}
	return &promHandler{store: h.store, tags: merged}
}

// Counter returns the counter name (exported as name_total).
func (h *promHandler) Counter(name string) client.MetricsCounter {
	name = withSuffix(sanitize(name), "_total")
	s := h.store
	s.mu.Lock()
	defer s.mu.Unlock()
	vec := vecOf(s, s.counters, name, h.tags, func(labels []string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: "Temporal SDK / workflow counter " + name + "."}, labels)
	})
	c := vec.WithLabelValues(s.labelValues(name, h.tags)...)
	return counterFunc(func(d int64) { c.Add(float64(d)) })
}

// Gauge returns the gauge name.
func (h *promHandler) Gauge(name string) client.MetricsGauge {
	name = sanitize(name)
	s := h.store
	s.mu.Lock()
	defer s.mu.Unlock()
	vec := vecOf(s, s.gauges, name, h.tags, func(labels []string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: "Temporal SDK gauge " + name + "."}, labels)
	})
	g := vec.WithLabelValues(s.labelValues(name, h.tags)...)
	return gaugeFunc(g.Set)
}

// Timer returns a histogram of durations in seconds (name_seconds).
func (h *promHandler) Timer(name string) client.MetricsTimer {
	name = withSuffix(sanitize(name), "_seconds")
	s := h.store
	s.mu.Lock()
	defer s.mu.Unlock()
	vec := vecOf(s, s.histograms, name, h.tags, func(labels []string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    name,
			Help:    "Temporal SDK latency " + name + ".",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, labels)
	})
	o := vec.WithLabelValues(s.labelValues(name, h.tags)...)
	return timerFunc(func(d time.Duration) { o.Observe(d.Seconds()) })
}

// vecOf returns the vector name of vecs, made by create with the label
// names of tags and registered at its first use. Callers hold mu.
func vecOf[V prometheus.Collector](s *promStore, vecs map[string]V, name string, tags map[string]string, create func(labels []string) V) V {
	vec, ok := vecs[name]
	if !ok {
		vec = register(s.reg, create(s.labelNames(name, tags)))
		vecs[name] = vec
	}
	return vec
}

// labelNames fixes the metric's label names at first use. Callers hold mu.
func (s *promStore) labelNames(name string, tags map[string]string) []string {
	names := make([]string, 0, len(tags))
	for k := range tags {
		names = append(names, k)
	}
	slices.Sort(names)
	s.labels[name] = names
	return names
}

// labelValues orders tags by the metric's label names. Callers hold mu.
func (s *promStore) labelValues(name string, tags map[string]string) []string {
	names := s.labels[name]
	vals := make([]string, len(names))
	for i, k := range names {
		vals[i] = tags[k]
	}
	return vals
}

// register registers c with promreg.Register (two handlers sharing one
// registry share its collectors); a name held by another metric type is a
// programming error.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	c, err := promreg.Register(reg, c)
	if err != nil {
		panic(err)
	}
	return c
}

var invalidChars = regexp.MustCompile(`[^a-zA-Z0-9_]`)

func sanitize(name string) string { return invalidChars.ReplaceAllString(name, "_") }

func withSuffix(name, suffix string) string {
	if strings.HasSuffix(name, suffix) {
		return name
	}
	return name + suffix
}

type counterFunc func(int64)

func (f counterFunc) Inc(d int64) { f(d) }

type gaugeFunc func(float64)

func (f gaugeFunc) Update(v float64) { f(v) }

type timerFunc func(time.Duration)

func (f timerFunc) Record(d time.Duration) { f(d) }
