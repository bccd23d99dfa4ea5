// Command starter is outflow's outbox relay: it claims committed outbox
// events and starts one Temporal workflow per event (workflow ID = event_id),
// publishes each to a NATS JetStream stream, or both (OUTFLOW_SINKS), until
// SIGINT or SIGTERM, then shuts down gracefully.
//
//	go run ./starter
//
// The wiring is the library's (package outbox/relaycmd, whose own binary
// is outbox/cmd/starter); this main adds the order app's routes, its
// payload codec over the customer keys, and the JetStream sink.
//
// Environment:
//
//	DATABASE_URL             PostgreSQL (pgx/v5 syntax); default postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable.
//	                         The schema must be current (`go run ./cmd/outboxctl migrate`).
//	TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*, ...
//	                         The Temporal client, loaded with go.temporal.io/sdk/contrib/envconfig;
//	                         default localhost:7233, namespace "default". The relay starts while
//	                         Temporal is down and backs off until it is reachable.
//	OUTFLOW_SINKS            Where events go: temporal (default), jetstream, or temporal,jetstream: each
//	                         event to both, in that order, marked once both acknowledged (a retry
//	                         publishes to both again; each sink absorbs its duplicate). Temporal's
//	                         variables are not read without temporal.
//	OUTFLOW_NATS_URL         The jetstream sink's server; default nats://127.0.0.1:4222.
//	OUTFLOW_NATS_STREAM      Its stream; default OUTFLOW. Created (subjects PREFIX.>, file storage)
//	                         when missing; an existing one whose duplicate window is shorter than
//	                         lease + publish timeout + probe pause (70s by default) stops the starter.
//	OUTFLOW_NATS_SUBJECT_PREFIX  Subjects are PREFIX.AGGREGATE_TYPE.AGGREGATE_ID; default outflow.
//	OUTFLOW_TASK_QUEUE       Task queue of the started workflows; default "orders".
//	OUTFLOW_ROUTES           The routes, for a relay over any team's outbox: comma-separated
//	                         EVENT_TYPE=WORKFLOW_TYPE or EVENT_TYPE=WORKFLOW_TYPE@TASK_QUEUE (default
//	                         task queue OUTFLOW_TASK_QUEUE), each optionally followed by
//	                         [SEARCH_ATTRIBUTE=PAYLOAD_FIELD]: a Keyword search attribute set from a
//	                         top-level field of the JSON payload (an event without it is quarantined).
//	                         A start carries no search attribute unless its route asks for one.
//	                         Unset: the order app's routes (OrderCreated, OrderCancelled, with OrderId).
//	                         A malformed value stops the process at start, naming every bad entry.
//	OUTFLOW_ROUTES_FILE      A file holding the routes instead: the same entries, one per line, '#'
//	                         starts a comment (for routes kept in configuration). Not with OUTFLOW_ROUTES.
//	OUTFLOW_RELAY_SOURCE     Deprecated: the relay's source (poll, cdc or log) is recorded in the
//	                         database (`outboxctl source`, `outboxctl source set`) and the starter
//	                         follows it without a restart. When set, the starter records this value
//	                         there at start and logs a deprecation line. Any other value stops it.
//	OUTFLOW_CDC_SLOT         The cdc source's replication slot; default outflow_outbox.
//	OUTFLOW_CDC_GRACE        How long the cdc source's polling sweeper leaves a new event to the
//	                         stream; default 10s.
//	OUTFLOW_MAX_ATTEMPTS     Attempts before a failing event is quarantined; default 20. A publish
//	                         that fails for Temporal's fault (unreachable, Unavailable, throttled, ...)
//	                         counts no attempt: the relay stops claiming and probes Temporal instead.
//	OUTFLOW_RELAY_RATE       The most workflow starts a second (e.g. under a Temporal Cloud
//	                         namespace's quota); default none. Throttled starts slow the relay anyway.
//	OUTFLOW_FAILPOINTS       Fault injection, e.g. "relay.after_publish=crash" (see package failpoints);
//	                         a malformed value stops the process at start.
//	METRICS_ADDR             Serve Prometheus /metrics on this address (e.g. 127.0.0.1:9102); off when unset.
//	OUTFLOW_LOG_LEVEL        debug, info (default), warn or error.
//	OUTFLOW_CODEC_KEYS       Payload encryption: comma-separated KEY_ID:BASE64_32_BYTES, the first
//	                         encrypts, all decrypt (or OUTFLOW_CODEC_KEYS_FILE); unset: none
//	                         (docs/privacy.md).
//
// Retention cleanup (one pass per interval across all starters, by advisory lock;
// see outboxops.Cleanup and `outboxctl cleanup`):
//
//	OUTFLOW_RETENTION        Keep published events this long; default 168h (7 days); 0 disables.
//	                         The log source (`outboxctl source set log`) drops its log's range
//	                         partitions sealed longer ago than this, once no cursor, hold or
//	                         open writer needs them (outboxops.RetainLog).
//	OUTFLOW_INBOX_RETENTION  Keep processed_events rows this long, at least OUTFLOW_RETENTION; default the same.
//	OUTFLOW_CLEANUP_INTERVAL Time between passes; default 10m.
//	OUTFLOW_CLEANUP_BATCH    Rows per batch (one short transaction each); default 1000.
//	OUTFLOW_REPLAY_HORIZON   How far back `outboxctl replay` may reach; default (and at most) the
//	                         Temporal namespace's retention, read with DescribeNamespace. Replays of
//	                         older events are acknowledged without a start (docs/time-and-money.md).
//
// Tuning (defaults are those of outbox.RelayConfig):
//
//	OUTFLOW_RELAY_BATCH      Events per claim; default 100.
//	OUTFLOW_RELAY_LEASE      Claim lease, a Go duration; default 30s.
//	OUTFLOW_RELAY_POLL       Safety poll when no NOTIFY arrives; default 5s.
//	OUTFLOW_RELAY_IN_FLIGHT  Concurrent workflow starts (across orders); default 16.
//
// On start it logs one line, `relay started owner=... `, with its effective
// configuration. `starter -h` prints these variables with their defaults
// (command.go), `starter --version` the build; a malformed setting stops
// it at start with exit status 2 and a plain line for each.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"

	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/internal/cli"
	"github.com/outflow/outflow/internal/database"
	"github.com/outflow/outflow/internal/routes"
	"github.com/outflow/outflow/internal/service"
	"github.com/outflow/outflow/internal/temporalclient"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/relaycmd"
	"github.com/outflow/outflow/outbox/temporalpub"
)

func main() { service.Main("starter", &command, "relay failed", run) }

// orderApp are the starter's defaults: the order app's routes and task queue.
var orderApp = relaycmd.Defaults{
	Routes: func() (temporalpub.Routes, string) {
		return routes.Orders(), "order app (OrderCreated, OrderCancelled; OrderId on every start)"
	},
	TaskQueue: handoff.DefaultTaskQueue,
}

func run(logger *slog.Logger, env *service.Env) error {
	// Every setting is read, and a malformed one refused (exit status 2,
	// plain lines), before the database or Temporal is dialled.
	cfg, err := relaycmd.ReadConfig(os.Getenv, orderApp)
	if err != nil {
		env.Fail(err)
	}
	selected := sinksFromEnv(env)
	ns := natsSettingsFromEnv(env)
	// The Temporal client's settings and the payload codec's keys, checked
	// here without the customer key store (which needs the database).
	if selected.has(sinkTemporal) {
		if _, err := temporalclient.ClientOptions(); err != nil {
			env.Fail(err)
		}
	} else if _, err := temporalclient.CodecDataConverter(); err != nil {
		env.Fail(cli.Config(err))
	}
	if err := env.Err(); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	hooks := relaycmd.Hooks{
		OpenDB:          database.OpenCheckedOutbox,
		NoTemporal:      !selected.has(sinkTemporal),
		TemporalOptions: temporalOptions,
		SinkNames:       selected.String(),
	}
	if selected.has(sinkJetStream) {
		hooks.Sinks = func(ctx context.Context, pool *pgxpool.Pool, reg prometheus.Registerer) ([]outbox.Publisher, []any, func(), error) {
			enc, summary, err := streamEncoder(ctx, pool)
			if err != nil {
				return nil, nil, nil, err
			}
			jp, nc, err := newJetStreamSink(ctx, ns, cfg.Relay, enc, cfg.Relay.Failpoints, reg, logger)
			if err != nil {
				return nil, nil, nil, err
			}
			return []outbox.Publisher{jp}, []any{"nats", ns.url, "stream", jp.Stream(), "subject_prefix", ns.prefix, "duplicate_window", jp.Window(),
				"stream_payload_codec", summary}, nc.Close, nil
		}
	}
	return relaycmd.Run(ctx, logger, cfg, hooks, os.Getenv, os.Environ())
}

// temporalOptions are the Temporal sink's client options: with the payload
// codec (OUTFLOW_CODEC_KEYS), which encrypts each OrderCreated input with
// its customer's key from pool, after checking its master keys unwrap
// pool's customer keys.
func temporalOptions(ctx context.Context, pool *pgxpool.Pool) (client.Options, []any, error) {
	topts, err := temporalclient.ClientOptions(temporalclient.WithCustomerKeys(pool))
	if err != nil {
		return client.Options{}, nil, err
	}
	if err := temporalclient.CheckCustomerKeys(ctx, topts, pool); err != nil {
		return client.Options{}, nil, err
	}
	return topts, []any{"payload_codec", temporalclient.CodecSummary(topts)}, nil
}
