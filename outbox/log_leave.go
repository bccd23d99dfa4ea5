package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox/namedsql"
)

// Runner is a relay: [Relay], and each source's relay inside it, run until
// ctx ends, under their owner's name.
type Runner interface {
	Run(ctx context.Context) error
	Owner() string
}

// logLeave is the poll or cdc source of a database whose producers wrote to
// the log before (OUTFLOW_RELAY_SOURCE=log, switched back): the reverse of
// [logSwitch]. When the log holds events no relay published, a [LogRelay]
// publishes them first, and main (the [Relay] or [CDCRelay] of
// outbox_events) starts only once none is left that it can publish.
// Whatever runs when, the lane rule across both tables (migrations/00017)
// keeps an order whose earlier events are in the log and later ones in
// outbox_events in sequence: main does not publish an event while an
// earlier event of its order is unpublished in the log, nor the log relay
// a log event while an earlier one is unpublished in outbox_events. A
// quarantined hold does not hold the switch back (an operator may take
// days): it is named in an error line, and its order waits for it in both
// tables; nor does a hold that waits for an event of outbox_events, which
// main publishes.
//
// The log relay then keeps running beside main, as a sweeper, so an event
// written to the log afterwards (a producer not switched back yet) or a
// hold an operator retries is published, never stranded; a late event is
// logged as a warning naming its order. A database whose log was never
// written (no event in it, no cursor moved) runs main alone, and looks
// every LogSwitchCheckInterval whether the log has been written since (one
// small query): an event a producer writes there (OUTFLOW_RELAY_SOURCE=log
// before its starter) starts the log relay beside main, with an error
// line, instead of waiting unseen.
type logLeave struct {
	pool *pgxpool.Pool
	pub  Publisher
	cfg  logConfig
	main Runner
	// switchedAt is when the log's drain ended (unix nanoseconds; 0
	// before): a log event that occurred after it was written by a
	// producer left on the log.
	switchedAt atomic.Int64
}

// newLogLeave returns main behind the log's drain and sweeper: cfg is the
// log relay's, with main's RelayConfig (the same publisher, breaker,
// metrics and failpoints; the owner is main's when cfg names none). It
// connects nothing: Run looks at the log.
func newLogLeave(pool *pgxpool.Pool, pub Publisher, cfg logConfig, main Runner) (*logLeave, error) {
	if cfg.Owner == "" {
		cfg.Owner = main.Owner()
	}
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &logLeave{pool: pool, pub: pub, cfg: cfg, main: main}, nil
}

// Owner returns the relay's identity (main's and the log relay's).
func (s *logLeave) Owner() string { return s.cfg.Owner }

// Config returns the log relay's configuration with defaults applied (its
// RelayConfig is main's).
func (s *logLeave) Config() logConfig { return s.cfg }

// Run runs main alone while the log was never written, and a log relay
// beside it once it is; on a database whose log was written, a log relay
// until the log holds nothing main can publish after it, and then main
// beside it; until ctx ends or either fails.
func (s *logLeave) Run(ctx context.Context) error {
	start := time.Now()
	left, err := readRetrying(ctx, s.cfg.Logger, s.cfg.Owner, "log source left: counting what the log holds", s.left)
	if err != nil {
		return nil // stopped before it began
	}
	newLog := func() (*logRelay, error) {
		return newLogRelay(s.pool, notedPublisher{pub: s.pub, note: s.noteLate}, s.cfg)
	}
	if !left.Used {
		return runSwitched(ctx, switchRun{
			sweeper: "the relay of outbox_events", runSweeper: s.main.Run,
			drain: s.waitUsed,
			main:  "the log relay beside outbox_events' relay", runMain: func(ctx context.Context) error {
				log, err := newLog()
				if err != nil {
					return err
				}
				return log.Run(ctx)
			},
			// Every event of the log was written after this starter found
			// it unused.
			switched: func() { s.switchedAt.Store(start.UnixNano()) },
		})
	}
	log, err := newLog()
	if err != nil {
		return err
	}
	return runSwitched(ctx, switchRun{
		sweeper: "the log relay beside outbox_events' relay", runSweeper: log.Run,
		drain: func(ctx context.Context, stopped <-chan struct{}) error { return s.drain(ctx, left, stopped) },
		main:  "the relay of outbox_events", runMain: s.main.Run,
		switched: func() { s.switchedAt.Store(time.Now().UnixNano()) },
	})
}

// waitUsed returns once the log has been written (LogLeaveUsed, every
// LogSwitchCheckInterval), naming it in an error line, or when ctx ends;
// mainStopped closes when main stops (an error).
func (s *logLeave) waitUsed(ctx context.Context, mainStopped <-chan struct{}) error {
	for {
		t := time.NewTimer(sourceCheckInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-mainStopped:
			t.Stop()
			return errors.New("outbox: watching the log: the relay of outbox_events stopped")
		case <-t.C:
		}
		used, err := qLogLeaveUsed.One(ctx, s.pool, namedsql.NoArgs{})
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			s.cfg.Logger.Error("log source left: looking whether the log was written failed; retrying", "owner", s.cfg.Owner, "error", err)
		case used:
			s.cfg.Logger.Error("log source left: an event was written to the log, which was unused when this starter began; "+
				"starting a log relay beside outbox_events' relay so that it is published "+
				"(a producer writes to the log: set OUTFLOW_RELAY_SOURCE alike for the producers and the starters)",
				"owner", s.cfg.Owner)
			return nil
		}
	}
}

// noteLate logs e as a warning when it was written to the log after the
// drain ended: its producer still writes there.
func (s *logLeave) noteLate(e Event) {
	if !lateEvent(&s.switchedAt, e) {
		return
	}
	s.cfg.Logger.Warn("log source left: an event was written to the log after this database switched back to outbox_events; "+
		"publishing it with the log relay, in sequence with its order's events in outbox_events "+
		"(a producer not switched back yet: set OUTFLOW_RELAY_SOURCE to this starter's source)",
		"owner", s.cfg.Owner, "event_id", e.ID, "event_type", e.Type, "aggregate_type", e.AggregateType, "aggregate_id", e.AggregateID,
		"sequence", e.Sequence, "occurred_at", e.OccurredAt)
}

// logLeaveLeft is what the log holds that no relay published.
type logLeaveLeft struct {
	Pending     int64 `db:"pending"`
	Holds       int64 `db:"holds"`
	Quarantined int64 `db:"quarantined"`
	// Behind: holds that wait for an earlier event of their order in
	// outbox_events, which main publishes after the drain.
	Behind int64 `db:"behind"`
	Used   bool  `db:"used"`
}

func (l logLeaveLeft) unpublished() int64 { return l.Pending + l.Holds }

// drain waits until the log relay (running; stopped closes when it ends)
// left the log no unpublished event outside a quarantined hold or a hold
// that waits for outbox_events, counting every LogSwitchCheckInterval.
func (s *logLeave) drain(ctx context.Context, left logLeaveLeft, stopped <-chan struct{}) error {
	logger := s.cfg.Logger
	if left.unpublished() > 0 {
		logger.Info("log source left: draining the log with the log relay before reading outbox_events",
			"owner", s.cfg.Owner, "pending", left.Pending, "holds", left.Holds, "quarantined", left.Quarantined, "behind", left.Behind)
		start := time.Now()
		var err error
		left, err = waitDrained(ctx, stopped, left, s.left,
			errors.New("outbox: draining the log before outbox_events: the log relay stopped"),
			func(err error) {
				logger.Error("log source left: counting what the log holds failed; retrying", "owner", s.cfg.Owner, "error", err)
			},
			func(left logLeaveLeft) {
				logger.Info("log source left: draining the log", "owner", s.cfg.Owner,
					"pending", left.Pending, "holds", left.Holds, "quarantined", left.Quarantined, "behind", left.Behind, "elapsed", time.Since(start).Round(time.Millisecond))
			})
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		logger.Info("log source left: the log drained", "owner", s.cfg.Owner, "elapsed", time.Since(start).Round(time.Millisecond))
	}
	if left.Quarantined > 0 {
		logger.Error("log source left: quarantined holds are left in the log; reading outbox_events without them: "+
			"their orders' later events, in the log and in outbox_events, wait for them (outboxctl list --quarantined names them; retry or skip them)",
			"owner", s.cfg.Owner, "quarantined", left.Quarantined)
	}
	logger.Info("log source left: reading outbox_events, the log relay beside it", "owner", s.cfg.Owner)
	return nil
}

func (s *logLeave) left(ctx context.Context) (logLeaveLeft, error) {
	l, err := qLogLeaveLeft.One(ctx, s.pool, namedsql.NoArgs{})
	if err != nil {
		return logLeaveLeft{}, fmt.Errorf("outbox: counting what the log holds: %w", err)
	}
	return l, nil
}

var (
	qLogLeaveLeft = namedsql.Bind[namedsql.NoArgs, logLeaveLeft](queries, "LogLeaveLeft")
	qLogLeaveUsed = namedsql.Bind[namedsql.NoArgs, bool](queries, "LogLeaveUsed")
)
