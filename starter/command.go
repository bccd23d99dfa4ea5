package main

import (
	"strconv"

	"github.com/outflow/outflow/internal/cli"
	"github.com/outflow/outflow/internal/database"
	"github.com/outflow/outflow/internal/service"
	"github.com/outflow/outflow/internal/temporalclient"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/natspub"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/relaycmd"
)

// command is what `starter -h` shows: every variable the relay reads.
var command = cli.Command{
	Name:    "starter",
	Summary: "outflow's outbox relay: claims committed outbox events and starts one Temporal workflow per event (workflow ID = event_id) and/or publishes it to NATS JetStream (OUTFLOW_SINKS), until SIGINT or SIGTERM.",
	Env: cli.Vars(
		[]cli.Var{service.DatabaseVar(database.DefaultURL, "the outbox; its schema must be current (outboxctl migrate)")},
		temporalclient.Vars(),
		[]cli.Var{
			{Name: SinksEnv, Default: sinkTemporal, Meaning: "where events go: temporal, jetstream, or temporal,jetstream (each event to both; marked once both acknowledged)"},
			{Name: NATSURLEnv, Default: natspub.URLDefault, Meaning: "the jetstream sink's NATS server"},
			{Name: NATSStreamEnv, Default: natspub.StreamDefault, Meaning: "the jetstream sink's stream; created with subjects PREFIX.> when missing, its duplicate window checked at start"},
			{Name: NATSSubjectPrefixEnv, Default: natspub.SubjectPrefixDefault, Meaning: "subjects are PREFIX.AGGREGATE_TYPE.AGGREGATE_ID, Nats-Msg-Id the event ID"},
			service.TaskQueueVar("task queue of the started workflows"),
			{Name: relaycmd.RoutesEnv, Default: "the order app's routes", Meaning: "comma-separated EVENT_TYPE=WORKFLOW_TYPE[@TASK_QUEUE][SEARCH_ATTRIBUTE=PAYLOAD_FIELD]"},
			{Name: relaycmd.RoutesFileEnv, Default: "unset", Meaning: "a file of the same entries, one per line, '#' starts a comment; not with " + relaycmd.RoutesEnv},
			{Name: relaycmd.SourceEnv, Default: "unset", Meaning: "deprecated: the source (poll, cdc or log) is recorded in the database, `outboxctl source set` changes it and the starter follows; when set, this value is recorded there at start"},
			{Name: relaycmd.CDCSlotEnv, Default: outboxops.CDCSlotDefault, Meaning: "the cdc source's replication slot"},
			{Name: relaycmd.CDCGraceEnv, Default: "10s", Meaning: "how long the cdc source's sweeper leaves a new event to the stream"},
			{Name: "OUTFLOW_MAX_ATTEMPTS", Default: strconv.Itoa(outbox.MaxAttemptsDefault), Meaning: "attempts before a failing event is quarantined"},
			{Name: "OUTFLOW_RELAY_RATE", Default: "no ceiling", Meaning: "the most workflow starts a second"},
			{Name: "OUTFLOW_RELAY_BATCH", Default: strconv.Itoa(outbox.BatchSizeDefault), Meaning: "events per claim"},
			{Name: "OUTFLOW_RELAY_LEASE", Default: outbox.LeaseDefault.String(), Meaning: "claim lease, a Go duration"},
			{Name: "OUTFLOW_RELAY_POLL", Default: outbox.PollIntervalDefault.String(), Meaning: "safety poll when no NOTIFY arrives"},
			{Name: "OUTFLOW_RELAY_IN_FLIGHT", Default: strconv.Itoa(outbox.MaxInFlightDefault), Meaning: "concurrent workflow starts (across aggregates)"},
			{Name: "OUTFLOW_REPLAY_HORIZON", Default: "the namespace's retention", Meaning: "how far back `outboxctl replay` may reach; at most the retention"},
			service.MetricsVar(),
			service.FailpointsVar(),
		},
		retentionVars(),
		temporalclient.CodecVars(),
		service.LogVars(),
	),
	Notes: "A malformed setting stops it at start (exit status 2). See docs/reference.md and docs/operations.md.",
}

// retentionVars are the library's cleanup variables (relaycmd.RetentionVars).
func retentionVars() []cli.Var {
	var out []cli.Var
	for _, v := range relaycmd.RetentionVars() {
		out = append(out, cli.Var{Name: v.Name, Default: v.Default, Meaning: v.Meaning})
	}
	return out
}
