package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox/internal/relaysql"
	"github.com/outflow/outflow/outbox/namedsql"
)

// Relay hands every committed event to a [Publisher], in each aggregate's
// order, at least once. Its source is a value of its [RelayConfig]: by
// default the one the database records (table outbox_source: poll, cdc or
// log; `outboxctl source set` changes it), where the producers' [Enqueue]
// reads it too. It runs that source's relay and, when an operator changes
// the source (looked up every [LogSwitchCheckInterval]), stops it and runs
// the new one's, without a restart. A switch is one relay's stop and
// another's start, as a restart is: each source's relay publishes what the
// other table still holds first and keeps sweeping it ([logSwitch],
// [logLeave]), and an order's lane runs across both tables, so nothing is
// stranded, reordered or published twice. When it leaves cdc it drops the
// replication slot once no relay streams it ([dropIdleCDCSlot]).
//
// Every source shares the relay's loop: the pipeline, the breaker, the
// throttle, attempts, backoff, quarantine and metrics (relay.go,
// pipeline.go, publish.go); a source differs only in how it finds each
// lane's next events and records their delivery (poll: relay.go and
// claim.go; cdc: cdc*.go; log: log_*.go).
type Relay struct {
	pool  *pgxpool.Pool
	pub   Publisher
	cfg   RelayConfig
	fixed Runner // cfg.Source's relay, when the source is fixed
}

// NewRelay returns the relay of pool, publishing to pub. With
// cfg.Source "" it connects nothing: Run reads the database's source.
func NewRelay(pool *pgxpool.Pool, pub Publisher, cfg RelayConfig) (*Relay, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &Relay{pool: pool, pub: pub, cfg: cfg}
	// Every source's own settings are checked now, not at a switch.
	cc, lc := cfg.cdcConfig(), cfg.logConfig()
	if err := cc.setDefaults(); err != nil {
		return nil, err
	}
	if err := cc.validate(); err != nil {
		return nil, err
	}
	if err := lc.setDefaults(); err != nil {
		return nil, err
	}
	if err := lc.validate(); err != nil {
		return nil, err
	}
	var err error
	switch cfg.Source {
	case "poll":
		r.fixed, err = newPollRelay(pool, pub, cfg)
	case "cdc":
		r.fixed, err = newCDCRelay(pool, pub, cc)
	case "log":
		r.fixed, err = newLogRelay(pool, pub, lc)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// cdcConfig and logConfig are the cdc and log sources' settings of c.
func (c RelayConfig) cdcConfig() cdcConfig {
	return cdcConfig{RelayConfig: c, Slot: c.CDCSlot, Publication: c.CDCPublication, Grace: c.CDCGrace,
		StatusInterval: c.CDCStatusInterval, StandbyRetry: c.CDCStandbyRetry}
}

func (c RelayConfig) logConfig() logConfig {
	return logConfig{RelayConfig: c, MaxPartitions: c.LogMaxPartitions, ShareDelay: c.LogShareDelay}
}

// Owner returns the relay's identity, every source's relay's.
func (s *Relay) Owner() string { return s.cfg.Owner }

// Config returns the relay's configuration with defaults applied.
func (s *Relay) Config() RelayConfig { return s.cfg }

// Run relays until ctx ends or a source's relay fails.
func (s *Relay) Run(ctx context.Context) error {
	if s.fixed != nil {
		if s.cfg.Started != nil {
			s.cfg.Started(s.cfg.Source, s.cfg)
		}
		return s.fixed.Run(ctx)
	}
	source, err := readRetrying(ctx, s.cfg.Logger, s.cfg.Owner, "relay source: reading the database's source (outbox_source; `outboxctl migrate --outbox-only` makes it)",
		func(ctx context.Context) (string, error) { return qRelaySource.One(ctx, s.pool, namedsql.NoArgs{}) })
	if err != nil {
		return nil // ctx ended
	}
	for {
		r, cfg, err := s.build(ctx, source)
		if err != nil {
			return err
		}
		if s.cfg.Started != nil {
			s.cfg.Started(source, cfg)
		}
		rctx, stopRelay := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- r.Run(rctx) }()
		next, err := s.watch(ctx, source, done)
		stopRelay()
		if next == "" {
			if err == nil {
				err = <-done
			}
			return err
		}
		if err := <-done; err != nil {
			return fmt.Errorf("outbox: the %s relay, stopping for the switch to %s: %w", source, next, err)
		}
		s.cfg.Logger.Info("relay source: the old source's relay stopped; starting the new one's", "owner", s.cfg.Owner, "from", source, "to", next)
		if source == "cdc" && next != "cdc" {
			s.dropIdleSlot(ctx)
		}
		source = next
	}
}

// build makes source's relay: for log the switch to it ([logSwitch]), for
// poll and cdc their relay behind [logLeave]; cdc is checked first
// (relaysql.CheckCDC), so a server without wal_level=logical fails saying so.
func (s *Relay) build(ctx context.Context, source string) (Runner, RelayConfig, error) {
	cfg := s.cfg
	switch source {
	case "log":
		r, err := newLogSwitch(s.pool, s.pub, cfg.logConfig())
		if err != nil {
			return nil, cfg, err
		}
		return r, r.Config().RelayConfig, nil
	case "cdc":
		if err := relaysql.CheckCDC(ctx, s.pool, ""); err != nil {
			return nil, cfg, fmt.Errorf("relay source cdc: %w", err)
		}
		main, err := newCDCRelay(s.pool, s.pub, cfg.cdcConfig())
		if err != nil {
			return nil, cfg, err
		}
		r, err := newLogLeave(s.pool, s.pub, cfg.logConfig(), main)
		if err != nil {
			return nil, cfg, err
		}
		return r, r.Config().RelayConfig, nil
	case "poll":
		main, err := newPollRelay(s.pool, s.pub, cfg)
		if err != nil {
			return nil, cfg, err
		}
		r, err := newLogLeave(s.pool, s.pub, cfg.logConfig(), main)
		if err != nil {
			return nil, cfg, err
		}
		return r, r.Config().RelayConfig, nil
	}
	return nil, cfg, fmt.Errorf("outbox: the database's relay source is %q, which this relay does not know (poll, cdc, log): upgrade the relay", source)
}

// watch returns the recorded source once it differs from source, or ""
// when ctx ends or the relay stops (done; its error is returned then). A
// failed look-up is logged and retried.
func (s *Relay) watch(ctx context.Context, source string, done <-chan error) (string, error) {
	t := time.NewTicker(sourceCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return "", nil
		case err := <-done:
			if err == nil && ctx.Err() == nil {
				err = fmt.Errorf("outbox: the %s relay stopped", source)
			}
			return "", err
		case <-t.C:
		}
		now, err := qRelaySource.One(ctx, s.pool, namedsql.NoArgs{})
		switch {
		case ctx.Err() != nil:
			return "", nil
		case err != nil:
			s.cfg.Logger.Error("relay source: reading the database's source failed; retrying", "owner", s.cfg.Owner, "error", err)
		case now != source:
			s.cfg.Logger.Warn("relay source changed: switching the relay", "owner", s.cfg.Owner, "from", source, "to", now)
			return now, nil
		}
	}
}

// dropIdleSlot drops the cdc source's slot once this relay left cdc,
// unless a relay still streams it (another process that has not followed
// yet: the last to leave drops it).
func (s *Relay) dropIdleSlot(ctx context.Context) {
	dropped, err := dropIdleCDCSlot(ctx, s.pool, s.cfg.CDCSlot)
	switch {
	case errors.Is(err, context.Canceled):
	case err != nil:
		s.cfg.Logger.Error("relay source: left cdc, but dropping its idle replication slot failed; drop it by hand, or it retains WAL", "owner", s.cfg.Owner, "error", err)
	case dropped != "":
		s.cfg.Logger.Info("relay source: left cdc; dropped its replication slot, which no relay streams any more", "owner", s.cfg.Owner, "slot", dropped)
	}
}

// readRetrying runs read until it succeeds or ctx ends (its error then),
// logging each failure and waiting errorBackoff between tries: a relay
// starting while its database drops connections (a failover, a restart, an
// idle-killer) waits for it, as its loop does, instead of dying.
func readRetrying[T any](ctx context.Context, logger *slog.Logger, owner, what string, read func(context.Context) (T, error)) (T, error) {
	for failures := 1; ; failures++ {
		v, err := read(ctx)
		if err == nil || ctx.Err() != nil {
			return v, ctx.Err()
		}
		delay := errorBackoff.Delay(failures)
		logger.Error(what+" failed; retrying", "owner", owner, "retry_in", delay, "error", err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, ctx.Err()
		case <-t.C:
		}
	}
}
