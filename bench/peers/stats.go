package main

import (
	"math"
	"slices"
	"time"
)

// percentile returns the p-th percentile (0 < p <= 100) of ds by the
// nearest-rank method, or 0 for no samples.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// median is the 50th percentile by nearest rank.
func median(ds []time.Duration) time.Duration { return percentile(ds, 50) }

// medianOf is the median of vs (the lower middle of an even count), NaN for
// none: a figure that was not measured must show as "n/a".
func medianOf(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// ratio returns a/b, or NaN when b is zero.
func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// ms expresses d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
