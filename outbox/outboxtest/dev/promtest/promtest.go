// Package promtest reads a metric's value from a Prometheus registry the way
// a scrape would, for tests: a component registers its collectors on the
// registry its test gives it (outbox/promreg), and the test reads them
// back by name and labels.
//
//	require.Equal(t, 1.0, promtest.Value(t, reg, "inbox_duplicates_total", "consumer", "projection"))
package promtest

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Sum returns the sum over the series of the metric name in g whose labels
// include labels (pairs: key, value, ...) of a counter's or gauge's value or
// a histogram's sample count. It fails when no series matches; it calls no
// testing.T, so it may run in a require.Eventually condition.
func Sum(g prometheus.Gatherer, name string, labels ...string) (float64, error) {
	v, found, err := find(g, name, labels)
	if err == nil && !found {
		err = fmt.Errorf("promtest: no series %s%v", name, labels)
	}
	return v, err
}

// Value is [Sum] for a test: it fails t when g fails to gather or no series
// matches.
func Value(t testing.TB, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	v, err := Sum(g, name, labels...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Total is [Value] of a counter whose series appears at its first count
// (a CounterVec's): no matching series is 0.
func Total(t testing.TB, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	v, _, err := find(g, name, labels)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func find(g prometheus.Gatherer, name string, labels []string) (sum float64, found bool, err error) {
	if len(labels)%2 != 0 {
		return 0, false, fmt.Errorf("promtest: labels %v are not key, value pairs", labels)
	}
	families, err := g.Gather()
	if err != nil {
		return 0, false, err
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if !hasLabels(m.GetLabel(), labels) {
				continue
			}
			found = true
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			case m.Histogram != nil:
				sum += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return sum, found, nil
}

// hasLabels reports whether pairs (a series' labels) hold every key, value
// pair of labels.
func hasLabels[P interface {
	GetName() string
	GetValue() string
}](pairs []P, labels []string) bool {
	for i := 0; i < len(labels); i += 2 {
		ok := false
		for _, l := range pairs {
			if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
