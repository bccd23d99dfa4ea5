// Command starter is the outbox relay over the library alone: it claims
// committed outbox events and starts one Temporal workflow per event
// (workflow ID = event_id) on the routes of OUTFLOW_ROUTES, until SIGINT or
// SIGTERM.
//
//	go install github.com/outflow/outflow/outbox/cmd/starter@v0.1.0
//	OUTFLOW_ROUTES=InvoiceIssued=InvoiceWorkflow@billing starter
//
// `starter -h` lists every variable. The wiring is package outbox/relaycmd's;
// outflow's own starter (starter/ at the repository's root) adds its order
// app's routes, payload codec and JetStream sink to it. This main is the
// only part that reads the process's environment.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/outflow/outflow/outbox/relaycmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := (&relaycmd.App{}).Run(ctx, os.Args[1:], relaycmd.Process{
		Stdout: os.Stdout, Stderr: os.Stderr,
		Getenv: os.Getenv, Environ: os.Environ(),
	})
	stop()
	os.Exit(code)
}
