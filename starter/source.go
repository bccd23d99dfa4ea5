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

// relay is what the starter runs: an outbox.LogSwitch, or an outbox.Relay
// or outbox.CDCRelay behind an outbox.LogLeave.
type relay = outbox.Runner

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
// outbox_events holds nothing it can publish (a quarantined event and its
// order's events behind it wait for an operator), then the log's reader
// beside it, with the same publisher, breaker, metrics and failpoints
// (log.after_read, log.before_advance).
//
// For poll and cdc the relay is behind an outbox.LogLeave: on a database
// whose producers wrote to the log before (switched back from the log),
// what the log still holds is published first, and a log relay keeps
// sweeping it; on any other database it costs one small query a second,
// which starts that log relay once a producer writes to the log.
func newRelay(ctx context.Context, env *service.Env, source string, pool *pgxpool.Pool, pub outbox.Publisher, cfg outbox.RelayConfig) (relay, error) {
	var main relay
	switch source {
	case "log":
		return outbox.NewLogSwitch(pool, pub, outbox.LogConfig{RelayConfig: cfg})
	case "cdc":
		r, err := newCDCRelay(ctx, env, pool, pub, cfg)
		if err != nil {
			return nil, err
		}
		main = r
	default:
		r, err := outbox.NewRelay(pool, pub, cfg)
		if err != nil {
			return nil, err
		}
		main = r
	}
	return outbox.NewLogLeave(pool, pub, outbox.LogConfig{RelayConfig: cfg}, main)
}

// newCDCRelay builds the cdc source's relay, checking the server first.
func newCDCRelay(ctx context.Context, env *service.Env, pool *pgxpool.Pool, pub outbox.Publisher, cfg outbox.RelayConfig) (*outbox.CDCRelay, error) {
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
