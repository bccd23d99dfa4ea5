package benchstat_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/internal/bench/benchstat"
)

func TestPercentile(t *testing.T) {
	t.Parallel()
	ms := func(ns ...int) []time.Duration {
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(100-i) * time.Millisecond // unsorted on purpose
	}
	for _, tc := range []struct {
		name string
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one sample", ms(7), 99, 7 * time.Millisecond},
		{"odd median", ms(5, 1, 3), 50, 3 * time.Millisecond},
		{"even median is the lower middle", ms(4, 1, 3, 2), 50, 2 * time.Millisecond},
		{"p99 of 100", hundred, 99, 99 * time.Millisecond},
		{"p100 is the max", hundred, 100, 100 * time.Millisecond},
		{"p1 of 100", hundred, 1, 1 * time.Millisecond},
		{"tiny p is the min", ms(9, 8, 7), 0.001, 7 * time.Millisecond},
	} {
		require.Equal(t, tc.want, benchstat.Percentile(tc.in, tc.p), tc.name)
	}
	in := ms(3, 1, 2)
	benchstat.Percentile(in, 50)
	require.Equal(t, ms(3, 1, 2), in, "the input is not reordered")
	require.Equal(t, 2*time.Millisecond, benchstat.Median(in))
}

func TestRatioAndMs(t *testing.T) {
	t.Parallel()
	require.InDelta(t, 0.9, benchstat.Ratio(900, 1000), 1e-12)
	require.True(t, math.IsNaN(benchstat.Ratio(1, 0)), "no baseline is no ratio")
	require.InDelta(t, 1.5, benchstat.Ms(1500*time.Microsecond), 1e-12)
}

func TestMeanSEM(t *testing.T) {
	t.Parallel()
	mean, sem := benchstat.MeanSEM([]float64{0.9, 1.0, 1.1, 1.0})
	require.InDelta(t, 1.0, mean, 1e-12)
	// sample sd = sqrt(0.02/3); over sqrt(4)
	require.InDelta(t, math.Sqrt(0.02/3)/2, sem, 1e-12)
	mean, sem = benchstat.MeanSEM([]float64{0.97})
	require.InDelta(t, 0.97, mean, 1e-12)
	require.Zero(t, sem, "one value has no spread")
	mean, sem = benchstat.MeanSEM(nil)
	require.Zero(t, mean)
	require.Zero(t, sem)
}

func TestMedianOf(t *testing.T) {
	t.Parallel()
	require.True(t, math.IsNaN(benchstat.MedianOf(nil)), "no series has no median")
	require.Equal(t, 0.97, benchstat.MedianOf([]float64{1.13, 0.90, 0.97}))
	require.InDelta(t, 0.985, benchstat.MedianOf([]float64{1.13, 0.90, 0.97, 1.00}), 1e-9)
	xs := []float64{3, 1, 2}
	benchstat.MedianOf(xs)
	require.Equal(t, []float64{3, 1, 2}, xs, "the caller's slice is not sorted in place")
}
