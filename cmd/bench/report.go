package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// target is the goal a metric is judged against.
type target struct {
	// atLeast: the value must be >= limit; otherwise <= limit.
	atLeast bool
	limit   float64
}

func (t target) String() string {
	op := "≤"
	if t.atLeast {
		op = "≥"
	}
	return op + " " + strconv.FormatFloat(t.limit, 'f', -1, 64)
}

// met reports whether v meets the target; NaN (not measured) never does.
func (t target) met(v float64) bool {
	if math.IsNaN(v) {
		return false
	}
	if t.atLeast {
		return v >= t.limit
	}
	return v <= t.limit
}

// metric is one measured figure.
type metric struct {
	name string
	// value is NaN when it could not be measured.
	value float64
	// decimals shown.
	decimals int
	// target is nil for figures reported for context only.
	target *target
}

func atLeast(v float64) *target { return &target{atLeast: true, limit: v} }
func atMost(v float64) *target  { return &target{limit: v} }

func (m metric) formatted() string {
	if math.IsNaN(m.value) || math.IsInf(m.value, 0) {
		return "n/a"
	}
	return strconv.FormatFloat(m.value, 'f', m.decimals, 64)
}

// verdict is PASS or MISS against the target, "n/a" for a figure that could
// not be measured, and "—" for one without a target.
func (m metric) verdict() string {
	switch {
	case m.target == nil:
		return "—"
	case math.IsNaN(m.value):
		return "n/a"
	case m.target.met(m.value):
		return "PASS"
	default:
		return "MISS"
	}
}

// report collects the metrics, printing each as a "name: value" line the
// moment it is measured, and renders the closing Markdown table.
type report struct {
	w       io.Writer
	metrics []metric
	notes   []string
}

func (r *report) add(m metric) {
	r.metrics = append(r.metrics, m)
	fmt.Fprintf(r.w, "%s: %s\n", m.name, m.formatted())
}

// note adds a line to the method notes printed under the table.
// value returns the value of the metric called name, if it was added.
func (r *report) value(name string) (float64, bool) {
	for _, m := range r.metrics {
		if m.name == name {
			return m.value, true
		}
	}
	return 0, false
}

func (r *report) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// writeTable renders the metrics as a Markdown table, then the notes.
func (r *report) writeTable(w io.Writer) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| metric | value | target | verdict |")
	fmt.Fprintln(w, "|---|---:|---|---|")
	for _, m := range r.metrics {
		t := "—"
		if m.target != nil {
			t = m.target.String()
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", m.name, m.formatted(), t, m.verdict())
	}
	if len(r.notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range r.notes {
			fmt.Fprintln(w, "- "+strings.TrimSpace(n))
		}
	}
}

// missed lists the metrics that have a target and did not meet it.
func (r *report) missed() []string {
	var out []string
	for _, m := range r.metrics {
		if v := m.verdict(); v == "MISS" || v == "n/a" {
			out = append(out, m.name)
		}
	}
	return out
}
