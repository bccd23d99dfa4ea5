// Command outboxctl is the outbox's operator CLI over the library alone: it
// works on any service's outbox.
//
//	go install github.com/outflow/outflow/outbox/cmd/outboxctl@v0.1.0
//
//	outboxctl migrate [--system-database]             bring DATABASE_URL's outbox to the newest schema
//	outboxctl status [--json]                         backlog, quarantine, leases, throughput
//	outboxctl list [--pending | --quarantined] [--aggregate ID] [--aggregate-type TYPE] [--limit N] [--json]
//	outboxctl show EVENT_ID [--json]                  one event: every column, the whole last error, its workflow runs
//	outboxctl retry EVENT_ID [--yes] | retry --quarantined [--since TIME] [--error-contains TEXT] [--yes]
//	outboxctl skip EVENT_ID --reason TEXT [--actor NAME] [--yes]
//	outboxctl replay --from TIME [--to TIME] [--aggregate ID] [--aggregate-type TYPE] [--yes]
//	outboxctl source [set poll|cdc|log [--yes]]
//	outboxctl cleanup --retention DURATION [--batch-size N] [--inbox-retention DURATION] [--yes]
//	outboxctl help [COMMAND] | -h | --version | version
//
// The commands are package outbox/ctl's; outflow's own outboxctl
// (cmd/outboxctl at the repository's root) adds its order app's to them.
// This main is the only part that reads the process's environment.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/outflow/outflow/outbox/ctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	host, _ := os.Hostname()
	app := &ctl.App{Commands: ctl.Commands()}
	code := app.Run(ctx, os.Args[1:], ctl.Process{
		Stdout: os.Stdout, Stderr: os.Stderr,
		Stdin: os.Stdin, Interactive: ctl.IsTerminal(os.Stdin),
		Getenv: os.Getenv, Hostname: host,
	})
	stop()
	os.Exit(code)
}
