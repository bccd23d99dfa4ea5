package main

import (
	"math"
	"time"
)

// perSecond is n events in d as a rate.
func perSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return math.NaN()
	}
	return float64(n) / d.Seconds()
}
