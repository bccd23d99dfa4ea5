package ctl

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ctltest"
)

// testBundle is a migrated database and a way to run outboxctl on it
// (ctltest.Bundle), with the library's tests' own helpers.
type testBundle struct{ *ctltest.Bundle }

// result is one outboxctl run.
type result = ctltest.Result

func setup(t *testing.T) *testBundle {
	t.Helper()
	return &testBundle{ctltest.New(t, run)}
}

// bundleOn is a testBundle on a database of the test's own.
func bundleOn(ctx context.Context, pool *pgxpool.Pool, url string) *testBundle {
	return &testBundle{&ctltest.Bundle{Ctx: ctx, Pool: pool, URL: url, Main: run}}
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// commands is the library's table, as its binary runs it.
var commands = Commands()

// run runs the library's outboxctl as its main does, the process's
// environment read through os.Getenv.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runIn(ctx, args, stdout, stderr, nil)
}

// runIn is run with the environment environ (nil: the process's).
func runIn(ctx context.Context, args []string, stdout, stderr io.Writer, environ []string) int {
	getenv := os.Getenv
	if environ != nil {
		getenv = func(name string) string {
			for _, kv := range environ {
				if k, v, ok := strings.Cut(kv, "="); ok && k == name {
					return v
				}
			}
			return os.Getenv(name)
		}
	}
	app := &App{Commands: commands, SettleSkipTx: settleOrder}
	return app.Run(ctx, args, Process{
		Stdout: stdout, Stderr: stderr, Stdin: os.Stdin, Interactive: IsTerminal(os.Stdin),
		Getenv: getenv, Hostname: "test-host",
	})
}

// order returns a new aggregate id for events of aggregate type order: the
// library's skip settles nothing, so no row stands behind it (the root's
// outboxctl tests settle an order's projection).
func (b *testBundle) order(t *testing.T) string {
	t.Helper()
	return uuid.NewString()
}

// settleOrder is the tests' App.SettleSkipTx: it says what the root's
// outboxctl settles for an event of aggregate type order (its order's
// projection), without the order app's tables, so the tests see when skip
// calls the hook.
func settleOrder(_ context.Context, _ pgx.Tx, c outboxops.Change) (string, error) {
	if c.Before.AggregateType != "order" {
		return "", nil
	}
	return fmt.Sprintf("order %s's projection settled: sequence %d counts as applied", c.Before.AggregateID, c.Before.Sequence), nil
}
