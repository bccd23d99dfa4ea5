package relaycmd

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// The horizons the guarantees depend on, and how they must relate (the
// whole table, with what happens on each side of each one, is
// docs/time-and-money.md):
//
//	charge window (workflows.ChargeWindow, 23h) < provider key lifetime (activities.KeyLifetime, 24h)
//	replay horizon (OUTFLOW_REPLAY_HORIZON)     ≤ namespace retention (Temporal)
//	outbox retention (OUTFLOW_RETENTION)        ≤ inbox retention (OUTFLOW_INBOX_RETENTION), checked in ReadConfig
//
// The first is the order app's, fixed in its code and checked by its worker
// at start; the second needs Temporal's answer and is checked once Temporal is reachable (and again every few minutes, since
// an operator may shorten the retention); the relay refuses to run on a
// violation, with a message naming both settings.

// horizonRecheck is how often the namespace retention is read again.
const horizonRecheck = 5 * time.Minute

// replayHorizonFromEnv reads OUTFLOW_REPLAY_HORIZON: how far back an
// operator's replay may reach. Unset or 0: the namespace retention.
func replayHorizonFromEnv(env *env) time.Duration {
	return env.Duration("OUTFLOW_REPLAY_HORIZON", 0, true)
}

// ReplayHorizon is the effective replay horizon for a namespace retention
// and the configured OUTFLOW_REPLAY_HORIZON (0: the retention), or an error
// naming both settings when the configured one reaches past the retention.
func ReplayHorizon(configured, retention time.Duration, namespace string) (time.Duration, error) {
	if configured == 0 {
		return retention, nil
	}
	if configured > retention {
		return 0, fmt.Errorf("OUTFLOW_REPLAY_HORIZON=%s is longer than the retention of Temporal namespace %q (%s): Temporal forgets a closed workflow after its retention, so a replay of an older event could run it a second time; "+
			"lower OUTFLOW_REPLAY_HORIZON to at most %s, or raise the namespace's retention (temporal operator namespace update --retention)",
			configured, namespace, retention, retention)
	}
	return configured, nil
}

// horizonGuard reads the namespace retention through the publisher, checks
// the replay horizon against it and records the effective horizon in the
// database, where `outboxctl replay` refuses windows behind it.
type horizonGuard struct {
	pool       *pgxpool.Pool
	pub        *temporalpub.Publisher
	namespace  string
	configured time.Duration
	logger     *slog.Logger
	recorded   time.Duration
}

// check runs one round; a violated relation is returned as an error, an
// unreachable Temporal is not (it is retried).
func (g *horizonGuard) check(ctx context.Context, timeout time.Duration) (ok bool, err error) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	retention, rerr := g.pub.Retention(rctx)
	if rerr != nil {
		g.logger.Warn("cannot read the Temporal namespace's retention yet; replays wait for it", "namespace", g.namespace, "error", rerr)
		return false, nil
	}
	horizon, err := ReplayHorizon(g.configured, retention, g.namespace)
	if err != nil {
		return false, err
	}
	if horizon == g.recorded {
		return true, nil
	}
	reason := fmt.Sprintf("Temporal namespace %q keeps closed workflows %s", g.namespace, retention)
	if g.configured > 0 {
		reason = fmt.Sprintf("OUTFLOW_REPLAY_HORIZON=%s (namespace %q keeps closed workflows %s)", g.configured, g.namespace, retention)
	}
	if err := outboxops.RecordReplayHorizon(rctx, g.pool, horizon, reason); err != nil {
		g.logger.Warn("could not record the replay horizon; retrying", "error", err)
		return false, nil
	}
	g.recorded = horizon
	g.logger.Info("replay horizon", "horizon", horizon, "namespace", g.namespace, "namespace_retention", retention)
	return true, nil
}

// run checks at once and then every horizonRecheck (every few seconds until
// Temporal first answers) until ctx ends or a relation is violated.
func (g *horizonGuard) run(ctx context.Context) error {
	for {
		ok, err := g.check(ctx, 10*time.Second)
		if err != nil {
			return err
		}
		wait := horizonRecheck
		if !ok {
			wait = 5 * time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}
