package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/internal/namedsql"
)

// LogSwitchCheckInterval is how often a [LogSwitch] draining outbox_events
// counts what is left there.
const LogSwitchCheckInterval = time.Second

// logSwitchNamed is how many quarantined events the switch's error line
// names.
const logSwitchNamed = 20

// LogSwitch is the log source as a database switches to it: a polling
// [Relay] publishes what outbox_events still holds, and the [LogRelay]
// starts once no unpublished, unquarantined event is left there. Each
// order's events in outbox_events precede its events in the log (its
// producers switched to the log after writing them), so reading the log
// only after those are published keeps every order's events in sequence
// across the switch. A database whose outbox_events holds nothing
// unpublished starts the log's reader at once.
//
// A quarantined event in outbox_events does not hold the switch: it waits
// for an operator, who may take days, and the log's events of every other
// order would wait with it. The switch logs an error naming it (its order
// and sequence) and starts the log's reader; that order's later events in
// the log are then published before it. Retry or skip quarantined events
// before the switch (outboxctl retry, skip, under the poll source) to keep
// that order's sequence too.
//
// Producers must write to the log (EnqueueConfig.Log) before the switch
// runs: an event written to outbox_events after the drain ended is read
// by no relay of this source.
type LogSwitch struct {
	pool *pgxpool.Pool
	poll *Relay
	log  *LogRelay
	cfg  LogConfig
}

// NewLogSwitch returns the log source of a database switching to it: the
// [LogRelay] of cfg, preceded by a polling [Relay] of cfg.RelayConfig
// (the same publisher, owner, breaker, metrics and failpoints) while
// outbox_events holds unpublished events.
func NewLogSwitch(pool *pgxpool.Pool, pub Publisher, cfg LogConfig) (*LogSwitch, error) {
	log, err := NewLogRelay(pool, pub, cfg)
	if err != nil {
		return nil, err
	}
	poll, err := NewRelay(pool, pub, log.Config().RelayConfig)
	if err != nil {
		return nil, err
	}
	return &LogSwitch{pool: pool, poll: poll, log: log, cfg: log.Config()}, nil
}

// Owner returns the relay's identity (the polling relay's and the log's).
func (s *LogSwitch) Owner() string { return s.cfg.Owner }

// Config returns the log relay's configuration with defaults applied.
func (s *LogSwitch) Config() LogConfig { return s.cfg }

// Run drains outbox_events, then runs the log relay until ctx ends.
func (s *LogSwitch) Run(ctx context.Context) error {
	if err := s.drain(ctx); err != nil || ctx.Err() != nil {
		return err
	}
	return s.log.Run(ctx)
}

// logSwitchLeft is what outbox_events holds that no relay published.
type logSwitchLeft struct {
	// Unpublished: neither published, skipped nor quarantined.
	Unpublished int64 `db:"unpublished"`
	// Quarantined: waiting for an operator.
	Quarantined int64 `db:"quarantined"`
}

// drain runs the polling relay until outbox_events has no unpublished,
// unquarantined event, counting every LogSwitchCheckInterval; the polling
// relay finishes its bookkeeping before drain returns.
func (s *LogSwitch) drain(ctx context.Context) error {
	logger := s.cfg.Logger
	left, err := s.left(ctx)
	if err != nil {
		return err
	}
	if left.Unpublished > 0 {
		logger.Info("log source: draining outbox_events with the poll relay before reading the log",
			"owner", s.cfg.Owner, "unpublished", left.Unpublished, "quarantined", left.Quarantined)
		pctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- s.poll.Run(pctx) }()
		start, lastLog := time.Now(), time.Now()
		for left.Unpublished > 0 && ctx.Err() == nil {
			if !sleep(ctx, LogSwitchCheckInterval) {
				break
			}
			l, err := s.left(ctx)
			if err != nil {
				if ctx.Err() != nil {
					break
				}
				logger.Error("log source: counting what outbox_events holds failed; retrying", "owner", s.cfg.Owner, "error", err)
				continue
			}
			changed := l.Unpublished != left.Unpublished
			left = l
			if !changed && time.Since(lastLog) < 10*time.Second {
				continue
			}
			lastLog = time.Now()
			logger.Info("log source: draining outbox_events", "owner", s.cfg.Owner,
				"unpublished", left.Unpublished, "quarantined", left.Quarantined, "elapsed", time.Since(start).Round(time.Millisecond))
		}
		stop()
		if err := <-done; err != nil {
			return fmt.Errorf("outbox: draining outbox_events before the log: %w", err)
		}
		if ctx.Err() != nil {
			return nil
		}
		logger.Info("log source: outbox_events drained", "owner", s.cfg.Owner, "elapsed", time.Since(start).Round(time.Millisecond))
	}
	if left.Quarantined > 0 {
		q, err := qLogSwitchQuarantined.All(ctx, s.pool, logSwitchQuarantinedArgs{MaxRows: logSwitchNamed})
		if err != nil {
			return fmt.Errorf("outbox: listing the quarantined events of outbox_events: %w", err)
		}
		names := make([]string, len(q))
		for i, e := range q {
			names[i] = fmt.Sprintf("%s %s/%s#%d (%s: %s)", e.EventID, e.AggregateType, e.AggregateID, e.Sequence, e.EventType, e.LastError)
		}
		logger.Error("log source: quarantined events are left in outbox_events; reading the log without them, "+
			"so their orders' later events in the log are published before them (retry or skip them under the poll source)",
			"owner", s.cfg.Owner, "quarantined", left.Quarantined, "events", names)
	}
	logger.Info("log source: reading the log", "owner", s.cfg.Owner)
	return nil
}

func (s *LogSwitch) left(ctx context.Context) (logSwitchLeft, error) {
	l, err := qLogSwitchLeft.One(ctx, s.pool, namedsql.NoArgs{})
	if err != nil {
		return logSwitchLeft{}, fmt.Errorf("outbox: counting what outbox_events holds: %w", err)
	}
	return l, nil
}

var (
	qLogSwitchLeft        = namedsql.Bind[namedsql.NoArgs, logSwitchLeft](queries, "LogSwitchLeft")
	qLogSwitchQuarantined = namedsql.Bind[logSwitchQuarantinedArgs, logSwitchQuarantinedRow](queries, "LogSwitchQuarantined")
)

// logSwitchStatements are the switch's statements, for the test that has
// the database check them.
var logSwitchStatements = []namedsql.Info{qLogSwitchLeft.Info(), qLogSwitchQuarantined.Info()}

type logSwitchQuarantinedArgs struct {
	MaxRows int `db:"max_rows"`
}

type logSwitchQuarantinedRow struct {
	EventID       uuid.UUID `db:"event_id"`
	AggregateType string    `db:"aggregate_type"`
	AggregateID   string    `db:"aggregate_id"`
	Sequence      int64     `db:"aggregate_sequence"`
	EventType     string    `db:"event_type"`
	LastError     string    `db:"last_error"`
}
