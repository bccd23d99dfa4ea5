package ctl

import (
	"cmp"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"

	"go.temporal.io/sdk/client"

	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/outboxops"
)

// DefaultDatabaseURL is used when DATABASE_URL is unset.
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// Variables of the library's outboxctl, read through [Process.Getenv].
const (
	// DatabaseURLVar names the database (pgx/v5 syntax).
	DatabaseURLVar = "DATABASE_URL"
	// CDCSlotVar names the cdc relay source's replication slot status
	// reports on.
	CDCSlotVar = "OUTFLOW_CDC_SLOT"
	// LogLevelVar selects the log level: debug, info, warn or error.
	LogLevelVar = "OUTFLOW_LOG_LEVEL"
	// LogFormatVar selects the log format: text or json.
	LogFormatVar = "OUTFLOW_LOG_FORMAT"
)

// DatabaseURL returns DATABASE_URL read through getenv, or
// [DefaultDatabaseURL].
func DatabaseURL(getenv func(string) string) string {
	return cmp.Or(getenv(DatabaseURLVar), DefaultDatabaseURL)
}

// Var is an environment variable as -h lists it.
type Var struct {
	Name, Default, Meaning string
}

// Vars are the variables the library's outboxctl reads.
func Vars() []Var {
	return []Var{
		{Name: DatabaseURLVar, Default: DefaultDatabaseURL, Meaning: "PostgreSQL, pgx/v5 syntax: the outbox; --database-url overrides it"},
		{Name: CDCSlotVar, Default: outboxops.CDCSlotDefault, Meaning: "status: the cdc relay source's replication slot to report on"},
		{Name: "TEMPORAL_ADDRESS", Default: client.DefaultHostPort, Meaning: "show: the Temporal frontend asked for an event's workflow runs, host:port"},
		{Name: "TEMPORAL_NAMESPACE", Default: client.DefaultNamespace, Meaning: "show: the Temporal namespace"},
		{Name: ConsoleAddrVar, Default: DefaultConsoleAddr, Meaning: "serve: where the outbox's web page listens, host:port; --addr overrides it"},
		{Name: ConsoleTokenVar, Meaning: "serve: the operator token that allows actions and shows payloads (Authorization: Bearer, or the login form); unset: read-only"},
		{Name: LogLevelVar, Default: "info", Meaning: "log level: debug, info, warn or error"},
		{Name: LogFormatVar, Default: "text", Meaning: "log format: text or json"},
		{Name: "USER", Meaning: "who runs the command, recorded with every write as $USER@hostname unless --actor says otherwise"},
		{Name: failpoints.EnvVar, Meaning: "fault injection for tests (cleanup.mid_batch); unset in production"},
	}
}

// PrintVars writes vars as flag.PrintDefaults writes flags: the name and
// its default on one line, the meaning indented below.
func PrintVars(w io.Writer, vars []Var) {
	for _, v := range vars {
		fmt.Fprintf(w, "  %s", v.Name)
		if v.Default != "" {
			fmt.Fprintf(w, " (default %s)", v.Default)
		}
		fmt.Fprintf(w, "\n    \t%s\n", v.Meaning)
	}
}

// NewLogger is the default [App.NewLogger]: slog on w at OUTFLOW_LOG_LEVEL
// in OUTFLOW_LOG_FORMAT. A malformed setting is an error naming both.
func NewLogger(w io.Writer, getenv func(string) string) (*slog.Logger, error) {
	var errs []string
	var level slog.Level
	lv := cmp.Or(getenv(LogLevelVar), "info")
	if err := level.UnmarshalText([]byte(strings.ToUpper(lv))); err != nil {
		errs = append(errs, fmt.Sprintf("%s=%q: want debug, info, warn or error", LogLevelVar, lv))
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch format := cmp.Or(getenv(LogFormatVar), "text"); format {
	case "json":
		h = slog.NewJSONHandler(w, opts)
	case "text":
		h = slog.NewTextHandler(w, opts)
	default:
		errs = append(errs, fmt.Sprintf("%s=%q: want text or json", LogFormatVar, format))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return slog.New(h), nil
}

// temporalOptions is the default [App.TemporalOptions]: TEMPORAL_ADDRESS
// and TEMPORAL_NAMESPACE, or the SDK's defaults; an address that is no
// host:port is a [ConfigError].
func temporalOptions(getenv func(string) string) (client.Options, error) {
	o := client.Options{
		HostPort:  cmp.Or(getenv("TEMPORAL_ADDRESS"), client.DefaultHostPort),
		Namespace: cmp.Or(getenv("TEMPORAL_NAMESPACE"), client.DefaultNamespace),
	}
	if _, _, err := net.SplitHostPort(o.HostPort); err != nil {
		return o, &ConfigError{Err: fmt.Errorf("TEMPORAL_ADDRESS=%q: want host:port, e.g. temporal.internal:7233 (%v)", o.HostPort, err)}
	}
	return o, nil
}
