package relaycmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.temporal.io/sdk/client"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/ctl"
	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/outboxops"
)

// Process is what main hands [App.Run]: the process's streams and
// environment. The package reads nothing else of the process.
type Process struct {
	Stdout, Stderr io.Writer
	// Getenv reads the environment (os.Getenv).
	Getenv func(string) string
	// Environ is the whole environment (os.Environ), for the Temporal
	// client's TEMPORAL_GRPC_META_*. Optional.
	Environ []string
}

// App is the library's starter: flags, -h, --version, the settings, and
// [Run] with the library's hooks. outflow's own starter (starter/ at the
// repository's root) calls [ReadConfig] and [Run] with its hooks instead.
type App struct {
	// Defaults are the settings' defaults. Optional: no default routes.
	Defaults Defaults
	// Hooks are [Run]'s. Optional.
	Hooks Hooks
}

// Run runs the starter with args (the arguments after the binary's name)
// until ctx ends, and returns the exit status: 0 after a clean stop, -h or
// --version, 1 when the relay failed, 2 for a bad flag or a malformed
// setting (every one named on stderr, before anything is dialled).
func (a *App) Run(ctx context.Context, args []string, p Process) int {
	fs := flag.NewFlagSet("starter", flag.ContinueOnError)
	fs.SetOutput(p.Stderr)
	version := fs.Bool("version", false, "print the version, the VCS revision and the Go version")
	fs.Usage = func() { Usage(p.Stdout) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	switch {
	case *version:
		fmt.Fprint(p.Stdout, ctl.BinaryVersion("starter"))
		return 0
	case fs.NArg() > 0:
		fmt.Fprintf(p.Stderr, "starter: unexpected arguments %q: the starter is configured by its environment (starter -h)\n", fs.Args())
		return 2
	}
	getenv := p.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	logger, lerr := ctl.NewLogger(p.Stderr, getenv)
	c, err := ReadConfig(getenv, a.Defaults)
	if !a.Hooks.NoTemporal && a.Hooks.TemporalOptions == nil {
		if _, terr := TemporalOptions(getenv, p.Environ); terr != nil {
			err = errors.Join(err, terr)
		}
	}
	if err = errors.Join(lerr, err); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(p.Stderr, "starter: %s\n", line)
		}
		return 2
	}
	if err := Run(ctx, logger, c, a.Hooks, getenv, p.Environ); err != nil {
		logger.Error("relay failed", "error", err)
		return 1
	}
	return 0
}

// Vars are the variables the library's starter reads, as -h lists them.
func Vars() []ctl.Var {
	return append([]ctl.Var{
		{Name: DatabaseURLEnv, Default: DefaultDatabaseURL, Meaning: "PostgreSQL, pgx/v5 syntax: the outbox; its schema must be current (outboxctl migrate)"},
		{Name: "TEMPORAL_ADDRESS", Default: client.DefaultHostPort, Meaning: "the Temporal frontend, host:port"},
		{Name: "TEMPORAL_NAMESPACE", Default: client.DefaultNamespace, Meaning: "the Temporal namespace"},
		{Name: "TEMPORAL_API_KEY", Meaning: "API key (Temporal Cloud); turns TLS on"},
		{Name: "TEMPORAL_TLS, TEMPORAL_TLS_*", Meaning: "TLS: client cert and key, server CA and name (paths or data)"},
		{Name: "TEMPORAL_GRPC_META_*", Meaning: "gRPC headers sent with every call"},
		{Name: "TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE", Meaning: "the SDK's config file and profile, which the variables above override"},
		{Name: TaskQueueEnv, Default: TaskQueueDefault, Meaning: "task queue of the started workflows"},
		{Name: RoutesEnv, Default: "none: mandatory", Meaning: "comma-separated EVENT_TYPE=WORKFLOW_TYPE[@TASK_QUEUE][SEARCH_ATTRIBUTE=PAYLOAD_FIELD]"},
		{Name: RoutesFileEnv, Default: "unset", Meaning: "a file of the same entries, one per line, '#' starts a comment; not with " + RoutesEnv},
		{Name: SourceEnv, Default: "unset", Meaning: "deprecated: the source (poll, cdc or log) is recorded in the database, `outboxctl source set` changes it and the starter follows; when set, this value is recorded there at start"},
		{Name: CDCSlotEnv, Default: outboxops.CDCSlotDefault, Meaning: "the cdc source's replication slot"},
		{Name: CDCGraceEnv, Default: "10s", Meaning: "how long the cdc source's sweeper leaves a new event to the stream"},
		{Name: "OUTFLOW_MAX_ATTEMPTS", Default: strconv.Itoa(outbox.MaxAttemptsDefault), Meaning: "attempts before a failing event is quarantined"},
		{Name: "OUTFLOW_RELAY_RATE", Default: "no ceiling", Meaning: "the most workflow starts a second"},
		{Name: "OUTFLOW_RELAY_BATCH", Default: strconv.Itoa(outbox.BatchSizeDefault), Meaning: "events per claim"},
		{Name: "OUTFLOW_RELAY_LEASE", Default: outbox.LeaseDefault.String(), Meaning: "claim lease, a Go duration"},
		{Name: "OUTFLOW_RELAY_POLL", Default: outbox.PollIntervalDefault.String(), Meaning: "safety poll when no NOTIFY arrives"},
		{Name: "OUTFLOW_RELAY_IN_FLIGHT", Default: strconv.Itoa(outbox.MaxInFlightDefault), Meaning: "concurrent workflow starts (across aggregates)"},
		{Name: ReplayHorizonEnv, Default: "the namespace's retention", Meaning: "how far back `outboxctl replay` may reach; at most the retention"},
		{Name: MetricsAddrEnv, Default: "off", Meaning: "serve Prometheus /metrics on this host:port"},
		{Name: failpoints.EnvVar, Default: "none", Meaning: `fault injection for tests, e.g. "relay.after_publish=crash" (package failpoints)`},
	}, append(RetentionVars(), []ctl.Var{
		{Name: ctl.LogLevelVar, Default: "info", Meaning: "debug, info, warn or error"},
		{Name: ctl.LogFormatVar, Default: "text", Meaning: "text or json (on stderr)"},
	}...)...)
}

// RetentionVars are the cleanup schedule's variables, as -h lists them.
func RetentionVars() []ctl.Var {
	return []ctl.Var{
		{Name: RetentionEnv, Default: "168h", Meaning: "keep published events this long, and (log source) a range partition of outbox_log this long after the sequence passed it; 0 turns cleanup off (the log's ranges are still made ahead)"},
		{Name: InboxRetentionEnv, Default: RetentionEnv, Meaning: "keep processed_events rows this long, at least " + RetentionEnv},
		{Name: CleanupIntervalEnv, Default: "10m", Meaning: "time between cleanup passes"},
		{Name: CleanupBatchEnv, Default: "1000", Meaning: "rows per cleanup batch"},
	}
}

// Usage writes the library's `starter -h`.
func Usage(w io.Writer) {
	fmt.Fprintln(w, "usage: starter [-version]")
	fmt.Fprintln(w, "\nThe outbox relay: claims committed outbox events and starts one Temporal workflow per event")
	fmt.Fprintln(w, "(workflow ID = event_id) on the routes of OUTFLOW_ROUTES, until SIGINT or SIGTERM.")
	fmt.Fprintln(w, "\nenvironment:")
	ctl.PrintVars(w, Vars())
	fmt.Fprintln(w, "\nA malformed setting stops it at start (exit status 2), naming every one; exit status 1: the relay failed.")
}
