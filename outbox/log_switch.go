package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox/namedsql"
)

// LogSwitchCheckInterval is how often a [logSwitch] draining outbox_events
// counts what is left there.
const sourceCheckInterval = time.Second

// logSwitchNamed is how many quarantined events the switch's error line
// names.
const logSwitchNamed = 20

// logSwitch is the log source as a database switches to it: a polling
// [Relay] publishes what outbox_events still holds, and the [LogRelay]
// starts once nothing is left there that the polling relay can publish.
// Each order's events in outbox_events precede its events in the log (its
// producers switched to the log after writing them), so reading the log
// only after those are published keeps most orders out of each other's
// way; the lane rule across both tables (migrations/00017) keeps every
// order's events in sequence whatever runs when: an event of outbox_events
// is not published while an earlier event of its order is unpublished in
// the log, nor a log event while an earlier one is unpublished in
// outbox_events (its order then waits under a hold of the log). A
// database whose outbox_events holds nothing unpublished starts the log's
// reader at once.
//
// A quarantined event in outbox_events does not hold the switch: it waits
// for an operator, who may take days, and the log's events of every other
// order would wait with it. The drain does not count it, nor the events
// of its order behind it (its lane waits for it), nor an event behind an
// unpublished one of the log (the log's reader publishes that one first).
// The switch logs an error naming the quarantined events and starts the
// log's reader; a quarantined event's order waits, in both tables, until
// an operator retries or skips it (outboxctl retry, skip), and then goes on
// in sequence.
//
// The polling relay keeps running beside the log's reader, as a sweeper:
// an event written to outbox_events after the drain ended (a producer not
// yet switched, or switched back to poll) is still published, never
// stranded, in sequence with its order's events in the log, and so is a
// quarantined event there that an operator retries. Such a late event is
// logged as a warning naming its order. Idle, the sweeper costs a claim
// per PollInterval and its gauges, and keeps outbox_events' alerts (oldest
// pending event, quarantined) working.
type logSwitch struct {
	pool *pgxpool.Pool
	poll *pollRelay
	log  *logRelay
	cfg  logConfig
	// switchedAt is when the drain ended (unix nanoseconds; 0 before):
	// an event that occurred after it was written by a producer left on
	// the poll source.
	switchedAt atomic.Int64
}

// newLogSwitch returns the log source of a database switching to it: the
// [LogRelay] of cfg, preceded by a polling [Relay] of cfg.RelayConfig
// (the same publisher, owner, breaker, metrics and failpoints) while
// outbox_events holds unpublished events.
func newLogSwitch(pool *pgxpool.Pool, pub Publisher, cfg logConfig) (*logSwitch, error) {
	log, err := newLogRelay(pool, pub, cfg)
	if err != nil {
		return nil, err
	}
	s := &logSwitch{pool: pool, log: log, cfg: log.Config()}
	poll, err := newPollRelay(pool, notedPublisher{pub: pub, note: s.noteLate}, log.Config().RelayConfig)
	if err != nil {
		return nil, err
	}
	s.poll = poll
	return s, nil
}

// noteLate logs e as a warning when it was written to outbox_events after
// the switch: its producer still (or again) writes there.
func (s *logSwitch) noteLate(e Event) {
	if !lateEvent(&s.switchedAt, e) {
		return
	}
	s.cfg.Logger.Warn("log source: an event was written to outbox_events after this database switched to the log; "+
		"publishing it with the poll relay, in sequence with its order's events in the log "+
		"(a producer not switched yet, or switched back: OUTFLOW_RELAY_SOURCE, EnqueueConfig.Log)",
		"owner", s.cfg.Owner, "event_id", e.ID, "event_type", e.Type, "aggregate_type", e.AggregateType, "aggregate_id", e.AggregateID,
		"sequence", e.Sequence, "occurred_at", e.OccurredAt)
}

// Owner returns the relay's identity (the polling relay's and the log's).
func (s *logSwitch) Owner() string { return s.cfg.Owner }

// Config returns the log relay's configuration with defaults applied.
func (s *logSwitch) Config() logConfig { return s.cfg }

// Run starts the polling relay, waits until it drained outbox_events, then
// runs the log relay beside it until ctx ends or either fails.
func (s *logSwitch) Run(ctx context.Context) error {
	return runSwitched(ctx, switchRun{
		sweeper: "the poll relay of the log source", runSweeper: s.poll.Run,
		drain: s.drain,
		main:  "the log relay", runMain: s.log.Run,
		switched: func() { s.switchedAt.Store(time.Now().UnixNano()) },
	})
}

// switchRun is a source switch ([logSwitch], [logLeave]): the old source's
// relay (the sweeper) runs throughout, drain waits until it has published
// what the old source holds (it watches sweeperStopped), then the new
// source's relay (main) runs beside it.
type switchRun struct {
	sweeper    string
	runSweeper func(context.Context) error
	drain      func(ctx context.Context, sweeperStopped <-chan struct{}) error
	main       string
	runMain    func(context.Context) error
	switched   func()
}

// runSwitched runs sw until ctx ends or either relay stops: a relay that
// stops on its own, before ctx ends, is an error too.
func runSwitched(ctx context.Context, sw switchRun) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var sweepErr error
	sweepStopped := make(chan struct{})
	go func() {
		defer close(sweepStopped)
		sweepErr = sw.runSweeper(ctx)
	}()
	sweeperFailed := func() error {
		<-sweepStopped
		if sweepErr != nil {
			return fmt.Errorf("outbox: %s: %w", sw.sweeper, sweepErr)
		}
		if ctx.Err() == nil {
			return fmt.Errorf("outbox: %s stopped", sw.sweeper)
		}
		return nil
	}
	if err := sw.drain(ctx, sweepStopped); err != nil || ctx.Err() != nil {
		if ctx.Err() != nil {
			err = nil // stopped while draining: not a failure
		}
		stop()
		return errors.Join(err, sweeperFailed())
	}
	sw.switched()
	mainDone := make(chan error, 1)
	go func() { mainDone <- sw.runMain(ctx) }()
	select {
	case err := <-mainDone:
		if err == nil && ctx.Err() == nil {
			err = fmt.Errorf("outbox: %s stopped", sw.main)
		}
		stop()
		return errors.Join(err, sweeperFailed())
	case <-sweepStopped:
		err := sweeperFailed() // before stop: a sweeper that stopped on its own is an error
		stop()
		return errors.Join(err, <-mainDone)
	}
}

// waitDrained counts what the old source's relay still has to publish
// every LogSwitchCheckInterval, from left, until nothing is left, ctx ends
// (it returns the last count) or stopped closes (that relay stopped: it
// returns stoppedErr). A failed count is reported to failed and retried;
// progress hears a count that changed, and an unchanged one every 10 s.
func waitDrained[T interface{ unpublished() int64 }](ctx context.Context, stopped <-chan struct{}, left T,
	count func(context.Context) (T, error), stoppedErr error, failed func(error), progress func(T)) (T, error) {
	lastLog := time.Now()
	for left.unpublished() > 0 && ctx.Err() == nil {
		t := time.NewTimer(sourceCheckInterval)
		select {
		case <-ctx.Done():
		case <-stopped:
			t.Stop()
			return left, stoppedErr
		case <-t.C:
		}
		t.Stop()
		if ctx.Err() != nil {
			break
		}
		l, err := count(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			failed(err)
			continue
		}
		changed := l.unpublished() != left.unpublished()
		left = l
		if !changed && time.Since(lastLog) < 10*time.Second {
			continue
		}
		lastLog = time.Now()
		progress(left)
	}
	return left, nil
}

// lateEvent reports whether e, published by a switch's sweeper, was
// written after the switch at switchedAt (unix nanoseconds; 0: not yet
// switched) by a producer left on the old source: not a replay, and
// occurred after it.
func lateEvent(switchedAt *atomic.Int64, e Event) bool {
	at := switchedAt.Load()
	return at != 0 && !e.Replay && e.OccurredAt.After(time.Unix(0, at))
}

// logSwitchLeft is what outbox_events holds that no relay published.
type logSwitchLeft struct {
	// Unpublished: neither published, skipped nor quarantined, and behind
	// no quarantined event and no unpublished log event of its order:
	// what the draining poll relay publishes.
	Unpublished int64 `db:"unpublished"`
	// Quarantined: waiting for an operator.
	Quarantined int64 `db:"quarantined"`
	// Behind: neither published, skipped nor quarantined, but behind a
	// quarantined event of its order or an unpublished one of the log.
	Behind int64 `db:"behind"`
}

func (l logSwitchLeft) unpublished() int64 { return l.Unpublished }

// drain waits until the polling relay (running; pollStopped closes when it ends)
// left outbox_events no event it can publish (logSwitchLeft.Unpublished),
// counting every LogSwitchCheckInterval.
func (s *logSwitch) drain(ctx context.Context, pollStopped <-chan struct{}) error {
	logger := s.cfg.Logger
	left, err := readRetrying(ctx, s.cfg.Logger, s.cfg.Owner, "log source: counting what outbox_events holds", s.left)
	if err != nil {
		return nil // ctx ended
	}
	if left.Unpublished > 0 {
		logger.Info("log source: draining outbox_events with the poll relay before reading the log",
			"owner", s.cfg.Owner, "unpublished", left.Unpublished, "quarantined", left.Quarantined, "behind", left.Behind)
		start := time.Now()
		left, err = waitDrained(ctx, pollStopped, left, s.left,
			errors.New("outbox: draining outbox_events before the log: the poll relay stopped"),
			func(err error) {
				logger.Error("log source: counting what outbox_events holds failed; retrying", "owner", s.cfg.Owner, "error", err)
			},
			func(left logSwitchLeft) {
				logger.Info("log source: draining outbox_events", "owner", s.cfg.Owner,
					"unpublished", left.Unpublished, "quarantined", left.Quarantined, "behind", left.Behind, "elapsed", time.Since(start).Round(time.Millisecond))
			})
		if err != nil {
			return err
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
		logger.Error("log source: quarantined events are left in outbox_events; reading the log without them: "+
			"their orders' later events, in outbox_events and in the log, wait for them (retry or skip them: outboxctl retry, skip)",
			"owner", s.cfg.Owner, "quarantined", left.Quarantined, "behind", left.Behind, "events", names)
	}
	logger.Info("log source: reading the log", "owner", s.cfg.Owner)
	return nil
}

func (s *logSwitch) left(ctx context.Context) (logSwitchLeft, error) {
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
var logSwitchStatements = []namedsql.Info{qLogSwitchLeft.Info(), qLogSwitchQuarantined.Info(), qLogLeaveLeft.Info(), qLogLeaveUsed.Info()}

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
