package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/outflow/outflow/internal/bench/benchcmd"
	"github.com/outflow/outflow/internal/cli"
	"github.com/outflow/outflow/internal/database"
	"github.com/outflow/outflow/internal/service"
	"github.com/outflow/outflow/internal/temporalclient"
)

// phases, in the order they run; -only selects some of them.
var phases = []string{"handoff", "latency", "noop", "write", "trace", "claim", "idle", "sources"}

// config sizes every measurement. The full run takes about three minutes on
// two cores; -quick about one, with figures that are noisier but of the same
// shape.
type config struct {
	quick bool
	only  []string
	// cpuProfile, when set, is the file the bench process's CPU profile of
	// the whole run is written to (go tool pprof), so the relay's own cost
	// can be read beside its client's.
	cpuProfile string

	// handoffEvents is how many workflows each side of a handoff round
	// starts, bare and through the relay; handoffRounds is how many
	// bare/relay pairs a run has (ABBA order from the second on), and
	// handoffRuns how many runs the series has (handoff_ratio is the median
	// of the runs' ratios).
	handoffEvents, handoffRounds, handoffRuns int
	// latencyRate is the steady order rate of the latency run, per second;
	// latencyDuration its length after one second of warm-up.
	latencyRate     int
	latencyDuration time.Duration
	// bareLatencyStarts is how many sequential ExecuteWorkflow round trips
	// give bare_start_latency.
	bareLatencyStarts int
	// noopEvents is the backlog the no-op relay and the raw SQL loop each
	// drain, spread over noopEvents/noopPerAggregate aggregates; noopRounds
	// as handoffRounds.
	noopEvents, noopPerAggregate, noopRounds int
	// writePairs is how many order-only and order+outbox transactions each
	// are timed, interleaved.
	writePairs int
	// claimPublished and claimPending size the large table of
	// claim_scale_ratio; claimSamples is the claims timed on each table.
	claimPublished, claimPending, claimSamples int
	// idleWindow is how long the idle relay is watched.
	idleWindow time.Duration
}

func fullConfig() config {
	return config{
		handoffEvents: 2000, handoffRounds: 8, handoffRuns: 5,
		latencyRate: 50, latencyDuration: 20 * time.Second, bareLatencyStarts: 200,
		noopEvents: 50000, noopPerAggregate: 10, noopRounds: 2,
		writePairs:     2000,
		claimPublished: 1_000_000, claimPending: 100_000, claimSamples: 400,
		idleWindow: 30 * time.Second,
	}
}

func quickConfig() config {
	return config{
		quick:         true,
		handoffEvents: 300, handoffRounds: 1, handoffRuns: 1,
		latencyRate: 50, latencyDuration: 6 * time.Second, bareLatencyStarts: 50,
		noopEvents: 10000, noopPerAggregate: 10, noopRounds: 1,
		writePairs:     300,
		claimPublished: 100_000, claimPending: 10_000, claimSamples: 150,
		idleWindow: 20 * time.Second,
	}
}

// command is what `bench -h` shows.
var command = cli.Command{
	Name:    "bench",
	Summary: "measures outflow's relay against baselines taken in the same run (docs/performance.md); creates and drops scratch databases outflow_bench_* on DATABASE_URL's server.",
	Usage:   "[--quick] [--only " + strings.Join(phases, ",") + "] [--handoff-runs N] [--handoff-rounds N] [--cpuprofile FILE]",
	Env: cli.Vars(
		[]cli.Var{service.DatabaseVar(database.DefaultURL, "the server the scratch databases are made on (the role needs CREATEDB); never written itself")},
		temporalclient.Vars(),
		[]cli.Var{{Name: sourceEnv, Default: "all three, side by side", Meaning: "poll, cdc or log: the sources phase measures that one alone"}},
	),
}

// parseFlags reads the command line; -h and --version answer on stdout.
func parseFlags(args []string, stdout, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "smaller sizes and one handoff run: about a minute instead of about thirty")
	only := fs.String("only", "", "comma-separated phases to run (default all): "+strings.Join(phases, ","))
	cpuProfile := fs.String("cpuprofile", "", "write the bench process's CPU profile of the run to this `file` (go tool pprof)")
	runs := fs.Int("handoff-runs", 0, "`runs` in the handoff phase's series (default 5, 1 with --quick); handoff_ratio is the median of the runs' ratios, since one run moves by about ±0.1 on a shared machine")
	rounds := fs.Int("handoff-rounds", 0, "bare/relay `pairs` in each handoff run (default 8, 1 with --quick)")
	if err := benchcmd.Parse(&command, fs, args, stdout, stderr); err != nil {
		return config{}, err
	}
	cfg := fullConfig()
	if *quick {
		cfg = quickConfig()
	}
	cfg.cpuProfile = *cpuProfile
	switch {
	case *rounds < 0:
		return config{}, fmt.Errorf("--handoff-rounds %d: want at least 1", *rounds)
	case *rounds > 0:
		cfg.handoffRounds = *rounds
	}
	switch {
	case *runs < 0:
		return config{}, fmt.Errorf("--handoff-runs %d: want at least 1", *runs)
	case *runs > 0:
		cfg.handoffRuns = *runs
	}
	if *only != "" {
		for p := range strings.SplitSeq(*only, ",") {
			p = strings.TrimSpace(p)
			if !slices.Contains(phases, p) {
				return config{}, fmt.Errorf("--only: unknown phase %q; choose from %s", p, strings.Join(phases, ","))
			}
			cfg.only = append(cfg.only, p)
		}
	}
	return cfg, nil
}

// runs reports whether phase is selected.
func (c config) runs(phase string) bool {
	return len(c.only) == 0 || slices.Contains(c.only, phase)
}

// needsTemporal reports whether a selected phase starts workflows.
func (c config) needsTemporal() bool {
	return c.runs("handoff") || c.runs("latency") || c.runs("sources")
}

func (c config) mode() string {
	if c.quick {
		return "quick"
	}
	return "full"
}
