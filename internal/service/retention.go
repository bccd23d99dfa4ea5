package service

import (
	"github.com/outflow/outflow/internal/cli"
	"github.com/outflow/outflow/outbox/outboxops"
)

// RetentionVars are the variables of ScheduleConfigFromEnv, as
// the -h of a binary that keeps its database's retention lists them.
func RetentionVars() []cli.Var {
	return []cli.Var{
		{Name: RetentionEnv, Default: "168h", Meaning: "keep published events this long, and (log source) a range partition of outbox_log this long after the sequence passed it; 0 turns cleanup off (the log's ranges are still made ahead)"},
		{Name: InboxRetentionEnv, Default: RetentionEnv, Meaning: "keep processed_events rows this long, at least " + RetentionEnv},
		{Name: CleanupIntervalEnv, Default: "10m", Meaning: "time between cleanup passes"},
		{Name: CleanupBatchEnv, Default: "1000", Meaning: "rows per cleanup batch"},
	}
}

// Retention reads ScheduleConfigFromEnv through env, recording
// its errors there.
func Retention(env *Env) outboxops.ScheduleConfig {
	cfg, err := ScheduleConfigFromEnv(func(name string) string { return env.String(name, "") })
	if err != nil {
		env.Fail(err)
	}
	return cfg
}
