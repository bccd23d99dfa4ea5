package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox/namedsql"
	"github.com/outflow/outflow/outbox/outboxtest/dev/pgcluster"
	"github.com/outflow/outflow/outbox/outboxtest/dev/proc"
)

// The crash round's shape.
const (
	// crashEventsPerOrder: the round's backlog is -crash-events events over
	// a tenth as many orders.
	crashEventsPerOrder = 10
	// crashFraction: the crash comes once 1/crashFraction of the backlog
	// was delivered.
	crashFraction = 4
	// crashTimeout: an event of the backlog not delivered this long after
	// the crash's end is counted lost (outflow's leases, 30 s, expire well
	// within it; River rescues a job left running only after an hour).
	crashTimeout = 90 * time.Second
	// crashQuiet: once the contender has had nothing pending and delivered
	// nothing for this long, what is missing is lost.
	crashQuiet = 3 * time.Second
	// crashStop bounds the consumer's stop after the round.
	crashStop = 30 * time.Second
)

// crashResult is one crash in the middle of a drain.
type crashResult struct {
	// firstDelivery is from the crash's end (the restarted server's
	// postmaster started, or the killed consumer was reaped and its
	// successor is started) to the first delivery after it; ok is false
	// when none came.
	firstDelivery time.Duration
	ok            bool
	// undelivered is how many of the backlog's events were not yet
	// delivered when the crash began: 0 means the drain was over before
	// it and the round measured nothing.
	undelivered int
	// lost is how many events of the backlog were never delivered.
	lost  int
	tally tally
}

// crashCluster is the restart round's throwaway PostgreSQL server: the
// round restarts it, which no other user of DATABASE_URL's server should
// suffer.
type crashCluster struct {
	cluster *pgcluster.Cluster
	srv     *server
}

// startCrashCluster starts the throwaway cluster (initdb, wal_level=logical
// so that outflow_cdc runs on it too, fsync=off) and connects to it.
func startCrashCluster(ctx context.Context) (*crashCluster, error) {
	cl, err := pgcluster.StartTemp(ctx, pgcluster.Options{})
	if err != nil {
		return nil, fmt.Errorf("the crash round's throwaway cluster: %w (or run with -crash=false)", err)
	}
	srv, err := newServer(ctx, cl.URL)
	if err != nil {
		cl.Discard()
		return nil, err
	}
	return &crashCluster{cluster: cl, srv: srv}, nil
}

// restart restarts the server (pg_ctl -m fast restart -w: every
// connection is cut, the server waits for none) and reconnects the admin
// connection it cut. back is when the restarted server's postmaster
// started (pg_postmaster_start_time()): pg_ctl's wait returns a while
// after the server accepts connections, and a contender may have
// reconnected and delivered by then.
func (cc *crashCluster) restart(ctx context.Context) (back time.Time, err error) {
	if err := cc.cluster.Restart(ctx); err != nil {
		return time.Time{}, fmt.Errorf("restart PostgreSQL: %w", err)
	}
	_ = cc.srv.Admin.Close(ctx)
	if cc.srv.Admin, err = pgx.ConnectConfig(ctx, cc.srv.Base.ConnConfig.Copy()); err != nil {
		return time.Time{}, err
	}
	return qPostmasterStart.Value(ctx, cc.srv.Admin, namedsql.NoArgs{})
}

// close drops the scratch databases left and discards the cluster.
func (cc *crashCluster) close(warn func(error)) {
	cc.srv.Shutdown(warn)
	cc.cluster.Discard()
}

// crashRound runs the restart and the kill for c: each a backlog of
// -crash-events events, tuned settings, no-op sink, in a database of its
// own (peers_<contender>_<pid>_r<round>_restart on the throwaway cluster,
// ..._kill on DATABASE_URL's server).
func (b *bench) crashRound(ctx context.Context, c Contender, r int, layout uint64) error {
	if b.crash == nil {
		b.progress("crash round: starting a throwaway PostgreSQL cluster to restart (DATABASE_URL's server is left alone)")
		cc, err := startCrashCluster(ctx)
		if err != nil {
			return err
		}
		b.crash = cc
	}
	if _, err := b.restartRound(ctx, c, r, layout); err != nil {
		return fmt.Errorf("crash round, restart: %w", err)
	}
	if _, err := b.killRound(ctx, c, r, layout); err != nil {
		return fmt.Errorf("crash round, kill: %w", err)
	}
	return nil
}

// restartRound drains a backlog through c and restarts PostgreSQL once a
// quarter of it was delivered.
func (b *bench) restartRound(ctx context.Context, c Contender, r int, layout uint64) (crashResult, error) {
	n, m := b.crashSize()
	name, cfg, err := b.crash.srv.scratchNamed(ctx, c, fmt.Sprintf("peers_%s_%d_r%d_restart", c.Name(), os.Getpid(), r))
	if err != nil {
		return crashResult{}, err
	}
	defer b.crash.srv.Drop(context.WithoutCancel(ctx), name) //nolint:errcheck // close drops leftovers
	b.progress("round %d %s: crash, PostgreSQL restarted (fast shutdown) after %d of %d events delivered, tuned settings",
		r+1, c.Name(), n/crashFraction, n)
	res, err := b.restartDrain(ctx, c, cfg, n, m, layout)
	if err != nil {
		return crashResult{}, err
	}
	b.crashFigures(c, "restart", res)
	return res, nil
}

// killRound drains a backlog through c running in a child process, kills
// it (SIGKILL) once a quarter of it was delivered and starts another.
func (b *bench) killRound(ctx context.Context, c Contender, r int, layout uint64) (crashResult, error) {
	n, m := b.crashSize()
	name, cfg, err := b.srv.scratchNamed(ctx, c, fmt.Sprintf("peers_%s_%d_r%d_kill", c.Name(), os.Getpid(), r))
	if err != nil {
		return crashResult{}, err
	}
	defer b.srv.Drop(context.WithoutCancel(ctx), name) //nolint:errcheck // close drops leftovers
	b.progress("round %d %s: crash, the consumer's process killed (SIGKILL) after %d of %d events delivered and started again, tuned settings",
		r+1, c.Name(), n/crashFraction, n)
	res, err := b.killDrain(ctx, c, cfg, n, m, layout)
	if err != nil {
		return crashResult{}, err
	}
	b.crashFigures(c, "kill", res)
	return res, nil
}

func (b *bench) crashSize() (n, m int) {
	return b.cfg.crashEvents, max(1, b.cfg.crashEvents/crashEventsPerOrder)
}

// crashFigures records res as <c>_<kind>_first_delivery_s, _lost,
// _duplicates and _out_of_order.
func (b *bench) crashFigures(c Contender, kind string, res crashResult) {
	first := "none"
	if res.ok {
		first = fmt.Sprintf("%.2f s", res.firstDelivery.Seconds())
		b.res.add(c.Name(), kind+"_first_delivery_s", res.firstDelivery.Seconds())
	}
	dups := res.tally.deliveries - res.tally.distinct
	b.progress("  first delivery after it %s, %d undelivered when it began, %d lost, %d duplicates, %d out of order "+
		"(%d counting redeliveries)", first, res.undelivered, res.lost, dups, res.tally.firstOutOfOrder, res.tally.outOfOrder)
	if !res.ok && res.lost == 0 {
		b.progress("  warning: the drain was over before the crash ended; raise -crash-events")
	}
	b.res.add(c.Name(), kind+"_lost", float64(res.lost))
	b.res.add(c.Name(), kind+"_duplicates", float64(dups))
	b.res.add(c.Name(), kind+"_out_of_order", float64(res.tally.firstOutOfOrder))
}

// restartDrain seeds n events over m orders on the crash cluster's
// database of cfg, starts c with the tuned settings, restarts the server
// once n/crashFraction events were delivered, and waits for the rest
// (crashWait).
func (b *bench) restartDrain(ctx context.Context, c Contender, cfg *pgxpool.Config, n, m int, layout uint64) (crashResult, error) {
	events, err := backlog(n, m, layout)
	if err != nil {
		return crashResult{}, err
	}
	if err := seed(ctx, c, cfg, Tuned, events); err != nil {
		return crashResult{}, err
	}
	pool, err := openPool(ctx, cfg, nil)
	if err != nil {
		return crashResult{}, err
	}
	defer pool.Close()
	rec := newBacklogRecorder(nil, events)
	stop, err := c.Start(ctx, pool, rec, Tuned)
	if err != nil {
		return crashResult{}, err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = stop(context.WithoutCancel(ctx))
		}
	}()
	if err := waitDelivered(ctx, rec, n/crashFraction, nil); err != nil {
		return crashResult{}, fmt.Errorf("%s before the restart: %w", c.Name(), err)
	}
	res := crashResult{undelivered: n - rec.tally().distinct}
	back, err := b.crash.restart(ctx)
	if err != nil {
		return crashResult{}, err
	}
	if err := crashWait(ctx, c, cfg, rec, back); err != nil {
		return crashResult{}, err
	}
	stopped = true
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), crashStop)
	defer cancel()
	if err := stop(sctx); err != nil {
		b.progress("  %s's stop after the restart: %v", c.Name(), err)
	}
	return res.finish(rec, n, back), nil
}

// killDrain seeds n events over m orders in the database of cfg, runs c
// with the tuned settings in a child process (this binary again, see
// consumer.go), kills it with SIGKILL once n/crashFraction events were
// delivered, starts another at once, as a supervisor would, and waits for
// the rest (crashWait). The child's sink writes each delivery to its log,
// which this process reads.
func (b *bench) killDrain(ctx context.Context, c Contender, cfg *pgxpool.Config, n, m int, layout uint64) (crashResult, error) {
	events, err := backlog(n, m, layout)
	if err != nil {
		return crashResult{}, err
	}
	if err := seed(ctx, c, cfg, Tuned, events); err != nil {
		return crashResult{}, err
	}
	// The seeding's own handle (DBOS's) is this process's; the child has
	// its own.
	if pc, ok := c.(interface{ closeProducer(string) error }); ok {
		if err := pc.closeProducer(cfg.ConnConfig.Database); err != nil {
			return crashResult{}, err
		}
	}
	dir, err := os.MkdirTemp("", "outflow-peers-consumer-")
	if err != nil {
		return crashResult{}, err
	}
	defer os.RemoveAll(dir)
	rec := newBacklogRecorder(nil, events)
	log := &consumerLog{path: filepath.Join(dir, "consumer.log"), rec: rec}
	stopTail := log.follow()
	defer stopTail()

	first, err := startConsumer(c, cfg, log.path)
	if err != nil {
		return crashResult{}, err
	}
	defer killIfRunning(first)
	alive := func() error {
		if first.Exited() {
			return fmt.Errorf("the consumer exited before the kill:\n%s", first.LogTail(20))
		}
		return nil
	}
	if err := waitDelivered(ctx, rec, n/crashFraction, alive); err != nil {
		return crashResult{}, fmt.Errorf("%s before the kill: %w", c.Name(), err)
	}
	first.Kill()
	killed := time.Now()
	// Every delivery of the killed consumer is in the log now.
	if err := log.read(); err != nil {
		return crashResult{}, err
	}
	res := crashResult{undelivered: n - rec.tally().distinct}
	second, err := startConsumer(c, cfg, log.path)
	if err != nil {
		return crashResult{}, err
	}
	defer killIfRunning(second)
	if err := crashWait(ctx, c, cfg, rec, killed); err != nil {
		return crashResult{}, err
	}
	second.Stop(crashStop)
	if status, _ := second.Status(); status.Signaled() || status.ExitStatus() != 0 {
		b.progress("  %s's consumer did not stop cleanly (%v):\n%s", c.Name(), status, second.LogTail(20))
	}
	stopTail()
	return res.finish(rec, n, killed), nil
}

// finish fills in what rec saw of the backlog of n events after the
// crash ended at back.
func (res crashResult) finish(rec *recorder, n int, back time.Time) crashResult {
	res.tally = rec.tally()
	res.lost = n - res.tally.distinct
	if first, ok := rec.firstAfter(back); ok {
		res.firstDelivery, res.ok = first.Sub(back), true
	}
	return res
}

// waitDelivered waits until rec has k distinct events, within crashTimeout;
// alive, when not nil, fails the wait early.
func waitDelivered(ctx context.Context, rec *recorder, k int, alive func() error) error {
	deadline := time.Now().Add(crashTimeout)
	for rec.tally().distinct < k {
		if alive != nil {
			if err := alive(); err != nil {
				return err
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d events delivered after %s", rec.tally().distinct, k, crashTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// crashWait returns once, after the crash ended at back, rec has every
// event, or c has had nothing pending and rec nothing new for crashQuiet,
// or crashTimeout has passed: what is missing then is lost.
func crashWait(ctx context.Context, c Contender, cfg *pgxpool.Config, rec *recorder, back time.Time) error {
	pool, err := openPool(ctx, cfg, nil)
	if err != nil {
		return err
	}
	defer pool.Close()
	deadline := back.Add(crashTimeout)
	seen, changed := -1, time.Now()
	for time.Now().Before(deadline) {
		if d := rec.tally().deliveries; d != seen {
			seen, changed = d, time.Now()
		}
		if time.Since(changed) > crashQuiet {
			// A failed count (the consumer's server just came back) is
			// asked again.
			if n, err := c.Pending(ctx, pool); err == nil && n == 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-rec.done:
			return nil
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// startConsumer starts this binary as the crash round's consumer of c on
// the database of cfg, its output (and so its deliveries) appended to
// logPath.
func startConsumer(c Contender, cfg *pgxpool.Config, logPath string) (*proc.Process, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return proc.Start(proc.Options{
		Name: "consumer " + c.Name(), Bin: exe, LogPath: logPath, KillWithParent: true,
		Env: append(os.Environ(), consumerEnv+"="+c.Name(), consumerURLEnv+"="+poolURL(cfg)),
	})
}

// killIfRunning kills p unless it has ended (its process group may be
// another's by then).
func killIfRunning(p *proc.Process) {
	if !p.Exited() {
		p.Kill()
	}
}
