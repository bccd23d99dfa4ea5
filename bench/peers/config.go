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
	"github.com/outflow/outflow/outbox/outboxtest/dev/devserver"
)

// config sizes the run. The defaults take about half an hour on two cores;
// -events 2000 -orders 200 -rounds 1 -duration 3s -held-horizon 0 -crash=false -temporal=false is a run of about a
// minute.
type config struct {
	// events and orders size each drain's backlog: events over orders,
	// events/orders each. The default is large enough that the drain
	// measures draining: a backlog the fast contenders drain in a few tenths
	// of a second weighs what a consumer pays once (its pool's connections,
	// each connection's first plans of its statements, the catalog caches)
	// as much as the drain itself (docs/performance.md, "A no-op sink: the database's side").
	events, orders int
	// rate is the arrival rate of the handoff phase, orders per second,
	// for duration after one second of warm-up.
	rate     int
	duration time.Duration
	// rounds is how many times every contender runs; the order of the
	// contenders alternates from one round to the next.
	rounds int
	// writePairs is how many order-only and order+enqueue transactions the
	// write phase times, interleaved.
	writePairs int
	// temporal runs the phase with a Temporal sink; temporalEvents is its
	// backlog, temporalRate and temporalDuration its handoff.
	temporal         bool
	temporalEvents   int
	temporalRate     int
	temporalDuration time.Duration
	// effectRate is the arrival rate of the effect round's timed orders.
	effectRate int
	// jetstream runs the phase with a JetStream sink (NATS at
	// OUTFLOW_NATS_URL); jetstreamEvents is its backlog, jetstreamRate its
	// handoff's rate (for duration).
	jetstream       bool
	jetstreamEvents int
	jetstreamRate   int
	// overlapOrders is how many orders the overlapping-transactions round
	// writes, two transactions each.
	overlapOrders int
	// heldHorizon is how long the held-horizon round holds a transaction
	// open (0: no such round); heldRate is its orders per second.
	heldHorizon time.Duration
	heldRate    int
	// crash runs the crash-recovery round (PostgreSQL restarted, the
	// consumer killed, each mid-drain); crashEvents is its backlog.
	crash       bool
	crashEvents int
	// roundRobin lays the backlog out round robin instead of at random.
	roundRobin bool
	// only names the contenders to run (default all).
	only []string
	// cpuProfile, when set, is the file the run's CPU profile is written
	// to (go tool pprof): where a contender's drain spends its time.
	cpuProfile string
}

// command is what `go run . -h` shows.
var command = cli.Command{
	Name:    "peers",
	Summary: "outflow's relay (its poll, cdc and log sources), River, Watermill and DBOS doing the same job on the PostgreSQL of DATABASE_URL, each in scratch databases peers_<contender>_<pid>_r<round>[_held] created and dropped on that server.",
	Usage:   "[flags]   (make bench-peers PEERS_FLAGS='...' at the repository root)",
	Env: []cli.Var{
		{Name: "DATABASE_URL", Default: database.DefaultURL, Meaning: "the PostgreSQL server of the scratch databases (the role needs CREATEDB)"},
		{Name: devserver.CLIEnvVar, Default: "bin/temporal", Meaning: "the Temporal CLI whose dev server -temporal starts"},
		{Name: natsURLEnv, Default: "nats://127.0.0.1:4222", Meaning: "the NATS server (JetStream enabled) of -jetstream; a stream of the run's own is created and deleted"},
	},
}

// parseFlags reads the command line; -h and --version answer on stdout.
func parseFlags(args []string, stdout, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	var c config
	var only string
	fs.IntVar(&c.events, "events", 100000, "N: events in each drain's backlog")
	fs.IntVar(&c.orders, "orders", 10000, "M: orders the backlog's events belong to (N/M events each, in sequence)")
	layout := fs.String("layout", "random", "backlog layout: random (orders' events interleaved at random) or round-robin")
	fs.IntVar(&c.rate, "rate", 100, "arrival rate of the handoff phase, orders/s")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "length of the handoff phase after 1s of warm-up")
	fs.IntVar(&c.rounds, "rounds", 2, "rounds; the contenders' order alternates between rounds")
	fs.IntVar(&c.writePairs, "write-pairs", 500, "order-only and order+enqueue transactions timed per contender and round")
	fs.IntVar(&c.overlapOrders, "overlap-orders", 200, "orders of the overlapping-transactions round (two transactions each)")
	fs.DurationVar(&c.heldHorizon, "held-horizon", 60*time.Second, "held-horizon round: how long another session of the contender's database holds a transaction with an xid open "+
		"(the server's snapshot horizon and the database's vacuum horizon held back) while orders arrive at -held-rate; "+
		"reports the longest gap between deliveries during the hold, the p99 commit to delivery from the hold until recovery, "+
		"the time from the release until every order committed by then is delivered, and the dead tuples and bytes of the contender's queue tables after it; 0 skips the round")
	fs.BoolVar(&c.crash, "crash", true, "crash-recovery round: a backlog of -crash-events drained with the tuned settings, once with PostgreSQL restarted (pg_ctl -m fast, "+
		"on a throwaway cluster of its own) and once with the consumer's process killed (SIGKILL) and started again, each after a quarter was delivered; "+
		"reports the time to the first delivery after it, and the events lost, delivered twice and out of their order's sequence")
	fs.IntVar(&c.crashEvents, "crash-events", 20000, "events in each crash drain's backlog (over a tenth as many orders)")
	fs.IntVar(&c.heldRate, "held-rate", 100, "arrival rate of the held-horizon round, orders/s")
	fs.BoolVar(&c.temporal, "temporal", true, "also measure with Temporal as the sink (starts a dev server from bin/temporal)")
	fs.IntVar(&c.temporalEvents, "temporal-events", 1000, "events in the Temporal drain's backlog")
	fs.IntVar(&c.temporalRate, "temporal-rate", 20, "arrival rate of the Temporal handoff, orders/s")
	fs.IntVar(&c.effectRate, "effect-rate", 100, "arrival rate of the effect round's timed orders (commit to the effect's first step, and the bare start beside them), orders/s for -temporal-duration")
	fs.DurationVar(&c.temporalDuration, "temporal-duration", 5*time.Second, "length of the Temporal handoff after 1s of warm-up")
	fs.BoolVar(&c.jetstream, "jetstream", true, "also measure with NATS JetStream as the sink (OUTFLOW_NATS_URL)")
	fs.IntVar(&c.jetstreamEvents, "jetstream-events", 5000, "events in the JetStream drain's backlog")
	fs.IntVar(&c.jetstreamRate, "jetstream-rate", 100, "arrival rate of the JetStream handoff, orders/s (for -duration)")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write the bench process's CPU profile of the run to this `file` (go tool pprof)")
	fs.StringVar(&only, "contenders", "", "comma-separated contenders to run (default all): "+strings.Join(contenderNames(), ","))
	if err := benchcmd.Parse(&command, fs, args, stdout, stderr); err != nil {
		return config{}, err
	}
	switch {
	case c.events < 1 || c.orders < 1 || c.orders > c.events:
		return config{}, fmt.Errorf("-events %d -orders %d: want 1 <= orders <= events", c.events, c.orders)
	case c.rate < 1 || c.temporalRate < 1 || c.jetstreamRate < 1 || c.effectRate < 1:
		return config{}, fmt.Errorf("-rate, -temporal-rate, -jetstream-rate and -effect-rate must be at least 1")
	case c.duration < time.Second || c.temporalDuration < time.Second:
		return config{}, fmt.Errorf("-duration and -temporal-duration must be at least 1s")
	case c.overlapOrders < 1:
		return config{}, fmt.Errorf("-overlap-orders must be at least 1")
	case c.heldHorizon < 0 || c.heldRate < 1:
		return config{}, fmt.Errorf("-held-horizon must not be negative and -held-rate must be at least 1")
	case c.crash && c.crashEvents < 100:
		return config{}, fmt.Errorf("-crash-events must be at least 100")
	case c.rounds < 1 || c.writePairs < 1 || c.temporalEvents < 10 || c.jetstreamEvents < 10:
		return config{}, fmt.Errorf("-rounds and -write-pairs must be at least 1, -temporal-events and -jetstream-events at least 10")
	}
	switch *layout {
	case "random":
	case "round-robin":
		c.roundRobin = true
	default:
		return config{}, fmt.Errorf("-layout %q: choose random or round-robin", *layout)
	}
	if only != "" {
		for n := range strings.SplitSeq(only, ",") {
			n = strings.TrimSpace(n)
			if !slices.Contains(contenderNames(), n) {
				return config{}, fmt.Errorf("-contenders: unknown contender %q; choose from %s", n, strings.Join(contenderNames(), ","))
			}
			c.only = append(c.only, n)
		}
	}
	return c, nil
}

func contenderNames() []string {
	var out []string
	for _, c := range contenders() {
		out = append(out, c.Name())
	}
	return out
}

// selected is the contenders to run, in the order of the first round.
func (c config) selected() []Contender {
	var out []Contender
	for _, x := range contenders() {
		if len(c.only) == 0 || slices.Contains(c.only, x.Name()) {
			out = append(out, x)
		}
	}
	return out
}

// roundOrder is the contenders' order in round r: as listed in even rounds,
// reversed in odd ones, so none always runs first or last.
func roundOrder(cs []Contender, r int) []Contender {
	out := slices.Clone(cs)
	if r%2 == 1 {
		slices.Reverse(out)
	}
	return out
}
