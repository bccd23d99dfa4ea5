package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/outflow/outflow/internal/bench/benchstat"
)

// How a figure is combined across rounds.
type combine int

const (
	medianOfRounds combine = iota
	sumOfRounds
	// pooled figures are percentiles of every round's samples together.
	pooledP50
	pooledP99
	// p99VsBare is the pooled p99 of samples over the bare start's
	// (bareStart, the effect round's baseline).
	p99VsBare
)

// figure is one row of the table: "<contender>_<suffix>".
type figure struct {
	suffix   string
	decimals int
	combine  combine
	// samples names the latency samples of a pooled figure.
	samples string
}

// figures, in the table's order.
var figures = []figure{
	{suffix: "write_ratio", decimals: 2},
	{suffix: "write_order_only_ms", decimals: 2},
	{suffix: "write_with_event_ms", decimals: 2},
	{suffix: "drain_events_per_s"},
	{suffix: "default_drain_events_per_s"},
	{suffix: "out_of_order", combine: sumOfRounds},
	{suffix: "default_out_of_order", combine: sumOfRounds},
	{suffix: "duplicates", combine: sumOfRounds},
	{suffix: "overlap_out_of_order", combine: sumOfRounds},
	{suffix: "held_horizon_stall_s", decimals: 2},
	{suffix: "held_horizon_p99_ms", decimals: 1, combine: pooledP99, samples: "held_horizon"},
	{suffix: "held_horizon_dead_tuples"},
	{suffix: "held_horizon_table_bytes"},
	{suffix: "held_horizon_recovery_s", decimals: 2},
	{suffix: "restart_first_delivery_s", decimals: 2},
	{suffix: "restart_lost", combine: sumOfRounds},
	{suffix: "restart_duplicates", combine: sumOfRounds},
	{suffix: "restart_out_of_order", combine: sumOfRounds},
	{suffix: "kill_first_delivery_s", decimals: 2},
	{suffix: "kill_lost", combine: sumOfRounds},
	{suffix: "kill_duplicates", combine: sumOfRounds},
	{suffix: "kill_out_of_order", combine: sumOfRounds},
	{suffix: "handoff_p50_ms", decimals: 1, combine: pooledP50, samples: "handoff"},
	{suffix: "handoff_p99_ms", decimals: 1, combine: pooledP99, samples: "handoff"},
	{suffix: "default_handoff_p50_ms", decimals: 1, combine: pooledP50, samples: "default_handoff"},
	{suffix: "default_handoff_p99_ms", decimals: 1, combine: pooledP99, samples: "default_handoff"},
	{suffix: "statements_per_event", decimals: 2},
	{suffix: "wal_bytes_per_event"},
	{suffix: "dead_tuples_per_event", decimals: 2},
	{suffix: "enqueue_wal_bytes_per_event"},
	{suffix: "enqueue_dead_tuples_per_event", decimals: 2},
	{suffix: "jetstream_events_per_s"},
	{suffix: "jetstream_handoff_p50_ms", decimals: 1, combine: pooledP50, samples: "jetstream_handoff"},
	{suffix: "jetstream_handoff_p99_ms", decimals: 1, combine: pooledP99, samples: "jetstream_handoff"},
	{suffix: "jetstream_out_of_order", combine: sumOfRounds},
	{suffix: "jetstream_overlap_out_of_order", combine: sumOfRounds},
	{suffix: "jetstream_stored_twice", combine: sumOfRounds},
	{suffix: "temporal_events_per_s"},
	{suffix: "temporal_handoff_p50_ms", decimals: 1, combine: pooledP50, samples: "temporal_handoff"},
	{suffix: "temporal_handoff_p99_ms", decimals: 1, combine: pooledP99, samples: "temporal_handoff"},
	{suffix: "effect_started_per_s"},
	{suffix: "effect_started_p50_ms", decimals: 1, combine: pooledP50, samples: "effect_started"},
	{suffix: "effect_started_p99_ms", decimals: 1, combine: pooledP99, samples: "effect_started"},
	{suffix: "effect_started_p99_vs_bare", decimals: 2, combine: p99VsBare, samples: "effect_started"},
	{suffix: "effect_cpu_consumer_cores", decimals: 2},
	{suffix: "effect_cpu_temporal_cores", decimals: 2},
	{suffix: "effect_cpu_postgres_cores", decimals: 2},
}

// results collects every contender's per-round values and latency samples.
type results struct {
	values  map[string]map[string][]float64
	samples map[string]map[string][]time.Duration
	notes   []string
}

func newResults() *results {
	return &results{values: map[string]map[string][]float64{}, samples: map[string]map[string][]time.Duration{}}
}

// add records one round's value of contender's figure suffix.
func (r *results) add(contender, suffix string, v float64) {
	if r.values[contender] == nil {
		r.values[contender] = map[string][]float64{}
	}
	r.values[contender][suffix] = append(r.values[contender][suffix], v)
}

// addSamples records one round's latency samples under name.
func (r *results) addSamples(contender, name string, ds []time.Duration) {
	if r.samples[contender] == nil {
		r.samples[contender] = map[string][]time.Duration{}
	}
	r.samples[contender][name] = append(r.samples[contender][name], ds...)
}

// note adds a line to the notes under the table.
func (r *results) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// value is contender's figure f over all rounds, NaN when not measured.
func (r *results) value(contender string, f figure) float64 {
	switch f.combine {
	case pooledP50, pooledP99:
		ds := r.samples[contender][f.samples]
		if len(ds) == 0 {
			return math.NaN()
		}
		p := 50.0
		if f.combine == pooledP99 {
			p = 99
		}
		return benchstat.Ms(benchstat.Percentile(ds, p))
	case p99VsBare:
		p99 := figure{combine: pooledP99, samples: f.samples}
		return r.value(contender, p99) / r.value(bareStart, p99)
	case sumOfRounds:
		vs := r.values[contender][f.suffix]
		if len(vs) == 0 {
			return math.NaN()
		}
		var sum float64
		for _, v := range vs {
			sum += v
		}
		return sum
	default:
		return medianOf(r.values[contender][f.suffix])
	}
}

func format(v float64, decimals int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

// write prints one "name: value" line per contender and figure, then the
// Markdown table (a column per contender) and the notes.
func (r *results) write(w io.Writer, names []string) {
	for _, c := range names {
		for _, f := range figures {
			fmt.Fprintf(w, "%s_%s: %s\n", c, f.suffix, format(r.value(c, f), f.decimals))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "| figure | %s |\n", strings.Join(names, " | "))
	fmt.Fprintf(w, "|---|%s\n", strings.Repeat("---:|", len(names)))
	for _, f := range figures {
		row := make([]string, len(names))
		for i, c := range names {
			row[i] = format(r.value(c, f), f.decimals)
		}
		fmt.Fprintf(w, "| %s | %s |\n", f.suffix, strings.Join(row, " | "))
	}
	if len(r.notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range r.notes {
			fmt.Fprintln(w, "- "+n)
		}
	}
}
