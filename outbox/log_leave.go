package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/internal/namedsql"
)

// Runner is a relay of any source: [Relay], [CDCRelay], [LogRelay],
// [LogSwitch] and [LogLeave] run until ctx ends, under their owner's name.
type Runner interface {
	Run(ctx context.Context) error
	Owner() string
}

// LogLeave is the poll or cdc source of a database whose producers wrote to
// the log before (OUTFLOW_RELAY_SOURCE=log, switched back): the reverse of
// [LogSwitch]. When the log holds events no relay published, a [LogRelay]
// publishes them first, and main (the [Relay] or [CDCRelay] of
// outbox_events) starts only once none is left, so an order whose earlier
// events are in the log and later ones in outbox_events stays in sequence.
// A quarantined hold does not hold the switch back (an operator may take
// days): it is named in an error line, and its order's later events in
// outbox_events are published before it.
//
// The log relay then keeps running beside main, as a sweeper, so an event
// written to the log afterwards (a producer left on the log) or a hold an
// operator retries is published, never stranded; a late event is logged as
// an error naming its order. A database whose log was never written (no
// event in it, no cursor moved) runs main alone: a poll or cdc source pays
// nothing for the log.
type LogLeave struct {
	pool *pgxpool.Pool
	pub  Publisher
	cfg  LogConfig
	main Runner
	// switchedAt is when the log's drain ended (unix nanoseconds; 0
	// before): a log event that occurred after it was written by a
	// producer left on the log.
	switchedAt atomic.Int64
}

// NewLogLeave returns main behind the log's drain and sweeper: cfg is the
// log relay's, with main's RelayConfig (the same publisher, breaker,
// metrics and failpoints; the owner is main's when cfg names none). It
// connects nothing: Run looks at the log.
func NewLogLeave(pool *pgxpool.Pool, pub Publisher, cfg LogConfig, main Runner) (*LogLeave, error) {
	if cfg.Owner == "" {
		cfg.Owner = main.Owner()
	}
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &LogLeave{pool: pool, pub: pub, cfg: cfg, main: main}, nil
}

// Owner returns the relay's identity (main's and the log relay's).
func (s *LogLeave) Owner() string { return s.cfg.Owner }

// Config returns the log relay's configuration with defaults applied (its
// RelayConfig is main's).
func (s *LogLeave) Config() LogConfig { return s.cfg }

// Run runs main alone when the log was never written; otherwise a log
// relay, until the log holds nothing unpublished, and then main beside it,
// until ctx ends or either fails.
func (s *LogLeave) Run(ctx context.Context) error {
	left, err := s.left(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it began
		}
		return err
	}
	if !left.Used {
		return s.main.Run(ctx)
	}
	log, err := NewLogRelay(s.pool, notedPublisher{pub: s.pub, note: s.noteLate}, s.cfg)
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

// noteLate logs e as an error when it was written to the log after the
// drain ended: its producer still writes there.
func (s *LogLeave) noteLate(e Event) {
	if !lateEvent(&s.switchedAt, e) {
		return
	}
	s.cfg.Logger.Error("log source left: an event was written to the log after this database switched back to outbox_events; "+
		"publishing it with the log relay, but its order's events in the log and in outbox_events are not kept in sequence with each other "+
		"(set OUTFLOW_RELAY_SOURCE to this starter's source for the producer that wrote it)",
		"owner", s.cfg.Owner, "event_id", e.ID, "event_type", e.Type, "aggregate_type", e.AggregateType, "aggregate_id", e.AggregateID,
		"sequence", e.Sequence, "occurred_at", e.OccurredAt)
}

// logLeaveLeft is what the log holds that no relay published.
type logLeaveLeft struct {
	Pending     int64 `db:"pending"`
	Holds       int64 `db:"holds"`
	Quarantined int64 `db:"quarantined"`
	Used        bool  `db:"used"`
}

func (l logLeaveLeft) unpublished() int64 { return l.Pending + l.Holds }

// drain waits until the log relay (running; stopped closes when it ends)
// left the log no unpublished event outside a quarantined hold, counting
// every LogSwitchCheckInterval.
func (s *LogLeave) drain(ctx context.Context, left logLeaveLeft, stopped <-chan struct{}) error {
	logger := s.cfg.Logger
	if left.unpublished() > 0 {
		logger.Info("log source left: draining the log with the log relay before reading outbox_events",
			"owner", s.cfg.Owner, "pending", left.Pending, "holds", left.Holds, "quarantined", left.Quarantined)
		start := time.Now()
		var err error
		left, err = waitDrained(ctx, stopped, left, s.left,
			errors.New("outbox: draining the log before outbox_events: the log relay stopped"),
			func(err error) {
				logger.Error("log source left: counting what the log holds failed; retrying", "owner", s.cfg.Owner, "error", err)
			},
			func(left logLeaveLeft) {
				logger.Info("log source left: draining the log", "owner", s.cfg.Owner,
					"pending", left.Pending, "holds", left.Holds, "quarantined", left.Quarantined, "elapsed", time.Since(start).Round(time.Millisecond))
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
		logger.Error("log source left: quarantined holds are left in the log; reading outbox_events without them, "+
			"so their orders' later events there are published before them (outboxctl list --quarantined names them; retry or skip them)",
			"owner", s.cfg.Owner, "quarantined", left.Quarantined)
	}
	logger.Info("log source left: reading outbox_events, the log relay beside it", "owner", s.cfg.Owner)
	return nil
}

func (s *LogLeave) left(ctx context.Context) (logLeaveLeft, error) {
	l, err := qLogLeaveLeft.One(ctx, s.pool, namedsql.NoArgs{})
	if err != nil {
		return logLeaveLeft{}, fmt.Errorf("outbox: counting what the log holds: %w", err)
	}
	return l, nil
}

var qLogLeaveLeft = namedsql.Bind[namedsql.NoArgs, logLeaveLeft](queries, "LogLeaveLeft")
