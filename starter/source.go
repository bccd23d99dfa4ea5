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
// sweeper for retries, hand-offs and backfill. "log" (issue 27, the
// append-only log read by outbox.LogRelay) is a name reserved and refused
// with what is missing: see logSourceMissing.
const SourceEnv = "OUTFLOW_RELAY_SOURCE"

// CDCSlotEnv names the CDC source's replication slot; default
// outbox.CDCSlotDefault. Slots are server-wide: relays of different
// databases on one server need different names.
const CDCSlotEnv = "OUTFLOW_CDC_SLOT"

// CDCGraceEnv is the CDC source's grace period (outbox.CDCConfig.Grace).
const CDCGraceEnv = "OUTFLOW_CDC_GRACE"

// relay is what the starter runs: an outbox.Relay or an outbox.CDCRelay.
type relay interface {
	Run(ctx context.Context) error
	Owner() string
}

// logSourceMissing is why the starter refuses OUTFLOW_RELAY_SOURCE=log
// while the library's outbox.LogRelay exists: started today it would relay
// nothing the order app writes and leave what it does write unpublished.
const logSourceMissing = "the log source is not available in the starter yet: outbox.LogRelay is built, " +
	"but outflow's producers (the order API, the webhooks, the inventory) still enqueue to outbox_events, " +
	"and outboxctl's status, list, retry, skip and replay, retention and the horizon alert do not cover the log yet " +
	"(docs/operations.md, \"The log source\"); use poll or cdc"

// sourceFromEnv reads OUTFLOW_RELAY_SOURCE.
func sourceFromEnv(env *service.Env) string {
	s := strings.TrimSpace(strings.ToLower(env.String(SourceEnv, "poll")))
	switch s {
	case "poll", "cdc":
		return s
	case "log":
		env.Fail(fmt.Errorf("%s=log: %s", SourceEnv, logSourceMissing))
		return ""
	}
	env.Fail(fmt.Errorf("%s=%q: want poll (claim committed events by polling outbox_events, the default) or cdc (stream them from the logical replication log; needs wal_level=logical)", SourceEnv, s))
	return ""
}

// newRelay builds the relay of source. For cdc it checks the server first,
// so a server without wal_level=logical stops the starter with an error
// that says so.
func newRelay(ctx context.Context, env *service.Env, source string, pool *pgxpool.Pool, pub outbox.Publisher, cfg outbox.RelayConfig) (relay, error) {
	if source != "cdc" {
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
