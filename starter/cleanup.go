package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/outflow/outflow/failpoints"
	"github.com/outflow/outflow/internal/promreg"
	"github.com/outflow/outflow/internal/service"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
)

// cleanupConfig is the retention cleanup the starter runs on a schedule.
type cleanupConfig struct {
	// Retention keeps published events this long (skipped ones forever)
	// (OUTFLOW_RETENTION). Defaults to 168h (7 days); 0 disables cleanup.
	Retention time.Duration
	// InboxRetention keeps processed_events rows this long, at least
	// Retention (OUTFLOW_INBOX_RETENTION). Defaults to Retention.
	InboxRetention time.Duration
	// Interval is the time between two passes (OUTFLOW_CLEANUP_INTERVAL).
	// Defaults to 10 minutes.
	Interval time.Duration
	// BatchSize is the rows per batch (OUTFLOW_CLEANUP_BATCH). Defaults to 1000.
	BatchSize int
	// Log runs the log source's retention too (outbox.RetainLog: ranges
	// made ahead of the log's sequence always, ranges older than Retention
	// dropped when it is not 0). Set by the starter whatever its source,
	// not read from the environment.
	Log bool
}

// cleanupConfigFromEnv reads OUTFLOW_RETENTION, OUTFLOW_INBOX_RETENTION,
// OUTFLOW_CLEANUP_INTERVAL and OUTFLOW_CLEANUP_BATCH; a malformed one is
// recorded in env, which reports every setting's error at once.
func cleanupConfigFromEnv(env *service.Env) cleanupConfig {
	cfg := cleanupConfig{
		Retention:      env.Duration("OUTFLOW_RETENTION", 7*24*time.Hour, true),
		InboxRetention: env.Duration("OUTFLOW_INBOX_RETENTION", 0, false),
		Interval:       env.Duration("OUTFLOW_CLEANUP_INTERVAL", 10*time.Minute, false),
		BatchSize:      env.PositiveInt("OUTFLOW_CLEANUP_BATCH", outboxops.CleanupBatchSizeDefault),
	}
	if cfg.BatchSize > 100000 {
		env.Fail(fmt.Errorf("OUTFLOW_CLEANUP_BATCH=%d: want an integer from 1 to 100000", cfg.BatchSize))
	}
	if cfg.Retention > 0 && cfg.InboxRetention != 0 && cfg.InboxRetention < cfg.Retention {
		env.Fail(fmt.Errorf("OUTFLOW_INBOX_RETENTION=%s is shorter than OUTFLOW_RETENTION=%s: a replayable event would lose its inbox rows; keep the inbox at least as long",
			cfg.InboxRetention, cfg.Retention))
	}
	return cfg
}

// cleanupSchedule runs one retention cleanup pass per interval. Every starter
// runs one, and an advisory lock lets one of them clean at a time.
type cleanupSchedule struct {
	pool    *pgxpool.Pool
	cfg     cleanupConfig
	fps     *failpoints.Set
	logger  *slog.Logger
	deleted *prometheus.CounterVec
}

// newCleanupSchedule registers outbox_cleanup_deleted_total{table} with reg
// (nil: kept but not registered).
func newCleanupSchedule(pool *pgxpool.Pool, cfg cleanupConfig, fps *failpoints.Set, reg prometheus.Registerer, logger *slog.Logger) (*cleanupSchedule, error) {
	deleted := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "outbox_cleanup_deleted_total",
		Help: "Rows deleted by retention cleanup, by table (outbox_events, processed_events).",
	}, []string{"table"})
	deleted.WithLabelValues(outboxops.CleanupTableEvents)
	deleted.WithLabelValues(outboxops.CleanupTableInbox)
	deleted, err := promreg.Register(reg, deleted)
	if err != nil {
		return nil, err
	}
	return &cleanupSchedule{pool: pool, cfg: cfg, fps: fps, logger: logger, deleted: deleted}, nil
}

// run passes at once, then every interval, until ctx ends.
func (s *cleanupSchedule) run(ctx context.Context) {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		s.pass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pass runs one cleanup pass unless another starter is running one, and
// the log's when the starter runs the log source.
func (s *cleanupSchedule) pass(ctx context.Context) {
	if s.cfg.Retention > 0 {
		s.passEvents(ctx)
	}
	if s.cfg.Log {
		s.passLog(ctx)
	}
}

// passLog runs one pass of the log's retention (its own lock: one starter
// at a time).
func (s *cleanupSchedule) passLog(ctx context.Context) {
	res, err := outbox.RetainLog(ctx, s.pool, outbox.LogRetentionOptions{Retention: s.cfg.Retention})
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
func (s *cleanupSchedule) passEvents(ctx context.Context) {
	start := time.Now()
	res, ran, err := outboxops.CleanupExclusive(ctx, s.pool, outboxops.CleanupOptions{
		Retention:      s.cfg.Retention,
		InboxRetention: s.cfg.InboxRetention,
		BatchSize:      s.cfg.BatchSize,
		Failpoints:     s.fps,
		OnBatch: func(b outboxops.CleanupBatch) {
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
}
