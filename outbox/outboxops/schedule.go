package outboxops

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/promreg"
)

// ScheduleIntervalDefault is the default of [ScheduleConfig.Interval].
const ScheduleIntervalDefault = 10 * time.Minute

// ScheduleConfig configures [Schedule]: the retention a process that runs
// a relay keeps on its database.
type ScheduleConfig struct {
	// Retention keeps published events this long (skipped ones forever),
	// and, for the log, a range partition this long after its seal. 0
	// turns the cleanup of outbox_events and processed_events off and drops
	// no range of the log.
	Retention time.Duration
	// InboxRetention keeps processed_events rows this long; at least
	// Retention. 0: Retention.
	InboxRetention time.Duration
	// Interval is the time between two passes. 0: [ScheduleIntervalDefault].
	Interval time.Duration
	// BatchSize is the rows per batch, 1 to 100000. 0:
	// [CleanupBatchSizeDefault].
	BatchSize int
	// Log is ignored: every pass runs the log's retention (ranges made
	// ahead of its sequence, whatever Retention; ranges older than
	// Retention dropped when it is not 0), since the database's source may
	// become the log while the process runs.
	//
	// Deprecated: every schedule keeps the log; drop the field.
	Log bool
	// Failpoints injects faults at cleanup.mid_batch. Optional.
	Failpoints *failpoints.Set
	// Registerer gets outbox_cleanup_deleted_total{table}. Optional: nil
	// counts without registering.
	Registerer prometheus.Registerer
	// Logger gets one line per pass that changed something, and the
	// errors. Optional: nil discards.
	Logger *slog.Logger
}

// Schedule runs retention passes on a database, one per interval: the
// cleanup of outbox_events and processed_events ([CleanupExclusive]) and
// the log's ranges (RetainLog). Every process that runs a relay may
// run one; advisory locks let one of them work at a time.
type Schedule struct {
	pool    *pgxpool.Pool
	cfg     ScheduleConfig
	logger  *slog.Logger
	deleted *prometheus.CounterVec
}

// NewSchedule checks cfg and registers the schedule's metric.
func NewSchedule(pool *pgxpool.Pool, cfg ScheduleConfig) (*Schedule, error) {
	if pool == nil {
		return nil, errors.New("outbox: schedule: a pool is required")
	}
	if cfg.Interval < 0 || cfg.Retention < 0 {
		return nil, errors.New("outbox: schedule: Interval and Retention may not be negative")
	}
	cfg.Interval = cmp.Or(cfg.Interval, ScheduleIntervalDefault)
	// The cleanup's own defaults and checks, as every pass will use them.
	opts := CleanupOptions{Retention: cfg.Retention, InboxRetention: cfg.InboxRetention, BatchSize: cfg.BatchSize}
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	if cfg.Retention > 0 {
		if err := opts.validate(); err != nil {
			return nil, err
		}
	}
	cfg.InboxRetention, cfg.BatchSize = opts.InboxRetention, opts.BatchSize
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	deleted := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "outbox_cleanup_deleted_total",
		Help: "Rows deleted by retention cleanup, by table (outbox_events, processed_events).",
	}, []string{"table"})
	deleted.WithLabelValues(CleanupTableEvents)
	deleted.WithLabelValues(CleanupTableInbox)
	deleted, err := promreg.Register(cfg.Registerer, deleted)
	if err != nil {
		return nil, err
	}
	return &Schedule{pool: pool, cfg: cfg, logger: logger, deleted: deleted}, nil
}

// Config is the schedule's configuration with its defaults filled in.
func (s *Schedule) Config() ScheduleConfig { return s.cfg }

// Run passes at once, then every interval, until ctx ends.
func (s *Schedule) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		s.Pass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Pass runs one pass: the cleanup and the log's retention
// ([CleanupExclusive]) unless another process is running one, or the log's
// retention alone when Retention is 0. Errors are logged; the next pass
// tries again.
func (s *Schedule) Pass(ctx context.Context) {
	if s.cfg.Retention > 0 {
		s.passEvents(ctx)
		return
	}
	res, err := RetainLog(ctx, s.pool, LogRetentionOptions{})
	s.logged(ctx, res, err)
}

// logged logs a pass of the log's retention (its own lock: one process at
// a time).
func (s *Schedule) logged(ctx context.Context, res LogRetentionResult, err error) {
	switch {
	case err != nil && ctx.Err() != nil:
		return // shutting down; the next start finishes the job
	case err != nil:
		s.logger.Error("log retention failed; retrying at the next interval", "error", err,
			"ranges_made", res.Made, "ranges_dropped", res.Dropped, "next_in", s.cfg.Interval)
	case res.Busy:
		s.logger.Debug("log retention skipped: another process holds its lock")
	case res.Made > 0 || len(res.Dropped) > 0:
		s.logger.Info("log retention", "ranges_made", res.Made, "ranges_sealed", res.Sealed, "ranges_dropped", res.Dropped)
	}
}

// passEvents runs one pass of outbox_events' and processed_events'
// cleanup.
func (s *Schedule) passEvents(ctx context.Context) {
	start := time.Now()
	res, ran, err := CleanupExclusive(ctx, s.pool, CleanupOptions{
		Retention:      s.cfg.Retention,
		InboxRetention: s.cfg.InboxRetention,
		BatchSize:      s.cfg.BatchSize,
		Failpoints:     s.cfg.Failpoints,
		OnBatch: func(b CleanupBatch) {
			s.deleted.WithLabelValues(b.Table).Add(float64(b.Deleted))
		},
	})
	switch {
	case err != nil && ctx.Err() != nil:
		return // shutting down; the next start finishes the job
	case err != nil:
		s.logger.Error("retention cleanup failed; retrying at the next interval", "error", err,
			"events_deleted", res.EventsDeleted, "inbox_deleted", res.InboxDeleted, "next_in", s.cfg.Interval)
	case !ran:
		s.logger.Debug("retention cleanup skipped: another process holds the cleanup lock")
	case res.EventsDeleted+res.InboxDeleted > 0:
		s.logger.Info("retention cleanup", "events_deleted", res.EventsDeleted, "inbox_deleted", res.InboxDeleted,
			"batches", res.Batches, "events_cutoff", res.EventsCutoff, "elapsed", time.Since(start).Round(time.Millisecond))
	}
	if ran && err == nil {
		s.logged(ctx, res.Log, nil)
	}
}
