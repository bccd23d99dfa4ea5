// Command outboxctl is outflow's operator CLI.
//
//	outboxctl migrate [--order-app | --outbox-only]    bring DATABASE_URL's outbox (and order app) to the newest schema
//	outboxctl status [--json]                           backlog, quarantine, leases, throughput
//	outboxctl list [--pending | --quarantined] [--aggregate ID] [--aggregate-type TYPE] [--limit N] [--json]
//	outboxctl show EVENT_ID [--json]                    one event: every column, the whole last error, its workflow runs
//	outboxctl retry EVENT_ID [--yes]                    a quarantined or backing-off event: available now, attempts reset
//	outboxctl retry --quarantined [--since TIME] [--error-contains TEXT] [--aggregate-type TYPE] [--yes]
//	                                                    every quarantined event selected, in audited batches
//	outboxctl skip EVENT_ID --reason TEXT [--actor NAME] [--yes]
//	outboxctl replay --from TIME [--to TIME] [--aggregate ID] [--aggregate-type TYPE] [--yes]
//	outboxctl cleanup --retention DURATION [--batch-size N] [--inbox-retention DURATION] [--yes]
//	outboxctl forget-customer EMAIL --reason TEXT [--actor NAME] [--wait DURATION | --force] [--yes]
//	outboxctl help [COMMAND]
//	outboxctl -h | --version | version
//
// TIME is RFC 3339 or a Go duration before now (2h). Every command that
// changes data prints its plan, then acts with --yes, asks at a terminal,
// and otherwise is a dry run that changes nothing (exit 0).
//
// status, list --quarantined, show, retry, skip and replay --aggregate cover
// the log relay source's outbox_log too (its state, its quarantined holds,
// an event id found in either table).
//
// status, list, retry, skip, replay and cleanup concern the outbox alone:
// they work on any service's outbox, also in a database without the order
// app's tables, and assume no aggregate type where one filters. The order
// app's parts say so: forget-customer needs its tables, skip settles an
// order's projection only for an event of aggregate type order where the
// orders table exists, and migrate applies outflow's whole schema.
//
// Every command reads DATABASE_URL (pgx/v5 syntax), defaulting to the local
// server; --database-url overrides it. Every command but migrate refuses a
// database whose schema is outdated: the outbox's, and the order app's where
// the database has it, so the commands also serve a service's own database
// (`migrate` gives it the outbox alone). Every write is logged to stderr with who
// ran it ($USER@hostname unless --actor says otherwise). A connection
// string is shown with its password masked (help, logs, errors).
//
// The outbox's commands and their rules are package outbox/ctl's, which the
// library's own binary (outbox/cmd/outboxctl) runs alone; this one adds the
// order app's: forget-customer, migrate's --order-app, skip's settlement of
// an order's projection, the order app's schema check, the payload codec's
// Temporal client.
//
// Exit status: 0 success, 1 the command failed (unknown event, wrong state,
// database error), 2 usage (unknown command, bad flag or argument,
// malformed setting).
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/client"

	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/internal/cli"
	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/internal/database"
	"github.com/outflow/outflow/internal/service"
	"github.com/outflow/outflow/internal/temporalclient"
	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox/ctl"
	"github.com/outflow/outflow/outbox/outboxops"
)

// commands is the library's table (outbox/ctl) with the order app's
// commands added and its migrate in place of the library's.
var commands = func() map[string]ctl.Command {
	c := ctl.Commands()
	c["migrate"] = ctl.Command{Summary: "apply the outbox's pending migrations to DATABASE_URL (and the order app's where installed, or with --order-app)", Run: runMigrate}
	c["skip"] = ctl.Command{Summary: "give up a quarantined event (with a reason) so its aggregate flows again; settles an order of the order app too", Run: c["skip"].Run}
	c["forget-customer"] = ctl.Command{Summary: "order app only: erase one customer's data key: their Temporal histories become unreadable (audited)", Run: runForgetCustomer}
	return c
}()

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// environment is what `outboxctl -h` lists.
var environment = cli.Vars(
	[]cli.Var{
		service.DatabaseVar(database.DefaultURL, "the outbox (and the order app's tables where it has them); --database-url overrides it"),
		{Name: ctl.CDCSlotVar, Default: outboxops.CDCSlotDefault, Meaning: "status: the cdc relay source's replication slot to report on"},
	},
	temporalclient.Vars(), // show and forget-customer ask Temporal about an event's workflow
	temporalclient.CodecVars(),
	service.LogVars(),
	[]cli.Var{
		{Name: ctl.ConsoleAddrVar, Default: ctl.DefaultConsoleAddr, Meaning: "serve: where the outbox's web page listens, host:port; --addr overrides it"},
		{Name: ctl.ConsoleTokenVar, Meaning: "serve: the operator token that allows actions and shows payloads (Authorization: Bearer, or the login form); unset: read-only"},
	},
	[]cli.Var{{Name: "USER", Meaning: "who runs the command, recorded with every write as $USER@hostname unless --actor says otherwise"}},
	[]cli.Var{service.FailpointsVar()},
)

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runIn(ctx, args, stdout, stderr, nil)
}

// runIn is run with the Temporal client's settings read from environ (nil:
// the process environment).
func runIn(ctx context.Context, args []string, stdout, stderr io.Writer, environ []string) int {
	host, _ := os.Hostname()
	return app(environ).Run(ctx, args, ctl.Process{
		Stdout: stdout, Stderr: stderr,
		Stdin: os.Stdin, Interactive: ctl.IsTerminal(os.Stdin),
		Getenv: os.Getenv, Hostname: host,
	})
}

// app is outboxctl: the library's commands and the order app's hooks.
func app(environ []string) *ctl.App {
	return &ctl.App{
		Commands:    commands,
		Version:     func() string { return cli.Version("outboxctl") },
		Environment: func(w io.Writer) { cli.PrintVars(w, environment) },
		NewLogger: func(w io.Writer, getenv func(string) string) (*slog.Logger, error) {
			senv := service.NewEnv(getenv)
			logger := service.NewLogger(w, senv)
			return logger, senv.Err()
		},
		OpenDB: database.OpenCheckedOutbox,
		TemporalOptions: func(func(string) string) (client.Options, error) {
			var o client.Options
			var err error
			if environ != nil {
				o, err = temporalclient.ClientOptions(temporalclient.WithEnviron(environ))
			} else {
				o, err = temporalclient.ClientOptions()
			}
			if cli.IsUsage(err) { // a malformed setting: exit status 2
				err = &ctl.ConfigError{Err: err}
			}
			return o, err
		},
		SettleSkipTx: settleSkippedOrder,
		// serve shows a payload without the token only when the codec
		// would encrypt it with the master key: one that names a customer
		// (an OrderCreated's customer_email) or any email address is the
		// customer's, as in a history the codec server decodes.
		Personal: func(_ string, payload []byte) bool {
			if _, ok := codec.EventInputSubject(handoff.EventInput{Payload: payload}); ok {
				return true
			}
			_, ok := codec.EmailIn(payload)
			return ok
		},
		SkipNote: "An event of aggregate type order, in a database with the order app's orders table, also settles\n" +
			"its sequence in the order's projection (in the same transaction), so the order's later events apply.",
		Notes: "show and forget-customer reach Temporal through the TEMPORAL_* variables; serve links the Temporal UI with --temporal-ui.",
	}
}

// settleSkippedOrder is skip's hook: an event of an order (aggregate type
// order) in a database that holds the order app's orders table also
// settles its skipped sequence in the order's projection, in the skip's
// transaction (orders.SettleSkippedTx); any other event, and an order
// event in a database without the order app, is only skipped, and the
// command says which happened.
func settleSkippedOrder(ctx context.Context, tx pgx.Tx, c outboxops.Change) (string, error) {
	if c.Before.AggregateType != orders.AggregateType {
		return "", nil
	}
	missing, err := missingTables(ctx, tx, "orders")
	if err != nil {
		return "", fmt.Errorf("nothing was skipped: %w", err)
	}
	if len(missing) > 0 {
		return "no order projection settled: this database has no orders table (the order app is not here), so the skip is all there is to it", nil
	}
	if err := orders.SettleSkippedTx(ctx, tx, c.Before.AggregateType, c.Before.AggregateID, c.Before.Sequence); err != nil {
		return "", fmt.Errorf("nothing was skipped: the order's projection cannot account for skipping %s: %w", c.Before.ID, err)
	}
	return fmt.Sprintf("order %s's projection settled: sequence %d counts as applied", c.Before.AggregateID, c.Before.Sequence), nil
}
