package service

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/outflow/outflow/internal/cli"
	"github.com/outflow/outflow/outbox/outboxops"
)

// The environment variables of an outboxops.Schedule, as a binary that runs
// a relay reads them with [ScheduleConfigFromEnv]. Package outboxops is a
// library and reads no environment: the binaries parse it, here.
const (
	RetentionEnv       = "OUTFLOW_RETENTION"
	InboxRetentionEnv  = "OUTFLOW_INBOX_RETENTION"
	CleanupIntervalEnv = "OUTFLOW_CLEANUP_INTERVAL"
	CleanupBatchEnv    = "OUTFLOW_CLEANUP_BATCH"
)

// RetentionDefault is [RetentionEnv]'s default: 7 days.
const RetentionDefault = 7 * 24 * time.Hour

// ScheduleConfigFromEnv reads the retention part of an
// outboxops.ScheduleConfig through getenv, which a binary's main passes
// (os.Getenv, or an Env's lookup). An unset variable keeps its default (a
// retention of [RetentionDefault], the inbox's the same, a pass every
// outboxops.ScheduleIntervalDefault, batches of
// outboxops.CleanupBatchSizeDefault); 0 for
// [RetentionEnv] turns the cleanup off. Every malformed value is reported at
// once, each error naming its variable. The caller adds Log, the
// failpoints, the registerer and the logger.
func ScheduleConfigFromEnv(getenv func(string) string) (outboxops.ScheduleConfig, error) {
	var errs []error
	duration := func(name string, def time.Duration, zeroOK bool) time.Duration {
		v := getenv(name)
		if v == "" {
			return def
		}
		d, err := cli.Duration(name, v, zeroOK)
		if err != nil {
			errs = append(errs, err)
			return def
		}
		return d
	}
	cfg := outboxops.ScheduleConfig{
		Retention:      duration(RetentionEnv, RetentionDefault, true),
		InboxRetention: duration(InboxRetentionEnv, 0, false),
		Interval:       duration(CleanupIntervalEnv, outboxops.ScheduleIntervalDefault, false),
		BatchSize:      outboxops.CleanupBatchSizeDefault,
	}
	if v := getenv(CleanupBatchEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > outboxops.CleanupBatchSizeMax {
			errs = append(errs, fmt.Errorf("%s=%q: want an integer from 1 to %d", CleanupBatchEnv, v, outboxops.CleanupBatchSizeMax))
		} else {
			cfg.BatchSize = n
		}
	}
	if cfg.Retention > 0 && cfg.InboxRetention != 0 && cfg.InboxRetention < cfg.Retention {
		errs = append(errs, fmt.Errorf("%s=%s is shorter than %s=%s: a replayable event would lose its inbox rows; keep the inbox at least as long",
			InboxRetentionEnv, cfg.InboxRetention, RetentionEnv, cfg.Retention))
	}
	return cfg, errors.Join(errs...)
}
