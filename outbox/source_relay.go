package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox/namedsql"
)

// SourceRelayConfig configures a [SourceRelay]: the relay's settings,
// shared by every source, and the cdc source's own.
type SourceRelayConfig struct {
	RelayConfig
	// CDCSlot and CDCGrace are the cdc source's [CDCConfig].Slot and
	// Grace, used while the database's source is cdc. Optional.
	CDCSlot  string
	CDCGrace time.Duration
	// Started, when set, hears each source's relay as it starts, with the
	// source and the relay's configuration (defaults applied): a process
	// logs it.
	Started func(source string, cfg RelayConfig)
}

// SourceRelay relays the events of a database whose source is recorded in
// the database (table outbox_source: poll, cdc or log; `outboxctl source
// set` changes it), where the producers' [Enqueue] reads it too. It runs
// the recorded source's relay and, when an operator changes the source
// (looked up every [LogSwitchCheckInterval]), stops it and runs the new
// one's, without a restart. A switch is one relay's stop and another's
// start, as a restart is: each source's relay publishes what the other
// table still holds first and keeps sweeping it ([logSwitch],
// [logLeave]), and an order's lane runs across both tables, so nothing is
// stranded, reordered or published twice. When it leaves cdc it drops the
// replication slot once no relay streams it ([dropIdleCDCSlot]).
type SourceRelay struct {
	pool *pgxpool.Pool
	pub  Publisher
	cfg  SourceRelayConfig
}

// NewSourceRelay returns the relay of pool's recorded source, publishing
// to pub. It connects nothing: Run reads the source.
func NewSourceRelay(pool *pgxpool.Pool, pub Publisher, cfg SourceRelayConfig) (*SourceRelay, error) {
	if err := cfg.RelayConfig.setDefaults(); err != nil {
		return nil, err
	}
	if err := cfg.RelayConfig.validate(); err != nil {
		return nil, err
	}
	return &SourceRelay{pool: pool, pub: pub, cfg: cfg}, nil
}

// Owner returns the relay's identity, every source's relay's.
func (s *SourceRelay) Owner() string { return s.cfg.Owner }

// Config returns the relay's configuration with defaults applied.
func (s *SourceRelay) Config() SourceRelayConfig { return s.cfg }

// Run relays until ctx ends or a source's relay fails.
func (s *SourceRelay) Run(ctx context.Context) error {
	source, err := qRelaySource.One(ctx, s.pool, namedsql.NoArgs{})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("outbox: read the database's relay source (outbox_source; `outboxctl migrate --outbox-only` makes it): %w", err)
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
// ([CheckCDC]), so a server without wal_level=logical fails saying so.
func (s *SourceRelay) build(ctx context.Context, source string) (Runner, RelayConfig, error) {
	cfg := s.cfg.RelayConfig
	switch source {
	case "log":
		r, err := newLogSwitch(s.pool, s.pub, LogConfig{RelayConfig: cfg})
		if err != nil {
			return nil, cfg, err
		}
		return r, r.Config().RelayConfig, nil
	case "cdc":
		if err := CheckCDC(ctx, s.pool, ""); err != nil {
			return nil, cfg, fmt.Errorf("relay source cdc: %w", err)
		}
		main, err := NewCDCRelay(s.pool, s.pub, CDCConfig{RelayConfig: cfg, Slot: s.cfg.CDCSlot, Grace: s.cfg.CDCGrace})
		if err != nil {
			return nil, cfg, err
		}
		r, err := newLogLeave(s.pool, s.pub, LogConfig{RelayConfig: cfg}, main)
		if err != nil {
			return nil, cfg, err
		}
		return r, r.Config().RelayConfig, nil
	case "poll":
		main, err := NewRelay(s.pool, s.pub, cfg)
		if err != nil {
			return nil, cfg, err
		}
		r, err := newLogLeave(s.pool, s.pub, LogConfig{RelayConfig: cfg}, main)
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
func (s *SourceRelay) watch(ctx context.Context, source string, done <-chan error) (string, error) {
	t := time.NewTicker(LogSwitchCheckInterval)
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
func (s *SourceRelay) dropIdleSlot(ctx context.Context) {
	dropped, err := dropIdleCDCSlot(ctx, s.pool, s.cfg.CDCSlot)
	switch {
	case errors.Is(err, context.Canceled):
	case err != nil:
		s.cfg.Logger.Error("relay source: left cdc, but dropping its idle replication slot failed; drop it by hand, or it retains WAL", "owner", s.cfg.Owner, "error", err)
	case dropped != "":
		s.cfg.Logger.Info("relay source: left cdc; dropped its replication slot, which no relay streams any more", "owner", s.cfg.Owner, "slot", dropped)
	}
}
