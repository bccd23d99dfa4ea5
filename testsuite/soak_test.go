package testsuite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/namedsql"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest/dev/pgcluster"
	"github.com/outflow/outflow/providersim"
)

// soakDuration is how long orders keep coming: 90s in `make test`,
// OUTFLOW_SOAK_DURATION (e.g. `make soak DURATION=10m`) for a long run.
func soakDuration(t *testing.T) time.Duration {
	if v := os.Getenv("OUTFLOW_SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, "OUTFLOW_SOAK_DURATION")
		return d
	}
	return 90 * time.Second
}

// TestChaosSoak runs two relays and two workers while orders arrive at a
// steady rate with cancels, declines and provider faults mixed in. Every few
// seconds a random relay or worker is SIGKILLed and restarted, PostgreSQL
// backends are terminated, and the Temporal server is restarted once
// mid-run. Meanwhile an [Operator] replays, retries, skips and forgets
// customers with the real outboxctl. Then it drains, asserts every
// invariant and the operator's oracle ([CheckOracle]), and prints a report.
//
// It runs alone (not parallel) on an environment of its own, so its faults
// and its Temporal restart disturb no other test.
func TestChaosSoak(t *testing.T) {
	dur := soakDuration(t)
	s := NewStackOn(t, PrivateEnv(t))
	chaosSoak(t, s, dur, "Temporal restarted once", dur/2, func(ctx context.Context, _ *Operator) error {
		s.Env.Temporal.Stop()
		return s.Env.Temporal.Start(ctx)
	})
}

// cdcSoakDuration is the cdc soak's load: 40s in `make test`,
// OUTFLOW_SOAK_DURATION for a long run.
func cdcSoakDuration(t *testing.T) time.Duration {
	if os.Getenv("OUTFLOW_SOAK_DURATION") != "" {
		return soakDuration(t)
	}
	return 40 * time.Second
}

// TestChaosSoakCDC is [TestChaosSoak] with cdc starters: the two relays
// share one slot (one streams, the other stands by), so killing the active
// one restarts the slot's stream in the other, and PostgreSQL itself is
// restarted once mid-run (pg_ctl restart, every connection and the
// walsender cut). The test owns its wal_level=logical server for that.
func TestChaosSoakCDC(t *testing.T) {
	dur := cdcSoakDuration(t)
	cluster, err := pgcluster.StartTemp(context.Background(), pgcluster.Options{})
	require.NoError(t, err)
	t.Cleanup(cluster.Discard)
	s := NewStackWith(t, PrivateEnv(t), StackOptions{Source: "cdc", AdminURL: cluster.URL})
	chaosSoak(t, s, dur, "PostgreSQL restarted once", dur/2, func(ctx context.Context, _ *Operator) error { return cluster.Restart(ctx) })
}

// TestChaosSoakLog is [TestChaosSoak] with every process on the log source
// (OUTFLOW_RELAY_SOURCE=log): the order API and the poison events write to
// the append-only log, the two relays share its sixteen partitions by
// lease, and the operator acts over the log as outboxctl allows there (one
// order's replay through a hold, retries of quarantined holds one by one
// and in bulk, skips of a quarantined poison hold's head). Its load is the
// cdc soak's (40s, OUTFLOW_SOAK_DURATION for more).
//
// Its big fault is a bad deploy's transaction left open for
// logHorizonHold after it enqueued logHorizonPoison poison events: the
// log's reader reads only events whose lane gate is below its snapshot's
// xmin, so one open transaction with an xid stops every partition at once
// (the poll and cdc sources do not wait on it), the orders placed meanwhile
// pile up behind the horizon, and when it commits they all become readable
// together, while relays are killed. Its own events have gates older than
// every event read after it began: a reader that did not wait for the
// horizon would have passed their keys already and never deliver them (the
// operator would wait in vain for them to be quarantined; with LogBatch's
// horizon check removed the soak fails so). It comes at the first chaos
// tick, before the Temporal outage: while the relays cannot publish no
// reader advances, which would hide what the horizon does. The outage then
// makes holds of failed publishes, which the operator's replays meet
// (refused: the order is under a hold).
func TestChaosSoakLog(t *testing.T) {
	dur := cdcSoakDuration(t)
	s := NewStackWith(t, PrivateEnv(t), StackOptions{Source: "log"})
	chaosSoak(t, s, dur, fmt.Sprintf("a transaction with poison events held the log's horizon for %s once", logHorizonHold), 0,
		func(ctx context.Context, op *Operator) error { return holdHorizon(ctx, t, s, op, logHorizonHold) })
}

// logHorizonHold is how long the log soak's open transaction holds the
// horizon: longer than a relay's lease and poll, a fraction of the load.
const logHorizonHold = 10 * time.Second

// logHorizonPoison is how many poison aggregates the held transaction
// enqueues.
const logHorizonPoison = 4

// holdHorizon enqueues logHorizonPoison poison events in a transaction (which gives it an
// xid), keeps it open for d, commits it and logs how many log events
// waited behind it. A backend termination of the chaos may cut it (the
// transaction and its event are then gone: logged).
func holdHorizon(ctx context.Context, t *testing.T, s *Stack, op *Operator, d time.Duration) error {
	tx, err := s.Pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// Four aggregates, so that at least one is in a partition whose
	// reader gets orders' events during the hold.
	var events []outbox.Event
	var poisoned []Poisoned
	for range logHorizonPoison {
		agg := uuid.NewString()
		es, err := poisonEvents(agg, PoisonUnroutable, 0)
		if err != nil {
			return err
		}
		events = append(events, es...)
		poisoned = append(poisoned, Poisoned{Aggregate: agg, Shape: PoisonUnroutable, Events: len(es)})
	}
	if err := enqueuePoisonTx(ctx, tx, s, events); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
	}
	st, err := outboxops.LogStatus(ctx, s.Pool)
	if err != nil {
		return err
	}
	committed := tx.Commit(ctx)
	if committed == nil {
		for _, p := range poisoned {
			op.notePoison(p)
		}
	}
	t.Logf("log soak: a transaction held the horizon for %s (its %d poison events committed: %v): %d log events were pending, horizon age %.1fs",
		d, len(events), committed == nil, st.Pending, st.HorizonAgeSeconds)
	return nil
}

// chaosSoak is the soak's body; midRun is the one big fault, at the first
// chaos tick after midRunAt (it tells the operator of poison events it
// commits).
func chaosSoak(t *testing.T, s *Stack, dur time.Duration, midRunName string, midRunAt time.Duration, midRun func(context.Context, *Operator) error) {
	ctx, cancel := context.WithTimeout(context.Background(), dur+10*time.Minute)
	defer cancel()
	// The relays reach Temporal through a partition the chaos cuts once for
	// longer than their whole backoff schedule (OUTFLOW_MAX_ATTEMPTS=4:
	// ceilings 1+2+4+8 s): an outage is the sink's fault, so no healthy event
	// may be quarantined for it (the oracle checks). The workers and the
	// operator's outboxctl keep their own way to Temporal (a worker started
	// while Temporal is unreachable refuses to start).
	cut := NewPartition(t, s.Env.Temporal.Address())
	s.RelayEnv = append(s.RelayEnv, "TEMPORAL_ADDRESS="+cut.Addr(), "OUTFLOW_MAX_ATTEMPTS=4")
	const outage = 20 * time.Second
	for _, name := range []string{"orderapi", "starter", "starter-2", "worker", "worker-2"} {
		s.Start(name, "")
	}
	sim := s.Env.SimClient()
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 42))
	// The operator acts inside the chaos (replay, retry, skip, forget,
	// with the real outboxctl) for the soak's dedicated customers and the
	// poison events it enqueues; CheckOracle judges it at the end.
	op := NewOperator(s, 3, seed)
	t.Cleanup(func() {
		if t.Failed() {
			j := op.Journal()
			t.Logf("operator journal of the failed soak:\n%s\n%s", j.Report(), j.Details())
		}
	})

	var placed, cancels, declines, faults, kills, backendKills atomic.Int64
	var errMu sync.Mutex
	var loadErrs []error
	record := func(err error) {
		if err != nil {
			errMu.Lock()
			loadErrs = append(loadErrs, err)
			errMu.Unlock()
		}
	}

	loadCtx, stopLoad := context.WithTimeout(ctx, dur)
	defer stopLoad()
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		op.Watch(watchCtx)
	}()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		op.Run(loadCtx)
	}()
	// Load: about four orders a second, each on its own goroutine so a slow
	// cancel does not hold back the rate.
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for n := 1; ; n++ {
			select {
			case <-loadCtx.Done():
				return
			case <-tick.C:
			}
			roll := rng.IntN(100)
			// One order in six is a dedicated customer's, whom the
			// operator forgets at random; every four seconds a bad deploy
			// commits a poison aggregate for the operator to skip.
			api := s.API()
			if who := rng.IntN(6 * len(op.Customers)); who < len(op.Customers) {
				api = api.As(op.Customers[who])
			}
			if n%16 == 0 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					record(op.Poison(ctx))
				}()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				pm := "pm_card_visa"
				if roll < 15 {
					pm = "pm_card_chargeDeclined"
					declines.Add(1)
				}
				if roll >= 90 {
					// The next charge or email of someone's order hits a provider fault.
					ops := []string{"payment_intents.create", "emails.send", "refunds.create"}
					kinds := []string{"error_500", "timeout_after_commit", "latency:2s"}
					record(sim.InjectFault(ctx, providersim.Fault{Operation: ops[roll%3], Fault: kinds[roll%3], Count: 1}))
					faults.Add(1)
				}
				o, err := api.Create(ctx, "soak-"+uuid.NewString(), pm)
				if err != nil {
					record(err)
					return
				}
				placed.Add(1)
				if roll >= 15 && roll < 30 {
					cancels.Add(1)
					record(api.Cancel(ctx, o.OrderID))
				}
			}()
		}
	}()
	// The outage: a third of the way in, Temporal is unreachable for
	// outage, whatever else dies meanwhile.
	var outages atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-loadCtx.Done():
			return
		case <-time.After(dur / 3):
		}
		cut.Cut()
		outages.Add(1)
		select {
		case <-ctx.Done():
		case <-time.After(outage):
		}
		record(cut.Heal())
	}()
	// Chaos: a random relay or worker dies every few seconds; sometimes the
	// database drops every outflow connection; Temporal restarts once.
	wg.Add(1)
	go func() {
		defer wg.Done()
		restarted := false
		start := time.Now()
		victims := []string{"starter", "starter-2", "worker", "worker-2"}
		for {
			select {
			case <-loadCtx.Done():
				return
			case <-time.After(time.Duration(3000+rng.IntN(3000)) * time.Millisecond):
			}
			name := victims[rng.IntN(len(victims))]
			if kills.Load() == 0 {
				// The first kill is always the first relay (the one that
				// streams the slot, in cdc mode): a relay restart is certain.
				name = "starter"
			}
			s.Proc(name).Kill()
			kills.Add(1)
			s.Start(name, "")
			if rng.IntN(3) == 0 {
				n, err := terminateBackends(ctx, s)
				record(err)
				backendKills.Add(n)
			}
			if !restarted && time.Since(start) > midRunAt {
				restarted = true
				record(midRun(ctx, op))
			}
		}
	}()
	wg.Wait()
	errMu.Lock()
	if len(loadErrs) > 0 {
		s.Verdict(func() string { return firstLines(fmt.Sprintf("requests that failed for good: %v", loadErrs), 24) })
	}
	require.Empty(t, loadErrs, "every request must eventually succeed")
	errMu.Unlock()

	// The operator's last duty: skip the poison events still quarantined
	// (each aggregate's next one is claimed once its predecessor is skipped).
	if err := op.Finish(ctx, 3*time.Minute); err != nil {
		t.Logf("what the operator's finish waits for:\n%s", DiagnoseStuck(ctx, s, op.Journal()))
		s.Verdict(func() string { return firstLines("the operator's finish: "+err.Error(), 24) })
		require.NoError(t, err)
	}
	// The operator's oracle (CheckOracle): one completed run per event,
	// replays delivered and never passed, skips of poison only, erasures
	// only of finished orders or refused naming them, nothing pending. It
	// is heard also when an earlier check fails, for what it adds.
	hearOracle := func() (string, error) {
		stopWatch()
		<-watching
		op.Poll(ctx)
		return CheckOracle(ctx, s, op.Journal())
	}
	if err := WaitDrained(ctx, s.Pool, 8*time.Minute); err != nil {
		diag := DiagnoseStuck(ctx, s, op.Journal())
		t.Logf("what the drain waits for:\n%s", diag)
		s.Verdict(func() string { return fmt.Sprintf("%v; what the drain waits for:\n%s", err, firstLines(diag, 24)) })
		if _, oerr := hearOracle(); oerr != nil {
			t.Logf("the oracle on the undrained soak:\n%v", oerr)
		}
		require.NoError(t, err)
	}
	var rep Report
	var err error
	deadline := time.Now().Add(60 * time.Second)
	for {
		ledger, lerr := sim.Ledger(ctx)
		require.NoError(t, lerr)
		rep, err = CheckInvariants(ctx, s.Pool, s.Env.Client, ledger)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		s.Verdict(func() string { return "invariants: " + firstLines(err.Error(), 24) })
		if _, oerr := hearOracle(); oerr != nil {
			t.Logf("the oracle beside the failed invariants:\n%v", oerr)
		}
	}
	require.NoError(t, err)
	// Per-order order, in Temporal's record: every order's workflows
	// started in sequence.
	requireStartsInOrder(ctx, t, s, 1_000_000)
	oracle, err := hearOracle()
	if err != nil {
		s.Verdict(func() string { return "the operator's oracle: " + firstLines(err.Error(), 24) })
	}
	require.NoError(t, err)
	journal := op.Journal()

	lag, err := handoffLag(ctx, s)
	require.NoError(t, err)
	logs := s.LogCounts("already started", "inbox duplicate", "customer key erased")
	simStats, err := sim.Stats(ctx)
	require.NoError(t, err)
	report := fmt.Sprintf(`chaos soak report (%s of load)
  orders placed:            %d (declines %d, cancels %d, provider faults injected %d)
  events:                   %d
  relay source:             %s
  process kills:            %d relay/worker SIGKILLs, %d PostgreSQL backends terminated, %s
  Temporal outages:         %d of %s (the relays cut off; OUTFLOW_MAX_ATTEMPTS=4, no healthy event quarantined)
  duplicate starts absorbed: %d (relay logs: workflow already started)
  provider replays:         %d charges, %d refunds, %d emails (same key, first response replayed; %d keys refused)
  inbox duplicates:         %d (worker logs)
  erased-key reads:         %d (worker logs: customer key erased)
  handoff lag (commit -> Temporal accept): p50 %s, p99 %s, max %s
  effects:                  %s
%s
  %s
  lost events: 0, duplicated effects: 0 (checked above)`,
		dur, placed.Load(), declines.Load(), cancels.Load(), faults.Load(), rep.Events, s.Source,
		kills.Load(), backendKills.Load(), midRunName, outages.Load(), outage, logs["already started"],
		simStats.Replays["payment_intents.create"], simStats.Replays["refunds.create"], simStats.Replays["emails.send"],
		simStats.Rejected["payment_intents.create"]+simStats.Rejected["refunds.create"]+simStats.Rejected["emails.send"],
		logs["inbox duplicate"], logs["customer key erased"],
		lag.p50, lag.p99, lag.max, rep, journal.Report(), oracle)
	t.Log(report)
	fmt.Println(report)
}

// firstLines is at most n lines of text, and how many more there were.
func firstLines(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) <= n {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:n], "\n") + fmt.Sprintf("\n... (%d more lines above, in the test's log)", len(lines)-n)
}

type lagStats struct{ p50, p99, max time.Duration }

// handoffLag measures commit → Temporal accept per event from the workflow's
// start time and the event's occurred_at.
func handoffLag(ctx context.Context, s *Stack) (lagStats, error) {
	events, err := qEventTimes.All(ctx, s.Pool, namedsql.NoArgs{})
	if err != nil {
		return lagStats{}, err
	}
	var lags []time.Duration
	for _, e := range events {
		d, err := s.Env.Client.DescribeWorkflow(ctx, e.EventID, "")
		if err != nil {
			return lagStats{}, err
		}
		lags = append(lags, d.RawResponse.GetWorkflowExecutionInfo().GetStartTime().AsTime().Sub(e.Occurred))
	}
	if len(lags) == 0 {
		return lagStats{}, nil
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	at := func(q float64) time.Duration { return lags[int(q*float64(len(lags)-1))].Round(time.Millisecond) }
	return lagStats{p50: at(0.5), p99: at(0.99), max: lags[len(lags)-1].Round(time.Millisecond)}, nil
}

// terminateBackends drops every connection of this stack's database but the
// one running the statement, as a failover or an idle-killer would: the
// processes' connections, and the test pool's other connections too.
func terminateBackends(ctx context.Context, s *Stack) (int64, error) {
	return qTerminateBackends.Value(ctx, s.Pool, namedsql.NoArgs{})
}

// LogCounts counts lines containing each marker across the stack's logs.
func (s *Stack) LogCounts(markers ...string) map[string]int {
	out := map[string]int{}
	prefix := strings.ReplaceAll(s.T.Name(), "/", "_") + "-"
	entries, _ := os.ReadDir(s.Env.Dir)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		b, _ := os.ReadFile(s.Env.Dir + "/" + e.Name())
		for _, line := range strings.Split(string(b), "\n") {
			for _, m := range markers {
				if strings.Contains(line, m) {
					out[m]++
				}
			}
		}
	}
	return out
}
