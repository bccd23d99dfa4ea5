// Command invoices-relay runs the invoices service's outbox relay: every
// committed InvoiceIssued event starts its InvoiceWorkflow.
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.temporal.io/sdk/client"

	"example.com/invoices"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "invoices-relay:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	db, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		return err
	}
	defer db.Close()
	if err := invoices.Migrate(ctx, db); err != nil {
		return err
	}
	opts := client.Options{HostPort: os.Getenv("TEMPORAL_ADDRESS"), Namespace: os.Getenv("TEMPORAL_NAMESPACE")}
	c, err := client.Dial(opts)
	if err != nil {
		return err
	}
	defer c.Close()
	if addr := os.Getenv("METRICS_ADDR"); addr != "" {
		go func() {
			fmt.Fprintln(os.Stderr, "invoices-relay: metrics:", http.ListenAndServe(addr, promhttp.Handler()))
		}()
	}
	go func() {
		// Retention: published events and their inbox rows go after a week.
		for t := time.NewTicker(time.Hour); ; {
			if _, err := invoices.Cleanup(ctx, db, 7*24*time.Hour); err != nil && ctx.Err() == nil {
				fmt.Fprintln(os.Stderr, "invoices-relay: cleanup:", err)
			}
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}()
	return invoices.RunRelay(ctx, db, c, opts, prometheus.DefaultRegisterer)
}
