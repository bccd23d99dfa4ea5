package main

import (
	"math"
	"slices"
)

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
