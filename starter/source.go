package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/internal/service"
	"github.com/outflow/outflow/outbox"
)

// SourceEnv selects how the starter finds committed events: "poll" (the
// default) claims them by polling outbox_events; "cdc" streams them from
// PostgreSQL's logical replication log (wal_level=logical), with a polling
// sweeper for retries, hand-offs and backfill; "log" reads the append-only
// log (outbox_log) the producers write with OUTFLOW_RELAY_SOURCE=log
// (outbox.LogRelay), after draining what outbox_events still holds with
// the poll relay (outbox.LogSwitch).
const SourceEnv = "OUTFLOW_RELAY_SOURCE"

// CDCSlotEnv names the CDC source's replication slot; default
// outbox.CDCSlotDefault. Slots are server-wide: relays of different
// databases on one server need different names.
const CDCSlotEnv = "OUTFLOW_CDC_SLOT"

// CDCGraceEnv is the CDC source's grace period (outbox.CDCConfig.Grace).
const CDCGraceEnv = "OUTFLOW_CDC_GRACE"

// relay is what the starter runs: an outbox.Relay, an outbox.CDCRelay or
// an outbox.LogSwitch.
type relay interface {
	Run(ctx context.Context) error
	Owner() string
}

// sourceFromEnv reads OUTFLOW_RELAY_SOURCE.
func sourceFromEnv(env *service.Env) string {
	s := strings.TrimSpace(strings.ToLower(env.String(SourceEnv, "poll")))
	switch s {
	case "poll", "cdc", "log":
		return s
	}
	env.Fail(fmt.Errorf("%s=%q: want poll (claim committed events by polling outbox_events, the default), cdc (stream them from the logical replication log; needs wal_level=logical) or log (read the append-only log outbox_log)", SourceEnv, s))
	return ""
}

// newRelay builds the relay of source. For cdc it checks the server first,
// so a server without wal_level=logical stops the starter with an error
// that says so. For log it is the switch: the poll relay until
// outbox_events holds no unpublished, unquarantined event, then the log's
// reader, with the same publisher, breaker, metrics and failpoints
// (log.after_read, log.before_advance).
func newRelay(ctx context.Context, env *service.Env, source string, pool *pgxpool.Pool, pub outbox.Publisher, cfg outbox.RelayConfig) (relay, error) {
	switch source {
	case "log":
		return outbox.NewLogSwitch(pool, pub, outbox.LogConfig{RelayConfig: cfg})
	case "cdc":
	default:
		return outbox.NewRelay(pool, pub, cfg)
	}
	ccfg := outbox.CDCConfig{
		RelayConfig: cfg,
		Slot:        env.String(CDCSlotEnv, ""),
		Grace:       env.Duration(CDCGraceEnv, 0, false),
	}
	if err := env.Err(); err != nil {
		return nil, err
	}
	if err := outbox.CheckCDC(ctx, pool, ""); err != nil {
		return nil, fmt.Errorf("%s=cdc: %w", SourceEnv, err)
	}
	return outbox.NewCDCRelay(pool, pub, ccfg)
}
