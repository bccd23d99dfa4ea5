package main

import (
	"math"
	"slices"
	"time"
)

// percentile returns the p-th percentile (0 < p <= 100) of ds by the
// nearest-rank method: the smallest sample with at least p% of the samples
// at or below it. It returns 0 for no samples.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// median is the 50th percentile by nearest rank (the lower middle sample of
// an even count).
func median(ds []time.Duration) time.Duration { return percentile(ds, 50) }

// ratio returns a/b, or NaN when b is zero: a missing baseline must show as
// "n/a", never as a number that passes a target.
func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// perSecond is n events in d as a rate.
func perSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return math.NaN()
	}
	return float64(n) / d.Seconds()
}

// ms expresses d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
