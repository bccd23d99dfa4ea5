package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/outflow/outflow/outbox/outboxops"
)

// The retention variables, as outflow's own binaries name them
// (docs/operations.md). Package outboxops reads no environment: a service
// that keeps its database's retention parses them itself, as here.
const (
	retentionEnv       = "OUTFLOW_RETENTION"
	inboxRetentionEnv  = "OUTFLOW_INBOX_RETENTION"
	cleanupIntervalEnv = "OUTFLOW_CLEANUP_INTERVAL"
	cleanupBatchEnv    = "OUTFLOW_CLEANUP_BATCH"
)

// retentionDefault is OUTFLOW_RETENTION's default: 7 days.
const retentionDefault = 7 * 24 * time.Hour

// retentionFromEnv reads the retention part of an outboxops.ScheduleConfig
// through getenv. An unset variable keeps its default; 0 for
// OUTFLOW_RETENTION turns the cleanup off. Every malformed value is
// reported at once, each error naming its variable.
func retentionFromEnv(getenv func(string) string) (outboxops.ScheduleConfig, error) {
	var errs []error
	duration := func(name string, def time.Duration, zeroOK bool) time.Duration {
		v := getenv(name)
		if v == "" {
			return def
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || (d == 0 && !zeroOK) {
			want := "a positive Go duration such as 30s, 10m or 168h"
			if zeroOK {
				want += ", or 0 to turn it off"
			}
			errs = append(errs, fmt.Errorf("%s=%q: want %s", name, v, want))
			return def
		}
		return d
	}
	cfg := outboxops.ScheduleConfig{
		Retention:      duration(retentionEnv, retentionDefault, true),
		InboxRetention: duration(inboxRetentionEnv, 0, false),
		Interval:       duration(cleanupIntervalEnv, outboxops.ScheduleIntervalDefault, false),
		BatchSize:      outboxops.CleanupBatchSizeDefault,
	}
	if v := getenv(cleanupBatchEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > outboxops.CleanupBatchSizeMax {
			errs = append(errs, fmt.Errorf("%s=%q: want an integer from 1 to %d", cleanupBatchEnv, v, outboxops.CleanupBatchSizeMax))
		} else {
			cfg.BatchSize = n
		}
	}
	if cfg.Retention > 0 && cfg.InboxRetention != 0 && cfg.InboxRetention < cfg.Retention {
		errs = append(errs, fmt.Errorf("%s=%s is shorter than %s=%s: a replayable event would lose its inbox rows; keep the inbox at least as long",
			inboxRetentionEnv, cfg.InboxRetention, retentionEnv, cfg.Retention))
	}
	return cfg, errors.Join(errs...)
}
