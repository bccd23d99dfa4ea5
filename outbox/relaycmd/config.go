package relaycmd

import (
	"cmp"
	"fmt"
	"strconv"
	"time"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// Variables the starter reads besides those of [RoutesEnv], [SourceEnv],
// the cdc source's and the Temporal client's (docs/reference.md,
// "Environment").
const (
	// DatabaseURLEnv is the outbox's database (pgx/v5 syntax).
	DatabaseURLEnv = "DATABASE_URL"
	// TaskQueueEnv is the task queue of a route that names none.
	TaskQueueEnv = "OUTFLOW_TASK_QUEUE"
	// MetricsAddrEnv serves Prometheus /metrics and /healthz on this
	// host:port; off when unset.
	MetricsAddrEnv = "METRICS_ADDR"
	// ReplayHorizonEnv is how far back `outboxctl replay` may reach.
	ReplayHorizonEnv = "OUTFLOW_REPLAY_HORIZON"
	// RetentionEnv keeps published events this long; 0 turns cleanup off.
	RetentionEnv = "OUTFLOW_RETENTION"
	// InboxRetentionEnv keeps processed_events rows this long.
	InboxRetentionEnv = "OUTFLOW_INBOX_RETENTION"
	// CleanupIntervalEnv is the time between cleanup passes.
	CleanupIntervalEnv = "OUTFLOW_CLEANUP_INTERVAL"
	// CleanupBatchEnv is the rows per cleanup batch.
	CleanupBatchEnv = "OUTFLOW_CLEANUP_BATCH"
)

// DefaultDatabaseURL is used when DATABASE_URL is unset.
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// RetentionDefault is OUTFLOW_RETENTION's default: 7 days.
const RetentionDefault = 7 * 24 * time.Hour

// Defaults are what a binary's starter assumes where a variable is unset.
// All fields optional.
type Defaults struct {
	// Routes returns the routes when neither OUTFLOW_ROUTES nor
	// OUTFLOW_ROUTES_FILE is set, and how the start-up line names them.
	// Optional: without it one of the two is mandatory.
	Routes func() (temporalpub.Routes, string)
	// TaskQueue is OUTFLOW_TASK_QUEUE's default. Optional: defaulted to
	// [TaskQueueDefault].
	TaskQueue string
}

// TaskQueueDefault is OUTFLOW_TASK_QUEUE's default when [Defaults.TaskQueue]
// is empty.
const TaskQueueDefault = "orders"

// Config is every setting the starter reads, read by [ReadConfig].
type Config struct {
	// DatabaseURL is DATABASE_URL, or [DefaultDatabaseURL].
	DatabaseURL string
	// Relay is the relay's tuning (OUTFLOW_RELAY_*, OUTFLOW_MAX_ATTEMPTS,
	// OUTFLOW_CDC_*) and failpoints; zero fields mean outbox.RelayConfig's
	// defaults.
	Relay outbox.RelayConfig
	// Source is the deprecated OUTFLOW_RELAY_SOURCE; "" when unset.
	Source string
	// TaskQueue is OUTFLOW_TASK_QUEUE.
	TaskQueue string
	// Routes are the Temporal sink's routes, RoutesFrom where they come from.
	Routes     temporalpub.Routes
	RoutesFrom string
	// Cleanup is the retention schedule (OUTFLOW_RETENTION and the rest).
	Cleanup outboxops.ScheduleConfig
	// ReplayHorizon is OUTFLOW_REPLAY_HORIZON; 0: the namespace's retention.
	ReplayHorizon time.Duration
	// MetricsAddr is METRICS_ADDR; "" serves no metrics.
	MetricsAddr string
	// FailpointsSpec is OUTFLOW_FAILPOINTS as written, for the start-up line.
	FailpointsSpec string
}

// ReadConfig reads the starter's variables through getenv. The error
// names every malformed setting, each with what to write instead; nothing
// is dialled.
func ReadConfig(getenv func(string) string, def Defaults) (Config, error) {
	e := &env{getenv: getenv}
	fps, err := failpoints.Parse(getenv(failpoints.EnvVar))
	if err != nil {
		e.Fail(fmt.Errorf("%s: %w", failpoints.EnvVar, err))
	}
	c := Config{
		DatabaseURL: cmp.Or(getenv(DatabaseURLEnv), DefaultDatabaseURL),
		Relay: outbox.RelayConfig{
			Rate:         e.PositiveFloat("OUTFLOW_RELAY_RATE", 0),
			MaxAttempts:  e.PositiveInt("OUTFLOW_MAX_ATTEMPTS", 0),
			BatchSize:    e.PositiveInt("OUTFLOW_RELAY_BATCH", 0),
			MaxInFlight:  e.PositiveInt("OUTFLOW_RELAY_IN_FLIGHT", 0),
			Lease:        e.Duration("OUTFLOW_RELAY_LEASE", 0, false),
			PollInterval: e.Duration("OUTFLOW_RELAY_POLL", 0, false),
			CDCSlot:      e.String(CDCSlotEnv, ""),
			CDCGrace:     e.Duration(CDCGraceEnv, 0, false),
			Failpoints:   fps,
		},
		Source:         sourceFromEnv(e),
		TaskQueue:      e.String(TaskQueueEnv, cmp.Or(def.TaskQueue, TaskQueueDefault)),
		Cleanup:        cleanupFromEnv(e),
		ReplayHorizon:  replayHorizonFromEnv(e),
		MetricsAddr:    getenv(MetricsAddrEnv),
		FailpointsSpec: getenv(failpoints.EnvVar),
	}
	c.Routes, c.RoutesFrom = routesFromEnv(e, def.Routes)
	return c, e.Err()
}

// cleanupFromEnv reads the retention schedule's variables.
func cleanupFromEnv(e *env) outboxops.ScheduleConfig {
	cfg := outboxops.ScheduleConfig{
		Retention:      e.Duration(RetentionEnv, RetentionDefault, true),
		InboxRetention: e.Duration(InboxRetentionEnv, 0, false),
		Interval:       e.Duration(CleanupIntervalEnv, outboxops.ScheduleIntervalDefault, false),
		BatchSize:      outboxops.CleanupBatchSizeDefault,
	}
	if v := e.getenv(CleanupBatchEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > outboxops.CleanupBatchSizeMax {
			e.Fail(fmt.Errorf("%s=%q: want an integer from 1 to %d", CleanupBatchEnv, v, outboxops.CleanupBatchSizeMax))
		} else {
			cfg.BatchSize = n
		}
	}
	if cfg.Retention > 0 && cfg.InboxRetention != 0 && cfg.InboxRetention < cfg.Retention {
		e.Fail(fmt.Errorf("%s=%s is shorter than %s=%s: a replayable event would lose its inbox rows; keep the inbox at least as long",
			InboxRetentionEnv, cfg.InboxRetention, RetentionEnv, cfg.Retention))
	}
	return cfg
}
