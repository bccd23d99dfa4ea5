// Package benchstat is the arithmetic outflow's benchmarks (cmd/bench and
// the peers bench, bench/peers) share, so that a percentile or a ratio means
// the same in every table.
package benchstat

import (
	"math"
	"slices"
	"time"
)

// Percentile returns the p-th percentile (0 < p <= 100) of ds by the
// nearest-rank method: the smallest sample with at least p% of the samples
// at or below it. It returns 0 for no samples.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// Median is the 50th percentile by nearest rank (the lower middle sample of
// an even count).
func Median(ds []time.Duration) time.Duration { return Percentile(ds, 50) }

// MedianOf is the median of xs: the middle value, or the mean of the two
// middle values of an even count. It returns NaN for no values, so that a
// missing series shows as "n/a".
func MedianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Ratio returns a/b, or NaN when b is zero: a missing baseline must show as
// "n/a", never as a number that passes a target.
func Ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// Ms expresses d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// MeanSEM returns the mean of xs and its standard error (the sample
// standard deviation over the square root of len(xs)); the error is 0 for
// fewer than two values.
func MeanSEM(xs []float64) (mean, sem float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss/float64(len(xs)-1)) / math.Sqrt(float64(len(xs)))
}
